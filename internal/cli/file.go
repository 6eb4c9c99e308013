package cli

import (
	"fmt"
	"io"
	"os"
)

// Create opens path for writing, or returns stdout for "-"; close closes
// the file.
func Create(path string, stdout io.Writer) (w io.Writer, close func() error, err error) {
	if path == "-" {
		return stdout, func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	return f, f.Close, nil
}

// WriteOutput creates the output file at path (a command's -o) and
// writes it with write. An error of write, or of closing the file, says
// "-o path: ".
func WriteOutput(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("-o %s: %w", path, err)
	}
	return nil
}
