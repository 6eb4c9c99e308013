package te

import (
	"fmt"
	"math"

	"github.com/tessera-ml/tessera/tir"
)

// Winograd convolution F(m×m, 3×3) (Lavin and Gray, "Fast Algorithms for
// Convolutional Neural Networks"), the second compute definition of a 3×3
// stride-1 convolution. With α = m+2, every m×m output tile comes from an
// α×α input tile d:
//
//	Y = Aᵀ [ (G g Gᵀ) ⊙ (Bᵀ d B) ] A
//
// U = G g Gᵀ depends on the weights only: it is computed once when the model
// is built (WinogradWeights), and the kernel reads it as a constant
// [α, α, C, K]. The kernel's stages are
//
//	name_pad        the input padded to whole tiles (when needed)
//	name_data_pack  V[a,b,c,p] = Σ_{i,j} Bᵀ[a,i] d_{c,p}[i,j] B[j,b]
//	name_bgemm      M[a,b,k,p] = Σ_c U[a,b,c,k] V[a,b,c,p]   (α² GEMMs)
//	name_inverse    Y[k,p,u,v] = Σ_{i,j} Aᵀ[u,i] M[i,j,k,p] A[j,v]
//	name            out[n,k,h,w] = Y[k, tile(n,h,w), h mod m, w mod m]
//
// where p numbers the tiles. The transform matrices are constant tensors
// (ConstMatrix): the sketch rule for computation with constant tensors
// unrolls the small reductions over them, and the generated code keeps only
// the terms whose coefficient is not zero.

// winogradMatrices are Aᵀ (m×α), G (α×3) and Bᵀ (α×α) for F(m, 3), from the
// interpolation points 0, ±1 (m=2) and 0, ±1, ±2 (m=4), with the point at
// infinity.
var winogradMatrices = map[int]struct{ AT, G, BT [][]float64 }{
	2: {
		AT: [][]float64{{1, 1, 1, 0}, {0, 1, -1, -1}},
		G:  [][]float64{{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}},
		BT: [][]float64{{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}},
	},
	4: {
		AT: [][]float64{
			{1, 1, 1, 1, 1, 0},
			{0, 1, -1, 2, -2, 0},
			{0, 1, 1, 4, 4, 0},
			{0, 1, -1, 8, -8, 1},
		},
		G: [][]float64{
			{1.0 / 4, 0, 0},
			{-1.0 / 6, -1.0 / 6, -1.0 / 6},
			{-1.0 / 6, 1.0 / 6, -1.0 / 6},
			{1.0 / 24, 1.0 / 12, 1.0 / 6},
			{1.0 / 24, -1.0 / 12, 1.0 / 6},
			{0, 0, 1},
		},
		BT: [][]float64{
			{4, 0, -5, 0, 1, 0},
			{0, -4, -4, 1, 1, 0},
			{0, 4, -4, -1, 1, 0},
			{0, -2, -1, 2, 1, 0},
			{0, 2, -1, -2, 1, 0},
			{0, 4, 0, -5, 0, 1},
		},
	},
}

// WinogradTileSizes lists the m of the F(m×m, 3×3) variants there are.
func WinogradTileSizes() []int { return []int{2, 4} }

// WinogradTolerance is the relative error (against the largest output
// magnitude) a Winograd F(m×m, 3×3) kernel is allowed against the direct
// convolution with c input channels, both in float32. The transforms scale
// values by up to the largest row sums of the matrices (‖Bᵀ‖∞ = 10, ‖Aᵀ‖∞
// = 19 for m=4; 2 and 3 for m=2), and the float32 roundings of the
// transformed terms do not cancel as they would in exact arithmetic. The
// bound is the product of the three matrices' row-sum norms times the
// float32 ulp (2⁻²³) and the square root of the direct reduction length
// 9c (rounding errors add like a random walk): m=2 gives 9·2⁻²³·√(9c), m=4
// 95·2⁻²³·√(9c). The errors measured in float32 (winograd_test.go, c from
// 16 to 256) are 50 to 100 times smaller.
func WinogradTolerance(m, c int) float64 {
	w, ok := winogradMatrices[m]
	if !ok {
		return 0
	}
	rowSum := func(mat [][]float64) float64 {
		best := 0.0
		for _, row := range mat {
			s := 0.0
			for _, v := range row {
				s += math.Abs(v)
			}
			best = max(best, s)
		}
		return best
	}
	growth := rowSum(w.AT) * rowSum(w.BT) * rowSum(w.G)
	return growth * 0x1p-23 * math.Sqrt(float64(9*c))
}

// ConstMatrix defines a small constant matrix as a compute tensor: its body
// chooses the entry by comparing the indices with constants, so once the
// loops that index it are unrolled the entry is a literal. The tensor keeps
// the values in Matrix for the rules that look for constant tensors.
func ConstMatrix(name string, m [][]float64) *Tensor {
	rows, cols := len(m), len(m[0])
	t := Compute(name, []int{rows, cols}, func(i []tir.Expr) tir.Expr {
		var e tir.Expr = tir.F32(0)
		for r := rows - 1; r >= 0; r-- {
			var row tir.Expr = tir.F32(0)
			for c := cols - 1; c >= 0; c-- {
				if m[r][c] != 0 {
					row = tir.SelectE(tir.Cmp(tir.EQ, i[1], Idx(c)), tir.F32(m[r][c]), row)
				}
			}
			e = tir.SelectE(tir.Cmp(tir.EQ, i[0], Idx(r)), row, e)
		}
		return e
	})
	t.Matrix = m
	return t
}

// ScaleByConst returns x·c where a zero coefficient drops the term whatever
// x is: select(c ≠ 0, x·c, 0). Reductions over constant matrices use it so
// that the straight-line code, which leaves zero terms out, computes exactly
// what the reference evaluator does.
func ScaleByConst(x, c tir.Expr) tir.Expr {
	return tir.SelectE(tir.Cmp(tir.NE, c, tir.F32(0)), tir.MulE(x, c), tir.F32(0))
}

// WinogradWeights transforms 3×3 convolution weights w [K, C, 3, 3]
// (row-major) into U [α, α, C, K] for F(m×m, 3×3): U[a,b,c,k] = Σ_{i,j}
// G[a,i] w[k,c,i,j] G[b,j], computed in float64 and rounded once.
func WinogradWeights(w []float32, K, C, m int) ([]float32, error) {
	mats, ok := winogradMatrices[m]
	if !ok {
		return nil, fmt.Errorf("winograd: no F(%d, 3) (tile sizes: %v)", m, WinogradTileSizes())
	}
	if len(w) != K*C*9 {
		return nil, fmt.Errorf("winograd: weights hold %d values, want %d×%d×3×3", len(w), K, C)
	}
	a := m + 2
	g := mats.G
	u := make([]float32, a*a*C*K)
	var tmp [6][3]float64
	for k := range K {
		for c := range C {
			wk := w[(k*C+c)*9:]
			for x := range a { // tmp = G g
				for j := range 3 {
					s := 0.0
					for i := range 3 {
						s += g[x][i] * float64(wk[i*3+j])
					}
					tmp[x][j] = s
				}
			}
			for x := range a { // U = tmp Gᵀ
				for y := range a {
					s := 0.0
					for j := range 3 {
						s += tmp[x][j] * g[y][j]
					}
					u[((x*a+y)*C+c)*K+k] = float32(s)
				}
			}
		}
	}
	return u, nil
}

// WinogradConv2D is the F(m×m, 3×3) convolution of x [N, C, H, W] with the
// transformed weights u [α, α, C, K] (WinogradWeights), unit strides and
// dilations, pads [top, left, bottom, right]; the output is [N, K, OH, OW]
// as Conv's. See the stage list above.
func WinogradConv2D(name string, x, u *Tensor, m int, pads []int) (*Tensor, error) {
	return WinogradConv2DWith(name, x, u, WinogradOptions{M: m, Pads: pads})
}

// WinogradConv2DNHWC is WinogradConv2D on channels-last activations: x [N,
// H, W, C], output [N, OH, OW, K]. Its stages keep the channels innermost
// too: data_pack [α, α, P, C] (vector loads of the input's channels),
// bgemm [α, α, P, K] (the GEMMs vectorize over K, as U is [.., C, K]),
// inverse [P, m, m, K].
func WinogradConv2DNHWC(name string, x, u *Tensor, m int, pads []int) (*Tensor, error) {
	return WinogradConv2DWith(name, x, u, WinogradOptions{M: m, Pads: pads, NHWC: true})
}

// WinogradConv2DNHWCPairs is WinogradConv2DNHWC in the bf16 precision:
// the data pack rounded to bfloat16 (to nearest, ties to even) by a stage
// of its own, name_data_pack_bf16, and each GEMM summing pairs of adjacent
// channels in its body, the form of the bf16 dot-product instructions
// (ConvNHWCDot's); u holds bfloat16 values (the transformed weights
// rounded, read through a float32 view) and C must be even.
func WinogradConv2DNHWCPairs(name string, x, u *Tensor, m int, pads []int) (*Tensor, error) {
	return WinogradConv2DWith(name, x, u, WinogradOptions{M: m, Pads: pads, NHWC: true, Pairs: true})
}

// WinogradOptions select the form of a Winograd convolution.
type WinogradOptions struct {
	M         int   // the output tile: F(M×M, 3×3)
	Pads      []int // [top, left, bottom, right]
	Dilations []int // [rows, columns]; nil: 1, 1
	NHWC      bool  // channels-last input and output (WinogradConv2DNHWC)
	Pairs     bool  // the bf16 form (WinogradConv2DNHWCPairs); needs NHWC
}

// A dilated convolution by phases. With dilation d along an axis, the
// output positions d·y' + r (one phase per residue r < d) read the input
// only at d·(y' + k) + r − pad: each phase is an undilated 3×3
// convolution of the input taken every d-th row from row r, the way
// TensorFlow computes an atrous convolution (space to batch). The tiles
// of every phase are tiles of the one Winograd computation, numbered
// p = ((((n·dh + rh)·dw + rw)·nH + ty)·nW + tx) over the phases' tile
// grid (nH·m rows per phase, the largest phase rounded up to whole
// tiles): the data pack reads the padded input at rows dh·(m·ty + i) + rh,
// and the output at (y, x) reads tile (y/dh/m, x/dw/m) of its phase (y
// mod dh, x mod dw). With d = 1 this is the undilated form, expression for
// expression.

// WinogradConv2DWith is the F(m×m, 3×3) convolution of x with the
// transformed weights u [α, α, C, K] (WinogradWeights) in the form o
// selects: unit strides, dilations o.Dilations (by phases, above).
func WinogradConv2DWith(name string, x, u *Tensor, o WinogradOptions) (*Tensor, error) {
	m, pads, nhwc, pairs := o.M, o.Pads, o.NHWC, o.Pairs
	mats, ok := winogradMatrices[m]
	if !ok {
		return nil, opError("WinogradConv2D", name, "no F(%d, 3) (tile sizes: %v)", m, WinogradTileSizes())
	}
	if pairs && !nhwc {
		return nil, opError("WinogradConv2D", name, "pairs of channels need channels-last data")
	}
	if pairs && len(x.Shape) == 4 && x.Shape[3]%2 != 0 {
		return nil, opError("WinogradConv2D", name, "pairs of channels over %d channels", x.Shape[3])
	}
	dh, dw := 1, 1
	if o.Dilations != nil {
		if len(o.Dilations) != 2 || o.Dilations[0] < 1 || o.Dilations[1] < 1 {
			return nil, opError("WinogradConv2D", name, "dilations %v, want [rows, columns] of at least 1", o.Dilations)
		}
		dh, dw = o.Dilations[0], o.Dilations[1]
	}
	a := m + 2
	if len(x.Shape) != 4 || len(u.Shape) != 4 {
		return nil, opError("WinogradConv2D", name, "input %v and transformed weights %v must be 4-D", x.Shape, u.Shape)
	}
	// ax are the positions of the channel and spatial axes of x.
	axC, axH, axW := 1, 2, 3
	if nhwc {
		axC, axH, axW = 3, 1, 2
	}
	N, C, H, W, K := x.Shape[0], x.Shape[axC], x.Shape[axH], x.Shape[axW], u.Shape[3]
	if u.Shape[0] != a || u.Shape[1] != a || u.Shape[2] != C {
		return nil, opError("WinogradConv2D", name, "input %v and transformed weights %v do not fit F(%d, 3)", x.Shape, u.Shape, m)
	}
	if len(pads) != 4 {
		return nil, opError("WinogradConv2D", name, "pads %v, want [top, left, bottom, right]", pads)
	}
	OH, OW := H+pads[0]+pads[2]-2*dh, W+pads[1]+pads[3]-2*dw
	if OH <= 0 || OW <= 0 {
		return nil, opError("WinogradConv2D", name, "input %v with pads %v is smaller than the kernel", x.Shape, pads)
	}
	// nH, nW: the tiles of the largest phase (of the output, undilated).
	nH, nW := ((OH+dh-1)/dh+m-1)/m, ((OW+dw-1)/dw+m-1)/m
	P := N * dh * dw * nH * nW
	// at builds an index of x (or of the padded input) from the batch,
	// channel, row and column.
	at := func(n, c, h, w tir.Expr) []tir.Expr {
		if nhwc {
			return []tir.Expr{n, h, w, c}
		}
		return []tir.Expr{n, c, h, w}
	}
	// The input padded to whole tiles: rows [-top, dh·(nH·m+2)-top).
	pad := x
	PH, PW := dh*(nH*m+2), dw*(nW*m+2)
	if pads[0] > 0 || pads[1] > 0 || PH != H || PW != W {
		shape := append([]int(nil), x.Shape...)
		shape[axH], shape[axW] = PH, PW
		pad = Compute(name+"_pad", shape, func(i []tir.Expr) tir.Expr {
			h, w := i[axH], i[axW]
			var inside tir.Expr
			if pads[0] > 0 {
				inside = andCond(inside, tir.Cmp(tir.GE, h, Idx(pads[0])))
			}
			if PH > pads[0]+H {
				inside = andCond(inside, tir.Cmp(tir.LT, h, Idx(pads[0]+H)))
			}
			if pads[1] > 0 {
				inside = andCond(inside, tir.Cmp(tir.GE, w, Idx(pads[1])))
			}
			if PW > pads[1]+W {
				inside = andCond(inside, tir.Cmp(tir.LT, w, Idx(pads[1]+W)))
			}
			v := x.At(at(i[0], i[axC], iaddc(h, -pads[0]), iaddc(w, -pads[1]))...)
			if inside == nil {
				return v
			}
			return tir.SelectE(inside, v, tir.F32(0))
		})
	}
	bt := ConstMatrix(name+"_BT", mats.BT)
	atm := ConstMatrix(name+"_AT", mats.AT)
	// tile p = ((((n·dh + rh)·dw + rw)·nH + ty)·nW + tx); row and col
	// give the padded input's row and column of a tile's element i.
	tileN := func(p tir.Expr) tir.Expr { return idivc(p, dh*dw*nH*nW) }
	tileY := func(p tir.Expr) tir.Expr { return imodc(idivc(p, nW), nH) }
	tileX := func(p tir.Expr) tir.Expr { return imodc(p, nW) }
	row := func(p, i tir.Expr) tir.Expr {
		r := iadd(imulc(tileY(p), m), i)
		if dh == 1 {
			return r
		}
		return iadd(imulc(r, dh), imodc(idivc(p, dw*nH*nW), dh))
	}
	col := func(p, j tir.Expr) tir.Expr {
		c := iadd(imulc(tileX(p), m), j)
		if dw == 1 {
			return c
		}
		return iadd(imulc(c, dw), imodc(idivc(p, nH*nW), dw))
	}
	// tileOf is the tile of output position (n, h, w).
	tileOf := func(n, h, w tir.Expr) tir.Expr {
		if dh == 1 && dw == 1 {
			return iadd(imulc(iadd(imulc(n, nH), idivc(h, m)), nW), idivc(w, m))
		}
		phase := iadd(imulc(iadd(imulc(n, dh), imodc(h, dh)), dw), imodc(w, dw))
		return iadd(imulc(iadd(imulc(phase, nH), idivc(idivc(h, dh), m)), nW), idivc(idivc(w, dw), m))
	}
	// inTile is the position of output coordinate h within its tile, along
	// an axis of dilation d.
	inTile := func(h tir.Expr, d int) tir.Expr {
		if d == 1 {
			return imodc(h, m)
		}
		return imodc(idivc(h, d), m)
	}
	// The stages' index orders: (a, b, c, p) and (a, b, k, p) for NCHW,
	// (a, b, p, c) and (a, b, p, k) for NHWC.
	packShape, gemmShape := []int{a, a, C, P}, []int{a, a, K, P}
	cp := func(i []tir.Expr) (c, p tir.Expr) { return i[2], i[3] }
	if nhwc {
		packShape, gemmShape = []int{a, a, P, C}, []int{a, a, P, K}
		cp = func(i []tir.Expr) (c, p tir.Expr) { return i[3], i[2] }
	}
	packAt := func(a, b, c, p tir.Expr) []tir.Expr {
		if nhwc {
			return []tir.Expr{a, b, p, c}
		}
		return []tir.Expr{a, b, c, p}
	}
	dataPack := Reduce(name+"_data_pack", packShape, Sum, []int{a, a}, func(i, r []tir.Expr) tir.Expr {
		c, p := cp(i)
		d := pad.At(at(tileN(p), c, row(p, r[0]), col(p, r[1]))...)
		return ScaleByConst(d, tir.MulE(bt.At(i[0], r[0]), bt.At(i[1], r[1])))
	})
	var bgemm *Tensor
	if pairs {
		rounded := Compute(name+"_data_pack_bf16", packShape, func(i []tir.Expr) tir.Expr {
			return &tir.Cast{To: tir.BFloat16, X: dataPack.At(i...)}
		})
		bgemm = Reduce(name+"_bgemm", gemmShape, Sum, []int{C / 2}, func(i, r []tir.Expr) tir.Expr {
			k, p := cp(i)
			var sum tir.Expr
			for j := range 2 {
				c := iaddc(imulc(r[0], 2), j)
				t := tir.MulE(&tir.Cast{To: tir.Float32, X: rounded.At(packAt(i[0], i[1], c, p)...)}, u.At(i[0], i[1], c, k))
				if sum == nil {
					sum = t
				} else {
					sum = tir.AddE(sum, t)
				}
			}
			return sum
		})
	} else {
		bgemm = Reduce(name+"_bgemm", gemmShape, Sum, []int{C}, func(i, r []tir.Expr) tir.Expr {
			k, p := cp(i)
			return tir.MulE(u.At(i[0], i[1], r[0], k), dataPack.At(packAt(i[0], i[1], r[0], p)...))
		})
	}
	var inverse, out *Tensor
	if nhwc {
		inverse = Reduce(name+"_inverse", []int{P, m, m, K}, Sum, []int{a, a}, func(i, r []tir.Expr) tir.Expr {
			return ScaleByConst(bgemm.At(r[0], r[1], i[0], i[3]), tir.MulE(atm.At(i[1], r[0]), atm.At(i[2], r[1])))
		})
		out = Compute(name, []int{N, OH, OW, K}, func(i []tir.Expr) tir.Expr {
			return inverse.At(tileOf(i[0], i[1], i[2]), inTile(i[1], dh), inTile(i[2], dw), i[3])
		})
		return out, nil
	}
	inverse = Reduce(name+"_inverse", []int{K, P, m, m}, Sum, []int{a, a}, func(i, r []tir.Expr) tir.Expr {
		return ScaleByConst(bgemm.At(r[0], r[1], i[0], i[1]), tir.MulE(atm.At(i[2], r[0]), atm.At(i[3], r[1])))
	})
	out = Compute(name, []int{N, K, OH, OW}, func(i []tir.Expr) tir.Expr {
		return inverse.At(i[1], tileOf(i[0], i[2], i[3]), inTile(i[2], dh), inTile(i[3], dw))
	})
	return out, nil
}
