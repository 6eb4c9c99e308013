// Package cli is what every subcommand of Tessera's command line shares:
// the dispatch of a table of subcommands (Program.Main), flags parsed
// wherever they appear among the arguments (Parse), the flag values the
// commands take (Shapes, Values, Names, List, Bytes, Files) and the flags
// several register (Model, RegisterTarget, RegisterDB, RegisterNATS),
// messages made one printable line (OneLine, Printable), a report as
// text or as the document of a command's --json (WriteReport, WriteJSON),
// the signal context of a command that must commit what it did before it
// stops (NotifySignals), a progress bar on a terminal (NewBar), output
// files (Create, WriteOutput), the build directory a command takes
// (OpenBuildDir) and what the Go toolchain recorded of the binary
// (BuildOf).
//
// Exit statuses: 0 on success (and after -h), 1 for an error, printed as
// one line "prog command: message", or for wrong arguments (ErrUsage,
// after the command printed its usage); 128 + the signal for a command
// stopped by SIGINT or SIGTERM once it committed its work
// (InterruptedError: 130, 143); 2 for a panic, a bug, in one line
// (TESSERA_DEBUG=1 adds the stack).
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

// Command is one subcommand: its name, a one-line summary and its run
// function, which gets the arguments after the name.
type Command struct {
	Name, Summary string
	Run           func(args []string, stdout, stderr io.Writer) error
}

// Program is a command line made of subcommands.
type Program struct {
	Name     string    // the program's name, the prefix of its messages
	Default  Command   // runs when the first argument names no command; its Name is its synopsis
	Commands []Command // the subcommands, in the order of the usage
}

// Main runs the command args name (args[0]) with the arguments after it,
// or the default command with all of them, and turns its error (or
// panic) into a message on stderr and an exit status. No arguments, or
// -h, print the usage; --version runs the command "version".
func (p *Program) Main(args []string, stdout, stderr io.Writer) (status int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "%s: internal error (a bug in tessera; please report it with the command line): %s\n", p.Name, OneLine(fmt.Sprint(r)))
			if os.Getenv("TESSERA_DEBUG") != "" {
				stderr.Write(debug.Stack())
			}
			status = 2
		}
	}()
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		p.usage(stderr)
		if len(args) == 0 {
			return 1
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = append([]string{"version"}, args[1:]...) // the command "version", where the program has one
	}
	for _, c := range p.Commands {
		if c.Name == args[0] {
			return exit(stderr, p.Name+" "+c.Name, c.Run(args[1:], stdout, stderr))
		}
	}
	return exit(stderr, p.Name, p.Default.Run(args, stdout, stderr))
}

func (p *Program) usage(w io.Writer) {
	var b strings.Builder
	fmt.Fprintf(&b, "usage:\n  %s %-25s %s\n", p.Name, p.Default.Name, p.Default.Summary)
	for _, c := range p.Commands {
		fmt.Fprintf(&b, "  %s %-26s %s\n", p.Name, c.Name+" ...", c.Summary)
	}
	fmt.Fprintf(&b, "\nRun '%s COMMAND -h' for a command's flags.\n", p.Name)
	io.WriteString(w, b.String())
}

// exit prints err as one line after prefix and returns the exit status
// it calls for.
func exit(stderr io.Writer, prefix string, err error) int {
	var sig *InterruptedError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, ErrUsage):
		return 1
	}
	fmt.Fprintf(stderr, "%s: %s\n", prefix, OneLine(err.Error()))
	if errors.As(err, &sig) {
		return 128 + int(sig.Signal)
	}
	return 1
}
