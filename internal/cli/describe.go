package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// A command's verbs and flags, for shell completion, come from the
// command itself: Describe runs it with -h and a stderr that is a
// describer, and the first thing a command does with its arguments,
// Parse or Verb, hands the flag set it built, or its verbs, back to the
// describer instead of parsing. What the completion offers is thus what
// the commands take, whatever file registers the flags.

// describer is the stderr of a command run by Describe: it discards what
// the command writes and keeps what Parse and Verb hand it.
type describer struct {
	fs    *flag.FlagSet
	verbs []string
}

func (*describer) Write(p []byte) (int, error) { return len(p), nil }

// errDescribed ends a command run by Describe once it has shown its flags
// or verbs.
var errDescribed = errors.New("described")

// Verb returns the verb that args start with, one of verbs, and the
// arguments after it (`tune records export --db x`). Without one it
// prints usage to stderr and returns ErrUsage, after a line naming the
// unknown verb; -h prints usage and returns flag.ErrHelp.
func Verb(stderr io.Writer, usage string, args []string, verbs ...string) (string, []string, error) {
	if len(args) > 0 && slices.Contains(verbs, args[0]) {
		return args[0], args[1:], nil
	}
	if d, ok := stderr.(*describer); ok {
		d.verbs = verbs
		return "", nil, errDescribed
	}
	switch {
	case len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help"):
		fmt.Fprintln(stderr, usage)
		return "", nil, flag.ErrHelp
	case len(args) > 0:
		fmt.Fprintf(stderr, "unknown verb %q (%s)\n", args[0], strings.Join(verbs, ", "))
	}
	return "", nil, Usagef(stderr, "%s", usage)
}

// Described is what Describe finds of a command.
type Described struct {
	Command
	// Verbs are its verbs (Verb); none for a command that takes flags
	// straight away.
	Verbs []string
	// Flags are its flag sets: by verb, or under "" for a command without
	// verbs.
	Flags map[string]*flag.FlagSet
}

// Describe returns the verbs and flag sets of command c: it runs c with
// -h (with each verb and -h, for a command with verbs) and a describing
// stderr, which the command's Parse or Verb answers before anything else
// happens. A command must call one of them before it does any work.
func Describe(c Command) (Described, error) {
	d := Described{Command: c, Flags: map[string]*flag.FlagSet{}}
	get := func(args ...string) (*describer, error) {
		ds := &describer{}
		if err := c.Run(args, io.Discard, ds); err != errDescribed {
			return nil, fmt.Errorf("%s %s: the command did not describe its flags or verbs (it parses with cli.Parse or cli.Verb before anything else), it returned %v", c.Name, strings.Join(args, " "), err)
		}
		return ds, nil
	}
	ds, err := get("-h")
	if err != nil {
		return d, err
	}
	if ds.fs != nil {
		d.Flags[""] = ds.fs
		return d, nil
	}
	d.Verbs = ds.verbs
	for _, v := range d.Verbs {
		ds, err := get(v, "-h")
		if err != nil {
			return d, err
		}
		if ds.fs == nil {
			return d, fmt.Errorf("%s %s: verbs of verbs are not described", c.Name, v)
		}
		d.Flags[v] = ds.fs
	}
	return d, nil
}
