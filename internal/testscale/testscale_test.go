package testscale

import "testing"

func TestN(t *testing.T) {
	for _, c := range []struct {
		env  string
		n    int
		want int
	}{
		{"", 20, 20},
		{"1", 20, 20},
		{"4", 20, 80},
		{"0.25", 20, 5},
		{"0.01", 20, 1},
	} {
		t.Setenv(Env, c.env)
		if got := N(t, c.n); got != c.want {
			t.Errorf("%s=%q: N(%d) = %d, want %d", Env, c.env, c.n, got, c.want)
		}
	}
}
