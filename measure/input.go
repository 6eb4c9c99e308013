package measure

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/te"
)

// An Input travels to a process that never saw the model (a measuring
// worker) as JSON:
//
//	{"workload": KEY, "dag": the task's DAG (te's codec), "steps": the
//	 schedule's steps (schedule.MarshalSteps), "cutoff_ns": Cutoff}
//
// The reader decodes the DAG, checks that its workload key is KEY, and
// replays the steps on the DAG's initial state: the same candidate, which
// lowers to the same program.

type inputJSON struct {
	Workload string          `json:"workload"`
	DAG      json.RawMessage `json:"dag"`
	Steps    json.RawMessage `json:"steps"`
	CutoffNs int64           `json:"cutoff_ns,omitempty"`
}

// MarshalJSON encodes the input in its wire form.
func (in Input) MarshalJSON() ([]byte, error) {
	var e InputEncoder
	return e.Encode(in)
}

// UnmarshalJSON decodes an input written by MarshalJSON.
func (in *Input) UnmarshalJSON(data []byte) error {
	var d InputDecoder
	v, err := d.Decode(data)
	if err != nil {
		return err
	}
	*in = v
	return nil
}

// InputEncoder encodes Inputs, encoding each DAG once. The zero value is
// ready to use; it is safe for concurrent use.
type InputEncoder struct {
	mu   sync.Mutex
	dags map[*te.DAG]encodedDAG
}

type encodedDAG struct {
	key  string
	data json.RawMessage
}

// maxCachedDAGs bounds the DAGs an encoder or decoder keeps; past it the
// cache starts over.
const maxCachedDAGs = 256

// Encode returns the wire form of in.
func (e *InputEncoder) Encode(in Input) ([]byte, error) {
	if in.State == nil || in.State.DAG == nil {
		return nil, errors.New("measure: encode input: no state")
	}
	d, err := e.dag(in.State.DAG)
	if err != nil {
		return nil, err
	}
	steps, err := schedule.MarshalSteps(in.State.Steps)
	if err != nil {
		return nil, fmt.Errorf("measure: encode input of %s: %w", d.key, err)
	}
	return json.Marshal(inputJSON{Workload: d.key, DAG: d.data, Steps: steps, CutoffNs: int64(in.Cutoff)})
}

func (e *InputEncoder) dag(d *te.DAG) (encodedDAG, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.dags[d]; ok {
		return x, nil
	}
	data, err := d.MarshalJSON()
	if err != nil {
		return encodedDAG{}, fmt.Errorf("measure: encode input: %w", err)
	}
	if e.dags == nil || len(e.dags) >= maxCachedDAGs {
		e.dags = map[*te.DAG]encodedDAG{}
	}
	x := encodedDAG{key: d.WorkloadKey(), data: data}
	e.dags[d] = x
	return x, nil
}

// InputDecoder decodes Inputs, decoding each distinct DAG once, so that the
// inputs of one task share one *te.DAG (a Measurer computes the reference
// outputs once per DAG). The zero value is ready to use; it is safe for
// concurrent use.
type InputDecoder struct {
	mu   sync.Mutex
	dags map[[sha256.Size]byte]*te.DAG
}

// Decode decodes the wire form of an input. A DAG that does not decode,
// whose workload key is not the one the input names, or steps that do not
// decode or replay are each an error naming the workload.
func (d *InputDecoder) Decode(data []byte) (Input, error) {
	var j inputJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return Input{}, fmt.Errorf("measure: decode input: %w", err)
	}
	if j.CutoffNs < 0 {
		return Input{}, fmt.Errorf("measure: decode input of %s: negative cutoff", j.Workload)
	}
	dag, err := d.dag(j.Workload, j.DAG)
	if err != nil {
		return Input{}, err
	}
	steps, err := schedule.UnmarshalSteps(j.Steps)
	if err != nil {
		return Input{}, fmt.Errorf("measure: decode input of %s: steps: %w", j.Workload, err)
	}
	st, err := schedule.Replay(schedule.NewState(dag), steps)
	if err != nil {
		return Input{}, fmt.Errorf("measure: decode input of %s: replay: %w", j.Workload, err)
	}
	return Input{State: st, Cutoff: time.Duration(j.CutoffNs)}, nil
}

func (d *InputDecoder) dag(key string, data []byte) (*te.DAG, error) {
	h := sha256.Sum256(append([]byte(key+"\x00"), data...))
	d.mu.Lock()
	defer d.mu.Unlock()
	if dag, ok := d.dags[h]; ok {
		return dag, nil
	}
	dag, err := te.UnmarshalDAG(data)
	if err != nil {
		return nil, fmt.Errorf("measure: decode input of %s: %w", key, err)
	}
	if got := dag.WorkloadKey(); got != key {
		return nil, fmt.Errorf("measure: decode input: the DAG's workload key is %s, the input names %s", got, key)
	}
	if d.dags == nil || len(d.dags) >= maxCachedDAGs {
		d.dags = map[[sha256.Size]byte]*te.DAG{}
	}
	d.dags[h] = dag
	return dag, nil
}
