package measure

import (
	"context"
	"os"
	"testing"
)

// TestGCCIfConvertWorkaround builds the reproducer of GCC 12's if-conversion
// miscompilation with the default flags and runs it: the flags must keep it
// right whatever the compiler.
func TestGCCIfConvertWorkaround(t *testing.T) {
	src, err := os.ReadFile("testdata/gcc12-ifconvert.c")
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
		t.Fatalf("padded copy miscompiled with flags %v: %v %s", b.flags(), res.Kind, res.Msg)
	}
}
