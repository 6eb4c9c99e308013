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
	a, err := c.product(0)
	if err != nil {
		return nil, err
	}
	b, err := c.product(1)
	if err != nil {
		return nil, err
	}
	if len(a.Shape) > 0 && c.pairs(a.Shape[len(a.Shape)-1]) {
		return one(te.MatMulDot(c.name(0), a, b, 2))
	}
	return one(te.MatMul(c.name(0), a, b))
}

// lowerGemm: C is required before opset 11 and optional after; opsets
// before 7 carry a "broadcast" attribute that the unidirectional
// broadcasting of later opsets subsumes.
func lowerGemm(c *lowerCtx) ([]*te.Tensor, error) {
	a, err := c.product(0)
	if err != nil {
		return nil, err
	}
	b, err := c.product(1)
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
	ta, err := c.n.Int("transA", 0)
	if err != nil {
		return nil, err
	}
	tb, err := c.n.Int("transB", 0)
	if err != nil {
		return nil, err
	}
	attrs.TransA, attrs.TransB = ta != 0, tb != 0
	if attrs.Beta == 0 {
		cc = nil
	}
	return one(te.Gemm(c.name(0), a, b, cc, attrs))
}
