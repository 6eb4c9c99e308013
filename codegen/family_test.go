package codegen

import (
	"fmt"
	"strings"
	"testing"
)

// TestNewFamily checks how kernels over a range group into classes, and
// how a class prints its literals.
func TestNewFamily(t *testing.T) {
	over := func(lo, hi int, code func(n int) string) map[int]string {
		m := map[int]string{}
		for n := lo; n <= hi; n++ {
			m[n] = code(n)
		}
		return m
	}
	tests := []struct {
		name    string
		codes   map[int]string
		classes int
		has     []string // in the first class's code
	}{
		{"affine", over(1, 40, func(n int) string {
			return fmt.Sprintf("for (i = 0; i < %d; ++i) a[i * %d + 3] = b[%d];", 64*n, n, 7)
		}), 1, []string{"i < (64 * tsr_dim)", "i * (tsr_dim) + 3", "b[7]"}},
		{"quadratic", over(2, 30, func(n int) string { return fmt.Sprintf("x = p[%d];", 12*n*n+n) }), 1,
			[]string{"(12 * tsr_dim * tsr_dim + tsr_dim)"}},
		{"ceil by remainder", over(16, 80, func(n int) string { return fmt.Sprintf("for (o = 0; o < %d; ++o) {}", (n+15)/16*4096) }), 16,
			[]string{"o < (256 * tsr_dim);"}},
		{"structure differs", over(1, 10, func(n int) string {
			if n%2 == 0 {
				return fmt.Sprintf("even(%d);", n)
			}
			return fmt.Sprintf("odd(%d);", n)
		}), 2, []string{"(tsr_dim)"}},
		{"pragmas and comments stay", over(1, 5, func(n int) string {
			return fmt.Sprintf("#pragma GCC unroll %d\n/* %d */ x = %d;", n, n, n)
		}), 5, nil},
		{"floats and suffixes stay", over(1, 5, func(n int) string { return fmt.Sprintf("x = %d.5f + %dULL + %d;", n, n, n) }), 5, nil},
		{"kept heap buffer stays", over(1, 5, func(n int) string {
			return fmt.Sprintf("p = tsr_ws_take(&slot, %d);\nq = a[%d];", 4*n, n)
		}), 5, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := NewFamily(tc.codes)
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Classes) != tc.classes {
				t.Errorf("%d classes, want %d", len(f.Classes), tc.classes)
			}
			for v, code := range tc.codes {
				c, ok := f.Class(v)
				if !ok {
					t.Fatalf("no class for %d", v)
				}
				if got := f.Classes[c].At(v); got != code {
					t.Errorf("class %d at %d prints %q, want %q", c, v, got, code)
				}
			}
			for _, s := range tc.has {
				if !strings.Contains(f.Classes[0].Code, s) {
					t.Errorf("class 0's code %q lacks %q", f.Classes[0].Code, s)
				}
			}
		})
	}
	if _, err := NewFamily(nil); err == nil {
		t.Error("a family of no kernels: no error")
	}
}

// FuzzNewFamily: any kernels, whatever their literals, group into classes
// that print back as them.
func FuzzNewFamily(f *testing.F) {
	f.Add("a[%d] = b[%d * i + 1];", int64(3), int64(1), uint8(20))
	f.Add("for (i = 0; i < %d; ++i) /* %d */", int64(0), int64(16), uint8(9))
	f.Add("x = 0%d + %d.0 + 1e%d;", int64(-5), int64(7), uint8(30))
	f.Fuzz(func(t *testing.T, format string, a, b int64, n uint8) {
		if strings.Count(format, "%d") != 2 || strings.Count(format, "%") != 2 {
			return
		}
		codes := map[int]string{}
		for v := 1; v <= int(n%40)+1; v++ {
			x := int64(v)
			codes[v] = fmt.Sprintf(format, a*x+b, (a+b)*x*x/int64(n%7+1)+x%3)
		}
		fam, err := NewFamily(codes)
		if err != nil {
			t.Fatal(err)
		}
		for v, code := range codes {
			c, ok := fam.Class(v)
			if !ok || fam.Classes[c].At(v) != code {
				t.Fatalf("value %d: class %d prints %q, want %q", v, c, fam.Classes[c].At(v), code)
			}
		}
	})
}
