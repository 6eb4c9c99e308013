package frontend

import (
	"strings"
	"testing"
)

func TestPassOrder(t *testing.T) {
	if err := checkPassOrder(Passes); err != nil {
		t.Fatal(err)
	}
	swapped := append([]Pass(nil), Passes...)
	swapped[0], swapped[len(swapped)-1] = swapped[len(swapped)-1], swapped[0]
	if err := checkPassOrder(swapped); err == nil || !strings.Contains(err.Error(), "must run before") {
		t.Errorf("swapped order: error %v", err)
	}
}
