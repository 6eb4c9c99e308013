package records

import (
	"fmt"
	"slices"
	"strings"
)

// Targets returns what the records of the workloads are on each target
// that has some: target → workload → its Stat.
func (s *Store) Targets(workloads []string) (map[string]map[string]Stat, error) {
	stats, err := s.Stats()
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]Stat{}
	for _, st := range stats {
		if !slices.Contains(workloads, st.WorkloadKey) {
			continue
		}
		if out[st.Target] == nil {
			out[st.Target] = map[string]Stat{}
		}
		out[st.Target][st.WorkloadKey] = st
	}
	return out, nil
}

// PickTarget chooses one of the target keys: the one want names (see
// MatchTarget), or the only one when want is empty. where names the
// records in errors, which speak of tune's --target flag.
func PickTarget(keys []string, want, where string) (string, error) {
	keys = slices.Sorted(slices.Values(keys))
	if want == "" {
		switch len(keys) {
		case 0:
			return "", fmt.Errorf("%s has no records of these tasks", where)
		case 1:
			return keys[0], nil
		}
		return "", fmt.Errorf("%s has records of %d targets; name one with --target:\n  %s", where, len(keys), strings.Join(keys, "\n  "))
	}
	return MatchTarget(keys, want, where)
}

// MatchTarget returns the key equal to want, or the only key containing
// it (a part of a key that names one target).
func MatchTarget(keys []string, want, where string) (string, error) {
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
