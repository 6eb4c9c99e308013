package partition

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/te"
)

// Fusion: graph nodes → groups, along the post-dominator tree.
//
//	graph.Graph ──dataflow graph (edges with patterns)──▶ post-dominator tree
//	            ──phase 0, 1, sandwiches, phase 2, dequantizations (below)──▶ union-find groups ──▶ []*Group
//
// This is TVM's FuseOps on graph nodes. A node may only be fused into its
// immediate post-dominator (the first node that every path from it to the
// graph outputs goes through), together with every node on the paths
// between the two, so a group never needs a value twice and never forms a
// cycle with another group. The phases, each one walk over the nodes in
// topological order:
//
//   - phase 0: an out-elementwise-fusable op (Conv, MatMul, Gemm, pooling)
//     takes its post-dominator when the way there is elementwise and every
//     op on it is at most broadcast (conv+bias+add+relu); an elementwise or
//     broadcast op goes into a post-dominator it reaches through injective
//     or reducing reads (elementwise chains, the operands of a reduction),
//     here and in phase 1;
//   - phase 1: injective ops (and the groups they head) go into their
//     post-dominator when every op on the way, the post-dominator included,
//     is at most injective (reshape+transpose chains);
//   - normalizations between two anchors: an anchor group that leads
//     only into a normalization (Softmax, LayerNormalization: a reduction
//     that keeps its input's shape) which leads only into another anchor,
//     both products of activations, becomes one group with both
//     (sandwiches): attention's scores, their softmax and its product
//     with the values;
//   - phase 2: what is still an injective group goes into a following
//     reduction or out-elementwise-fusable group as its prologue (the
//     Reshape/Transpose to attention heads before a MatMul, the Flatten
//     before the classifier's Gemm), when every op on the way is
//     injective; into an out-elementwise-fusable group only when it moves
//     data and computes nothing: an elementwise prologue (DenseNet's
//     Concat+BatchNormalization+Relu before each convolution) would be
//     computed again for every output channel that reads it, and stays a
//     kernel of its own;
//   - then a dequantization of 8- or 16-bit integers that ends an anchor's
//     group moves into the group of its elementwise readers
//     (dequantizeInReaders): integers cross between the groups, not their
//     float32 values.
//
// The sandwiches and phase 2 are ours. TVM never puts two anchors in one
// group; it leaves phase 2's groups alone and its auto-scheduler then
// skips them as too simple to tune, so they run as extra copies. Here the
// sketch rules tile each anchor of a group in a loop nest of its own, and
// inline a strictly inlineable producer into the anchor's loads, so a
// layout change becomes the anchor's index arithmetic instead of a kernel
// of its own.
//
// A node whose output is a graph output has no post-dominator (it must be
// materialized), so it ends its group. No group grows beyond
// Options.MaxFuseDepth ops.

// DefaultMaxFuseDepth is the largest group fusion builds by default, in
// ops: TVM's max_fuse_depth. Real models never come near it (a ResNet group
// has at most four ops, a BERT one eight); it only bounds pathological
// elementwise chains, whose kernels would take long to compile.
const DefaultMaxFuseDepth = 256

// Options control partitioning; the zero value gives the defaults.
type Options struct {
	// MaxFuseDepth is the most ops a group may hold; 0 means
	// DefaultMaxFuseDepth, 1 disables fusion.
	MaxFuseDepth int
	// Alternatives gives a group whose anchor has other compute
	// definitions (ops.Op.Alternatives: a 3×3 convolution's Winograd) an
	// alternative task per definition (algorithm.go). Off, every group is
	// lowered by the op library's direct definitions only.
	Alternatives bool
}

func (o Options) maxDepth() int {
	if o.MaxFuseDepth <= 0 {
		return DefaultMaxFuseDepth
	}
	return o.MaxFuseDepth
}

// Group is a set of graph nodes fused into one kernel.
//
// Invariant: only the root (the last node) writes values that are read
// outside the group; every other node is post-dominated by it.
type Group struct {
	ID      int           // position in Plan.Groups: execution order
	Nodes   []*graph.Node // topological order; the last one is the root
	Pattern Pattern       // the largest pattern of its ops
	// Outputs are the values the group writes that are read by later groups
	// or are graph outputs, in the order of the root's outputs: the graph
	// value of each output of the group's DAG.
	Outputs []string

	// Set by lowering (LowerGroup, Extract):

	// DAG is the group's compute DAG. Its tensors carry this graph's value
	// names; its canonical print is that of its task's DAG, so placeholder
	// i of Task.DAG is Inputs[i] here, and output i is Outputs[i].
	DAG *te.DAG
	// Inputs are the graph values behind the DAG's placeholders, in the
	// order of DAG.Inputs: activations and weights alike. Constants of one
	// element are not inputs: they are literals of the DAG, but for the
	// indices that groups differing only in them read from memory to
	// share a task (shareIndexedGroups).
	Inputs []string
	Key    string // the workload key of the group's DAG
	Task   *Task  // the task the group is an occurrence of

	// Algorithm names the compute definition of an alternative ("" for
	// the op library's own); Alternatives are the group's other
	// definitions, each an alternative group with the same ID, nodes and
	// outputs (see algorithm.go). Plan.Groups holds the direct ones.
	Algorithm    string
	Alternatives []*Group
}

// Root returns the group's last node, which writes its outputs.
func (grp *Group) Root() *graph.Node { return grp.Nodes[len(grp.Nodes)-1] }

// Ops lists the group's op types in order, joined by "+"; runs of the same
// op are written once with a count ("Reshape×2").
func (grp *Group) Ops() string {
	var parts []string
	for i := 0; i < len(grp.Nodes); {
		j := i
		for j < len(grp.Nodes) && grp.Nodes[j].OpType == grp.Nodes[i].OpType {
			j++
		}
		if j-i > 1 {
			parts = append(parts, fmt.Sprintf("%s×%d", grp.Nodes[i].OpType, j-i))
		} else {
			parts = append(parts, grp.Nodes[i].OpType)
		}
		i = j
	}
	return strings.Join(parts, "+")
}

// The dataflow graph fusion works on: one fnode per graph node, in the
// graph's topological order.
type fnode struct {
	node    *graph.Node
	pattern Pattern
	outs    []fedge // one per read of one of the node's outputs
	extern  bool    // writes a graph output
}

type fedge struct {
	to      int
	pattern Pattern // the consumer's read (EdgePattern)
}

// pdom is a node of the post-dominator tree.
type pdom struct {
	parent  int     // immediate post-dominator, or -1
	depth   int     // 1 for a root of the tree
	pattern Pattern // of the reads on the way to parent
}

// fuser holds the state of one fusion.
type fuser struct {
	nodes []fnode
	tree  []pdom
	// union-find over the nodes; the fields below are valid at roots
	parent  []int
	size    []int
	pattern []Pattern
	// computes: the group holds an elementwise or broadcast op (work per
	// element, not only data movement)
	computes []bool
	maxSize  int
	visited  []bool // scratch for path walks
	g        *graph.Graph
}

func newFuser(g *graph.Graph, maxSize int) *fuser {
	idx := make(map[*graph.Node]int, len(g.Nodes))
	for i, n := range g.Nodes {
		idx[n] = i
	}
	consumers := g.Consumers()
	f := &fuser{nodes: make([]fnode, len(g.Nodes)), maxSize: maxSize, g: g}
	for i, n := range g.Nodes {
		fn := fnode{node: n, pattern: PatternOf(n)}
		for _, o := range n.Outputs {
			if o == "" {
				continue
			}
			if g.IsOutput(o) {
				fn.extern = true
			}
			for _, c := range consumers[o] {
				for _, in := range c.Inputs {
					if in == o {
						fn.outs = append(fn.outs, fedge{to: idx[c], pattern: EdgePattern(g, c, o)})
					}
				}
			}
		}
		f.nodes[i] = fn
	}
	n := len(f.nodes)
	f.parent, f.size, f.pattern, f.computes = make([]int, n), make([]int, n), make([]Pattern, n), make([]bool, n)
	for i := range f.nodes {
		f.parent[i], f.size[i], f.pattern[i] = i, 1, f.nodes[i].pattern
		f.computes[i] = f.pattern[i] <= Broadcast
	}
	f.visited = make([]bool, n)
	f.buildTree()
	return f
}

// buildTree computes the post-dominator tree, consumers before producers:
// a node's immediate post-dominator is the least common ancestor of its
// consumers in the tree, and the pattern of the way there combines the
// reads on every path.
func (f *fuser) buildTree() {
	f.tree = make([]pdom, len(f.nodes))
	for i := len(f.nodes) - 1; i >= 0; i-- {
		fn := &f.nodes[i]
		if fn.extern || len(fn.outs) == 0 {
			f.tree[i] = pdom{parent: -1, depth: 1, pattern: Opaque}
			continue
		}
		p := ElemWise
		lca := fn.outs[0].to
		p = Combine(p, fn.outs[0].pattern)
		for _, e := range fn.outs[1:] {
			lca = f.lca(lca, e.to, &p)
			p = Combine(p, e.pattern)
		}
		if lca < 0 {
			f.tree[i] = pdom{parent: -1, depth: 1, pattern: p}
		} else {
			f.tree[i] = pdom{parent: lca, depth: f.tree[lca].depth + 1, pattern: p}
		}
	}
}

// lca returns the least common ancestor of a and b in the tree (-1 when
// they have none), combining into p the patterns of the ways up.
func (f *fuser) lca(a, b int, p *Pattern) int {
	for a != b {
		if a < 0 || b < 0 {
			return -1
		}
		da, db := f.tree[a].depth, f.tree[b].depth
		if da <= db {
			*p = Combine(*p, f.tree[b].pattern)
			b = f.tree[b].parent
		}
		if db <= da {
			*p = Combine(*p, f.tree[a].pattern)
			a = f.tree[a].parent
		}
	}
	return a
}

func (f *fuser) find(i int) int {
	for f.parent[i] != i {
		f.parent[i] = f.parent[f.parent[i]]
		i = f.parent[i]
	}
	return i
}

// merge puts the group of child into the group of parent.
func (f *fuser) merge(child, parent int) {
	c, p := f.find(child), f.find(parent)
	if c == p {
		return
	}
	f.parent[c] = p
	f.size[p] += f.size[c]
	f.pattern[p] = Combine(f.pattern[p], f.pattern[c])
	f.computes[p] = f.computes[p] || f.computes[c]
}

// walk visits every node on the paths from src's consumers to sink
// (sink included, src excluded) once, stopping when visit returns false.
// It fails, too, on an opaque read on the way: every path's nodes join one
// group when src fuses into sink, and an opaque read (of an opaque op, or
// of indices: EdgePattern) must cross groups.
func (f *fuser) walk(src, sink int, visit func(i int, isSink bool) bool) bool {
	clear(f.visited)
	var rec func(i int) bool
	edges := func(i int) bool {
		for _, e := range f.nodes[i].outs {
			if e.pattern == Opaque || !rec(e.to) {
				return false
			}
		}
		return true
	}
	rec = func(i int) bool {
		if f.visited[i] {
			return true
		}
		f.visited[i] = true
		if !visit(i, i == sink) {
			return false
		}
		return i == sink || edges(i)
	}
	return edges(src)
}

// checkPath reports whether the group pattern of every node on the paths
// from src to sink satisfies ok.
func (f *fuser) checkPath(src, sink int, ok func(p Pattern, isSink bool) bool) bool {
	return f.walk(src, sink, func(i int, isSink bool) bool { return ok(f.pattern[f.find(i)], isSink) })
}

// intoGroup reports whether every way from src to sink crosses only
// injective groups and sink's own group: a prologue read at several
// places of a group that already holds them all (the query, key and value
// of one attention, sliced from one tensor).
func (f *fuser) intoGroup(src, sink int) bool {
	g := f.find(sink)
	return (f.pattern[g] == CommReduce || f.pattern[g] == OutEWiseFusable) && f.walk(src, sink, f.injectiveOr(g))
}

// injectiveOr is a walk's visit that accepts a node of group g or of an
// injective group.
func (f *fuser) injectiveOr(g int) func(i int, isSink bool) bool {
	return func(i int, _ bool) bool { return f.find(i) == g || f.pattern[f.find(i)] <= Injective }
}

// sizeAfter returns the size of the group that fusing src into sink
// would make.
func (f *fuser) sizeAfter(src, sink int) int {
	seen := map[int]bool{f.find(src): true}
	n := f.size[f.find(src)]
	f.walk(src, sink, func(i int, _ bool) bool {
		if r := f.find(i); !seen[r] {
			seen[r] = true
			n += f.size[r]
		}
		return true
	})
	return n
}

// movesOnly reports whether the group of src and every group on the way
// to sink (sink's own excluded) only move data.
func (f *fuser) movesOnly(src, sink int) bool {
	g := f.find(sink)
	return !f.computes[f.find(src)] && f.walk(src, sink, func(j int, _ bool) bool { return f.find(j) == g || !f.computes[f.find(j)] })
}

// commit fuses src, sink and every node between them into sink's group.
func (f *fuser) commit(src, sink int) {
	target := f.find(sink)
	var path []int
	f.walk(src, sink, func(i int, _ bool) bool { path = append(path, i); return true })
	f.merge(src, target)
	for _, i := range path {
		f.merge(i, target)
	}
}

// Conditions on the paths of each phase.
var (
	atMostBroadcast = func(p Pattern, _ bool) bool { return p <= Broadcast }
	atMostInjective = func(p Pattern, _ bool) bool { return p <= Injective }
	// An elementwise/broadcast group may cross injective ops and end in
	// any fusable group.
	intoAnyFusable = func(p Pattern, isSink bool) bool {
		if !isSink {
			return p <= Injective
		}
		return p != Opaque
	}
	// A prologue crosses injective ops and ends in a reduction or an
	// anchor's group.
	intoAnchor = func(p Pattern, isSink bool) bool {
		if !isSink {
			return p <= Injective
		}
		return p == CommReduce || p == OutEWiseFusable
	}
)

// phase runs one fusion phase (0, 1 or 2) over the nodes.
func (f *fuser) phase(phase int) {
	for i := range f.nodes {
		// A node that is not the root of its group is post-dominated by
		// the root and already fused with its own post-dominator.
		if f.find(i) != i {
			continue
		}
		gp := f.pattern[i]
		dom := f.tree[i]
		if gp == Opaque || dom.parent < 0 || f.find(dom.parent) == i {
			continue
		}
		sink := dom.parent
		var ok func(Pattern, bool) bool
		switch {
		case gp == OutEWiseFusable:
			if phase == 0 && dom.pattern == ElemWise {
				ok = atMostBroadcast
			}
		case gp <= Broadcast:
			if phase != 2 && (dom.pattern <= Injective || dom.pattern == CommReduce) {
				ok = intoAnyFusable
			}
		case gp == Injective:
			switch phase {
			case 1:
				ok = atMostInjective
			case 2:
				ok = intoAnchor
			}
		}
		if ok == nil || !f.checkPath(i, sink, ok) && !(phase == 2 && f.intoGroup(i, sink)) {
			continue
		}
		// Into an anchor, data movement only: it re-reads its input
		// (every output channel of a convolution reads each input
		// element) and would compute an inlined elementwise prologue
		// again each time. A reduction reads each element once.
		if phase == 2 && f.pattern[f.find(sink)] == OutEWiseFusable && !f.movesOnly(i, sink) {
			continue
		}
		if f.sizeAfter(i, sink) > f.maxSize {
			continue
		}
		f.commit(i, sink)
	}
}

// normalizes reports whether the group rooted at r is a normalization:
// a reduction whose root writes a value of its first input's shape
// (Softmax, LayerNormalization), not one that reduces axes away.
func (f *fuser) normalizes(r int) bool {
	if f.pattern[r] != CommReduce {
		return false
	}
	n := f.nodes[r].node
	in, out := f.g.Values[n.Input(0)], f.g.Values[n.Outputs[0]]
	return in != nil && out != nil && in.Shape != nil && slices.Equal(in.Shape, out.Shape)
}

// sandwiches fuses a normalization between two anchors into one group
// with both: an out-elementwise-fusable group whose every way on leads,
// through injective ops, into a normalization (its immediate
// post-dominator is in the normalization's group), which leads so into
// another anchor, both anchors products of activations (no weights).
// That is attention, the scores q·kᵀ (with their scale, bias and mask),
// their softmax and its product with v: one task per head group instead
// of three kernels, the scores and the probabilities never leaving the
// kernel. Each anchor keeps a loop nest of its own in the schedule (the
// sketch rules tile both), so nothing is computed twice. A layer's
// matmul, its LayerNormalization and the next layer's matmul (a
// transformer's last block and its classifier) stay apart: each is
// tuned better alone, and the first is shared with the other blocks.
func (f *fuser) sandwiches() {
	for a := range f.nodes {
		if f.find(a) != a || f.pattern[a] != OutEWiseFusable {
			continue
		}
		to := f.past(a)
		if to < 0 || !f.normalizes(f.find(to)) || f.weighted(a) {
			continue
		}
		r := f.find(to)
		on := f.past(r)
		if on < 0 || f.pattern[f.find(on)] != OutEWiseFusable || f.find(on) == a || f.weighted(f.find(on)) {
			continue
		}
		if !f.walk(a, to, f.injectiveOr(r)) || !f.walk(r, on, f.injectiveOr(f.find(on))) {
			continue
		}
		if f.sizeAfter(a, to)+f.sizeAfter(r, on)-f.size[r] > f.maxSize {
			continue
		}
		f.commit(a, to)
		f.commit(r, on)
	}
}

// weighted reports whether an anchor of the group rooted at r reads a
// constant operand (a layer's weights): a product of activations,
// attention's, reads none. A QLinear op's operands are its x and w (its
// scales and zero points are constants either way).
func (f *fuser) weighted(r int) bool {
	for i, fn := range f.nodes {
		if f.find(i) != r || fn.pattern != OutEWiseFusable {
			continue
		}
		operands := fn.node.Inputs
		if op := fn.node.OpType; op == "QLinearMatMul" || op == "QLinearConv" {
			operands = []string{fn.node.Input(0), fn.node.Input(3)}
		}
		for _, in := range operands {
			if v := f.g.Values[in]; v != nil && v.Const != nil {
				return true
			}
		}
	}
	return false
}

// past returns the node the post-dominators of the group rooted at i lead
// to past injective groups (-1 for none): the first one in a group that
// computes more than an injective op does.
func (f *fuser) past(i int) int {
	p := f.tree[i].parent
	for p >= 0 && f.pattern[f.find(p)] <= Injective {
		p = f.tree[f.find(p)].parent
	}
	return p
}

// roots returns the root of every node's group.
func (f *fuser) roots() []int {
	root := make([]int, len(f.nodes))
	for i := range f.nodes {
		root[i] = f.find(i)
	}
	return root
}

// dequantizeInReaders moves a dequantization of 8- or 16-bit integers that
// ends a group (an anchor's epilogue) into the one group that reads it,
// where every reader is an elementwise op reading it elementwise (the
// residual Add of a quantized ResNet's block with a downsampling branch:
// each block's two convolutions dequantize into one Add, and the group
// that does not hold the Add wrote its dequantized output in float32, four
// times the bytes of its integers, only for the other to read them once).
// The anchor's group then writes the integers and the reader's group
// dequantizes them as it reads them, the arithmetic the same. root maps
// each node to its group's root; it is updated in place.
func (f *fuser) dequantizeInReaders(root []int) {
	index := make(map[string]int, len(f.nodes))
	for i, fn := range f.nodes {
		for _, o := range fn.node.Outputs {
			index[o] = i
		}
	}
	for w, fn := range f.nodes {
		n := fn.node
		if root[w] != w || n.OpType != "DequantizeLinear" || fn.extern || len(fn.outs) == 0 {
			continue
		}
		if v := f.g.Values[n.Input(0)]; v == nil || !slices.Contains([]graph.DType{graph.Uint8, graph.Int8, graph.Uint16, graph.Int16}, v.DType) {
			continue
		}
		// Its operand's producer p is in its group and read by it alone;
		// its scale and zero point are constants.
		p, ok := index[n.Input(0)]
		if !ok || root[p] != w || f.nodes[p].extern || slices.ContainsFunc(f.nodes[p].outs, func(e fedge) bool { return e.to != w }) {
			continue
		}
		if slices.ContainsFunc(n.Inputs[1:], func(in string) bool { return in != "" && f.g.ConstOf(in) == nil }) {
			continue
		}
		// Its readers: elementwise ops of one other group.
		b := root[fn.outs[0].to]
		if b == w || slices.ContainsFunc(fn.outs, func(e fedge) bool {
			return root[e.to] != b || e.pattern != ElemWise || f.nodes[e.to].pattern > Broadcast
		}) {
			continue
		}
		// The rest of the group, rooted at p, must be read outside only
		// through p.
		moved := slices.Clone(root)
		for i := range moved {
			if moved[i] == w {
				moved[i] = p
			}
		}
		moved[w] = b
		escapes := false
		for i := range f.nodes {
			if moved[i] != p || i == p {
				continue
			}
			for _, e := range f.nodes[i].outs {
				escapes = escapes || moved[e.to] != p
			}
			escapes = escapes || f.nodes[i].extern
		}
		if !escapes {
			copy(root, moved)
		}
	}
}

// Fuse partitions g (shapes inferred, passes run) into groups of nodes,
// in execution order. Graph inputs and constants are not nodes: they are
// inputs of the groups that read them.
func Fuse(g *graph.Graph, opts Options) ([]*Group, error) {
	f := newFuser(g, opts.maxDepth())
	f.phase(0)
	f.phase(1)
	f.sandwiches()
	f.phase(2)
	root := f.roots()
	f.dequantizeInReaders(root)
	// Members in node order; groups in the order of their roots, which is
	// topological since only roots are read outside a group.
	members := map[int][]*graph.Node{}
	patterns := map[int]Pattern{}
	for i, fn := range f.nodes {
		r := root[i]
		members[r] = append(members[r], fn.node)
		patterns[r] = Combine(patterns[r], fn.pattern)
	}
	groupOf := make([]*Group, len(f.nodes))
	var groups []*Group
	for i := range f.nodes {
		if root[i] != i {
			continue
		}
		grp := &Group{ID: len(groups), Nodes: members[i], Pattern: patterns[i]}
		groups = append(groups, grp)
		groupOf[i] = grp
	}
	for i := range f.nodes {
		groupOf[i] = groupOf[root[i]]
	}
	// Outputs, and the invariant: a value crossing groups is written by the
	// root of an earlier group.
	for i, fn := range f.nodes {
		grp := groupOf[i]
		for _, o := range fn.node.Outputs {
			if o == "" {
				continue
			}
			used := g.IsOutput(o)
			for _, e := range fn.outs {
				if groupOf[e.to] != grp {
					used = true
					if groupOf[e.to].ID <= grp.ID {
						return nil, fmt.Errorf("partition: fusion broke its invariant: %s (%s) of group %d is read by group %d",
							o, fn.node.OpType, grp.ID, groupOf[e.to].ID)
					}
				}
			}
			if !used {
				continue
			}
			if fn.node != grp.Root() {
				return nil, fmt.Errorf("partition: fusion broke its invariant: %s (%s) is used outside group %d but not written by its root",
					o, fn.node.OpType, grp.ID)
			}
			grp.Outputs = append(grp.Outputs, o)
		}
	}
	return groups, nil
}

// WriteGroups prints one line per group: its number, the prefix of its
// workload key (once lowered), its ops, its output shapes and the values
// it writes.
func WriteGroups(w io.Writer, g *graph.Graph, groups []*Group) error {
	t := table{header: []string{"group", "key", "ops", "output", "writes"}, right: "1"}
	for _, grp := range groups {
		t.add(fmt.Sprint(grp.ID), shortKey(grp.Key), grp.Ops(), outputShapes(g, grp), strings.Join(grp.Outputs, " "))
	}
	return t.write(w)
}
