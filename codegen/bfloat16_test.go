package codegen

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tessera-ml/tessera/tir"
)

// TestBFloat16Rounding checks the C conversions to bfloat16, the scalar
// tsr_f2bf (read back by tsr_bf2f) and the vector tsr_rbf_v8f stored by
// tsr_store_v8bf and loaded by tsr_load_v8bf, as the kernels' prelude
// defines them, with every test compiler at -O2 and -ffp-contract=fast,
// against tir.RoundBFloat16 (the evaluators'), bit for bit: every
// bfloat16 value and its float32 neighbours, every midpoint between two
// consecutive ones (a tie, to even) and its neighbours, the overflow edge,
// subnormals, infinities, NaNs (any NaN for a NaN) and 200,000 random
// float32 bit patterns.
func TestBFloat16Rounding(t *testing.T) {
	var xs []uint32
	add := func(b uint32) { xs = append(xs, b, b+1, b-1) }
	for h := range uint32(1 << 16) {
		b := h << 16
		add(b)
		add(b | 0x8000) // the midpoint to the next bfloat16 (a tie)
	}
	for _, f := range []float32{math.MaxFloat32, 3.3961e38, 3.3895e38, 0x1p-149, 0x1p-133, 0x1p-126} {
		add(math.Float32bits(f))
		add(math.Float32bits(-f))
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 200000 {
		xs = append(xs, r.Uint32())
	}
	for len(xs)%8 != 0 {
		xs = append(xs, 0)
	}
	in := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(in[4*i:], x)
	}
	m := &module{lanes: 8, used: map[int]bool{8: true}}
	src := "#include <stdio.h>\n" + m.prelude() + `
int main(void) {
	float x[8];
	while (fread(x, sizeof x, 1, stdin) == 1) {
		float s[8];
		uint16_t v[8];
		for (int l = 0; l < 8; ++l)
			s[l] = tsr_bf2f(tsr_f2bf(x[l]));
		tsr_store_v8bf(v, tsr_rbf_v8f(tsr_load_v8f(x)));
		tsr_v8f w = tsr_load_v8bf(v);
		fwrite(s, sizeof s, 1, stdout);
		fwrite(&w, sizeof w, 1, stdout);
	}
	return 0;
}
`
	for _, cc := range testCompilers(t) {
		t.Run(cc.name, func(t *testing.T) {
			out := filterProgram(t, cc, src, in, "-march=native")
			if len(out) != 2*len(in) {
				t.Fatalf("%d bytes out for %d in", len(out), len(in))
			}
			bad := 0
			for i, x := range xs {
				f := math.Float32frombits(x)
				want := math.Float32bits(tir.RoundBFloat16(f))
				for form, off := range map[string]int{"scalar": 64*(i/8) + 4*(i%8), "vector": 64*(i/8) + 32 + 4*(i%8)} {
					got := binary.LittleEndian.Uint32(out[off:])
					if f != f {
						if g := math.Float32frombits(got); g == g || got&0xffff != 0 {
							t.Errorf("%s: NaN %#08x rounds to %#08x, want a bfloat16 NaN", form, x, got)
						}
						continue
					}
					if got != want {
						if bad++; bad <= 10 {
							t.Errorf("%s: %g = %#08x rounds to %#08x, want %#08x", form, f, x, got, want)
						}
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d roundings of %d values differ", bad, len(xs))
			}
		})
	}
}

// TestRoundBFloat16 pins tir.RoundBFloat16 itself: ties to even, carries
// into the exponent, overflow to infinity, NaN kept.
func TestRoundBFloat16(t *testing.T) {
	for _, c := range []struct{ in, want uint32 }{
		{0x3f800000, 0x3f800000}, // 1
		{0x3f808000, 0x3f800000}, // a tie, to the even 1
		{0x3f818000, 0x3f820000}, // a tie, to the even above
		{0x3f808001, 0x3f810000}, // above the tie
		{0x3f807fff, 0x3f800000}, // below it
		{0x3fff8000, 0x40000000}, // carries into the exponent
		{0x7f7fffff, 0x7f800000}, // the largest float32 overflows to +Inf
		{0xff7f8000, 0xff800000}, // a tie at the top, to -Inf
		{0x7f800000, 0x7f800000}, // +Inf
		{0x00008000, 0x00000000}, // a subnormal tie, to even 0
		{0x80018000, 0x80020000},
	} {
		if got := math.Float32bits(tir.RoundBFloat16(math.Float32frombits(c.in))); got != c.want {
			t.Errorf("RoundBFloat16(%#08x) = %#08x, want %#08x", c.in, got, c.want)
		}
	}
	for _, nan := range []uint32{0x7fc00000, 0x7f800001, 0xff800001, 0x7fffffff} {
		got := tir.RoundBFloat16(math.Float32frombits(nan))
		if b := math.Float32bits(got); got == got || b&0xffff != 0 || b>>31 != nan>>31 {
			t.Errorf("RoundBFloat16(NaN %#08x) = %#08x, want a quiet NaN of its sign", nan, b)
		}
	}
}
