package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"tessera/partition"
	"tessera/records"
)

// openExisting opens a records database that must exist already, for
// reading only (records.Open creates a missing one and takes the write
// lock, which suits tuning, not reading): a database on a read-only file
// or file system reads, and several readers may share it.
func openExisting(path string) (*records.Store, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("records database: %w", err)
	}
	return records.OpenReadOnly(path)
}

// modelTasks loads a model and returns its tasks.
func modelTasks(path string, mf modelFlags) ([]*partition.Task, error) {
	l, err := loadModel(path, mf)
	if err != nil {
		return nil, err
	}
	plan, err := partition.Extract(l.g, mf.partitionOptions())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return plan.Tasks, nil
}

// targetsOf returns, for every target with records of the tasks, the
// number of records of each task's workload.
func targetsOf(store *records.Store, tasks []records.TaskInfo) (map[string]map[string]int, error) {
	stats, err := store.Stats()
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, t := range tasks {
		want[t.Key] = true
	}
	out := map[string]map[string]int{}
	for _, s := range stats {
		if !want[s.WorkloadKey] {
			continue
		}
		if out[s.Target] == nil {
			out[s.Target] = map[string]int{}
		}
		out[s.Target][s.WorkloadKey] += s.Records
	}
	return out, nil
}

// pickTarget chooses one of the targets: the one --target names (its key,
// or a part of the key that only one target contains), or the only one
// when --target is empty. where names the records for messages.
func pickTarget[V any](targets map[string]V, want, where string) (string, error) {
	keys := slices.Sorted(maps.Keys(targets))
	if want == "" {
		switch len(keys) {
		case 0:
			return "", fmt.Errorf("%s has no records of these tasks", where)
		case 1:
			return keys[0], nil
		}
		return "", fmt.Errorf("%s has records of %d targets; name one with --target:\n  %s", where, len(keys), strings.Join(keys, "\n  "))
	}
	return matchTarget(keys, want, where)
}

// matchTarget returns the key equal to want, or the only key containing it.
func matchTarget(keys []string, want, where string) (string, error) {
	var hits []string
	for _, k := range keys {
		if k == want {
			return k, nil
		}
		if strings.Contains(k, want) {
			hits = append(hits, k)
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		return "", fmt.Errorf("--target %q: %s has no records of such a target; its targets:\n  %s", want, where, strings.Join(keys, "\n  "))
	}
	return "", fmt.Errorf("--target %q names %d targets of %s; give more of the key:\n  %s", want, len(hits), where, strings.Join(hits, "\n  "))
}
