package search

import (
	"tessera/costmodel"
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

// Retrain trains on all the data (or stays random while there is too
// little).
func (m *GBDTModel) Retrain() error {
	if m.Base == nil {
		pred, err := costmodel.TrainOrRandom(m.Data, m.Params)
		if err != nil {
			return err
		}
		m.pred = pred
		return nil
	}
	if m.Data.Successes() < costmodel.MinTrainPrograms {
		m.pred = m.Base
		return nil
	}
	pred, err := costmodel.TrainFrom(m.Base, m.Data, m.Params)
	if err != nil {
		return err
	}
	m.pred = pred
	return nil
}

// UseBase makes base the model's pretrained start (see Base) and predicts
// with it now, unless the run's own data already trained a model.
func (m *GBDTModel) UseBase(base *costmodel.Model) error {
	m.Base = base
	return m.Retrain()
}

// Use replaces the current predictor, e.g. by a pretrained model, until
// the next retraining.
func (m *GBDTModel) Use(p costmodel.Predictor) { m.pred = p }

// Trained returns the model trained on the run's data (boosted from Base
// when there is one), or nil while predictions are random or Base's alone.
func (m *GBDTModel) Trained() *costmodel.Model {
	t, _ := m.pred.(*costmodel.Model)
	if t == m.Base {
		return nil
	}
	return t
}
