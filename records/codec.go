package records

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"time"

	"github.com/tessera-ml/tessera/measure"
	"github.com/tessera-ml/tessera/schedule"
)

// FormatVersion is the version of a Record's JSON form. A line of another
// version is skipped on import with a reason, never misread.
const FormatVersion = 1

// ErrorNone is the Error of a valid measurement.
const ErrorNone = "none"

// Record is one measurement: the schedule (as its steps, which replay on
// the task's DAG), the costs of each repetition in seconds, and whether it
// failed. As a JSON line it is the unit of export and import.
type Record struct {
	Version     int             `json:"v"`
	WorkloadKey string          `json:"workload"`
	Target      string          `json:"target"`
	Steps       json.RawMessage `json:"steps"`
	Costs       []float64       `json:"costs,omitempty"`
	Error       string          `json:"error"`
	Msg         string          `json:"msg,omitempty"`
	At          time.Time       `json:"at"`
	Tool        string          `json:"tool,omitempty"`
}

// New makes the record of one measurement.
func New(workload, target string, steps []schedule.Step, res measure.Result, tool string) (Record, error) {
	data, err := schedule.MarshalSteps(steps)
	if err != nil {
		return Record{}, err
	}
	r := Record{
		Version: FormatVersion, WorkloadKey: workload, Target: target, Steps: data,
		Error: res.Kind.String(), Msg: res.Msg, At: time.Now().UTC(), Tool: tool,
	}
	if res.Kind == measure.None {
		r.Costs = res.Costs
	}
	return r, nil
}

// Cost returns the median cost of a valid record, +Inf otherwise.
func (r Record) Cost() float64 {
	if r.Error != ErrorNone || len(r.Costs) == 0 {
		return math.Inf(1)
	}
	c := append([]float64(nil), r.Costs...)
	sort.Float64s(c)
	if len(c)%2 == 1 {
		return c[len(c)/2]
	}
	return (c[len(c)/2-1] + c[len(c)/2]) / 2
}

// Validate checks what can be checked without the task's DAG: the version,
// the keys, the error kind, the costs, and that the steps decode.
func (r Record) Validate() error {
	switch {
	case r.Version != FormatVersion:
		return fmt.Errorf("record version %d, this tessera reads %d", r.Version, FormatVersion)
	case r.WorkloadKey == "":
		return errors.New("no workload key")
	case r.Target == "":
		return errors.New("no target")
	}
	if _, err := measure.ParseErrorKind(r.Error); err != nil {
		return fmt.Errorf("error kind: %w", err)
	}
	if r.Error == ErrorNone && len(r.Costs) == 0 {
		return errors.New("a valid record without costs")
	}
	for _, c := range r.Costs {
		if !(c > 0) || math.IsInf(c, 0) {
			return fmt.Errorf("cost %v is not a positive number of seconds", c)
		}
	}
	if _, err := r.DecodeSteps(); err != nil {
		return err
	}
	return nil
}

// DecodeSteps decodes the record's schedule.
func (r Record) DecodeSteps() ([]schedule.Step, error) {
	steps, err := schedule.UnmarshalSteps(r.Steps)
	if err != nil {
		return nil, fmt.Errorf("steps: %w", err)
	}
	return steps, nil
}

// Export writes every record as one JSON line.
func (s *Store) Export(w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if err := s.ForEach(func(r Record) error { return enc.Encode(r) }); err != nil {
		return err
	}
	return bw.Flush()
}

// ImportReport says what an import took and what it skipped, and why.
type ImportReport struct {
	Added   int
	Skipped []Skipped
}

// Skipped is a line an import did not take.
type Skipped struct {
	Line   int
	Reason string
}

// maxLine bounds one JSON line on import.
const maxLine = 16 << 20

// ImportFiles imports the JSON lines files one after the other (Import)
// and writes to w what each added and skipped, with the reasons. That no
// line of any file was added is an error.
func (s *Store) ImportFiles(w io.Writer, files []string) error {
	if len(files) == 0 {
		return errors.New("import: name the JSON lines files to import")
	}
	added, skipped := 0, 0
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		rep, err := s.Import(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		fmt.Fprintf(w, "%s: %d records added, %d lines skipped\n", path, rep.Added, len(rep.Skipped))
		for _, sk := range rep.Skipped {
			fmt.Fprintf(w, "  line %d: %s\n", sk.Line, sk.Reason)
		}
		added += rep.Added
		skipped += len(rep.Skipped)
	}
	if added == 0 && skipped > 0 {
		return fmt.Errorf("import: no record added: all %d lines were skipped (the reasons are above)", skipped)
	}
	return nil
}

// Import reads JSON lines and adds the valid records in one transaction;
// every other line is reported with its reason. A line is skipped when it
// does not decode or validate, when the database (or an earlier line)
// already has the same schedule of the same workload on the same target
// (importing a database's own export adds nothing), and when its steps do
// not replay on the task's DAG, if the database knows it. Only a read
// error fails the import as a whole (and then nothing is added).
func (s *Store) Import(r io.Reader) (ImportReport, error) {
	var rep ImportReport
	var recs []Record
	var lines []int
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for line := 1; sc.Scan(); line++ {
		text := sc.Bytes()
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(text, &rec); err != nil {
			rep.Skipped = append(rep.Skipped, Skipped{line, "not a JSON record: " + err.Error()})
			continue
		}
		if err := rec.Validate(); err != nil {
			rep.Skipped = append(rep.Skipped, Skipped{line, err.Error()})
			continue
		}
		recs = append(recs, rec)
		lines = append(lines, line)
	}
	if err := sc.Err(); err != nil {
		return ImportReport{}, fmt.Errorf("records: import: %w", err)
	}
	// The schedules the database has, for the (workload, target) pairs
	// the file names.
	seen := map[[32]byte]bool{}
	loaded := map[[2]string]bool{}
	var keep []Record
	for i, rec := range recs {
		pair := [2]string{rec.WorkloadKey, rec.Target}
		if !loaded[pair] {
			loaded[pair] = true
			stored, err := s.Records(rec.WorkloadKey, rec.Target)
			if err != nil {
				return ImportReport{}, err
			}
			for _, o := range stored {
				if k, err := scheduleKey(o); err == nil {
					seen[k] = true
				}
			}
		}
		k, err := scheduleKey(rec)
		if err != nil {
			rep.Skipped = append(rep.Skipped, Skipped{lines[i], err.Error()})
			continue
		}
		if seen[k] {
			rep.Skipped = append(rep.Skipped, Skipped{lines[i], "duplicate: this schedule of this workload and target is already recorded"})
			continue
		}
		d, err := s.dag(rec.WorkloadKey)
		if err != nil {
			return ImportReport{}, err
		}
		if err := checkReplays(d, rec); err != nil {
			rep.Skipped = append(rep.Skipped, Skipped{lines[i], err.Error()})
			continue
		}
		seen[k] = true
		keep = append(keep, rec)
	}
	sort.SliceStable(rep.Skipped, func(i, j int) bool { return rep.Skipped[i].Line < rep.Skipped[j].Line })
	if err := s.Add(keep); err != nil {
		return ImportReport{}, err
	}
	rep.Added = len(keep)
	return rep, nil
}

// Distill writes, as JSON lines, the k best valid records of every
// (workload, target) as Ranked orders them (records whose steps do not
// replay on a task the database knows are left out): the log a build or a
// new tuning run needs. k must be at least 1.
func (s *Store) Distill(w io.Writer, k int) error {
	if k < 1 {
		return fmt.Errorf("records: distill: k = %d, want at least 1", k)
	}
	pairs := map[[2]string]bool{}
	if err := s.ForEach(func(r Record) error {
		if r.Error == ErrorNone {
			pairs[[2]string{r.WorkloadKey, r.Target}] = true
		}
		return nil
	}); err != nil {
		return err
	}
	keys := make([][2]string, 0, len(pairs))
	for key := range pairs {
		keys = append(keys, key)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, key := range keys {
		rs, err := s.Ranked(key[0], key[1])
		if err != nil {
			return err
		}
		for _, r := range rs[:min(k, len(rs))] {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}
