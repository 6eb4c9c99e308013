package search

import (
	"github.com/tessera-ml/tessera/costmodel"
)

// GBDTModel is the search's cost model: gradient-boosted trees retrained
// from scratch on every measurement after each round (Ansor's policy), and
// random scores until costmodel.MinTrainPrograms measurements succeeded.
// It implements CostModel.
type GBDTModel struct {
	Data   *costmodel.Dataset
	Params costmodel.Params
	// Base, when set, is a pretrained model: it predicts alone until the
	// run has MinTrainPrograms successful measurements, and retraining
	// then boosts on top of it (costmodel.TrainFrom) instead of starting
	// cold.
	Base *costmodel.Model

	pred costmodel.Predictor
}

// NewGBDTModel returns an untrained model (random predictions).
func NewGBDTModel(params costmodel.Params) *GBDTModel {
	return &GBDTModel{Data: &costmodel.Dataset{}, Params: params, pred: costmodel.NewRandomModel(params.Seed)}
}

// Predict scores programs with the current model.
func (m *GBDTModel) Predict(programs [][][]float32) []float64 { return m.pred.Predict(programs) }

// Update adds measurements and retrains.
func (m *GBDTModel) Update(task string, programs [][][]float32, costs []float64) error {
	for i, p := range programs {
		if p == nil {
			continue // the state did not lower: nothing to learn from
		}
		m.Data.Add(task, p, costs[i])
	}
	return m.Retrain()
}

// Retrain trains on all the data, boosting from Base when there is one;
// while the run has fewer than MinTrainPrograms successful measurements,
// Base predicts alone, or random scores without one (Ansor's policy).
func (m *GBDTModel) Retrain() error {
	if m.Data.Successes() < costmodel.MinTrainPrograms {
		if m.Base != nil {
			m.pred = m.Base
		} else {
			m.pred = costmodel.NewRandomModel(m.Params.Seed)
		}
		return nil
	}
	pred, err := costmodel.TrainFrom(m.Base, m.Data, m.Params)
	if err != nil {
		return err
	}
	m.pred = pred
	return nil
}

// Trained returns the model trained on the run's data (boosted from Base
// when there is one), or nil while predictions are random or Base's alone.
func (m *GBDTModel) Trained() *costmodel.Model {
	t, _ := m.pred.(*costmodel.Model)
	if t == m.Base {
		return nil
	}
	return t
}
