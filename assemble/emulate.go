package assemble

import (
	"context"

	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/tsrt"
)

// Emulate opens the build folder dir to run its library in a child
// process under exec, an emulator (qemu-aarch64 -L /usr/aarch64-linux-gnu)
// for a library built for another architecture: the runtime's runner
// (tsrt.Runner), which b compiles once per compiler into the build cache
// (nil means a zero Builder), runs it (tsrt.OpenChild). The model runs as
// one loaded into this process does, in its child.
func Emulate(ctx context.Context, dir string, exec []string, b *measure.Builder) (*tsrt.Model, error) {
	if b == nil {
		b = &measure.Builder{}
	}
	runner, err := b.BuildProgram(ctx, "runner", measure.Source{Code: tsrt.Runner, Files: map[string]string{"tessera.h": tsrt.Header, "tessera_load.h": tsrt.Loader}},
		[]string{"-O2", "-std=gnu11"}, []string{"-ldl"})
	if err != nil {
		return nil, err
	}
	return tsrt.OpenChild(ctx, dir, tsrt.Child{Runner: runner, Exec: exec})
}
