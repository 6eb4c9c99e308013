package costmodel

import (
	"slices"
	"sort"
)

// Gradient-boosted regression trees on binned features.
//
//	rows (float32) ──binMapper──▶ bins (uint8, row-major, used features only)
//	bins + per-row (grad, hess) ──grower──▶ one tree, leaf-wise:
//	    histogram of the leaf's rows per feature × bin (sums of grad, hess,
//	    count), best split per leaf from the histogram, the leaf with the
//	    best gain split first; a child's histogram is built for the smaller
//	    child and the larger one's is the parent's minus it.
//
// A split sends a row left when value <= threshold, LightGBM's rule; the
// thresholds are midpoints between adjacent distinct training values, so a
// value's bin b satisfies value <= threshold[b'] exactly when b <= b', and
// the binned walk during training agrees with the float walk of the saved
// model.
//
// Split gain (XGBoost's definition, so gamma means what it means there):
//
//	gain = G_L²/(H_L+λ) + G_R²/(H_R+λ) - G²/(H+λ)
//
// A split is made when gain > γ and each side has at least MinDataInLeaf
// rows and MinChildWeight hessian. A leaf's value is -G/(H+λ) × η.

// binMapper maps feature values to bins.
type binMapper struct {
	nf         int         // row length
	thresholds [][]float64 // per feature: the upper bounds of its bins but the last
	used       []int       // features with at least two bins
	off        []int       // offset of each used feature's bins in a histogram
	nbins      []int       // bins of each used feature
	totalBins  int
}

// binSampleRows bounds the rows looked at to place the bin thresholds.
const binSampleRows = 50000

// newBinMapper places at most maxBin bins per feature: one per distinct
// value when there are few, else cut at quantiles of the (sampled) values.
func newBinMapper(flat []float32, nf, maxBin int) *binMapper {
	n := len(flat) / max(nf, 1)
	step := max(1, n/binSampleRows)
	m := &binMapper{nf: nf, thresholds: make([][]float64, nf)}
	vals := make([]float32, 0, n/step+1)
	for f := range nf {
		vals = vals[:0]
		for r := 0; r < n; r += step {
			v := flat[r*nf+f]
			if v != v { // NaN reads as 0, as in leaves
				v = 0
			}
			vals = append(vals, v)
		}
		slices.Sort(vals)
		m.thresholds[f] = cutPoints(vals, maxBin)
		if len(m.thresholds[f]) > 0 {
			m.off = append(m.off, m.totalBins)
			m.used = append(m.used, f)
			nb := len(m.thresholds[f]) + 1
			m.nbins = append(m.nbins, nb)
			m.totalBins += nb
		}
	}
	return m
}

// cutPoints returns increasing thresholds between distinct sorted values.
func cutPoints(sorted []float32, maxBin int) []float64 {
	if len(sorted) == 0 {
		return nil
	}
	distinct := 1
	for i := 1; i < len(sorted); i++ {
		if sorted[i] != sorted[i-1] {
			distinct++
		}
	}
	var thr []float64
	if distinct <= maxBin {
		for i := 1; i < len(sorted); i++ {
			if sorted[i] != sorted[i-1] {
				thr = append(thr, mid(sorted[i-1], sorted[i]))
			}
		}
		return thr
	}
	n := len(sorted)
	for q := 1; q < maxBin; q++ {
		v := sorted[q*n/maxBin-1]
		// The next larger value.
		j := sort.Search(n, func(i int) bool { return sorted[i] > v })
		if j == n {
			break
		}
		t := mid(v, sorted[j])
		if len(thr) == 0 || t > thr[len(thr)-1] {
			thr = append(thr, t)
		}
	}
	return thr
}

// mid returns a float64 strictly between two distinct float32 values.
func mid(a, b float32) float64 { return (float64(a) + float64(b)) / 2 }

// bin returns the bin of value v of feature f.
func (m *binMapper) bin(f int, v float32) int {
	if v != v {
		v = 0
	}
	x := float64(v)
	thr := m.thresholds[f]
	if len(thr) <= 8 {
		for i, t := range thr {
			if x <= t {
				return i
			}
		}
		return len(thr)
	}
	return sort.SearchFloat64s(thr, x)
}

// binRows bins rows [lo, hi) of flat into out (row-major, used features).
func (m *binMapper) binRows(flat []float32, lo, hi int, out []uint8) {
	nu := len(m.used)
	for r := lo; r < hi; r++ {
		row := flat[r*m.nf : (r+1)*m.nf]
		o := out[(r-lo)*nu : (r-lo+1)*nu]
		for k, f := range m.used {
			o[k] = uint8(m.bin(f, row[f]))
		}
	}
}

// gradPair is the gradient and hessian of one row.
type gradPair struct{ g, h float64 }

// histBin accumulates the rows of one bin.
type histBin struct {
	g, h float64
	n    int64
}

// tree is one regression tree in LightGBM's layout: internal node 0 is the
// root; a child index >= 0 is an internal node, < 0 is leaf ^child.
type tree struct {
	feature   []int32   // split feature (index in the row)
	threshold []float64 // go left when value <= threshold
	gain      []float64
	left      []int32
	right     []int32
	// Training-only: the split in bin space (used feature index, last left
	// bin); nil for loaded trees.
	usedIdx  []int32
	splitBin []int32

	internalValue  []float64
	internalWeight []float64
	internalCount  []int64

	leafValue  []float64
	leafWeight []float64
	leafCount  []int64
	shrinkage  float64
}

// predict walks a row, LightGBM's way (NaN reads as 0).
func (t *tree) predict(row []float32) float64 {
	if len(t.feature) == 0 {
		return t.leafValue[0]
	}
	n := int32(0)
	for {
		v := float64(row[t.feature[n]])
		if v != v {
			v = 0
		}
		if v <= t.threshold[n] {
			n = t.left[n]
		} else {
			n = t.right[n]
		}
		if n < 0 {
			return t.leafValue[^n]
		}
	}
}

// predictBinned walks a binned row (used features only).
func (t *tree) predictBinned(bins []uint8) float64 {
	if len(t.feature) == 0 {
		return t.leafValue[0]
	}
	n := int32(0)
	for {
		if int32(bins[t.usedIdx[n]]) <= t.splitBin[n] {
			n = t.left[n]
		} else {
			n = t.right[n]
		}
		if n < 0 {
			return t.leafValue[^n]
		}
	}
}

// growParams are the tree-shape parameters of Params, resolved.
type growParams struct {
	maxDepth, maxLeaves, minData int
	minHess, lambda, gamma, eta  float64
	workers                      int
}

// grower builds trees over one binned training set; its buffers are reused
// from tree to tree.
type grower struct {
	p    growParams
	m    *binMapper
	bins []uint8 // row-major, len(m.used) per row, all rows of the dataset
	gh   []gradPair
	rows []int32 // the training rows
	idx  []int32 // the training rows, partitioned by leaf
	tmp  []int32
	free [][]histBin
	made int
	maxH int
	scrA []histBin
	scrB []histBin

	// Sparse rows (see build).
	def      []int32  // histogram index of each used feature's default bin
	ent      []uint16 // non-default histogram indices, row after row
	rowStart []int32  // row r's entries are ent[rowStart[r]:rowStart[r+1]]
	parts    [][]histBin

	col   []uint8 // column-major copy of bins, for partitioning
	nrows int
}

// Histograms are built from a sparse copy of the bins: for every row, the
// histogram indices of its entries that are not in their feature's most
// frequent ("default") bin, typically a quarter of them. A default bin's
// sums are the node's totals minus the feature's other bins.
//
// Rows are summed in fixed chunks of buildChunk into private histograms
// that are then added in chunk order: the chunks depend only on the node's
// rows, so a tree does not depend on the number of workers.
const buildChunk = 4096

// maxHistBytes bounds the memory of the histograms kept for subtraction.
const maxHistBytes = 64 << 20

func newGrower(p growParams, m *binMapper, bins []uint8, rows []int32) *grower {
	g := &grower{p: p, m: m, bins: bins, rows: rows}
	g.idx = make([]int32, len(rows))
	g.tmp = make([]int32, 0, len(rows))
	hb := max(1, m.totalBins*24)
	g.maxH = max(4, maxHistBytes/hb)
	g.scrA = make([]histBin, m.totalBins)
	g.scrB = make([]histBin, m.totalBins)
	g.sparsify()
	return g
}

// sparsify finds each used feature's default bin over the training rows
// and builds the sparse entries of every row of the dataset.
func (g *grower) sparsify() {
	m := g.m
	nu := len(m.used)
	nrows := len(g.bins) / max(nu, 1)
	counts := make([]int, m.totalBins)
	for _, r := range g.rows {
		for u, b := range g.bins[int(r)*nu : int(r)*nu+nu] {
			counts[m.off[u]+int(b)]++
		}
	}
	g.def = make([]int32, nu)
	for u := range nu {
		best := 0
		for b := range m.nbins[u] {
			if counts[m.off[u]+b] > counts[m.off[u]+best] {
				best = b
			}
		}
		g.def[u] = int32(m.off[u] + best)
	}
	g.nrows = nrows
	g.col = make([]uint8, nu*nrows)
	for r := range nrows {
		for u, b := range g.bins[r*nu : r*nu+nu] {
			g.col[u*nrows+r] = b
		}
	}
	g.rowStart = make([]int32, nrows+1)
	g.ent = g.ent[:0]
	for r := range nrows {
		for u, b := range g.bins[r*nu : r*nu+nu] {
			if k := int32(m.off[u] + int(b)); k != g.def[u] {
				g.ent = append(g.ent, uint16(k))
			}
		}
		g.rowStart[r+1] = int32(len(g.ent))
	}
}

func (g *grower) getHist() []histBin {
	if n := len(g.free); n > 0 {
		h := g.free[n-1]
		g.free = g.free[:n-1]
		return h
	}
	if g.made < g.maxH {
		g.made++
		return make([]histBin, g.m.totalBins)
	}
	return nil
}

func (g *grower) putHist(h []histBin) {
	if h != nil && &h[0] != &g.scrA[0] && &h[0] != &g.scrB[0] {
		g.free = append(g.free, h)
	}
}

// build sums the rows of a node with totals tot into h.
func (g *grower) build(h []histBin, rows []int32, tot histBin) {
	nchunks := (len(rows) + buildChunk - 1) / buildChunk
	chunk := func(c int) []int32 { return rows[c*buildChunk : min((c+1)*buildChunk, len(rows))] }
	if nchunks <= 1 {
		g.buildSparse(h, rows)
	} else {
		for len(g.parts) < nchunks-1 {
			g.parts = append(g.parts, make([]histBin, g.m.totalBins))
		}
		dst := func(c int) []histBin {
			if c == 0 {
				return h
			}
			return g.parts[c-1]
		}
		parallelFor(nchunks, g.p.workers, func(c int) { g.buildSparse(dst(c), chunk(c)) })
		for c := 1; c < nchunks; c++ {
			p := g.parts[c-1]
			for i := range h {
				h[i].g += p[i].g
				h[i].h += p[i].h
				h[i].n += p[i].n
			}
		}
	}
	// Default bins: the totals minus the other bins of the feature.
	m := g.m
	for u, d := range g.def {
		rest := histBin{}
		for _, e := range h[m.off[u] : m.off[u]+m.nbins[u]] {
			rest.g += e.g
			rest.h += e.h
			rest.n += e.n
		}
		h[d] = histBin{g: tot.g - rest.g, h: tot.h - rest.h, n: tot.n - rest.n}
	}
}

// buildSparse sums the rows' non-default entries into h.
func (g *grower) buildSparse(h []histBin, rows []int32) {
	clear(h)
	for _, r := range rows {
		gp := g.gh[r]
		for _, k := range g.ent[g.rowStart[r]:g.rowStart[r+1]] {
			e := &h[k]
			e.g += gp.g
			e.h += gp.h
			e.n++
		}
	}
}

// split is a candidate split of a leaf.
type split struct {
	ok     bool
	gain   float64
	used   int // used-feature index
	bin    int // last bin going left
	gl, hl float64
	nl     int64
}

// leafState is a leaf while the tree grows.
type leafState struct {
	begin, end int // rows in grower.idx
	depth      int
	g, h       float64
	n          int64
	hist       []histBin // nil when not kept
	best       split
	parent     int32 // internal node above, -1 for the root
	isLeft     bool
	leaf       int32 // LightGBM leaf index
}

// findSplit computes the best split of a leaf from its histogram.
func (g *grower) findSplit(l *leafState) {
	l.best = split{}
	p := &g.p
	if l.depth >= p.maxDepth || l.n < int64(2*p.minData) || l.hist == nil {
		return
	}
	parentScore := l.g * l.g / (l.h + p.lambda)
	best := p.gamma
	for u := range g.m.used {
		h := l.hist[g.m.off[u] : g.m.off[u]+g.m.nbins[u]]
		var gl, hl float64
		var nl int64
		for b := 0; b < len(h)-1; b++ {
			gl += h[b].g
			hl += h[b].h
			nl += h[b].n
			if nl < int64(p.minData) || hl < p.minHess {
				continue
			}
			nr := l.n - nl
			hr := l.h - hl
			if nr < int64(p.minData) || hr < p.minHess {
				break
			}
			dl, dr := hl+p.lambda, hr+p.lambda
			if dl <= 0 || dr <= 0 {
				continue
			}
			gr := l.g - gl
			gain := gl*gl/dl + gr*gr/dr - parentScore
			if gain > best {
				best = gain
				l.best = split{ok: true, gain: gain, used: u, bin: b, gl: gl, hl: hl, nl: nl}
			}
		}
	}
}

// grow builds one tree from the current gradients and returns it with the
// leaf of every training row written to rowLeaf.
func (g *grower) grow(rowLeaf []int32) *tree {
	p := &g.p
	copy(g.idx, g.rows)
	t := &tree{shrinkage: p.eta}
	root := &leafState{begin: 0, end: len(g.idx), parent: -1}
	for _, r := range g.rows {
		root.g += g.gh[r].g
		root.h += g.gh[r].h
	}
	root.n = int64(len(g.rows))
	if root.n >= int64(2*p.minData) && p.maxDepth > 0 {
		root.hist = g.getHist()
		if root.hist == nil {
			root.hist = g.scrA
		}
		g.build(root.hist, g.idx, histBin{root.g, root.h, root.n})
		g.findSplit(root)
	}
	leaves := []*leafState{root}
	for len(leaves) < p.maxLeaves {
		bi := -1
		for i, l := range leaves {
			if l.best.ok && (bi < 0 || l.best.gain > leaves[bi].best.gain) {
				bi = i
			}
		}
		if bi < 0 {
			break
		}
		l := leaves[bi]
		right := g.splitLeaf(t, l, int32(len(leaves)))
		leaves = append(leaves, right)
	}
	for _, l := range leaves {
		g.putHist(l.hist)
		l.hist = nil
	}
	// Leaf values, in LightGBM leaf order.
	t.leafValue = make([]float64, len(leaves))
	t.leafWeight = make([]float64, len(leaves))
	t.leafCount = make([]int64, len(leaves))
	for _, l := range leaves {
		t.leafValue[l.leaf] = leafOutput(l.g, l.h, p)
		t.leafWeight[l.leaf] = l.h
		t.leafCount[l.leaf] = l.n
		for _, r := range g.idx[l.begin:l.end] {
			rowLeaf[r] = l.leaf
		}
	}
	return t
}

func leafOutput(g, h float64, p *growParams) float64 {
	d := h + p.lambda
	if d <= 0 {
		return 0
	}
	return -g / d * p.eta
}

// splitLeaf applies l's best split: l becomes the left child (keeping its
// leaf index) and the returned leaf, index newLeaf, the right one.
func (g *grower) splitLeaf(t *tree, l *leafState, newLeaf int32) *leafState {
	p := &g.p
	s := l.best
	u := s.used
	f := g.m.used[u]
	node := int32(len(t.feature))
	t.feature = append(t.feature, int32(f))
	t.threshold = append(t.threshold, g.m.thresholds[f][s.bin])
	t.gain = append(t.gain, s.gain)
	t.left = append(t.left, ^l.leaf)
	t.right = append(t.right, ^newLeaf)
	t.usedIdx = append(t.usedIdx, int32(u))
	t.splitBin = append(t.splitBin, int32(s.bin))
	t.internalValue = append(t.internalValue, leafOutput(l.g, l.h, p))
	t.internalWeight = append(t.internalWeight, l.h)
	t.internalCount = append(t.internalCount, l.n)
	if l.parent >= 0 {
		if l.isLeft {
			t.left[l.parent] = node
		} else {
			t.right[l.parent] = node
		}
	}

	// Partition the rows, stably (a leaf's rows stay in increasing order,
	// so the column is read forward).
	col := g.col[u*g.nrows : (u+1)*g.nrows]
	tmp := g.tmp[:0]
	nl := l.begin
	for _, r := range g.idx[l.begin:l.end] {
		if int(col[r]) <= s.bin {
			g.idx[nl] = r
			nl++
		} else {
			tmp = append(tmp, r)
		}
	}
	copy(g.idx[nl:l.end], tmp)
	g.tmp = tmp

	r := &leafState{begin: nl, end: l.end, depth: l.depth + 1, parent: node, isLeft: false, leaf: newLeaf,
		g: l.g - s.gl, h: l.h - s.hl, n: l.n - s.nl}
	parentHist := l.hist
	l.end = nl
	l.depth++
	l.parent, l.isLeft = node, true
	l.g, l.h, l.n = s.gl, s.hl, s.nl
	l.hist = nil

	splittable := func(c *leafState) bool { return c.depth < p.maxDepth && c.n >= int64(2*p.minData) }
	if !splittable(l) && !splittable(r) {
		g.putHist(parentHist)
		l.best, r.best = split{}, split{}
		return r
	}
	small, large := l, r
	if r.n < l.n {
		small, large = r, l
	}
	small.hist = g.getHist()
	if small.hist == nil {
		small.hist = g.scrA
		if parentHist != nil && &parentHist[0] == &g.scrA[0] {
			small.hist = g.scrB
		}
	}
	g.build(small.hist, g.idx[small.begin:small.end], histBin{small.g, small.h, small.n})
	if parentHist != nil {
		for i := range parentHist {
			parentHist[i].g -= small.hist[i].g
			parentHist[i].h -= small.hist[i].h
			parentHist[i].n -= small.hist[i].n
		}
		large.hist = parentHist
	} else {
		large.hist = g.getHist()
		if large.hist == nil {
			large.hist = g.scrB
			if &small.hist[0] == &g.scrB[0] {
				large.hist = g.scrA
			}
		}
		g.build(large.hist, g.idx[large.begin:large.end], histBin{large.g, large.h, large.n})
	}
	for _, c := range []*leafState{small, large} {
		g.findSplit(c)
		isScratch := &c.hist[0] == &g.scrA[0] || &c.hist[0] == &g.scrB[0]
		if !c.best.ok || isScratch {
			// No further use: either final, or the buffer is scratch
			// (the child will be rebuilt from its rows if it splits).
			g.putHist(c.hist)
			c.hist = nil
		}
	}
	return r
}
