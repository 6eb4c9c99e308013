package tsrt_test

import (
	"regexp"
	"slices"
	"testing"

	"github.com/tessera-ml/tessera/tsrt"
)

// TestExports checks that Exports, the functions a model's library
// exports, are those tessera.h declares.
func TestExports(t *testing.T) {
	var declared []string
	for _, m := range regexp.MustCompile(`(?m)^(?:const )?[a-z_0-9]+ \*?(tessera_[a-z_]+)\(`).FindAllStringSubmatch(tsrt.Header, -1) {
		declared = append(declared, m[1])
	}
	slices.Sort(declared)
	exports := slices.Sorted(slices.Values(tsrt.Exports))
	if !slices.Equal(declared, exports) {
		t.Errorf("tessera.h declares %v, Exports lists %v", declared, exports)
	}
}
