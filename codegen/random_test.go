package codegen

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/tessera-ml/tessera/tir"
)

// TestRandomKernels compiles random loop nests (random loop kinds, split
// factors, unroll pragmas, local tiles, gathers, guarded loads, math) and
// compares each with the interpreter.
func TestRandomKernels(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a large module")
	}
	r := rand.New(rand.NewSource(7))
	var cs []ccase
	for n := 0; n < 40; n++ {
		cs = append(cs, ccase{name: fmt.Sprintf("rnd%d", n), f: randomKernel(r, fmt.Sprintf("rnd%d", n))})
	}
	runTable(t, cs)
}

const rndR, rndC = 6, 48

func randomKernel(r *rand.Rand, name string) *tir.PrimFunc {
	A := gbuf("A", rndR, rndC)
	B := gbuf("B", rndC)
	O := gbuf("O", rndR, rndC)
	i, jo, ji := tir.NewVar("i"), tir.NewVar("j.o"), tir.NewVar("j.i")
	splits := []int{16, 8, 4, 2, 3, 12, 48, 6, 24, 1}
	inner := splits[r.Intn(len(splits))]
	j := add(mul(jo, c(int64(inner))), ji)
	g := &rndGen{r: r, A: A, B: B, i: i, j: j}
	val := g.expr(3)

	innerKind := []tir.ForKind{tir.Vectorized, tir.Vectorized, tir.Serial, tir.Unrolled}[r.Intn(4)]
	var body tir.Stmt
	if r.Intn(3) == 0 {
		// through a local tile indexed by the inner variable
		T := lbuf("T", inner)
		ji2 := tir.NewVar("j.i")
		body = &tir.Allocate{Buf: T, Body: tir.SeqOf(
			loop(ji, inner, innerKind, st(T, val, ji)),
			loop(ji2, inner, innerKind, st(O, add(mul(ld(T, ji2), fc(2)), fc(1)), i, add(mul(jo, c(int64(inner))), ji2))))}
	} else {
		body = loop(ji, inner, innerKind, st(O, val, i, j))
	}
	body = loop(jo, rndC/inner, []tir.ForKind{tir.Serial, tir.Unrolled}[r.Intn(2)], body)
	body = loop(i, rndR, []tir.ForKind{tir.Serial, tir.Parallel, tir.Parallel, tir.Unrolled}[r.Intn(4)], body)
	if step := []int{0, 0, 16, 64, 512}[r.Intn(5)]; step > 0 {
		body = &tir.Pragma{Key: "auto_unroll_max_step", Value: step, Body: body}
	}
	return &tir.PrimFunc{Name: name, Params: []*tir.Buffer{A, B, O}, Body: body}
}

type rndGen struct {
	r    *rand.Rand
	A, B *tir.Buffer
	i, j tir.Expr
}

func (g *rndGen) leaf() tir.Expr {
	i, j := g.i, g.j
	C := int64(rndC)
	s := int64(1 + g.r.Intn(5))
	k := fc(float64(g.r.Intn(9)-4) * 0.25)
	switch g.r.Intn(10) {
	case 0:
		return ld(g.A, i, j)
	case 1: // gather
		return ld(g.A, tir.FloorModE(add(i, c(s)), c(rndR)), tir.FloorModE(add(mul(j, c(s)), c(3)), c(C)))
	case 2: // padding on the right
		return sel(lt(add(j, c(s)), c(C)), ld(g.A, i, add(j, c(s))), k)
	case 3: // padding on the left
		return sel(ge(tir.SubE(j, c(s)), c(0)), ld(g.A, i, tir.SubE(j, c(s))), k)
	case 4: // padding on the outer dimension
		return sel(ge(i, c(1)), ld(g.A, tir.SubE(i, c(1)), j), k)
	case 5: // broadcast
		return ld(g.A, i, c(s))
	case 6:
		return toF(tir.FloorDivE(tir.SubE(j, c(7)), c(s+1)))
	case 7:
		return ld(g.B, j)
	case 8: // reversed
		return ld(g.B, tir.SubE(c(C-1), j))
	}
	return k
}

func (g *rndGen) expr(depth int) tir.Expr {
	if depth == 0 || g.r.Intn(4) == 0 {
		return g.leaf()
	}
	a := g.expr(depth - 1)
	switch g.r.Intn(10) {
	case 0:
		return add(a, g.expr(depth-1))
	case 1:
		return tir.SubE(a, g.expr(depth-1))
	case 2:
		return mul(a, g.expr(depth-1))
	case 3:
		return tir.DivE(a, add(fn("fabs", g.expr(depth-1)), fc(1)))
	case 4:
		return tir.MinE(a, g.expr(depth-1))
	case 5:
		return tir.MaxE(a, g.expr(depth-1))
	case 6:
		return sel(tir.Cmp(tir.GT, a, g.expr(depth-1)), g.expr(depth-1), g.expr(depth-1))
	case 7:
		return fn([]string{"exp", "sigmoid", "tanh", "floor", "fabs", "erf"}[g.r.Intn(6)], tir.MinE(a, fc(10)))
	case 8:
		return sel(and(lt(g.j, c(int64(g.r.Intn(rndC)))), ge(g.i, c(int64(g.r.Intn(rndR))))), a, g.expr(depth-1))
	}
	return fn("sqrt", fn("fabs", a))
}
