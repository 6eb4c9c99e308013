package costmodel

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// smallModelText trains a small model and returns its text.
func smallModelText(t *testing.T) string {
	t.Helper()
	m, err := Train(synthetic(5, 300, 8, 3, one, sumOfTwo), Params{MaxRounds: 5})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := m.Save(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestLoadRejectsBadFiles: crafted model files are errors that name the
// field, never allocations of their claimed size (num_leaves=999999999
// took 24 GB) nor trees that make prediction loop (a node pointing at
// itself spun in PredictRows forever).
func TestLoadRejectsBadFiles(t *testing.T) {
	text := smallModelText(t)
	if _, err := Load(strings.NewReader(text)); err != nil {
		t.Fatalf("the untouched model: %v", err)
	}
	// replaceIn rewrites field key of tree 0 with f(old value).
	replaceIn := func(key string, f func(string) string) string {
		re := regexp.MustCompile(`(?m)^(` + key + `=)(.*)$`)
		done := false
		return re.ReplaceAllStringFunc(text, func(line string) string {
			if done {
				return line
			}
			done = true
			m := re.FindStringSubmatch(line)
			return m[1] + f(m[2])
		})
	}
	set := func(key, v string) string { return replaceIn(key, func(string) string { return v }) }
	// firstTo replaces the first value of a field.
	firstTo := func(key, v string) string {
		return replaceIn(key, func(old string) string {
			f := strings.Fields(old)
			f[0] = v
			return strings.Join(f, " ")
		})
	}
	for _, c := range []struct{ name, text, want string }{
		{"huge num_leaves", set("num_leaves", "999999999"), "num_leaves=999999999"},
		{"negative num_leaves", set("num_leaves", "-3"), "num_leaves"},
		{"node is its own child", firstTo("left_child", "0"), "reached twice (a cycle)"},
		{"child out of range", firstTo("right_child", "100000"), "out of range"},
		{"leaf out of range", firstTo("right_child", "-100000"), "out of range"},
		{"NaN leaf", firstTo("leaf_value", "nan"), "leaf_value"},
		{"infinite leaf", firstTo("leaf_value", "inf"), "leaf_value"},
		{"fractional child", firstTo("left_child", "1.5"), "not an index"},
		{"huge max_feature_idx", set("max_feature_idx", "999999999"), "max_feature_idx"},
		{"tree_sizes disagree", set("tree_sizes", "1"), "tree_sizes"},
		{"no trees", strings.Split(text, "Tree=0")[0] + "end of trees\n", "no trees"},
		{"not a model", "hello\n", "not a LightGBM"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		done := make(chan error, 1)
		go func() { _, err := Load(strings.NewReader(c.text)); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: error %v, want one mentioning %q", c.name, err, c.want)
			}
		case <-ctx.Done():
			t.Errorf("%s: Load did not return", c.name)
		}
		cancel()
	}
	// A cycle through an ancestor: node 0's child k points back at 0.
	m, _ := Load(strings.NewReader(text))
	for _, tr := range m.trees {
		if len(tr.left) < 2 {
			continue
		}
		c := tr.left[0]
		if c < 0 {
			c = tr.right[0]
		}
		if c < 0 {
			continue
		}
		tr.left[c] = 0
		if err := tr.check(); err == nil || !strings.Contains(err.Error(), "cycle") {
			t.Errorf("a cycle through the root: %v", err)
		}
		break
	}
	big := strings.Repeat("x", MaxModelBytes+1)
	if _, err := Load(strings.NewReader(big)); err == nil || !strings.Contains(err.Error(), "MiB") {
		t.Errorf("a file larger than the limit: %v", err)
	}
}
