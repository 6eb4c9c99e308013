package tuning

import (
	"bytes"
	"embed"
	"fmt"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/costmodel"
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
func PretrainedName(tg *backend.Target) string {
	if tg.Name != "cpu" {
		return tg.Name + ".txt"
	}
	return "cpu-" + tg.Machine.Arch + ".txt"
}

// Pretrained returns the shipped cost model for the target, or an error
// that says why there is none: no model was trained for its ISA family
// (a GPU, or an ARM CPU), and what was learned on one family does not
// transfer to another.
func Pretrained(tg *backend.Target) (*costmodel.Model, error) {
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

// StartingModel returns the cost model a session starts from by name:
// "pretrained" (the shipped one; where there is none, nil and a note that
// says why), "none" (nil: cold), or a model file. note says which it is.
func StartingModel(name string, tg *backend.Target) (m *costmodel.Model, note string, err error) {
	switch name {
	case "none":
		return nil, "", nil
	case "pretrained":
		m, err := Pretrained(tg)
		if err != nil {
			return nil, fmt.Sprintf("cost model: cold (%v)", err), nil
		}
		return m, "cost model: pretrained " + PretrainedName(tg), nil
	}
	m, err = costmodel.LoadFile(name)
	return m, "", err
}
