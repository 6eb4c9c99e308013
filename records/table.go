package records

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
)

// Tables of records for people: `tune records stats` and the short keys
// of task tables.

// WriteStats writes the table of the store's Stats (WriteStats).
func (s *Store) WriteStats(w io.Writer) error {
	st, err := s.Stats()
	if err != nil {
		return err
	}
	return WriteStats(w, st)
}

// WriteStats writes a table of stats, one line per (workload, target):
// records, errors and the best cost in ms.
func WriteStats(w io.Writer, stats []Stat) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\trecords\terrors\tbest ms\ttarget")
	for _, s := range stats {
		best := "-"
		if !math.IsInf(s.Best, 1) {
			best = fmt.Sprintf("%.4f", s.Best*1e3)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", s.WorkloadKey, s.Records, s.Errors, best, s.Target)
	}
	return tw.Flush()
}

// StatRow is one Stat as tune records stats --json prints it: the best
// cost in milliseconds, null where no record is valid.
type StatRow struct {
	WorkloadKey string   `json:"workload_key"`
	Target      string   `json:"target"`
	Records     int      `json:"records"`
	Errors      int      `json:"errors"`
	BestMs      *float64 `json:"best_ms"`
}

// StatRows returns the rows of stats, in their order.
func StatRows(stats []Stat) []StatRow {
	rows := make([]StatRow, len(stats))
	for i, s := range stats {
		rows[i] = StatRow{WorkloadKey: s.WorkloadKey, Target: s.Target, Records: s.Records, Errors: s.Errors}
		if !math.IsInf(s.Best, 1) {
			ms := s.Best * 1e3
			rows[i].BestMs = &ms
		}
	}
	return rows
}

// StatsReport is what tune records stats prints: as a document (--json),
// the database and its Stats, one row per (workload, target), by
// workload then target; as text, their table (Write).
type StatsReport struct {
	DB    string    `json:"db"`
	Stats []StatRow `json:"stats"`

	stats []Stat
}

// Write writes the report as tune records stats prints it, the table of
// its Stats (WriteStats).
func (r *StatsReport) Write(w io.Writer) error { return WriteStats(w, r.stats) }

// StatsReport returns the store's Stats as tune records stats --json
// prints them, DB the path it was opened at.
func (s *Store) StatsReport() (*StatsReport, error) {
	st, err := s.Stats()
	if err != nil {
		return nil, err
	}
	return &StatsReport{DB: s.path, Stats: StatRows(st), stats: st}, nil
}

// ShortKey abbreviates a workload key as task tables and messages show
// it: its first 11 characters.
func ShortKey(key string) string {
	if len(key) > 11 {
		return key[:11]
	}
	return key
}
