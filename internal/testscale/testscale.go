// Package testscale sizes the randomized tests. Their default counts keep
// `go test ./...` within CI's budget (a clean 2-core machine, under 20
// minutes for scripts/test.sh); the environment variable
// TESSERA_TEST_SCALE=K multiplies every count by K for a deeper run
// (TESSERA_TEST_SCALE=4 go test ./measure), or shrinks them (0.25).
package testscale

import (
	"math"
	"os"
	"strconv"
	"testing"
)

// Env is the environment variable that scales the counts.
const Env = "TESSERA_TEST_SCALE"

// N returns n scaled by TESSERA_TEST_SCALE (unset: n), at least 1. A value
// that is not a positive number fails the test.
func N(tb testing.TB, n int) int {
	tb.Helper()
	v, ok := os.LookupEnv(Env)
	if !ok || v == "" {
		return n
	}
	k, err := strconv.ParseFloat(v, 64)
	if err != nil || !(k > 0) || math.IsInf(k, 0) {
		tb.Fatalf("%s=%q: want a positive number", Env, v)
	}
	return max(1, int(math.Round(float64(n)*k)))
}
