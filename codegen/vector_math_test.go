package codegen

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/tir"
)

// TestVectorMath checks the vector exp, erf, sigmoid and tanh of vectorHelpers
// against float64 math on a dense sweep (every 1/1024 in [-100, 100]), the
// ends of exp's fast range, and infinities and NaN, at the native lanes of
// every ISA level the machine runs and at 4 lanes, with every test compiler
// at -O2 -march=LEVEL (the builder's flags): exp
// within 2 ulp (+inf above the overflow threshold, 0 below FLT_MIN), erf within 3e-7
// absolute and 3 ulp below 0.5, sigmoid and tanh within 3 ulp (a subnormal result
// may be 0, as with the scalar helper).
func TestVectorMath(t *testing.T) {
	var xs []float32
	for i := -102400; i <= 102400; i++ {
		xs = append(xs, float32(i)/1024)
	}
	xs = append(xs, -87.0001, -86.9999, -87.3365, -87.3366, 87.9999, 88.0001, 88.72, 88.73, -103.9, -104,
		1e-30, -1e-30, 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()))
	for len(xs)%16 != 0 {
		xs = append(xs, 0.25)
	}
	for _, m := range testLevels(t) {
		L, runs := m.Lanes(), 2
		if L == 4 {
			runs = 1
		}
		var src strings.Builder
		src.WriteString("#include <stdint.h>\n#include <stdio.h>\n#include <math.h>\n")
		src.WriteString(vectorHelpers(L))
		if L != 4 {
			src.WriteString(vectorHelpers(4))
		}
		src.WriteString("static const float xs[] = {")
		for i, x := range xs {
			if i > 0 {
				src.WriteString(",")
			}
			switch {
			case math.IsNaN(float64(x)):
				src.WriteString("NAN")
			case math.IsInf(float64(x), 1):
				src.WriteString("INFINITY")
			case math.IsInf(float64(x), -1):
				src.WriteString("-INFINITY")
			default:
				src.WriteString(strconv.FormatFloat(float64(x), 'x', -1, 32) + "f")
			}
		}
		src.WriteString("};\n")
		runFour := ""
		if L != 4 {
			runFour = "RUN(4)"
		}
		fmt.Fprintf(&src, `#define N %d
#define RUN(L)                                                                  \
	for (int i = 0; i < N; i += L) {                                            \
		tsr_v##L##f x;                                                          \
		__builtin_memcpy(&x, xs + i, sizeof x);                                 \
		tsr_v##L##f e = tsr_exp_v##L##f(x), f = tsr_erf_v##L##f(x), s = tsr_sigmoid_v##L##f(x), h = tsr_tanh_v##L##f(x); \
		for (int l = 0; l < L; ++l)                                             \
			printf("%%d %%a %%a %%a %%a\n", L, (double)e[l], (double)f[l], (double)s[l], (double)h[l]); \
	}
int main(void) {
	RUN(%d)
	%s
	return 0;
}
`, len(xs), L, runFour)
		for _, cc := range testCompilers(t) {
			t.Run(m.Name+"/"+cc.name, func(t *testing.T) {
				dir := t.TempDir()
				in, exe := filepath.Join(dir, "m.c"), filepath.Join(dir, "m")
				writeFile(t, in, src.String())
				args := append([]string{"-O2", "-march=" + m.March, "-o", exe, in, "-lm"}, cc.flags...)
				if out, err := exec.Command(cc.cmd, args...).CombinedOutput(); err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				out, err := exec.Command(exe).Output()
				if err != nil {
					t.Fatal(err)
				}
				sc := bufio.NewScanner(bytes.NewReader(out))
				n, bad := 0, 0
				for sc.Scan() {
					var lanes int
					var e, f, s, h float64
					if _, err := fmt.Sscanf(strings.ReplaceAll(sc.Text(), "-nan", "nan"), "%d %v %v %v %v", &lanes, &e, &f, &s, &h); err != nil {
						t.Fatalf("line %q: %v", sc.Text(), err)
					}
					x := float64(xs[n%len(xs)])
					n++
					for _, c := range []struct {
						fn        string
						got, want float64
						ok        bool
					}{
						{"exp", e, math.Exp(x), ulps(e, math.Exp(x)) <= 2},
						{"erf", f, math.Erf(x), math.Abs(f-math.Erf(x)) <= 3e-7 && (math.Abs(x) >= 0.5 || ulps(f, math.Erf(x)) <= 3)},
						{"sigmoid", s, 1 / (1 + math.Exp(-x)), ulps(s, 1/(1+math.Exp(-x))) <= 3},
						{"tanh", h, math.Tanh(x), ulps(h, math.Tanh(x)) <= 3},
					} {
						if math.IsNaN(c.want) {
							c.ok = math.IsNaN(c.got)
						} else if w32 := float64(float32(c.want)); math.IsInf(w32, 0) || w32 == 0 || math.Abs(c.want) < 0x1p-126 {
							// overflow, underflow, subnormals: exp is +inf
							// for overflow and 0 below FLT_MIN (as tsr_expf);
							// sigmoid, like the scalar 1/(1+expf(−x)), may
							// round a subnormal to 0
							c.ok = c.got == float64(float32(c.want)) || math.Abs(c.got-c.want) <= 0x1p-149 ||
								c.fn == "exp" && c.got == 0 && c.want < 0x1p-126 ||
								c.fn == "sigmoid" && math.Abs(c.got-c.want) < 0x1p-126
						}
						if !c.ok {
							if bad++; bad <= 10 || bad%2000 == 0 {
								t.Errorf("%d lanes: %s(%g) = %g, want %g", lanes, c.fn, x, c.got, c.want)
							}
						}
					}
				}
				if n != runs*len(xs) {
					t.Fatalf("%d results for %d inputs at %d lane counts", n, len(xs), runs)
				}
				if bad > 0 {
					t.Errorf("%d results out of bounds", bad)
				}
			})
		}
	}
}

// ulps returns |got − want| in float32 ulps of want.
func ulps(got, want float64) float64 {
	w := float32(want)
	if w == 0 {
		return math.Abs(got) / 0x1p-149
	}
	ulp := math.Abs(float64(math.Nextafter32(w, float32(math.Inf(1)))) - float64(w))
	return math.Abs(got-want) / ulp
}

// TestVectorMathTable: the functions tir.MathFuncs marks Vector are those
// vectorHelpers computes on whole vectors (a polynomial, or a bit mask:
// fabs, nan0); every other one is a call per lane, which package sketch does not
// vectorize small loops for.
func TestVectorMathTable(t *testing.T) {
	for fn, mf := range tir.MathFuncs {
		if whole := polynomial[fn] || bitMask[fn]; whole != mf.Vector {
			t.Errorf("%s: tir.MathFuncs says Vector %v, codegen computes it on whole vectors: %v", fn, mf.Vector, whole)
		}
	}
}
