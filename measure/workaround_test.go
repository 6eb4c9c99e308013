package measure

import (
	"context"
	"os"
	"testing"
)

// TestGCCWorkarounds builds the reproducers of GCC 12's miscompilations
// with the default flags and runs them: the flags must keep them right
// whatever the compiler.
func TestGCCWorkarounds(t *testing.T) {
	for _, file := range []string{"gcc12-ifconvert.c", "gcc12-condreduce.c", "gcc12-loopdist.c"} {
		t.Run(file, func(t *testing.T) { checkReproducer(t, file) })
	}
}

func checkReproducer(t *testing.T, file string) {
	src, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	b := &Builder{CacheDir: t.TempDir()}
	built := b.Build(context.Background(), []Source{{Code: string(src)}})[0]
	if built.Kind != None {
		t.Fatalf("%v: %s", built.Kind, built.Msg)
	}
	r := &Runner{Builder: b, Opts: RunOptions{Number: 1, Repeat: 1, MinRepeatMs: -1, Check: true}}
	defer r.Close()
	res := r.Run(context.Background(), []Job{{Lib: built.Path, Entry: "tessera_kernel", Args: []Arg{{Name: "ok", Size: 1, Output: true}}}})[0]
	if res.Kind != None || res.Outputs[0][0] != 1 {
		t.Fatalf("%s miscompiled with flags %v: %v %s", file, b.flags(), res.Kind, res.Msg)
	}
}
