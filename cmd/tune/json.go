package main

import (
	"encoding/json"
	"io"
)

// writeJSON writes v as one indented JSON document: the output of a
// command's --json, alone on stdout.
func writeJSON(w io.Writer, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}
