package cli

import (
	"flag"

	"github.com/tessera-ml/tessera/tsrt"
)

// OpenBuildDir parses the flags of a command that takes one build
// directory (tune run, tune bench) and opens it: a folder tune build
// wrote, its manifest and weights checked first (tsrt.OpenChecked). Any
// other number of arguments is a usage error that says so.
func OpenBuildDir(fs *flag.FlagSet, args []string) (*tsrt.Model, error) {
	pos, err := Parse(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) != 1 {
		return nil, Usagef(fs.Output(), "%s: want one build directory (run '%s -h')", fs.Name(), fs.Name())
	}
	return tsrt.OpenChecked(pos[0])
}
