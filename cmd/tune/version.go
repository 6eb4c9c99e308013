package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/tessera-ml/tessera/internal/cli"
	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/tsrt"
)

// versionUsage is the help of the command, before its flags.
const versionUsage = "usage: tune version (or tune --version)\n\n" +
	"Prints the module version of tune and the commit it was built from, the\n" +
	"C ABI version of the libraries tune build writes, the Go version, and the\n" +
	"C compiler tune would run ($CC, else cc) with its --version line.\n\n"

// runVersion is `tune version` and `tune --version`.
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
	_, err = io.WriteString(stdout, versionText(bi, (&measure.Builder{}).CompilerInfo()))
	return err
}

// versionText is what tune version prints, from the build information
// of the binary (nil where it has none; cli.BuildOf) and the C compiler.
func versionText(bi *debug.BuildInfo, cc measure.CompilerInfo) string {
	build := cli.BuildOf(bi)
	var b strings.Builder
	fmt.Fprintf(&b, "tune       %s %s\n", build.Module, build.Version)
	fmt.Fprintf(&b, "commit     %s\n", build.Commit)
	fmt.Fprintf(&b, "C ABI      %d\n", tsrt.ABIVersion)
	fmt.Fprintf(&b, "Go         %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "C compiler %s (%s): %s\n", strings.Join(cc.Command, " "), cc.Path, cc.Version)
	return b.String()
}
