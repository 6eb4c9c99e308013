package cli

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Arg is what a command's positional arguments, or a flag's value,
// complete to: files matching patterns (and the directories to reach
// them), directories, or words. The zero Arg completes to nothing (a
// number, a name to type).
type Arg struct {
	Files []string // glob patterns: "*.onnx"; "*" for any file
	Dirs  bool     // directories: a build folder
	Words []string // these words
}

// FileArg completes to the files matching patterns ("*.onnx"; none: any
// file).
func FileArg(patterns ...string) Arg {
	if len(patterns) == 0 {
		patterns = []string{"*"}
	}
	return Arg{Files: patterns}
}

// DirArg completes to directories.
var DirArg = Arg{Dirs: true}

// WordArg completes to the words.
func WordArg(words ...string) Arg { return Arg{Words: words} }

// Completion says what the arguments of a program's commands are, for
// the scripts Program.WriteCompletion writes; the commands and their
// verbs and flags come from the program itself (Describe).
type Completion struct {
	// Args are what the positional arguments of each command complete
	// to, by its name: "" for the default command, "bench", "records
	// import" for a verb. A command absent takes none that complete.
	Args map[string]Arg
	// Values are what the values of flags complete to, by "command:flag"
	// ("records plot:o") or by flag name alone for every command, where
	// the placeholder of the flag's usage does not say enough (`FILE`:
	// any file; `FILE.npy`: *.npy; `DIR`: a directory; anything else:
	// nothing).
	Values map[string]Arg
}

// Shells are the shells WriteCompletion writes scripts for.
var Shells = []string{"bash", "zsh"}

// compCommand is one command, or one verb of a command, as the scripts
// complete it.
type compCommand struct {
	key   string // "" for the default command, "bench", "records export"
	flags []compFlag
	args  Arg
}

// compFlag is one flag of a command.
type compFlag struct {
	name, usage string
	value       bool // takes a value (not a bool flag)
	arg         Arg  // what its value completes to
}

// compProgram is what the scripts complete: the commands, their verbs,
// and the flags of each.
type compProgram struct {
	name     string
	commands []Described // in the order of the program's usage
	keyed    []compCommand
}

// completion describes p's commands (Describe) with c's arguments.
func (p *Program) completion(c Completion) (*compProgram, error) {
	cp := &compProgram{name: p.Name}
	all := append([]Command{{Name: "", Summary: p.Default.Summary, Run: p.Default.Run}}, p.Commands...)
	for _, cmd := range all {
		d, err := Describe(cmd)
		if err != nil {
			return nil, err
		}
		if cmd.Name != "" {
			cp.commands = append(cp.commands, d)
		}
		verbs := d.Verbs
		if len(verbs) == 0 {
			verbs = []string{""}
		}
		for _, v := range verbs {
			key := strings.TrimSpace(cmd.Name + " " + v)
			cc := compCommand{key: key, args: c.Args[key]}
			d.Flags[v].VisitAll(func(f *flag.Flag) {
				placeholder, usage := flag.UnquoteUsage(f)
				cf := compFlag{name: f.Name, usage: usage}
				if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
					cf.value = true
					switch {
					case hasArg(c.Values, key+":"+f.Name):
						cf.arg = c.Values[key+":"+f.Name]
					case hasArg(c.Values, f.Name):
						cf.arg = c.Values[f.Name]
					case placeholder == "FILE":
						cf.arg = FileArg()
					case strings.HasPrefix(placeholder, "FILE."):
						cf.arg = FileArg("*" + strings.TrimPrefix(placeholder, "FILE"))
					case placeholder == "DIR":
						cf.arg = DirArg
					}
				}
				cc.flags = append(cc.flags, cf)
			})
			cp.keyed = append(cp.keyed, cc)
		}
	}
	return cp, nil
}

func hasArg(m map[string]Arg, k string) bool { _, ok := m[k]; return ok }

// WriteCompletion writes the completion script of p for shell (bash or
// zsh): it completes the commands, their verbs and flags, the values of
// flags that name files or directories, and the positional arguments c
// names. The flags are those the commands register (Describe).
func (p *Program) WriteCompletion(w io.Writer, shell string, c Completion) error {
	if !slices.Contains(Shells, shell) {
		return fmt.Errorf("no completion for shell %q (%s)", shell, strings.Join(Shells, ", "))
	}
	cp, err := p.completion(c)
	if err != nil {
		return err
	}
	var b strings.Builder
	if shell == "bash" {
		cp.bash(&b)
	} else {
		cp.zsh(&b)
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// CompletionCommand returns p's command "completion", summarized as
// summary, with help usage: `NAME completion bash|zsh` writes the
// completion script of p for the shell (WriteCompletion with c). It is
// added to p.Commands where p is set up, not in p's literal: it reads the
// commands, which its entry there would make an initialization cycle.
func (p *Program) CompletionCommand(summary, usage string, c Completion) Command {
	return Command{Name: "completion", Summary: summary, Run: func(args []string, stdout, stderr io.Writer) error {
		fs := NewFlagSet(p.Name+" completion", stderr, nil)
		SetUsage(fs, usage)
		pos, err := Parse(fs, args)
		if err != nil {
			return err
		}
		if len(pos) != 1 {
			return Usagef(stderr, "usage: %s completion bash|zsh", p.Name)
		}
		return p.WriteCompletion(stdout, pos[0], c)
	}}
}

// quote quotes s for a POSIX shell (bash and zsh alike).
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// quoteAll quotes every word, joined by spaces.
func quoteAll(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = quote(w)
	}
	return strings.Join(q, " ")
}

// call returns the call of the script's helper, fn, that completes to a.
func (a Arg) call(fn string) string {
	switch {
	case len(a.Files) > 0:
		return fn + " files " + quoteAll(a.Files)
	case a.Dirs:
		return fn + " dir"
	case len(a.Words) > 0:
		return fn + " words " + quoteAll(a.Words)
	}
	return ":"
}

// flagWords returns the flags of cc as they are written: -o, --name.
func (cc compCommand) flagWords() []string {
	var words []string
	for _, f := range cc.flags {
		words = append(words, f.word())
	}
	return words
}

// word returns the flag as it is written: -o, --name.
func (f compFlag) word() string {
	if len(f.name) == 1 {
		return "-" + f.name
	}
	return "--" + f.name
}

// withVerbs returns the commands that have verbs.
func (cp *compProgram) withVerbs() []Described {
	var out []Described
	for _, d := range cp.commands {
		if len(d.Verbs) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// names returns the names of the commands.
func (cp *compProgram) names() []string {
	var out []string
	for _, d := range cp.commands {
		out = append(out, d.Name)
	}
	return out
}

// fn is the name of the script's completion function.
func (cp *compProgram) fn() string { return "_" + strings.ReplaceAll(cp.name, "-", "_") }

// bash writes the bash script.
func (cp *compProgram) bash(b *strings.Builder) {
	fn, name := cp.fn(), cp.name
	helper := fn + "_complete"
	fmt.Fprintf(b, `# bash completion for %[1]s: its commands, their verbs and flags, and the
# files they take. Generated by '%[1]s completion bash'; load it in this
# shell with
#   source <(%[1]s completion bash)
# or save it as ~/.local/share/bash-completion/completions/%[1]s.

# %[2]s KIND [ARG...] completes $cur to: files matching the glob patterns
# ARG (and directories), directories (dir), or the words ARG.
%[2]s() {
	local IFS=$'\n' kind=$1 p
	shift
	case $kind in
	words) COMPREPLY=($(compgen -W "$*" -- "$cur")) ;;
	dir) COMPREPLY=($(compgen -d -- "$cur")) ;;
	files)
		COMPREPLY=($(compgen -d -- "$cur"))
		for p in "$@"; do
			COMPREPLY+=($(compgen -f -X "!$p" -- "$cur"))
		done ;;
	esac
	if [[ $kind != words ]]; then compopt -o filenames 2>/dev/null; fi
	return 0
}

%[3]s() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd= flag
	COMPREPLY=()
	# --flag=value: bash splits the word at =.
	if [[ $cur == = ]]; then
		cur=
	elif [[ $prev == = ]] && ((COMP_CWORD > 2)); then
		prev=${COMP_WORDS[COMP_CWORD-2]}
	fi
	if ((COMP_CWORD > 1)); then
		case ${COMP_WORDS[1]} in
		%[4]s) cmd=${COMP_WORDS[1]} ;;
		esac
	fi
	case $cmd in
`, name, helper, fn, strings.Join(cp.names(), "|"))
	for _, d := range cp.withVerbs() {
		fmt.Fprintf(b, "\t%s)\n\t\tif ((COMP_CWORD == 2)); then %s words %s; return; fi\n\t\tcmd+=\" ${COMP_WORDS[2]}\" ;;\n", d.Name, helper, quoteAll(d.Verbs))
	}
	b.WriteString("\tesac\n")
	// The value of a flag.
	b.WriteString("\tif [[ $prev == -* ]]; then\n\t\tflag=${prev#-}\n\t\tflag=${flag#-}\n\t\tcase \"$cmd:$flag\" in\n")
	for _, cc := range cp.keyed {
		for _, f := range cc.flags {
			if f.value {
				fmt.Fprintf(b, "\t\t%s) %s; return ;;\n", quote(cc.key+":"+f.name), f.arg.call(helper))
			}
		}
	}
	b.WriteString("\t\tesac\n\tfi\n")
	// The flags.
	b.WriteString("\tif [[ $cur == -* ]]; then\n\t\tcase $cmd in\n")
	for _, cc := range cp.keyed {
		fmt.Fprintf(b, "\t\t%s) %s words %s ;;\n", quote(cc.key), helper, quoteAll(cc.flagWords()))
	}
	b.WriteString("\t\tesac\n\t\treturn\n\tfi\n")
	// The commands, or the positional arguments.
	fmt.Fprintf(b, "\tif ((COMP_CWORD == 1)); then\n\t\t%s\n\t\tlocal IFS=$'\\n'\n\t\tCOMPREPLY+=($(compgen -W %s -- \"$cur\"))\n\t\treturn\n\tfi\n",
		cp.defaultArgs().call(helper), quote(strings.Join(cp.names(), "\n")))
	b.WriteString("\tcase $cmd in\n")
	for _, cc := range cp.keyed {
		if call := cc.args.call(helper); call != ":" {
			fmt.Fprintf(b, "\t%s) %s ;;\n", quote(cc.key), call)
		}
	}
	fmt.Fprintf(b, "\tesac\n}\n\ncomplete -F %s %s\n", fn, name)
}

// defaultArgs returns what the default command's arguments complete to.
func (cp *compProgram) defaultArgs() Arg {
	for _, cc := range cp.keyed {
		if cc.key == "" {
			return cc.args
		}
	}
	return Arg{}
}

// zsh writes the zsh script.
func (cp *compProgram) zsh(b *strings.Builder) {
	fn, name := cp.fn(), cp.name
	helper := fn + "_complete"
	fmt.Fprintf(b, `#compdef %[1]s
# zsh completion for %[1]s: its commands, their verbs and flags, and the
# files they take. Generated by '%[1]s completion zsh'; save it as _%[1]s in
# a directory of $fpath (before compinit runs), or load it in this shell
# (after compinit) with
#   source <(%[1]s completion zsh)

# %[2]s KIND [ARG...] completes to: files matching the glob patterns ARG
# (and directories), directories (dir), or the words ARG.
%[2]s() {
	local kind=$1
	shift
	case $kind in
	words) compadd -- "$@" ;;
	dir) _files -/ ;;
	files)
		if [[ $1 == '*' ]]; then
			_files
		else
			_files -g "$*"
		fi ;;
	esac
}

%[3]s() {
	local cmd= cur=${words[CURRENT]} prev=${words[CURRENT-1]} flag
	if (( CURRENT > 2 )); then
		case ${words[2]} in
		%[4]s) cmd=${words[2]} ;;
		esac
	fi
	case $cmd in
`, name, helper, fn, strings.Join(cp.names(), "|"))
	for _, d := range cp.withVerbs() {
		fmt.Fprintf(b, "\t%s)\n\t\tif (( CURRENT == 3 )); then %s words %s; return; fi\n\t\tcmd+=\" ${words[3]}\" ;;\n", d.Name, helper, quoteAll(d.Verbs))
	}
	b.WriteString("\tesac\n")
	// The value of a flag: --flag value, or --flag=value.
	b.WriteString("\tif [[ $cur == -*=* ]]; then\n\t\tflag=${cur%%=*}\n\t\tcompset -P '*='\n\telif [[ $prev == -* ]]; then\n\t\tflag=$prev\n\tfi\n")
	b.WriteString("\tif [[ -n $flag ]]; then\n\t\tflag=${flag#-}\n\t\tflag=${flag#-}\n\t\tcase \"$cmd:$flag\" in\n")
	for _, cc := range cp.keyed {
		for _, f := range cc.flags {
			if f.value {
				fmt.Fprintf(b, "\t\t%s) %s; return ;;\n", quote(cc.key+":"+f.name), f.arg.call(helper))
			}
		}
	}
	b.WriteString("\t\tesac\n\tfi\n")
	// The flags, with their usage.
	b.WriteString("\tlocal -a flags\n\tif [[ $cur == -* ]]; then\n\t\tcase $cmd in\n")
	for _, cc := range cp.keyed {
		var specs []string
		for _, f := range cc.flags {
			specs = append(specs, f.word()+":"+zshDescription(f.usage))
		}
		fmt.Fprintf(b, "\t\t%s) flags=(%s) ;;\n", quote(cc.key), quoteAll(specs))
	}
	b.WriteString("\t\tesac\n\t\t_describe -t flags flag flags\n\t\treturn\n\tfi\n")
	// The commands, or the positional arguments.
	var cmds []string
	for _, d := range cp.commands {
		cmds = append(cmds, d.Name+":"+zshDescription(d.Summary))
	}
	fmt.Fprintf(b, "\tif (( CURRENT == 2 )); then\n\t\tlocal -a commands=(%s)\n\t\t_describe -t commands command commands\n\t\t%s\n\t\treturn\n\tfi\n",
		quoteAll(cmds), cp.defaultArgs().call(helper))
	b.WriteString("\tcase $cmd in\n")
	for _, cc := range cp.keyed {
		if call := cc.args.call(helper); call != ":" {
			fmt.Fprintf(b, "\t%s) %s ;;\n", quote(cc.key), call)
		}
	}
	// Autoloaded from $fpath, the file is the function's body; sourced,
	// it defines the function and registers it.
	fmt.Fprintf(b, "\tesac\n}\n\nif [[ $funcstack[1] == %[1]s ]]; then\n\t%[1]s \"$@\"\nelse\n\tcompdef %[1]s %[2]s\nfi\n", fn, name)
}

// zshDescription makes a flag's usage or a command's summary a
// description for _describe: up to its first semicolon, one line of at
// most 80 characters, colons escaped.
func zshDescription(s string) string {
	s, _, _ = strings.Cut(strings.Join(strings.Fields(s), " "), "; ")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:79])
		if i := strings.LastIndexByte(s, ' '); i > 40 {
			s = s[:i]
		}
		s += "…"
	}
	return strings.ReplaceAll(s, ":", `\:`)
}
