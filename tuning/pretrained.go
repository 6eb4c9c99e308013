package tuning

import (
	"bytes"
	"embed"
	"fmt"

	"tessera/costmodel"
	"tessera/target"
)

// The pretrained cost models shipped with Tessera, one per ISA family
// (`tune costmodel pretrain` makes them from records of the generated
// models, the test data's models and random-schedule sweeps). The
// features describe a program relative to the machine's vector width and
// register file, so that one model serves every CPU of the family: it was
// trained on records of x86-64-v2, -v3 and -v4 code alike.
//
//go:embed pretrained/*.txt
var pretrained embed.FS

// PretrainedName returns the file name of the shipped model for the
// target's ISA family.
func PretrainedName(tg *target.Target) string {
	if tg.Name != "cpu" {
		return tg.Name + ".txt"
	}
	return "cpu-" + tg.Machine.Arch + ".txt"
}

// Pretrained returns the shipped cost model for the target, or an error
// that says why there is none: no model was trained for its ISA family
// (a GPU, or an ARM CPU), and what was learned on one family does not
// transfer to another.
func Pretrained(tg *target.Target) (*costmodel.Model, error) {
	name := PretrainedName(tg)
	text, err := pretrained.ReadFile("pretrained/" + name)
	if err != nil {
		return nil, fmt.Errorf("no pretrained cost model for target %s (%s): records of another ISA family do not transfer", tg.Name, name)
	}
	m, err := costmodel.Load(bytes.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("pretrained cost model %s: %w", name, err)
	}
	return m, nil
}
