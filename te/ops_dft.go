package te

import (
	"math"
	"slices"

	"github.com/tessera-ml/tessera/tir"
)

// DFT is ONNX DFT: x [..., L, ..., 1 or 2] holds real (last extent 1) or
// complex (2: real, imaginary) samples along axis; the result [..., N or
// N/2+1, ..., 2] is their discrete Fourier transform of length n (the
// signal cut or zero-padded to n), its inverse (divided by n) when inverse,
// and only the first n/2+1 frequencies when onesided. One reduction over
// the samples; the angle 2π·(k·j mod n)/n keeps the cosines exact for
// long transforms.
func DFT(name string, x *Tensor, axis, n int, inverse, onesided bool) (*Tensor, error) {
	name = orDefault(name, "dft")
	if err := checkInputs("DFT", name, x); err != nil {
		return nil, err
	}
	r := len(x.Shape)
	if r < 2 || (x.Shape[r-1] != 1 && x.Shape[r-1] != 2) {
		return nil, opError("DFT", name, "input %v: want [..., 1] (real) or [..., 2] (complex)", x.Shape)
	}
	axis, err := normAxis("DFT", name, axis, r-1)
	if err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, opError("DFT", name, "dft_length %d", n)
	}
	bins := n
	if onesided {
		bins = n/2 + 1
	}
	out := slices.Clone(x.Shape)
	out[axis], out[r-1] = bins, 2
	samples := min(n, x.Shape[axis])
	at := func(i []tir.Expr, j tir.Expr, part int) tir.Expr {
		xi := slices.Clone(i)
		xi[axis], xi[r-1] = j, Idx(part)
		return x.At(xi...)
	}
	sign, scale := -1.0, 1.0
	if inverse {
		sign, scale = 1, 1/float64(n)
	}
	return Reduce(name, out, Sum, []int{samples}, func(i, rr []tir.Expr) tir.Expr {
		return spectralTerm(i[r-1], i[axis], rr[0], n, sign, scale,
			at(i, rr[0], 0), func() tir.Expr {
				if x.Shape[r-1] == 1 {
					return nil
				}
				return at(i, rr[0], 1)
			}())
	}), nil
}

// spectralTerm is sample j's contribution to part (0 real, 1 imaginary) of
// frequency k of a transform of length n: (re + i·im)·e^{sign·2πi·kj/n}·
// scale, im nil for a real sample.
func spectralTerm(part, k, j tir.Expr, n int, sign, scale float64, re, im tir.Expr) tir.Expr {
	theta := tir.MulE(&tir.Cast{To: tir.Float32, X: imodc(tir.MulE(k, j), n)}, tir.F32(2*math.Pi/float64(n)))
	cos := tir.MulE(tir.CallE("cos", theta), tir.F32(scale))
	sin := tir.MulE(tir.CallE("sin", theta), tir.F32(sign*scale))
	// (re + i·im)(cos + i·sin): re·cos − im·sin, re·sin + im·cos
	real, imag := tir.MulE(re, cos), tir.MulE(re, sin)
	if im != nil {
		real = tir.SubE(real, tir.MulE(im, sin))
		imag = tir.AddE(imag, tir.MulE(im, cos))
	}
	return tir.SelectE(tir.Cmp(tir.EQ, part, Idx(0)), real, imag)
}

// STFT is ONNX STFT: the signal [B, L, 1 or 2] cut into frames of length
// frameLength every step samples, each multiplied by window (nil: ones)
// and transformed (onesided: the first frameLength/2+1 frequencies), into
// [B, frames, bins, 2].
func STFT(name string, x, window *Tensor, step, frameLength int, onesided bool) (*Tensor, error) {
	name = orDefault(name, "stft")
	if err := checkInputs("STFT", name, x); err != nil {
		return nil, err
	}
	if len(x.Shape) != 3 || (x.Shape[2] != 1 && x.Shape[2] != 2) {
		return nil, opError("STFT", name, "signal %v: want [batch, length, 1 or 2]", x.Shape)
	}
	if window != nil && (len(window.Shape) != 1 || window.Shape[0] != frameLength) {
		return nil, opError("STFT", name, "window %v for frames of %d", window.Shape, frameLength)
	}
	if step <= 0 || frameLength <= 0 || frameLength > x.Shape[1] {
		return nil, opError("STFT", name, "frame_step %d, frame_length %d for a signal of %d", step, frameLength, x.Shape[1])
	}
	frames := (x.Shape[1]-frameLength)/step + 1
	bins := frameLength
	if onesided {
		bins = frameLength/2 + 1
	}
	sample := func(i []tir.Expr, j tir.Expr, part int) tir.Expr {
		v := x.At(i[0], iadd(imulc(i[1], step), j), Idx(part))
		if window != nil {
			v = tir.MulE(v, window.At(j))
		}
		return v
	}
	return Reduce(name, []int{x.Shape[0], frames, bins, 2}, Sum, []int{frameLength}, func(i, r []tir.Expr) tir.Expr {
		var im tir.Expr
		if x.Shape[2] == 2 {
			im = sample(i, r[0], 1)
		}
		return spectralTerm(i[3], i[2], r[0], frameLength, -1, 1, sample(i, r[0], 0), im)
	}), nil
}
