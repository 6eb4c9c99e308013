package cli

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// TestWriteJSON: one indented document, ending in a newline; a value JSON
// cannot hold is an error and writes nothing.
func TestWriteJSON(t *testing.T) {
	for _, c := range []struct {
		v       any
		want    string
		wantErr bool
	}{
		{map[string]int{"b": 2, "a": 1}, "{\n  \"a\": 1,\n  \"b\": 2\n}\n", false},
		{[]string{}, "[]\n", false},
		{struct {
			DB string `json:"db"`
		}{"x.db"}, "{\n  \"db\": \"x.db\"\n}\n", false},
		{func() {}, "", true},
	} {
		var b bytes.Buffer
		err := WriteJSON(&b, c.v)
		if (err != nil) != c.wantErr || b.String() != c.want {
			t.Errorf("WriteJSON(%T) wrote %q, %v; want %q (error %v)", c.v, b.String(), err, c.want, c.wantErr)
		}
	}
}

// textReport is a Report whose text is its field, or an error.
type textReport struct {
	Text string `json:"text"`
	err  error
}

func (r textReport) Write(w io.Writer) error {
	if r.err != nil {
		return r.err
	}
	_, err := io.WriteString(w, r.Text+"\n")
	return err
}

// TestWriteReport: a report as its text, or with --json as one JSON
// document of its fields; the text's error is returned.
func TestWriteReport(t *testing.T) {
	broken := errors.New("broken")
	for _, c := range []struct {
		r       textReport
		asJSON  bool
		want    string
		wantErr error
	}{
		{textReport{Text: "min ms = 1"}, false, "min ms = 1\n", nil},
		{textReport{Text: "min ms = 1"}, true, "{\n  \"text\": \"min ms = 1\"\n}\n", nil},
		{textReport{err: broken}, false, "", broken},
		{textReport{Text: "t", err: broken}, true, "{\n  \"text\": \"t\"\n}\n", nil},
	} {
		var b bytes.Buffer
		err := WriteReport(&b, c.r, c.asJSON)
		if !errors.Is(err, c.wantErr) || (err == nil) != (c.wantErr == nil) || b.String() != c.want {
			t.Errorf("WriteReport(%+v, json %v) wrote %q, %v; want %q, %v", c.r, c.asJSON, b.String(), err, c.want, c.wantErr)
		}
	}
}
