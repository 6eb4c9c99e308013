package frontend

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tessera-ml/tessera/graph"
)

// Pass is a named graph transformation. Run reports whether it changed the
// graph; it may assume the graph's shapes are inferred, and RunPasses infers
// them again after every change.
type Pass struct {
	Name string
	Run  func(g *graph.Graph) (changed bool, err error)
}

// Passes is the simplification pipeline, in order. RunPasses runs it to a
// fixed point.
var Passes = []Pass{
	{"fuse-qlinear", fuseQLinear},
	{"fold-constants", foldConstants},
	{"lookup-tables", tabulateQuantized},
	{"remove-noops", removeNoops},
	{"merge-reshapes", mergeReshapes},
	{"fold-batchnorm", foldBatchNorm},
	{"decompose-batchnorm", decomposeBatchNorm},
	{"fuse-layernorm", fuseLayerNorm},
	{"fuse-gelu", fuseGelu},
	{"fuse-silu", fuseSilu},
	{"matmul-scale", moveMatMulScale},
	{"cse", eliminateCommonSubexpressions},
	{"dce", eliminateDeadCode},
	{"convert-layout", convertLayout},
}

// passOrder lists the ordering constraints of Passes: before runs earlier
// than after in each round, for the reason given. Checked at init.
var passOrder = []struct{ before, after, reason string }{
	{"fuse-qlinear", "fold-constants", "folding turns a weight's DequantizeLinear into float weights"},
	{"fuse-qlinear", "convert-layout", "a Conv the layout pass made channels-last no longer matches"},
	{"fold-constants", "fold-batchnorm", "BatchNormalization's parameters and the weights must be constants to fold"},
	{"remove-noops", "fold-batchnorm", "an Identity or Dropout between Conv and BatchNormalization hides the pattern"},
	{"fold-constants", "lookup-tables", "a chain's scales, zero points and other operands must be constants to tabulate"},
	{"lookup-tables", "dce", "the tabulated chain's nodes are left dead"},
	{"fold-constants", "cse", "folded constants let equal shape computations compare equal"},
	{"cse", "dce", "CSE leaves the duplicate nodes dead"},
	{"merge-reshapes", "dce", "a merged reshape leaves the inner one dead"},
	{"fold-constants", "fuse-layernorm", "epsilon, the exponent 2, gamma and beta must be constants to match"},
	{"fuse-layernorm", "dce", "the matched pattern's nodes are left dead"},
	{"fold-constants", "fuse-gelu", "√2, 1 and 0.5 must be constants to match"},
	{"fuse-gelu", "dce", "the matched pattern's nodes are left dead"},
	{"lookup-tables", "fuse-silu", "a quantized SiLU is tabulated whole, its Sigmoid and Mul with its quantizations"},
	{"fuse-silu", "dce", "the matched Sigmoid is left dead"},
	{"fold-constants", "matmul-scale", "the scale must be a constant to move"},
	{"fold-batchnorm", "dce", "folding leaves the original weights unused"},
	{"fold-batchnorm", "convert-layout", "BatchNormalization folds into an NCHW Conv it reads directly"},
	{"fold-batchnorm", "decompose-batchnorm", "a BatchNormalization that folds into its Conv costs nothing; Mul and Add cost a pass over the data"},
	{"decompose-batchnorm", "convert-layout", "Mul and Add run channels-last, BatchNormalization does not"},
}

func init() {
	if err := checkPassOrder(Passes); err != nil {
		panic(err)
	}
}

func checkPassOrder(ps []Pass) error {
	idx := map[string]int{}
	for i, p := range ps {
		if _, dup := idx[p.Name]; dup {
			return fmt.Errorf("frontend: pass %s listed twice", p.Name)
		}
		idx[p.Name] = i
	}
	for _, c := range passOrder {
		b, ok1 := idx[c.before]
		a, ok2 := idx[c.after]
		if !ok1 || !ok2 {
			return fmt.Errorf("frontend: pass order names unknown pass %s or %s", c.before, c.after)
		}
		if b >= a {
			return fmt.Errorf("frontend: pass %s must run before %s: %s", c.before, c.after, c.reason)
		}
	}
	return nil
}

// PassNames lists the passes in order.
func PassNames() []string {
	out := make([]string, len(Passes))
	for i, p := range Passes {
		out[i] = p.Name
	}
	return out
}

// maxPassRounds bounds the fixed-point iteration; every pass shrinks the
// graph or leaves it alone, so real models settle in two or three rounds.
const maxPassRounds = 32

// RunPasses infers shapes, then runs the passes not named in disabled, in
// order, round after round until a round changes nothing. Shapes are
// inferred again after each change, so the graph stays checked. disabled
// may only name passes of Passes (`--no-pass NAME`).
func RunPasses(g *graph.Graph, disabled map[string]bool) error {
	for name := range disabled {
		if !slices.Contains(PassNames(), name) {
			return fmt.Errorf("unknown pass %q (passes: %s)", name, strings.Join(PassNames(), ", "))
		}
	}
	if err := InferShapes(g); err != nil {
		return err
	}
	for range maxPassRounds {
		any := false
		for _, p := range Passes {
			if disabled[p.Name] {
				continue
			}
			changed, err := p.Run(g)
			if err != nil {
				return fmt.Errorf("pass %s: %w", p.Name, err)
			}
			if changed {
				any = true
				if err := InferShapes(g); err != nil {
					return fmt.Errorf("after pass %s: %w", p.Name, err)
				}
			}
		}
		if !any {
			return nil
		}
	}
	return nil
}

// removeNodes deletes the nodes of g for which drop is true.
func removeNodes(g *graph.Graph, drop func(n *graph.Node) bool) {
	g.Nodes = slices.DeleteFunc(g.Nodes, drop)
}
