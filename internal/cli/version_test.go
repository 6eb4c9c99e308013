package cli

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/measure"
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

// TestVersionWrite: the program's module and version and the commit as
// go build records them, the C ABI, Go and the C compiler, a line each,
// and what is printed where the build information is absent.
func TestVersionWrite(t *testing.T) {
	cc := measure.CompilerInfo{Command: []string{"gcc-12"}, Path: "/usr/bin/gcc-12", Version: "gcc-12 (Debian 12.2.0-14) 12.2.0"}
	stamped := &debug.BuildInfo{Main: debug.Module{Path: "example.org/tessera", Version: "v0.2.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-12-06T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	goLine := "Go         " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	ccLine := "C compiler gcc-12 (/usr/bin/gcc-12): gcc-12 (Debian 12.2.0-14) 12.2.0\n"
	for _, c := range []struct {
		name    string
		program string
		bi      *debug.BuildInfo
		want    string
	}{
		{"stamped", "tune", stamped, "tune       example.org/tessera v0.2.0\n" +
			"commit     0123456789abcdef0123456789abcdef01234567 2026-12-06T10:00:00Z (with uncommitted changes)\n" +
			"C ABI      4\n" + goLine + ccLine},
		{"none", "tune", nil, "tune       tessera (devel)\ncommit     (devel): none recorded (go build records it in a git checkout; go run, go test and -buildvcs=false do not)\n" +
			"C ABI      4\n" + goLine + ccLine},
		{"empty, another program", "tessera-x", &debug.BuildInfo{}, "tessera-x  tessera (devel)\ncommit     (devel): none recorded"},
	} {
		var b strings.Builder
		if err := VersionOf(c.program, c.bi, cc).Write(&b); err != nil || !strings.HasPrefix(b.String(), c.want) {
			t.Errorf("%s: %v, wrote\n%s\nwant\n%s", c.name, err, b.String(), c.want)
		}
	}
}
