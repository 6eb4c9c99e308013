package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/tsrt"
)

// Build is what the Go toolchain recorded of a program's binary: its
// module, the module's version and the commit it was built from.
type Build struct {
	Module, Version string
	// Commit is the revision, then its time and "(with uncommitted
	// changes)" where those were recorded; where none was, it says so
	// and why.
	Commit string
}

// BuildOf returns what bi (debug.ReadBuildInfo's; nil where the binary
// has none) says of the binary, with what stands in for each part it
// leaves out: module "tessera", version and commit "(devel)".
func BuildOf(bi *debug.BuildInfo) Build {
	b := Build{Module: "tessera", Version: "(devel)", Commit: "(devel): none recorded (go build records it in a git checkout; go run, go test and -buildvcs=false do not)"}
	settings := map[string]string{}
	if bi != nil {
		if bi.Main.Path != "" {
			b.Module = bi.Main.Path
		}
		if bi.Main.Version != "" {
			b.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
	}
	if rev := settings["vcs.revision"]; rev != "" {
		b.Commit = rev
		if at := settings["vcs.time"]; at != "" {
			b.Commit += " " + at
		}
		if settings["vcs.modified"] == "true" {
			b.Commit += " (with uncommitted changes)"
		}
	}
	return b
}

// Version is what a program's version command prints (VersionOf): its
// build, the C ABI version of the libraries it builds, the Go toolchain
// and platform, and the C compiler it runs.
type Version struct {
	Program string
	Build
	ABI      int
	Go       string // "go1.24.1 linux/amd64"
	Compiler measure.CompilerInfo
}

// VersionOf returns the version of program, a binary bi describes (nil
// where it has none; BuildOf) that runs the C compiler cc.
func VersionOf(program string, bi *debug.BuildInfo, cc measure.CompilerInfo) Version {
	return Version{Program: program, Build: BuildOf(bi), ABI: tsrt.ABIVersion,
		Go: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH, Compiler: cc}
}

// Write writes the version, a line each: the program's module and
// version, the commit, the C ABI, Go, and the C compiler's command, path
// and --version line.
func (v Version) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-11s%s %s\n", v.Program, v.Module, v.Version)
	fmt.Fprintf(&b, "commit     %s\n", v.Commit)
	fmt.Fprintf(&b, "C ABI      %d\n", v.ABI)
	fmt.Fprintf(&b, "Go         %s\n", v.Go)
	fmt.Fprintf(&b, "C compiler %s (%s): %s\n", strings.Join(v.Compiler.Command, " "), v.Compiler.Path, v.Compiler.Version)
	_, err := io.WriteString(w, b.String())
	return err
}
