package cli

import "runtime/debug"

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
