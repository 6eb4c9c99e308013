package cli

import (
	"bytes"
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
