package curveplot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/tessera-ml/tessera/records"
)

// TestDrawCurve draws curves that a short tuning run does not make (`tune
// records plot` draws those in cmd/tune's tests): more tasks than the
// legend names, and a task without a successful record (no latency
// panel).
func TestDrawCurve(t *testing.T) {
	c := &records.Curve{Target: "cpu threads=1 | fake compiler", Trials: 100}
	var names []string
	for i := range 12 {
		c.Tasks = append(c.Tasks, records.TaskInfo{Key: strconv.Itoa(i), FLOPs: 1e6 * float64(i+1), Weight: 1 + i%3})
		c.Best = append(c.Best, []records.CurvePoint{{Trial: i + 1, Value: 1e-3}, {Trial: 50 + i, Value: 5e-5 * float64(i+1)}})
		names = append(names, strconv.Itoa(i))
	}
	var b bytes.Buffer
	if err := Draw(&b, ".svg", c, names, "many"); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, &b, "estimated model latency", "task 11 ×3", "4 other tasks", "estimated latency (ms)", "best GFLOP/s")

	c.Best[3] = nil
	b.Reset()
	if err := Draw(&b, ".png", c, names, "incomplete"); err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(&b); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := Draw(&b, ".svg", c, names, "incomplete"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "estimated model latency") {
		t.Error("a latency panel while a task has no successful record")
	}
	checkSVG(t, &b, "(1 without a successful record)", "3 other tasks")
}

// checkSVG parses an SVG document to its end and checks that its text
// holds each of want.
func checkSVG(t *testing.T, r io.Reader, want ...string) {
	t.Helper()
	dec := xml.NewDecoder(r)
	var root string
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG does not parse: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
		case xml.CharData:
			text.Write(tok)
		}
	}
	if root != "svg" {
		t.Errorf("root element %q, want svg", root)
	}
	for _, w := range want {
		if !strings.Contains(text.String(), w) {
			t.Errorf("SVG text lacks %q", w)
		}
	}
}
