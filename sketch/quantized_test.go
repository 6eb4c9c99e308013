package sketch

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/schedule/schedtest"
	"github.com/tessera-ml/tessera/te"
	"github.com/tessera-ml/tessera/tir"
)

// TestPaddedIntegersKept: the padded window of a convolution summed in
// float over uint8 input (a quantized model's float-summed layer) is kept
// as a stage in the default schedule, so that every output channel reads
// floats; a depthwise convolution's, whose every element feeds a few taps
// only, is inlined (writing the padded floats and reading them back cost
// more than the conversions). A uint8 window an integer convolution sums
// in dot groups is kept likewise (its guards leave the dot loop), a
// depthwise one's inlined. All compute what the reference does.
func TestPaddedIntegersKept(t *testing.T) {
	for _, c := range []struct {
		name   string
		group  int
		inCh   int
		bytes  bool // the window of uint8 itself, summed in dot groups
		inline bool
	}{
		{"conv", 1, 8, false, false},
		{"depthwise", 8, 1, false, true},
		{"uint8 conv", 1, 8, true, false},
		{"uint8 depthwise", 8, 1, true, true},
	} {
		x := te.TypedPlaceholder("X", tir.Uint8, 1, 9, 9, 8)
		var in *te.Tensor = te.Compute("xf", x.Shape, func(i []tir.Expr) tir.Expr {
			return tir.SubE(&tir.Cast{To: tir.Float32, X: x.At(i...)}, tir.F32(3))
		})
		w := te.Constant("W", 8, c.inCh, 3, 3)
		o := te.IntConvOptions{NHWC: true}
		if c.bytes {
			in, w = x, te.TypedPlaceholder("W", tir.Int8, 8, c.inCh, 3, 3)
			w.Const = true
			if c.group == 1 {
				o.Dot = 4
			}
		}
		acc, err := te.IntConv("acc", in, w, 0, te.ConvAttrs{Pads: []int{1, 1, 1, 1}, Group: c.group}, o)
		if err != nil {
			t.Fatal(err)
		}
		d, err := te.NewDAG(acc)
		if err != nil {
			t.Fatal(err)
		}
		st, how, err := Default(schedule.NewState(d), testOptions())
		if err != nil {
			t.Fatal(err)
		}
		if inlined := stageNamed(t, st, "acc_pad").Attach == schedule.Inlined; inlined != c.inline {
			t.Errorf("%s: the default inlines the padded window: %v, want %v\n%v", c.name, inlined, c.inline, st)
		}
		f, err := schedule.Lower(st, "k")
		if err != nil {
			t.Fatalf("%s: %s: %v", c.name, how, err)
		}
		if err := schedtest.Check(d, f, 3); err != nil {
			t.Errorf("%s: %s: %v", c.name, how, err)
		}
	}
}

// TestSampledPlaces: of random samples of every sketch, (1) a product of
// two uint8 activations (te.ZeroPointMatMul) never computes its packed
// operand under the product's loops, where every tile of rows would pack
// it again; (2) no stage is computed at a loop that only loops of extent
// 1 enclose (the batch of one of a softmax's probabilities read by a
// matmul), which is the root but would keep the parallel annotation out
// (a tiling rule may still place a stage so, at tiles of one).
func TestSampledPlaces(t *testing.T) {
	a, b := te.TypedPlaceholder("A", tir.Uint8, 2, 32, 16), te.TypedPlaceholder("B", tir.Uint8, 2, 16, 48)
	acc, err := te.ZeroPointMatMul("qmm", a, b, 3, 128)
	if err != nil {
		t.Fatal(err)
	}
	x, v := te.Placeholder("X", 1, 64, 64), te.Placeholder("V", 1, 64, 32)
	p := te.Compute("p", x.Shape, func(i []tir.Expr) tir.Expr { return tir.CallE("exp", x.At(i...)) })
	pv, err := te.MatMul("pv", p, v)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, out := range []*te.Tensor{acc, pv} {
		d, err := te.NewDAG(out)
		if err != nil {
			t.Fatal(err)
		}
		sketches, err := Generate(schedule.NewState(d), testOptions())
		if err != nil {
			t.Fatal(err)
		}
		for _, sk := range sketches {
			for range 30 {
				st, err := Sample(rng, sk, testOptions())
				if err != nil {
					continue
				}
				for j, stg := range st.Stages {
					if stg.Attach != schedule.At {
						continue
					}
					if stg.Tensor.Name == "qmm_packed" {
						t.Fatalf("the packed operand computed under %s:\n%v", st.Stages[stg.AttachStage].Tensor.Name, st)
					}
					c := st.Stages[stg.AttachStage]
					if stg.Tensor.Name == "p" && !slices.ContainsFunc(c.Iters[:st.AttachIter(j)+1], func(it schedule.Iter) bool { return it.Extent != 1 }) {
						t.Fatalf("%s computed under loops of extent 1 only:\n%v", stg.Tensor.Name, st)
					}
				}
			}
		}
	}
}
