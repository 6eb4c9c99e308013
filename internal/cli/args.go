package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// ErrUsage is returned by a command whose arguments are wrong after it
// has printed what is wrong, or its usage: the exit status is 1, with no
// further message.
var ErrUsage = errors.New("usage")

// Usagef prints a line saying what is wrong with the arguments to w and
// returns ErrUsage.
func Usagef(w io.Writer, format string, args ...any) error {
	fmt.Fprintf(w, format+"\n", args...)
	return ErrUsage
}

// Registrar is a command's flags, which register themselves.
type Registrar interface{ Register(*flag.FlagSet) }

// NewFlagSet returns the flag set of the command name, reporting to
// stderr, with the flags of f registered.
func NewFlagSet(name string, stderr io.Writer, f Registrar) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if f != nil {
		f.Register(fs)
	}
	return fs
}

// SetUsage makes -h print usage, then the flags.
func SetUsage(fs *flag.FlagSet, usage string) {
	fs.Usage = func() {
		io.WriteString(fs.Output(), usage)
		fs.PrintDefaults()
	}
}

// Parse parses fs's flags wherever they appear among the positional
// arguments (`tune inspect model.onnx --input x=1,3,8,8`), and returns the
// positional ones; after "--" every argument is positional. A wrong flag
// is reported in one line with a pointer to -h (ErrUsage); -h prints
// fs.Usage and returns flag.ErrHelp. (Under Describe it parses nothing
// and hands fs to the describer.)
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	if d, ok := fs.Output().(*describer); ok {
		d.fs = fs
		return nil, errDescribed
	}
	usage := fs.Usage
	fs.Usage = func() {}
	defer func() { fs.Usage = usage }()
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				usage()
				return nil, err
			}
			fmt.Fprintf(fs.Output(), "run '%s -h' for usage\n", fs.Name())
			return nil, ErrUsage
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
