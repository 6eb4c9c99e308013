package te

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/tir"
)

// TestWinogradMatchesDirect evaluates F(2,3) and F(4,3) convolutions with
// the reference evaluator against the direct convolution (both float32) on
// shapes with partial tiles and every padding, and checks the error against
// WinogradTolerance.
func TestWinogradMatchesDirect(t *testing.T) {
	cases := []struct {
		n, c, h, w, k int
		pads          []int
	}{
		{1, 3, 8, 8, 4, []int{1, 1, 1, 1}},
		{1, 5, 7, 7, 3, []int{1, 1, 1, 1}},    // partial tiles
		{2, 4, 9, 6, 2, []int{0, 0, 0, 0}},    // no padding, batch
		{1, 16, 14, 14, 8, []int{1, 0, 2, 1}}, // uneven padding
		{1, 64, 6, 6, 4, []int{1, 1, 1, 1}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, m := range WinogradTileSizes() {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("F%d/%v", m, tc), func(t *testing.T) {
				xv := randomData(rng, tc.n*tc.c*tc.h*tc.w)
				wv := randomData(rng, tc.k*tc.c*9)
				x := Placeholder("x", tc.n, tc.c, tc.h, tc.w)
				checkWinograd(t, Conv, x, xv, wv, tc.k, tc.c, ConvAttrs{Pads: tc.pads}, WinogradOptions{M: m, Pads: tc.pads})
			})
		}
	}
}

// TestWinogradDilatedMatchesDirect: a dilated convolution by phases
// (WinogradOptions.Dilations), NCHW and NHWC, equals the direct dilated
// convolution within WinogradTolerance: phases of equal and unequal sizes
// (an output side d does not divide), different dilations along the two
// axes, pads from 0 to 2d, a batch.
func TestWinogradDilatedMatchesDirect(t *testing.T) {
	cases := []struct {
		n, c, h, w, k int
		pads, dil     []int
	}{
		{1, 3, 8, 8, 4, []int{2, 2, 2, 2}, []int{2, 2}},
		{1, 5, 9, 7, 3, []int{2, 3, 2, 3}, []int{2, 3}},   // unequal phases, dilations
		{2, 4, 12, 10, 2, []int{4, 4, 4, 4}, []int{4, 4}}, // batch
		{1, 6, 11, 13, 5, []int{0, 1, 3, 0}, []int{2, 2}}, // uneven pads
		{1, 4, 10, 9, 3, []int{1, 1, 1, 1}, []int{1, 3}},  // undilated rows
		{1, 16, 28, 28, 8, []int{4, 4, 4, 4}, []int{4, 4}},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, m := range WinogradTileSizes() {
		for _, tc := range cases {
			for _, nhwc := range []bool{false, true} {
				t.Run(fmt.Sprintf("F%d/%v/nhwc=%v", m, tc, nhwc), func(t *testing.T) {
					xv := randomData(rng, tc.n*tc.c*tc.h*tc.w)
					wv := randomData(rng, tc.k*tc.c*9)
					conv, x := Conv, Placeholder("x", tc.n, tc.c, tc.h, tc.w)
					xin := xv
					if nhwc {
						conv, x = ConvNHWC, Placeholder("x", tc.n, tc.h, tc.w, tc.c)
						xin = toNHWC(xv, tc.n, tc.c, tc.h, tc.w)
					}
					checkWinograd(t, conv, x, xin, wv, tc.k, tc.c, ConvAttrs{Pads: tc.pads, Dilations: tc.dil},
						WinogradOptions{M: m, Pads: tc.pads, Dilations: tc.dil, NHWC: nhwc})
				})
			}
		}
	}
	x := Placeholder("x", 1, 4, 8, 8)
	for _, dil := range [][]int{{0, 1}, {2}, {1, -1}} {
		if _, err := WinogradConv2DWith("bad", x, Constant("u", 4, 4, 4, 2), WinogradOptions{M: 2, Pads: []int{1, 1, 1, 1}, Dilations: dil}); err == nil {
			t.Errorf("dilations %v accepted", dil)
		}
	}
}

// checkWinograd compares the Winograd form o of the convolution of x
// (data xin) by k filters of c channels (wv) with the direct convolution
// conv with attrs, within WinogradTolerance.
func checkWinograd(t *testing.T, conv func(string, *Tensor, *Tensor, *Tensor, ConvAttrs) (*Tensor, error), x *Tensor, xin, wv []float32, k, c int, attrs ConvAttrs, o WinogradOptions) {
	t.Helper()
	direct, want := evalDirectWith(t, conv, x, Constant("w", k, c, 3, 3), attrs, xin, wv)
	uv, err := WinogradWeights(wv, k, c, o.M)
	if err != nil {
		t.Fatal(err)
	}
	wino, err := WinogradConv2DWith("wino", x, Constant("u", o.M+2, o.M+2, c, k), o)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(wino.Shape) != fmt.Sprint(direct.Shape) {
		t.Fatalf("shape %v, direct %v", wino.Shape, direct.Shape)
	}
	wd, err := NewDAG(wino)
	if err != nil {
		t.Fatal(err)
	}
	worst, scale := winogradError(t, wd, xin, uv, want[0])
	tol := WinogradTolerance(o.M, c)
	t.Logf("max error %.3g of %.3g (relative %.3g, tolerance %.3g)", worst, scale, worst/scale, tol)
	if !(worst <= tol*scale) {
		t.Errorf("max error %.3g exceeds %.3g × %.3g", worst, tol, scale)
	}
}

func randomData(rng *rand.Rand, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(rng.Float64()*2 - 1)
	}
	return out
}

func TestWinogradErrors(t *testing.T) {
	x := Placeholder("x", 1, 4, 8, 8)
	if _, err := WinogradConv2D("bad", x, Constant("u", 4, 4, 4, 2), 3, []int{1, 1, 1, 1}); err == nil {
		t.Error("F(3,3) accepted")
	}
	if _, err := WinogradConv2D("bad", x, Constant("u", 4, 4, 5, 2), 2, []int{1, 1, 1, 1}); err == nil {
		t.Error("channel mismatch accepted")
	}
	if _, err := WinogradWeights(make([]float32, 10), 2, 2, 2); err == nil {
		t.Error("short weights accepted")
	}
}

// winogradF32 computes the F(m×m, 3×3) convolution of one image (no
// padding) entirely in float32, in the order a kernel does: data pack,
// products summed over channels, inverse transform.
func winogradF32(x []float32, C, H, W int, u []float32, K, m int) []float32 {
	mats := winogradMatrices[m]
	a := m + 2
	f := func(mat [][]float64, i, j int) float32 { return float32(mat[i][j]) }
	OH, OW := H-2, W-2
	out := make([]float32, K*OH*OW)
	for ty := 0; ty+a <= H; ty += m {
		for tx := 0; tx+a <= W; tx += m {
			v := make([]float32, a*a*C)
			for c := range C {
				for i := range a {
					for j := range a {
						var s float32
						for r := range a {
							for q := range a {
								s += f(mats.BT, i, r) * x[(c*H+ty+r)*W+tx+q] * f(mats.BT, j, q)
							}
						}
						v[(i*a+j)*C+c] = s
					}
				}
			}
			for k := range K {
				mm := make([]float32, a*a)
				for e := range a * a {
					var s float32
					for c := range C {
						s += u[(e*C+c)*K+k] * v[e*C+c]
					}
					mm[e] = s
				}
				for y := range m {
					for z := range m {
						var s float32
						for r := range a {
							for q := range a {
								s += f(mats.AT, y, r) * mm[r*a+q] * f(mats.AT, z, q)
							}
						}
						if ty+y < OH && tx+z < OW {
							out[(k*OH+ty+y)*OW+tx+z] = s
						}
					}
				}
			}
		}
	}
	return out
}

// TestWinogradFloat32Error measures the float32 Winograd error against the
// direct convolution in float64, for channel counts of ResNet's layers, and
// checks it against WinogradTolerance.
func TestWinogradFloat32Error(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, m := range WinogradTileSizes() {
		for _, C := range []int{16, 64, 256} {
			H, W, K := 2*m+2, 2*m+2, 4
			x := randomData(rng, C*H*W)
			w := randomData(rng, K*C*9)
			u, err := WinogradWeights(w, K, C, m)
			if err != nil {
				t.Fatal(err)
			}
			got := winogradF32(x, C, H, W, u, K, m)
			OH, OW := H-2, W-2
			scale, worst := 0.0, 0.0
			for k := range K {
				for y := range OH {
					for z := range OW {
						s := 0.0
						for c := range C {
							for i := range 3 {
								for j := range 3 {
									s += float64(x[(c*H+y+i)*W+z+j]) * float64(w[((k*C+c)*3+i)*3+j])
								}
							}
						}
						scale = max(scale, math.Abs(s))
						worst = max(worst, math.Abs(float64(got[(k*OH+y)*OW+z])-s))
					}
				}
			}
			tol := WinogradTolerance(m, C)
			t.Logf("F(%d,3) C=%d: relative error %.3g, tolerance %.3g", m, C, worst/scale, tol)
			if !(worst <= tol*scale) {
				t.Errorf("F(%d,3) C=%d: relative error %.3g exceeds tolerance %.3g", m, C, worst/scale, tol)
			}
		}
	}
}

// TestWinogradPairsMatchDirect: the bf16 precision's Winograd F(2×2)
// (WinogradConv2DNHWCPairs: the data pack rounded to bfloat16, pairs of
// channels summed per GEMM step, the transformed weights rounded) stays
// within bfloat16's rounding of the direct float32 convolution: 2⁻⁶ of
// the largest output, four times what it measures. Rounding the data pack
// makes it differ from the float32 Winograd form.
func TestWinogradPairsMatchDirect(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		h, w, c, k int
		pads       []int
	}{
		{8, 8, 4, 16, []int{1, 1, 1, 1}},
		{7, 9, 32, 8, []int{1, 1, 1, 1}}, // partial tiles
		{6, 6, 64, 16, []int{0, 0, 0, 0}},
	} {
		t.Run(fmt.Sprint(tc), func(t *testing.T) {
			xv := randomData(rng, tc.h*tc.w*tc.c)
			wv := randomData(rng, tc.k*tc.c*9)
			x := Placeholder("x", 1, tc.h, tc.w, tc.c)
			_, want := evalDirect(t, ConvNHWC, x, Constant("w", tc.k, tc.c, 3, 3), tc.pads, xv, wv)
			uv, err := WinogradWeights(wv, tc.k, tc.c, 2)
			if err != nil {
				t.Fatal(err)
			}
			for i, f := range uv {
				uv[i] = tir.RoundBFloat16(f)
			}
			u := Constant("u", 4, 4, tc.c, tc.k)
			wino, err := WinogradConv2DNHWCPairs("wino", x, u, 2, tc.pads)
			if err != nil {
				t.Fatal(err)
			}
			wd, err := NewDAG(wino)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(wd.String(), "bfloat16(") || !strings.Contains(wd.String(), fmt.Sprintf("sum(r0:%d)", tc.c/2)) {
				t.Errorf("no rounded data pack summed in pairs:\n%s", wd)
			}
			worst, scale := winogradError(t, wd, xv, uv, want[0])
			tol := math.Pow(2, -6) // measured: 0.3–0.5%
			t.Logf("max error %.3g of %.3g (relative %.3g, tolerance %.3g)", worst, scale, worst/scale, tol)
			if !(worst <= tol*scale) || worst == 0 {
				t.Errorf("max error %.3g: want within %.3g × %.3g and not 0 (rounded)", worst, tol, scale)
			}
		})
	}
	if _, err := WinogradConv2DNHWCPairs("odd", Placeholder("x", 1, 6, 6, 3), Constant("u", 4, 4, 3, 8), 2, []int{1, 1, 1, 1}); err == nil {
		t.Error("3 channels: no error")
	}
}

// winogradError evaluates Winograd DAG wd on data xv (its input x) and
// transformed weights uv (u) and returns its largest difference from want
// and the largest |want|.
func winogradError(t *testing.T, wd *DAG, xv, uv, want []float32) (worst, scale float64) {
	t.Helper()
	ins := make([][]float32, len(wd.Inputs))
	for i, in := range wd.Inputs {
		ins[i] = map[string][]float32{"x": xv, "u": uv}[in.Name]
	}
	got, err := wd.Eval(ins)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		scale = max(scale, math.Abs(float64(want[i])))
		worst = max(worst, math.Abs(float64(got[0][i]-want[i])))
	}
	return worst, scale
}

// evalDirect evaluates the direct convolution conv (Conv or ConvNHWC) of x
// and w with pads on data xv and weights wv: the reference the Winograd
// forms are compared with.
func evalDirect(t *testing.T, conv func(string, *Tensor, *Tensor, *Tensor, ConvAttrs) (*Tensor, error), x, w *Tensor, pads []int, xv, wv []float32) (*Tensor, [][]float32) {
	t.Helper()
	return evalDirectWith(t, conv, x, w, ConvAttrs{Pads: pads}, xv, wv)
}

// evalDirectWith is evalDirect with any attributes (dilations).
func evalDirectWith(t *testing.T, conv func(string, *Tensor, *Tensor, *Tensor, ConvAttrs) (*Tensor, error), x, w *Tensor, attrs ConvAttrs, xv, wv []float32) (*Tensor, [][]float32) {
	t.Helper()
	direct, err := conv("direct", x, w, nil, attrs)
	if err != nil {
		t.Fatal(err)
	}
	dd, err := NewDAG(direct)
	if err != nil {
		t.Fatal(err)
	}
	want, err := dd.Eval([][]float32{xv, wv})
	if err != nil {
		t.Fatal(err)
	}
	return direct, want
}
