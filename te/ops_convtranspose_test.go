package te

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestConvTransposeCols: the forms by phases (a convolution per phase of
// the output, for unit dilations) and by columns (a GEMM, then the sum of
// its columns) compute what the dilated form (the definition) computes, over
// random kernels, strides, dilations, pads, output paddings, auto pads,
// groups and ranks (every other case one the phases take: unit dilations,
// kernels of whole strides): each product is the same float32, summed in another
// order, so within a few units in the last place.
func TestConvTransposeCols(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 1))
	for n := range 60 {
		ns := 1 + rng.IntN(2)
		G := 1 + rng.IntN(2)
		C, Mg := G*(1+rng.IntN(3)), 1+rng.IntN(3)
		xs := []int{1 + rng.IntN(2), C}
		k := make([]int, ns)
		a := ConvTransposeAttrs{Group: G}
		for i := range ns {
			xs = append(xs, 1+rng.IntN(5))
			k[i] = 1 + rng.IntN(5)
			s, d := 1+rng.IntN(3), 1+rng.IntN(2)
			if n%2 == 0 { // the form by phases: unit dilation, a kernel of whole strides
				d, k[i] = 1, s*(1+rng.IntN(2))
			}
			a.Strides = append(a.Strides, s)
			a.Dilations = append(a.Dilations, d)
			a.OutputPadding = append(a.OutputPadding, rng.IntN(max(s, d)))
		}
		for range 2 * ns {
			a.Pads = append(a.Pads, rng.IntN(3))
		}
		switch rng.IntN(4) {
		case 0:
			a.Pads, a.AutoPad = nil, "SAME_UPPER"
		case 1:
			a.Pads, a.AutoPad = nil, "SAME_LOWER"
		}
		t.Run(fmt.Sprintf("%d_x%v_k%v_%+v", n, xs, k, a), func(t *testing.T) {
			x := Placeholder("x", xs...)
			w := Constant("w", append([]int{C, Mg}, k...)...)
			b := Constant("b", Mg*G)
			dilated, err := convTransposeReference(x, w, b, a)
			if err != nil {
				t.Skip(err) // an output extent below 1: every form refuses it
			}
			in := [][]float32{randomData(rng, numElems(xs)), randomData(rng, numElems(w.Shape)), randomData(rng, Mg*G)}
			want := evalDAGOf(t, dilated, in)
			for _, form := range []convTransposeForm{byPhasesChannels, byPhasesSpatial, byCols} {
				ct, err := convTranspose("ct", x, w, b, a, form)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(ct.Shape, dilated.Shape) {
					t.Fatalf("form %d: shapes %v and %v", form, ct.Shape, dilated.Shape)
				}
				got := evalDAGOf(t, ct, in)
				for i := range want {
					if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*(1+math.Abs(float64(want[i]))) {
						t.Fatalf("form %d, element %d: %g, the dilated form %g", form, i, got[i], want[i])
					}
				}
			}
		})
	}
}

// convTransposeReference is ConvTranspose by its definition (the dilated
// form) whatever the stride and dilation.
func convTransposeReference(x, w, b *Tensor, a ConvTransposeAttrs) (*Tensor, error) {
	return convTranspose("ref", x, w, b, a, byDilated)
}

// evalDAGOf evaluates the DAG of out on its inputs x, w and b.
func evalDAGOf(t *testing.T, out *Tensor, in [][]float32) []float32 {
	t.Helper()
	d, err := NewDAG(out)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string][]float32{"x": in[0], "w": in[1], "b": in[2]}
	args := make([][]float32, len(d.Inputs))
	for i, p := range d.Inputs {
		args[i] = byName[p.Name]
	}
	got, err := d.Eval(args)
	if err != nil {
		t.Fatal(err)
	}
	return got[0]
}

// TestConvTransposeFormChoice: ConvTranspose takes the phases where they
// pay (phasesPay) and the columns elsewhere, on a DCGAN generator's layers
// (4×4 kernels), the layer of issue 47's race and a U-Net's upsampling;
// the phases keep the output channels last where they are at least a
// phase's outputs on a row (phasesChannelsLast), else that row.
func TestConvTransposeFormChoice(t *testing.T) {
	for _, c := range []struct {
		name             string
		c, m, in, kernel int
		stride, pad      int
		phases           bool
		last             int // the phases' last extent
	}{
		{"1² → 4², 15 of 16 taps on padding", 100, 512, 1, 4, 1, 0, false, 0},
		{"4² → 8², 4 outputs per phase", 512, 256, 4, 4, 2, 1, true, 256},
		{"8² → 16²", 256, 128, 8, 4, 2, 1, true, 128},
		{"16² → 32² (dcgan_layer)", 256, 128, 16, 4, 2, 1, true, 128},
		{"32² → 64²", 64, 3, 32, 4, 2, 1, true, 32},
		{"U-Net's 2×2 of stride 2, 32² → 64²", 64, 32, 32, 2, 2, 0, false, 0},
		{"4 channels, 4² → 8²: too short a vector either way", 16, 4, 4, 4, 2, 1, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := Placeholder("x", 1, c.c, c.in, c.in)
			w := Constant("w", c.c, c.m, c.kernel, c.kernel)
			ct, err := ConvTranspose("ct", x, w, nil, ConvTransposeAttrs{
				Strides: []int{c.stride, c.stride}, Pads: []int{c.pad, c.pad, c.pad, c.pad}})
			if err != nil {
				t.Fatal(err)
			}
			d, err := NewDAG(ct)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(d.Tensors, func(t *Tensor) bool { return strings.HasSuffix(t.Name, "_phases") })
			if phases := i >= 0; phases != c.phases {
				t.Errorf("by phases = %v, want %v", phases, c.phases)
			}
			if i >= 0 {
				if sh := d.Tensors[i].Shape; sh[len(sh)-1] != c.last {
					t.Errorf("phases %v, want the last extent %d", sh, c.last)
				}
			}
		})
	}
}
