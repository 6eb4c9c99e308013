package te

import "github.com/tessera-ml/tessera/tir"

// GridSample is ONNX GridSample for 2-D images: x [N, C, H, W] sampled at
// the grid's points g [N, Ho, Wo, 2] (x then y, normalized to [-1, 1]) into
// [N, C, Ho, Wo]. mode is "bilinear" (or "linear"), "nearest" (rounding
// half to even) or "bicubic" ("cubic", A = −0.75); padding is "zeros",
// "border" (coordinates clamped to the image) or "reflection" (reflected
// at its edges); alignCorners maps ±1 to the corner pixels' centers rather
// than their outer edges. As ONNX's reference does, border and reflection
// move the sampling point first, and each tap outside the image then reads
// 0 (zeros), its nearest pixel (border) or its reflection (reflection).
// Every load is clamped into the image, so no grid value makes a kernel
// read out of bounds.
func GridSample(name string, x, grid *Tensor, mode, padding string, alignCorners bool) (*Tensor, error) {
	name = orDefault(name, "grid_sample")
	if err := checkInputs("GridSample", name, x, grid); err != nil {
		return nil, err
	}
	if len(x.Shape) != 4 || len(grid.Shape) != 4 || grid.Shape[0] != x.Shape[0] || grid.Shape[3] != 2 {
		return nil, opError("GridSample", name, "input %v and grid %v: want [N, C, H, W] and [N, Ho, Wo, 2]", x.Shape, grid.Shape)
	}
	switch mode {
	case "bilinear", "linear", "nearest", "bicubic", "cubic":
	default:
		return nil, opError("GridSample", name, "mode %q", mode)
	}
	if padding != "zeros" && padding != "border" && padding != "reflection" {
		return nil, opError("GridSample", name, "padding_mode %q", padding)
	}
	N, C, H, W := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	out := []int{N, C, grid.Shape[1], grid.Shape[2]}
	f := func(v float64) tir.Expr { return tir.F32(v) }
	// The range a point is reflected into, per axis.
	lo, hiX, hiY := -0.5, float64(W)-0.5, float64(H)-0.5
	if alignCorners {
		lo, hiX, hiY = 0, float64(W-1), float64(H-1)
	}
	denorm := func(g tir.Expr, n int) tir.Expr {
		if alignCorners {
			return tir.MulE(tir.DivE(tir.AddE(g, f(1)), f(2)), f(float64(n-1)))
		}
		return tir.DivE(tir.SubE(tir.MulE(tir.AddE(g, f(1)), f(float64(n))), f(1)), f(2))
	}
	clampF := func(v tir.Expr, a, b float64) tir.Expr { return tir.MinE(tir.MaxE(v, f(a)), f(b)) }
	// reflect folds v into [a, b]: an even number of whole ranges beyond
	// an edge leaves the remainder measured from that edge, an odd one
	// from the other.
	reflect := func(v tir.Expr, a, b float64) tir.Expr {
		rng := f(b - a)
		below, above := tir.SubE(f(a), v), tir.SubE(v, f(b))
		fold := func(d tir.Expr, near, far float64, sign float64) tir.Expr {
			k := tir.CallE("trunc", tir.DivE(d, rng))
			r := tir.SubE(d, tir.MulE(k, rng))
			even := tir.Cmp(tir.EQ, tir.CallE("fmod", k, f(2)), f(0))
			return tir.SelectE(even, tir.AddE(f(near), tir.MulE(f(sign), r)), tir.SubE(f(far), tir.MulE(f(sign), r)))
		}
		return tir.SelectE(tir.Cmp(tir.LT, v, f(a)), fold(below, a, b, 1),
			tir.SelectE(tir.Cmp(tir.GT, v, f(b)), fold(above, b, a, -1), v))
	}
	// pixel reads x[n, c, r, col] for float row and column indices
	// (integers), as the padding mode says.
	pixel := func(i []tir.Expr, r, col tir.Expr) tir.Expr {
		if padding == "reflection" {
			r, col = reflect(r, lo, hiY), reflect(col, lo, hiX)
		}
		ri := tir.MinE(tir.MaxE(&tir.Cast{To: tir.Int, X: r}, Idx(0)), Idx(H-1))
		ci := tir.MinE(tir.MaxE(&tir.Cast{To: tir.Int, X: col}, Idx(0)), Idx(W-1))
		v := x.At(i[0], i[1], ri, ci)
		if padding != "zeros" {
			return v
		}
		inside := tir.AndE(tir.AndE(tir.Cmp(tir.GE, r, f(0)), tir.Cmp(tir.LE, r, f(float64(H-1)))),
			tir.AndE(tir.Cmp(tir.GE, col, f(0)), tir.Cmp(tir.LE, col, f(float64(W-1)))))
		return tir.SelectE(inside, v, f(0))
	}
	cubic := func(t tir.Expr) [4]tir.Expr { // the weights of the taps at −1, 0, 1, 2 for offset t in [0, 1)
		const a = -0.75
		c1 := func(d tir.Expr) tir.Expr { // |d| in [1, 2]
			return tir.SubE(tir.MulE(tir.AddE(tir.MulE(tir.SubE(tir.MulE(f(a), d), f(5*a)), d), f(8*a)), d), f(4*a))
		}
		c0 := func(d tir.Expr) tir.Expr { // |d| in [0, 1]
			return tir.AddE(tir.MulE(tir.MulE(tir.SubE(tir.MulE(f(a+2), d), f(a+3)), d), d), f(1))
		}
		s := tir.SubE(f(1), t)
		return [4]tir.Expr{c1(tir.AddE(t, f(1))), c0(t), c0(s), c1(tir.AddE(s, f(1)))}
	}
	return Compute(name, out, func(i []tir.Expr) tir.Expr {
		gx := denorm(grid.At(i[0], i[2], i[3], Idx(0)), W)
		gy := denorm(grid.At(i[0], i[2], i[3], Idx(1)), H)
		if mode == "nearest" {
			gx, gy = tir.CallE("rint", gx), tir.CallE("rint", gy)
		}
		switch padding {
		case "border":
			gx, gy = clampF(gx, 0, float64(W-1)), clampF(gy, 0, float64(H-1))
		case "reflection":
			gx, gy = reflect(gx, lo, hiX), reflect(gy, lo, hiY)
		}
		switch mode {
		case "nearest":
			return pixel(i, tir.CallE("rint", gy), tir.CallE("rint", gx))
		case "bilinear", "linear":
			x0, y0 := tir.CallE("floor", gx), tir.CallE("floor", gy)
			x1, y1 := tir.AddE(x0, f(1)), tir.AddE(y0, f(1))
			dx1, dy1 := tir.SubE(gx, x0), tir.SubE(gy, y0)
			dx0, dy0 := tir.SubE(x1, gx), tir.SubE(y1, gy)
			top := tir.AddE(tir.MulE(dx0, pixel(i, y0, x0)), tir.MulE(dx1, pixel(i, y0, x1)))
			bottom := tir.AddE(tir.MulE(dx0, pixel(i, y1, x0)), tir.MulE(dx1, pixel(i, y1, x1)))
			return tir.AddE(tir.MulE(dy0, top), tir.MulE(dy1, bottom))
		}
		x0, y0 := tir.CallE("floor", gx), tir.CallE("floor", gy)
		wx, wy := cubic(tir.SubE(gx, x0)), cubic(tir.SubE(gy, y0))
		var sum tir.Expr = f(0)
		for r := range 4 {
			var row tir.Expr = f(0)
			for k := range 4 {
				p := pixel(i, tir.AddE(y0, f(float64(r-1))), tir.AddE(x0, f(float64(k-1))))
				row = tir.AddE(row, tir.MulE(wx[k], p))
			}
			sum = tir.AddE(sum, tir.MulE(wy[r], row))
		}
		return sum
	}), nil
}
