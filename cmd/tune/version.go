package main

import (
	"io"
	"runtime/debug"

	"github.com/tessera-ml/tessera/internal/cli"
	"github.com/tessera-ml/tessera/measure"
)

// versionUsage is the help of the command, before its flags.
const versionUsage = "usage: tune version (or tune --version)\n\n" +
	"Prints the module version of tune and the commit it was built from, the\n" +
	"C ABI version of the libraries tune build writes, the Go version, and the\n" +
	"C compiler tune would run ($CC, else cc) with its --version line.\n\n"

// runVersion is `tune version` and `tune --version` (cli.Version).
func runVersion(args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("tune version", stderr, nil)
	cli.SetUsage(fs, versionUsage)
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return cli.Usagef(stderr, "tune version: no arguments (run 'tune version -h')")
	}
	bi, _ := debug.ReadBuildInfo()
	return cli.VersionOf("tune", bi, (&measure.Builder{}).CompilerInfo()).Write(stdout)
}
