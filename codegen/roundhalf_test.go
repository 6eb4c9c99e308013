package codegen

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/x448/float16"

	"github.com/tessera-ml/tessera/tir"
)

// TestRoundHalf checks the C tsr_roundhalff, with every test compiler at
// -O2 and -ffp-contract=fast (the builder's), against the Go evaluators'
// rounding (tir.MathFuncs' roundhalf: github.com/x448/float16), bit for bit:
// every float16 value as a float32 and its float32 neighbours, every
// midpoint between two consecutive float16 values (a tie, to even) and its
// neighbours, the overflow edge (65504, 65519.99, 65520), the subnormal
// range, infinities, NaN, and 200,000 random float32 bit patterns.
func TestRoundHalf(t *testing.T) {
	var xs []uint32
	add := func(f float32) {
		b := math.Float32bits(f)
		xs = append(xs, b, b+1, b-1)
	}
	for h := range 1 << 16 {
		v := float16.Frombits(uint16(h))
		if v.IsNaN() || v.IsInf(0) {
			continue
		}
		f := v.Float32()
		add(f)
		if next := float16.Frombits(uint16(h) + 1); !next.IsNaN() && !next.IsInf(0) && (h&0x7fff) != 0x7bff {
			add(float32((float64(f) + float64(next.Float32())) / 2)) // exact in float32
		}
	}
	for _, f := range []float32{65504, 65519.99, 65520, 65536, 1e30, 0x1p-25, 0x1p-24, 3 * 0x1p-26, 0x1p-14, 0x1p-15 * 1.5} {
		add(f)
		add(-f)
	}
	xs = append(xs, math.Float32bits(float32(math.Inf(1))), math.Float32bits(float32(math.Inf(-1))), 0x7fc00000, 0xffc00001, 0x7f800001)
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		xs = append(xs, r.Uint32())
	}
	in := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(in[4*i:], x)
	}
	src := "#include <stdio.h>\n" + roundHalfC + `
int main(void) {
	float x;
	while (fread(&x, sizeof x, 1, stdin) == 1) {
		x = tsr_roundhalff(x);
		fwrite(&x, sizeof x, 1, stdout);
	}
	return 0;
}
`
	eval := tir.MathFuncs["roundhalf"].Eval
	for _, cc := range testCompilers(t) {
		t.Run(cc.name, func(t *testing.T) {
			out := filterProgram(t, cc, src, in)
			if len(out) != len(in) {
				t.Fatalf("%d bytes out for %d in", len(out), len(in))
			}
			bad := 0
			for i, x := range xs {
				got := binary.LittleEndian.Uint32(out[4*i:])
				want := math.Float32bits(float32(eval(float64(math.Float32frombits(x)))))
				if math.IsNaN(float64(math.Float32frombits(x))) {
					if !math.IsNaN(float64(math.Float32frombits(got))) {
						t.Errorf("roundhalf(NaN %#08x) = %#08x, want a NaN", x, got)
					}
					continue
				}
				if got != want {
					if bad++; bad <= 10 {
						t.Errorf("roundhalf(%g = %#08x) = %g, want %g", math.Float32frombits(x), x, math.Float32frombits(got), math.Float32frombits(want))
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d values differ", bad, len(xs))
			}
		})
	}
}

// filterProgram compiles the C program src with compiler cc at -O2 and
// -ffp-contract=fast (the builder's), with flags, runs it with in on its
// standard input and returns its standard output.
func filterProgram(t *testing.T, cc compiler, src string, in []byte, flags ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	c, exe := filepath.Join(dir, "r.c"), filepath.Join(dir, "r")
	writeFile(t, c, src)
	args := append(append([]string{"-O2", "-ffp-contract=fast", "-o", exe, c}, flags...), cc.flags...)
	if out, err := exec.Command(cc.cmd, args...).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	cmd := exec.Command(exe)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return out
}
