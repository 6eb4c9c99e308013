// Package costmodel owns Tessera's learned cost model: feature extraction
// from lowered programs, a gradient-boosted tree trainer, prediction through
// github.com/dmitryikh/leaves, and the ranking metrics the model is judged by.
//
// Data flow:
//
//	tir.PrimFunc + Hardware ──Extract──▶ rows (one []float32 of NumFeatures per Store)
//	   rows + measured cost ──Dataset.Add──▶ Dataset (labels normalized per task)
//	   Dataset ──Train──▶ *Model ──Save──▶ LightGBM text (version=v3)
//	   LightGBM text ──Load──▶ *Model (leaves ensemble for batched prediction)
//	   *Model.Predict(programs) ──▶ one score per program (sum over its rows)
//
// Entry points: Extract and ExtractAll (features.go, with FeatureNames
// parallel to the vector), Dataset (dataset.go), Train with Params
// (train.go; the trees themselves in gbdt.go), Model.Save and Load
// (lightgbm.go), Model.Predict and RandomModel behind the Predictor
// interface, TrainOrRandom (predict.go), PairwiseAccuracy, TopKScore,
// TopKRecall and Evaluate, and TenSet's per-task figures PeakScore,
// TaskPairwiseAccuracy and EvaluateTenSet (metrics.go). The trainer's
// yardstick, Debian's xgboost CLI on the same data, is a benchmark's
// (bench/internal/xgboost).
//
// The Hardware is the machine the program is compiled for (the cpu target's
// vector width and registers): the same program spills on 16 registers and
// not on 32, and a model trained on records of several machines tells them
// apart.
//
// A program's score is the sum of the scores of its stores, as in Ansor; a
// higher score means a faster program (labels are best cost / cost within a
// task).
package costmodel
