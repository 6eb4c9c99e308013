package measure

import (
	"math"
	"strings"
	"testing"
)

func TestCompare(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	tests := []struct {
		name      string
		got, want []float32
		rtol      float64
		atol      float64
		ok        bool
		msgHas    []string
	}{
		{"equal", []float32{1, 2, 3}, []float32{1, 2, 3}, 0, 0, true, nil},
		{"empty", nil, []float32{}, 0, 0, true, nil},
		{"within rtol", []float32{100.5}, []float32{100}, 1e-2, 0, true, nil},
		{"within atol", []float32{1e-6}, []float32{0}, 0, 1e-5, true, nil},
		{"outside", []float32{1, 2.5, 3}, []float32{1, 2, 3}, 1e-3, 1e-3, false,
			[]string{"1 of 3", "first [1]: got 2.5, want 2"}},
		{"first and worst", []float32{1.1, 2, 9}, []float32{1, 2, 3}, 0, 1e-3, false,
			[]string{"2 of 3", "first [0]: got 1.1", "worst [2]: got 9, want 3"}},
		{"length", []float32{1}, []float32{1, 2}, 0, 0, false, []string{"length"}},
		{"nan vs nan", []float32{nan}, []float32{nan}, 0, 0, true, nil},
		{"nan vs number", []float32{nan}, []float32{1}, 1, 1, false, []string{"got NaN, want 1"}},
		{"number vs nan", []float32{1}, []float32{nan}, 1, 1, false, []string{"want NaN"}},
		{"inf vs inf", []float32{inf}, []float32{inf}, 0, 0, true, nil},
		{"inf vs -inf", []float32{-inf}, []float32{inf}, 1, 1, false, nil},
		{"inf vs big", []float32{inf}, []float32{math.MaxFloat32}, 1, 1, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, msg := Compare(tt.got, tt.want, tt.rtol, tt.atol)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v (msg %q)", ok, tt.ok, msg)
			}
			if ok && msg != "" {
				t.Errorf("msg = %q on a match", msg)
			}
			for _, s := range tt.msgHas {
				if !strings.Contains(msg, s) {
					t.Errorf("msg %q lacks %q", msg, s)
				}
			}
		})
	}
}
