package records

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/tessera-ml/tessera/schedule"
	"github.com/tessera-ml/tessera/te"
)

// Trust: a record is what some run (or some file) says was measured. The
// store never lets a record it can disprove stand for a task: when it
// knows the task's DAG (TaskInfo.Codec, written by tune), a record whose
// steps do not replay on it is skipped on import and never ranked, so it
// cannot hide the valid records behind a made-up cost.

// dag returns the decoded DAG of a workload, or nil when the store has
// none (or it does not decode). Decoded DAGs are cached.
func (s *Store) dag(workload string) (*te.DAG, error) {
	s.mu.Lock()
	d, ok := s.dags[workload]
	s.mu.Unlock()
	if ok {
		return d, nil
	}
	var codec []byte
	err := s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketTasks).Get([]byte(workload))
		if v == nil {
			return nil
		}
		var t TaskInfo
		if err := json.Unmarshal(v, &t); err != nil {
			return fmt.Errorf("records: task %q: %w", workload, err)
		}
		codec = t.Codec
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(codec) > 0 {
		d, _ = te.UnmarshalDAG(codec) // a codec that does not decode checks nothing
	}
	s.mu.Lock()
	if s.dags == nil {
		s.dags = map[string]*te.DAG{}
	}
	s.dags[workload] = d
	s.mu.Unlock()
	return d, nil
}

// checkReplays returns why r's steps do not replay on d (nil when they do,
// or when d is nil: nothing to check against).
func checkReplays(d *te.DAG, r Record) error {
	if d == nil {
		return nil
	}
	steps, err := r.DecodeSteps()
	if err != nil {
		return err
	}
	if _, err := schedule.Replay(schedule.NewState(d), steps); err != nil {
		return fmt.Errorf("its steps do not apply to the task: %w", err)
	}
	return nil
}

// Ranked returns the valid records of a workload on a target, fastest
// first (ties in the order they were added), leaving out those whose
// steps do not replay on the task's DAG when the store knows it. A build
// takes the first that lowers.
func (s *Store) Ranked(workload, target string) ([]Record, error) {
	all, err := s.Records(workload, target)
	if err != nil {
		return nil, err
	}
	d, err := s.dag(workload)
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, r := range all {
		if r.Error == ErrorNone && checkReplays(d, r) == nil {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Cost() < out[j].Cost() })
	return out, nil
}

// Best returns the best (lowest median cost) valid record of a workload on
// a target, as Ranked orders them; ok is false when there is none.
func (s *Store) Best(workload, target string) (rec Record, ok bool, err error) {
	rs, err := s.Ranked(workload, target)
	if err != nil || len(rs) == 0 {
		return Record{}, false, err
	}
	return rs[0], true, nil
}

// scheduleKey identifies a measured schedule: the workload, the target and
// the canonical form of the steps. Two records with one key measured the
// same thing.
func scheduleKey(r Record) ([32]byte, error) {
	steps, err := r.DecodeSteps()
	if err != nil {
		return [32]byte{}, err
	}
	canon, err := schedule.MarshalSteps(steps)
	if err != nil {
		return [32]byte{}, err
	}
	var b bytes.Buffer
	b.WriteString(r.WorkloadKey)
	b.WriteByte(0)
	b.WriteString(r.Target)
	b.WriteByte(0)
	b.Write(canon)
	return sha256.Sum256(b.Bytes()), nil
}
