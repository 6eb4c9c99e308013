package cli

import (
	"runtime/debug"
	"testing"
)

// TestBuildOf: the module, version and commit go build records, and what
// stands in for each where it records none.
func TestBuildOf(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	const none = "(devel): none recorded (go build records it in a git checkout; go run, go test and -buildvcs=false do not)"
	main := debug.Module{Path: "example.org/tessera", Version: "v0.2.0"}
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, c := range []struct {
		name string
		bi   *debug.BuildInfo
		want Build
	}{
		{"none", nil, Build{"tessera", "(devel)", none}},
		{"empty", &debug.BuildInfo{}, Build{"tessera", "(devel)", none}},
		{"module only", &debug.BuildInfo{Main: main}, Build{"example.org/tessera", "v0.2.0", none}},
		{"no version", &debug.BuildInfo{Main: debug.Module{Path: "example.org/tessera"}}, Build{"example.org/tessera", "(devel)", none}},
		{"revision", &debug.BuildInfo{Main: main, Settings: vcs("vcs", "git", "vcs.revision", rev)}, Build{"example.org/tessera", "v0.2.0", rev}},
		{"revision and time", &debug.BuildInfo{Main: main, Settings: vcs("vcs.revision", rev, "vcs.time", "2026-12-06T10:00:00Z", "vcs.modified", "false")},
			Build{"example.org/tessera", "v0.2.0", rev + " 2026-12-06T10:00:00Z"}},
		{"modified", &debug.BuildInfo{Main: main, Settings: vcs("vcs.revision", rev, "vcs.time", "2026-12-06T10:00:00Z", "vcs.modified", "true")},
			Build{"example.org/tessera", "v0.2.0", rev + " 2026-12-06T10:00:00Z (with uncommitted changes)"}},
		{"modified without a revision", &debug.BuildInfo{Main: main, Settings: vcs("vcs.modified", "true")}, Build{"example.org/tessera", "v0.2.0", none}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := BuildOf(c.bi); got != c.want {
				t.Errorf("BuildOf = %+v\nwant %+v", got, c.want)
			}
		})
	}
}
