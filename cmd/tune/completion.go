package main

import (
	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/backend/machine"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/internal/cli"
)

// completionUsage is the help of the command.
const completionUsage = `usage: tune completion bash|zsh

Prints a script that completes tune's commands, their verbs and flags, and
the files they take (models, build folders, databases). bash:
  source <(tune completion bash)
or save it as ~/.local/share/bash-completion/completions/tune. zsh: save it
as _tune in a directory of $fpath, or after compinit:
  source <(tune completion zsh)
`

// completionArgs are what tune's arguments complete to; the commands,
// verbs and flags come from the commands themselves (cli.Describe).
var completionArgs = cli.Completion{
	Args: map[string]cli.Arg{
		"":               cli.FileArg("*.onnx"),
		"inspect":        cli.FileArg("*.onnx"),
		"build":          cli.FileArg("*.onnx"),
		"quantize":       cli.FileArg("*.onnx"),
		"run":            cli.DirArg,
		"bench":          cli.DirArg,
		"records import": cli.FileArg("*.jsonl", "*.json"),
		"records plot":   cli.FileArg("*.onnx"),
		"costmodel eval": cli.FileArg("*.txt"),
		"completion":     cli.WordArg(cli.Shells...),
	},
	Values: map[string]cli.Arg{
		"db":                               cli.FileArg("*.db"),
		"model":                            cli.FileArg("*.onnx"),
		"cost-model":                       cli.FileArg("*.txt"),
		"records plot:o":                   cli.FileArg("*.svg", "*.png"),
		"bench:trace":                      cli.FileArg("*.json"),
		"bench:plot":                       cli.FileArg("*.svg", "*.png"),
		"costmodel train:o":                cli.FileArg("*.txt"),
		"costmodel pretrain:o":             cli.FileArg("*.txt"),
		"costmodel pretrain:testdata":      cli.DirArg,
		"costmodel pretrain:generated-dir": cli.DirArg,
		":target":                          cli.WordArg(backend.Names...),
		"build:target":                     cli.WordArg(backend.Names...),
		"worker:target":                    cli.WordArg(backend.Names...),
		"cpu":                              cli.WordArg(append([]string{"native"}, machine.Levels()...)...),
		"no-pass":                          cli.WordArg(frontend.PassNames()...),
		":scheduler":                       cli.WordArg("gradient", "round-robin"),
	},
}

// The command (cli.Program.CompletionCommand) is added to the table of
// main.go here: it reads the table, which its entry there would make an
// initialization cycle.
func init() {
	tune.Commands = append(tune.Commands, tune.CompletionCommand("print a bash or zsh script that completes tune's commands, flags and files", completionUsage, completionArgs))
}
