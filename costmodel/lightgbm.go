package costmodel

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/dmitryikh/leaves"
)

// The model file is LightGBM's text format (version=v3), so that leaves
// (and LightGBM itself) load it:
//
//	tree
//	version=v3
//	num_class=1
//	num_tree_per_iteration=1
//	label_index=0
//	max_feature_idx=<features-1>
//	objective=regression          (raw scores: no output transformation)
//	feature_names=<name> …
//	feature_infos=[min:max] …     ("none" for a feature with one value)
//	tree_sizes=<bytes of each tree block> …
//	<blank>
//	Tree=<i>                      one block per tree, then two blank lines
//	num_leaves=, num_cat=0, split_feature=, split_gain=, threshold=,
//	decision_type=2 (numerical, default left, no missing type), left_child=,
//	right_child= (negative: ^leaf), leaf_value= (shrinkage applied),
//	leaf_weight=, leaf_count=, internal_value=, internal_weight=,
//	internal_count=, is_linear=0, shrinkage=
//	end of trees
//	feature_importances:          split counts, most used first
//	parameters:                   Tessera's training parameters
//	end of parameters
//	pandas_categorical:null
//
// Floats are written in the shortest form that parses back to the same
// float64, so a saved and reloaded model predicts bit-identically.

// Save writes the model in LightGBM's text format.
func (m *Model) Save(w io.Writer) error {
	_, err := w.Write(m.text())
	return err
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func joinF(vs []float64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = ftoa(v)
	}
	return strings.Join(s, " ")
}

func joinI[T int32 | int64 | int](vs []T) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.FormatInt(int64(v), 10)
	}
	return strings.Join(s, " ")
}

// treeBlock renders one tree, blank lines included.
func treeBlock(i int, t *tree) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Tree=%d\n", i)
	fmt.Fprintf(&b, "num_leaves=%d\n", len(t.leafValue))
	b.WriteString("num_cat=0\n")
	fmt.Fprintf(&b, "split_feature=%s\n", joinI(t.feature))
	fmt.Fprintf(&b, "split_gain=%s\n", joinF(t.gain))
	fmt.Fprintf(&b, "threshold=%s\n", joinF(t.threshold))
	dt := make([]int, len(t.feature))
	for k := range dt {
		dt[k] = 2
	}
	fmt.Fprintf(&b, "decision_type=%s\n", joinI(dt))
	fmt.Fprintf(&b, "left_child=%s\n", joinI(t.left))
	fmt.Fprintf(&b, "right_child=%s\n", joinI(t.right))
	fmt.Fprintf(&b, "leaf_value=%s\n", joinF(t.leafValue))
	fmt.Fprintf(&b, "leaf_weight=%s\n", joinF(t.leafWeight))
	fmt.Fprintf(&b, "leaf_count=%s\n", joinI(t.leafCount))
	fmt.Fprintf(&b, "internal_value=%s\n", joinF(t.internalValue))
	fmt.Fprintf(&b, "internal_weight=%s\n", joinF(t.internalWeight))
	fmt.Fprintf(&b, "internal_count=%s\n", joinI(t.internalCount))
	b.WriteString("is_linear=0\n")
	fmt.Fprintf(&b, "shrinkage=%s\n\n\n", ftoa(t.shrinkage))
	return b.String()
}

func (m *Model) text() []byte {
	blocks := make([]string, len(m.trees))
	sizes := make([]int, len(m.trees))
	for i, t := range m.trees {
		blocks[i] = treeBlock(i, t)
		sizes[i] = len(blocks[i])
	}
	var b bytes.Buffer
	b.WriteString("tree\nversion=v3\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\n")
	fmt.Fprintf(&b, "max_feature_idx=%d\n", m.nf-1)
	b.WriteString("objective=regression\n")
	fmt.Fprintf(&b, "feature_names=%s\n", strings.Join(m.names, " "))
	fmt.Fprintf(&b, "feature_infos=%s\n", strings.Join(m.featureInfos(), " "))
	fmt.Fprintf(&b, "tree_sizes=%s\n\n", joinI(sizes))
	for _, s := range blocks {
		b.WriteString(s)
	}
	b.WriteString("end of trees\n\nfeature_importances:\n")
	for _, fi := range m.importances() {
		fmt.Fprintf(&b, "%s=%d\n", m.names[fi.feature], fi.splits)
	}
	b.WriteString("\nparameters:\n")
	fmt.Fprintf(&b, "[boosting: gbdt]\n[objective: regression]\n[tessera_objective: %s]\n", m.objective)
	if m.Info.Rounds > 0 {
		fmt.Fprintf(&b, "[num_iterations: %d]\n", m.Info.Rounds)
	}
	b.WriteString("end of parameters\n\npandas_categorical:null\n")
	return b.Bytes()
}

// featureInfos returns "[min:max]" of the thresholds' features as seen in
// training (kept from Load for loaded models), "none" when unknown.
func (m *Model) featureInfos() []string {
	if len(m.infos) == m.nf {
		return m.infos
	}
	out := make([]string, m.nf)
	for i := range out {
		out[i] = "none"
	}
	return out
}

type importance struct{ feature, splits int }

// importances counts the splits on each feature, most used first (ties by
// feature index); unused features are left out.
func (m *Model) importances() []importance {
	counts := make([]int, m.nf)
	for _, t := range m.trees {
		for _, f := range t.feature {
			counts[f]++
		}
	}
	var out []importance
	for f, c := range counts {
		if c > 0 {
			out = append(out, importance{f, c})
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].splits > out[j-1].splits; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// Load reads a model in LightGBM's text format, as written by Save (or by
// LightGBM for numerical, single-output models): prediction goes through
// leaves, and the trees are kept for Save and the Go walker.
//
// The file is checked before it is used: at most MaxModelBytes, the sizes
// in its header and trees consistent with the values given, and every
// tree a tree (no cycle, every node and leaf reached once).
func Load(r io.Reader) (*Model, error) {
	text, err := io.ReadAll(io.LimitReader(r, MaxModelBytes+1))
	if err != nil {
		return nil, fmt.Errorf("costmodel: load: %w", err)
	}
	if len(text) > MaxModelBytes {
		return nil, fmt.Errorf("costmodel: load: larger than %d MiB: not a cost model", MaxModelBytes>>20)
	}
	m, err := parseModel(text)
	if err != nil {
		return nil, fmt.Errorf("costmodel: load: %w", err)
	}
	ens, err := leaves.LGEnsembleFromReader(bufio.NewReader(bytes.NewReader(text)), false)
	if err != nil {
		return nil, fmt.Errorf("costmodel: load (leaves): %w", err)
	}
	m.ens = ens
	return m, nil
}

// LoadFile reads a model file and checks that it takes the features
// Tessera extracts (NumFeatures): a model of another version's features
// would score garbage.
func LoadFile(path string) (*Model, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := Load(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if m.NumFeatures() != NumFeatures {
		return nil, fmt.Errorf("%s: a model of %d features; Tessera extracts %d", path, m.NumFeatures(), NumFeatures)
	}
	return m, nil
}

// buildEnsemble loads the model's own text through leaves, so that a
// trained model predicts exactly as a saved and reloaded one.
func (m *Model) buildEnsemble() error {
	ens, err := leaves.LGEnsembleFromReader(bufio.NewReader(bytes.NewReader(m.text())), false)
	if err != nil {
		return fmt.Errorf("costmodel: leaves rejected the model: %w", err)
	}
	m.ens = ens
	return nil
}

// parseModel parses the header and the tree blocks.
func parseModel(text []byte) (*Model, error) {
	lines := strings.Split(string(text), "\n")
	kv := func(line string) (string, string, bool) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		return k, v, ok
	}
	m := &Model{}
	i := 0
	header := map[string]string{}
	for ; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if strings.HasPrefix(line, "Tree=") || line == "end of trees" {
			break
		}
		if k, v, ok := kv(line); ok {
			header[k] = v
		}
	}
	if header["version"] != "v3" && header["version"] != "v2" {
		return nil, fmt.Errorf("not a LightGBM text model (version %q)", header["version"])
	}
	if header["num_class"] != "1" {
		return nil, fmt.Errorf("num_class=%s: only single-output models are supported", header["num_class"])
	}
	mfi, err := strconv.Atoi(header["max_feature_idx"])
	if err != nil {
		return nil, fmt.Errorf("max_feature_idx: %v", err)
	}
	if mfi < 0 || mfi >= maxFeatures {
		return nil, fmt.Errorf("max_feature_idx=%d: want 0 to %d", mfi, maxFeatures-1)
	}
	m.nf = mfi + 1
	m.names = strings.Fields(header["feature_names"])
	if len(m.names) != m.nf {
		m.names = featureNamesFor(m.nf)
	}
	if infos := strings.Fields(header["feature_infos"]); len(infos) == m.nf {
		m.infos = infos
	}
	for i < len(lines) {
		line := strings.TrimSpace(lines[i])
		if line == "end of trees" {
			break
		}
		if !strings.HasPrefix(line, "Tree=") {
			i++
			continue
		}
		fields := map[string]string{}
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			if k, v, ok := kv(lines[i]); ok {
				fields[k] = v
			}
		}
		t, err := parseTree(fields, m.nf)
		if err != nil {
			return nil, fmt.Errorf("tree %d: %w", len(m.trees), err)
		}
		m.trees = append(m.trees, t)
	}
	for _, l := range lines[i:] {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "[tessera_objective: "); ok {
			switch strings.TrimSuffix(v, "]") {
			case PairwiseRank.String():
				m.objective = PairwiseRank
			}
		}
	}
	if len(m.trees) == 0 {
		return nil, fmt.Errorf("no trees")
	}
	// leaves reads as many trees as tree_sizes lists.
	if n := len(strings.Fields(header["tree_sizes"])); n != len(m.trees) {
		return nil, fmt.Errorf("tree_sizes lists %d trees, the file has %d", n, len(m.trees))
	}
	return m, nil
}

// MaxModelBytes bounds the size of a model file Load reads (Tessera's
// models take a few MB).
const MaxModelBytes = 256 << 20

// maxFeatures bounds max_feature_idx, so that a crafted header cannot make
// the loader allocate names for billions of features.
const maxFeatures = 1 << 16

func parseTree(f map[string]string, nf int) (*tree, error) {
	nl, err := strconv.Atoi(f["num_leaves"])
	if err != nil || nl < 1 {
		return nil, fmt.Errorf("num_leaves %q", f["num_leaves"])
	}
	if f["num_cat"] != "" && f["num_cat"] != "0" {
		return nil, fmt.Errorf("categorical splits are not supported")
	}
	t := &tree{shrinkage: 1}
	var perr error
	// A field's values are counted before anything of num_leaves' size is
	// allocated: num_leaves=999999999 allocated 24 GB. A field with the
	// wrong count gives nil (and perr).
	floats := func(key string, n int) []float64 {
		fs := strings.Fields(f[key])
		if len(fs) != n {
			if perr == nil {
				perr = fmt.Errorf("%s: %d values, num_leaves=%d wants %d", key, len(fs), nl, n)
			}
			return nil
		}
		out := make([]float64, n)
		for k, s := range fs {
			v, err := strconv.ParseFloat(s, 64)
			if (err != nil || math.IsNaN(v)) && perr == nil {
				perr = fmt.Errorf("%s: value %d is %q", key, k, s)
			}
			out[k] = v
		}
		return out
	}
	ints := func(key string, n int) []int64 {
		fs := floats(key, n)
		if fs == nil {
			return nil
		}
		out := make([]int64, n)
		for k, v := range fs {
			if v != math.Trunc(v) || math.Abs(v) > math.MaxInt32 {
				if perr == nil {
					perr = fmt.Errorf("%s: value %d is %v, not an index", key, k, v)
				}
				return nil
			}
			out[k] = int64(v)
		}
		return out
	}
	t.leafValue = floats("leaf_value", nl)
	if perr != nil {
		return nil, perr
	}
	for k, v := range t.leafValue {
		if math.IsInf(v, 0) {
			return nil, fmt.Errorf("leaf_value: leaf %d is %v", k, v)
		}
	}
	if s, ok := f["shrinkage"]; ok {
		t.shrinkage, _ = strconv.ParseFloat(s, 64)
	}
	if nl == 1 {
		t.leafWeight = []float64{0}
		t.leafCount = []int64{0}
		return t, perr
	}
	ni := nl - 1
	features, decisions := ints("split_feature", ni), ints("decision_type", ni)
	lefts, rights := ints("left_child", ni), ints("right_child", ni)
	t.threshold = floats("threshold", ni)
	if perr != nil {
		return nil, perr
	}
	for _, v := range features {
		if v < 0 || int(v) >= nf {
			return nil, fmt.Errorf("split feature %d out of range", v)
		}
		t.feature = append(t.feature, int32(v))
	}
	for k, v := range decisions {
		if v&1 != 0 {
			return nil, fmt.Errorf("node %d: categorical decision", k)
		}
		if (v>>2)&3 == 2 {
			return nil, fmt.Errorf("node %d: NaN missing type is not supported", k)
		}
	}
	for k := range ni {
		t.left = append(t.left, int32(lefts[k]))
		t.right = append(t.right, int32(rights[k]))
	}
	if err := t.check(); err != nil {
		return nil, err
	}
	t.gain = optFloats(f, "split_gain", ni)
	t.leafWeight = optFloats(f, "leaf_weight", nl)
	t.leafCount = optInts(f, "leaf_count", nl)
	t.internalValue = optFloats(f, "internal_value", ni)
	t.internalWeight = optFloats(f, "internal_weight", ni)
	t.internalCount = optInts(f, "internal_count", ni)
	return t, perr
}

// check reports whether the tree is one: every child in range, and every
// node and leaf reached exactly once from the root. A node that points at
// itself or at an ancestor made prediction loop forever.
func (t *tree) check() error {
	ni, nl := len(t.left), len(t.leafValue)
	node := make([]bool, ni)
	leaf := make([]bool, nl)
	node[0] = true
	stack := []int32{0}
	for len(stack) > 0 {
		k := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range []int32{t.left[k], t.right[k]} {
			switch {
			case c >= 0 && int(c) >= ni, c < 0 && int(^c) >= nl:
				return fmt.Errorf("node %d: child %d out of range (%d nodes, %d leaves)", k, c, ni, nl)
			case c >= 0 && node[c]:
				return fmt.Errorf("node %d: child %d is reached twice (a cycle)", k, c)
			case c < 0 && leaf[^c]:
				return fmt.Errorf("node %d: leaf %d is reached twice", k, ^c)
			case c >= 0:
				node[c] = true
				stack = append(stack, c)
			default:
				leaf[^c] = true
			}
		}
	}
	for k, ok := range node {
		if !ok {
			return fmt.Errorf("node %d is not reached from the root", k)
		}
	}
	for k, ok := range leaf {
		if !ok {
			return fmt.Errorf("leaf %d is not reached from the root", k)
		}
	}
	return nil
}

// optFloats parses an informational field, zeros when absent or malformed.
func optFloats(f map[string]string, key string, n int) []float64 {
	out := make([]float64, n)
	fs := strings.Fields(f[key])
	if len(fs) != n {
		return out
	}
	for k, s := range fs {
		if v, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(v) {
			out[k] = v
		}
	}
	return out
}

func optInts(f map[string]string, key string, n int) []int64 {
	fs := optFloats(f, key, n)
	out := make([]int64, n)
	for k, v := range fs {
		out[k] = int64(v)
	}
	return out
}
