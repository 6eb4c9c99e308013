package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"tessera/internal/cli"
	"tessera/records"
)

// runRecords is `tune records export|import|distill|stats|plot`.
func runRecords(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return cli.Usagef(stderr, "usage: tune records export|import|distill|stats|plot [--db FILE] ...")
	}
	verb, args := args[0], args[1:]
	if verb == "plot" {
		return runPlot(args, stdout, stderr)
	}
	switch verb {
	case "export", "import", "distill", "stats":
	default:
		return fmt.Errorf("unknown records command %q (export, import, distill, stats, plot)", verb)
	}
	fs := cli.NewFlagSet("tune records "+verb, stderr, nil)
	db := fs.String("db", "tuning.db", "records database `FILE`")
	out := fs.String("o", "-", "output `FILE` (- for standard output)")
	k := fs.Int("k", 1, "records kept per task and target (distill)")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if *k < 1 {
		return fmt.Errorf("-k %d: want at least 1 record per task and target", *k)
	}
	if verb != "import" && len(pos) > 0 {
		return fmt.Errorf("%s takes no file arguments (got %s); the output goes to -o", verb, strings.Join(pos, " "))
	}
	// Only import writes: the others read, so that a read-only database
	// (file or file system) can be exported or summarized.
	open := records.OpenReadOnly
	if verb == "import" {
		open = records.Open
	}
	store, err := open(*db)
	if err != nil {
		return err
	}
	defer store.Close()
	switch verb {
	case "import":
		return store.ImportFiles(stdout, pos)
	case "stats":
		st, err := store.Stats()
		if err != nil {
			return err
		}
		return records.WriteStats(stdout, st)
	}
	w, closeOut, err := cli.Create(*out, stdout)
	if err != nil {
		return err
	}
	if verb == "export" {
		err = store.Export(w)
	} else {
		err = store.Distill(w, *k)
	}
	return errors.Join(err, closeOut())
}
