// Package records keeps what tuning measured: one bbolt file (default
// tuning.db) with the tasks, every measured record, the best record of each
// (workload, target), and the last trained cost model of each target. It
// also reads and writes records as JSON lines for sharing (codec.go).
//
// Bucket layout (byte slices never escape a transaction):
//
//	meta     "schema" → schema version; "created" → RFC 3339 time
//	tasks    workload key → JSON TaskInfo
//	records  8-byte big-endian sequence → JSON Record
//	index    workload \x00 target \x00 sequence → nothing (records by task)
//	best     workload \x00 target → sequence of the best record
//	models   target → cost model text
//
// Entry points: Open, Store.Add, Store.Best, Store.Records.
package records

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"sort"
	"strconv"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/tessera-ml/tessera/te"
)

// SchemaVersion is the layout version of the database; a database of
// another version is refused, never misread.
const SchemaVersion = 1

var (
	bucketMeta    = []byte("meta")
	bucketTasks   = []byte("tasks")
	bucketRecords = []byte("records")
	bucketIndex   = []byte("index")
	bucketBest    = []byte("best")
	bucketModels  = []byte("models")
)

// Store is an open records database. Its methods are safe for concurrent
// use; only one process can have a database open at a time.
type Store struct {
	db       *bolt.DB
	path     string
	readOnly bool

	mu   sync.Mutex
	dags map[string]*te.DAG // decoded TaskInfo.Codec by workload; nil entry: none
}

// TaskInfo describes a tuning task.
type TaskInfo struct {
	Key    string  `json:"key"`
	DAG    string  `json:"dag"` // canonical print
	FLOPs  float64 `json:"flops"`
	Weight int     `json:"weight"`
	// Codec is the DAG in te's JSON form (DAG.MarshalJSON), when known:
	// with it the store checks that a record's steps replay on the task
	// before it trusts the record (Import, Ranked, Best, Distill).
	Codec json.RawMessage `json:"codec,omitempty"`
}

// Open opens (or creates) the database at path. A database held by another
// process, a file that is not a bbolt database, a bbolt database that is
// not ours, and one of another schema version are each a clear error.
func Open(path string) (st *Store, err error) { return openStore(path, false) }

// OpenReadOnly opens an existing database for reading only: it neither
// creates nor changes the file, so it reads a database on a read-only
// file or file system, and other readers may hold it at the same time
// (but not a writer). Writing methods fail.
func OpenReadOnly(path string) (*Store, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("records database: %w", err)
	}
	return openStore(path, true)
}

func openStore(path string, readOnly bool) (st *Store, err error) {
	// bbolt maps the file: a truncated or damaged file faults on access.
	// Turn such faults (and bbolt's own panics) into an error.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			st, err = nil, fmt.Errorf("records: %s is not a tessera records database, or it is corrupt or truncated (reading it faulted)", path)
		}
	}()
	db, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: 200 * time.Millisecond, ReadOnly: readOnly})
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, fmt.Errorf("records: %s is in use by another process (another tune running?)", path)
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrVersionMismatch), errors.Is(err, bolterrors.ErrChecksum):
		return nil, fmt.Errorf("records: %s is not a tessera records database (or it is corrupt): %w", path, err)
	case err != nil:
		return nil, fmt.Errorf("records: open %s: %w", path, err)
	}
	s := &Store{db: db, path: path, readOnly: readOnly}
	if err := s.checkSize(); err != nil {
		db.Close()
		return nil, err
	}
	check := s.init
	if readOnly {
		check = s.checkSchema
	}
	if err := check(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// checkSize refuses a file shorter than the pages its last transaction
// wrote: a truncated copy whose first pages still read would otherwise
// open, with whatever lay beyond the cut (records, the saved model) lost.
func (s *Store) checkSize() error {
	fi, err := os.Stat(s.path)
	if err != nil {
		return fmt.Errorf("records: %w", err)
	}
	return s.db.View(func(tx *bolt.Tx) error {
		if tx.Size() > fi.Size() {
			return fmt.Errorf("records: %s is truncated: %d bytes, its last transaction wrote %d", s.path, fi.Size(), tx.Size())
		}
		return nil
	})
}

// checkSchema checks an existing database without writing to it.
func (s *Store) checkSchema() error {
	return s.view(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			return fmt.Errorf("records: %s is not a tessera records database (no schema)", s.path)
		}
		if v, err := strconv.Atoi(string(meta.Get([]byte("schema")))); err != nil || v != SchemaVersion {
			return fmt.Errorf("records: %s has schema version %q, this tessera reads version %d", s.path, meta.Get([]byte("schema")), SchemaVersion)
		}
		for _, b := range [][]byte{bucketTasks, bucketRecords, bucketIndex, bucketBest, bucketModels} {
			if tx.Bucket(b) == nil {
				return fmt.Errorf("records: %s lacks bucket %s: not a complete tessera records database", s.path, b)
			}
		}
		return nil
	})
}

// init creates the buckets of a new database or checks an existing one.
func (s *Store) init() error {
	return s.update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			if n := countBuckets(tx); n > 0 {
				return fmt.Errorf("records: %s is a bbolt database of something else (%d buckets, no tessera schema)", s.path, n)
			}
			var err error
			if meta, err = tx.CreateBucket(bucketMeta); err != nil {
				return err
			}
			if err := meta.Put([]byte("schema"), []byte(strconv.Itoa(SchemaVersion))); err != nil {
				return err
			}
			if err := meta.Put([]byte("created"), []byte(time.Now().UTC().Format(time.RFC3339))); err != nil {
				return err
			}
		}
		v, err := strconv.Atoi(string(meta.Get([]byte("schema"))))
		if err != nil || v != SchemaVersion {
			return fmt.Errorf("records: %s has schema version %q, this tessera reads version %d", s.path, meta.Get([]byte("schema")), SchemaVersion)
		}
		for _, b := range [][]byte{bucketTasks, bucketRecords, bucketIndex, bucketBest, bucketModels} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
}

func countBuckets(tx *bolt.Tx) int {
	n := 0
	tx.ForEach(func([]byte, *bolt.Bucket) error { n++; return nil })
	return n
}

// update and view run a transaction, turning a panic of bbolt on a
// corrupt page into an error.
func (s *Store) update(fn func(*bolt.Tx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer s.recoverCorrupt(&err)
	return s.db.Update(fn)
}

func (s *Store) view(fn func(*bolt.Tx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer s.recoverCorrupt(&err)
	return s.db.View(fn)
}

func (s *Store) recoverCorrupt(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("records: %s is corrupt or truncated (reading it faulted)", s.path)
	}
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Path returns the file the store was opened from.
func (s *Store) Path() string { return s.path }

// PutTask records a task's description (replacing an older one).
func (s *Store) PutTask(t TaskInfo) error {
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return s.update(func(tx *bolt.Tx) error { return tx.Bucket(bucketTasks).Put([]byte(t.Key), data) })
}

// Tasks returns every recorded task, by key.
func (s *Store) Tasks() ([]TaskInfo, error) {
	var out []TaskInfo
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTasks).ForEach(func(k, v []byte) error {
			var t TaskInfo
			if err := json.Unmarshal(v, &t); err != nil {
				return fmt.Errorf("records: task %q: %w", k, err)
			}
			out = append(out, t)
			return nil
		})
	})
	return out, err
}

func taskKey(workload, target string) []byte {
	return []byte(workload + "\x00" + target)
}

func seqKey(seq uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	return b[:]
}

// Add commits a batch of records in one transaction and updates the best
// index: after it returns nil, a crash loses none of them.
func (s *Store) Add(recs []Record) error {
	for i := range recs {
		if err := recs[i].Validate(); err != nil {
			return fmt.Errorf("records: record %d: %w", i, err)
		}
	}
	return s.update(func(tx *bolt.Tx) error {
		rb, ib, bb := tx.Bucket(bucketRecords), tx.Bucket(bucketIndex), tx.Bucket(bucketBest)
		for _, r := range recs {
			seq, err := rb.NextSequence()
			if err != nil {
				return err
			}
			data, err := json.Marshal(r)
			if err != nil {
				return err
			}
			if err := rb.Put(seqKey(seq), data); err != nil {
				return err
			}
			tk := taskKey(r.WorkloadKey, r.Target)
			if err := ib.Put(append(append(append([]byte(nil), tk...), 0), seqKey(seq)...), nil); err != nil {
				return err
			}
			if r.Error != ErrorNone {
				continue
			}
			if cur := bb.Get(tk); cur != nil {
				old, err := decodeRecord(rb.Get(cur))
				if err == nil && old.Cost() <= r.Cost() {
					continue
				}
			}
			if err := bb.Put(tk, seqKey(seq)); err != nil {
				return err
			}
		}
		return nil
	})
}

func decodeRecord(data []byte) (Record, error) {
	var r Record
	if data == nil {
		return r, errors.New("missing record")
	}
	err := json.Unmarshal(data, &r)
	return r, err
}

// Records returns the records of a workload on a target, in the order
// they were added.
func (s *Store) Records(workload, target string) ([]Record, error) {
	var out []Record
	err := s.view(func(tx *bolt.Tx) error {
		prefix := append(taskKey(workload, target), 0)
		rb := tx.Bucket(bucketRecords)
		c := tx.Bucket(bucketIndex).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			r, err := decodeRecord(rb.Get(k[len(prefix):]))
			if err != nil {
				return fmt.Errorf("records: %s: %w", workload, err)
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// ForEach calls fn on every record, in the order they were added.
func (s *Store) ForEach(fn func(Record) error) error {
	return s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRecords).ForEach(func(k, v []byte) error {
			r, err := decodeRecord(v)
			if err != nil {
				return fmt.Errorf("records: record %d: %w", binary.BigEndian.Uint64(k), err)
			}
			return fn(r)
		})
	})
}

// Count returns the number of records.
func (s *Store) Count() (int, error) {
	n := 0
	err := s.view(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketRecords).Stats().KeyN
		return nil
	})
	return n, err
}

// SaveModel stores the cost model of a target, replacing the previous one.
func (s *Store) SaveModel(target string, model []byte) error {
	return s.update(func(tx *bolt.Tx) error { return tx.Bucket(bucketModels).Put([]byte(target), model) })
}

// Model returns the stored cost model of a target, or nil.
func (s *Store) Model(target string) ([]byte, error) {
	var out []byte
	err := s.view(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketModels).Get([]byte(target)); v != nil {
			out = append([]byte(nil), v...)
		}
		return nil
	})
	return out, err
}

// Stat summarizes the records of one (workload, target).
type Stat struct {
	WorkloadKey string
	Target      string
	Records     int
	Errors      int
	Best        float64 // seconds; +Inf when no record is valid
}

// Stats returns one Stat per (workload, target), sorted by workload then
// target.
func (s *Store) Stats() ([]Stat, error) {
	by := map[[2]string]*Stat{}
	err := s.ForEach(func(r Record) error {
		k := [2]string{r.WorkloadKey, r.Target}
		st := by[k]
		if st == nil {
			st = &Stat{WorkloadKey: r.WorkloadKey, Target: r.Target, Best: math.Inf(1)}
			by[k] = st
		}
		st.Records++
		if r.Error != ErrorNone {
			st.Errors++
		} else {
			st.Best = math.Min(st.Best, r.Cost())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]Stat, 0, len(by))
	for _, st := range by {
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].WorkloadKey != out[j].WorkloadKey {
			return out[i].WorkloadKey < out[j].WorkloadKey
		}
		return out[i].Target < out[j].Target
	})
	return out, nil
}
