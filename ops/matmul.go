package ops

import (
	"github.com/tessera-ml/tessera/te"
)

// Matrix products.

func init() {
	define(
		&Op{Name: "MatMul", MinIn: 2, MaxIn: 2, Pattern: OutEWiseFusable, Lower: lowerMatMul},
		// Gemm's C is required before opset 11 and optional after.
		&Op{Name: "Gemm", MinIn: 2, MaxIn: 3, Pattern: OutEWiseFusable, Lower: lowerGemm},
		&Op{Name: "Einsum", MinIn: 1, MaxIn: -1, Pattern: OutEWiseFusable, Lower: lowerEinsum},
	)
}

func lowerEinsum(c *lowerCtx) ([]*te.Tensor, error) {
	xs, err := c.ins()
	if err != nil {
		return nil, err
	}
	eq, err := c.n.Str("equation", "")
	if err != nil {
		return nil, err
	}
	return one(te.Einsum(c.name(0), eq, xs...))
}

func lowerMatMul(c *lowerCtx) ([]*te.Tensor, error) {
	as := c.inShape(0)
	pairs := len(as) > 0 && c.pairs(as[len(as)-1])
	a, err := c.operand(0, pairs)
	if err != nil {
		return nil, err
	}
	b, err := c.operand(1, pairs)
	if err != nil {
		return nil, err
	}
	if pairs {
		return one(te.MatMulDot(c.name(0), a, b, 2))
	}
	return one(te.MatMul(c.name(0), a, b))
}

// lowerGemm: C is required before opset 11 and optional after; opsets
// before 7 carry a "broadcast" attribute that the unidirectional
// broadcasting of later opsets subsumes.
func lowerGemm(c *lowerCtx) ([]*te.Tensor, error) {
	ta, err := c.n.Int("transA", 0)
	if err != nil {
		return nil, err
	}
	tb, err := c.n.Int("transB", 0)
	if err != nil {
		return nil, err
	}
	pairs := false
	if as := c.inShape(0); len(as) == 2 {
		k := as[1]
		if ta != 0 {
			k = as[0]
		}
		pairs = c.pairs(k)
	}
	a, err := c.operand(0, pairs)
	if err != nil {
		return nil, err
	}
	b, err := c.operand(1, pairs)
	if err != nil {
		return nil, err
	}
	cc, err := c.opt(2)
	if err != nil {
		return nil, err
	}
	attrs := te.DefaultGemmAttrs()
	if attrs.Alpha, err = c.n.Float("alpha", 1); err != nil {
		return nil, err
	}
	if attrs.Beta, err = c.n.Float("beta", 1); err != nil {
		return nil, err
	}
	attrs.TransA, attrs.TransB = ta != 0, tb != 0
	if pairs {
		attrs.Dot = 2
	}
	if attrs.Beta == 0 {
		cc = nil
	}
	return one(te.Gemm(c.name(0), a, b, cc, attrs))
}
