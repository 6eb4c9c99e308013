package remote

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tessera-ml/tessera/backend"
)

// FindTarget returns the target key of the workers of target name that
// are up on the NATS server at url: the only one, or the one that is want or
// contains it. It waits up to wait for such a worker to announce itself.
func FindTarget(ctx context.Context, nc *nats.Conn, name, want string, wait time.Duration, url string) (string, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return "", err
	}
	if err := Setup(ctx, js); err != nil {
		return "", err
	}
	deadline := time.Now().Add(wait)
	for {
		ps, err := Workers(ctx, js)
		if err != nil {
			return "", err
		}
		keys, hits := map[string]bool{}, map[string]bool{}
		for _, p := range ps {
			if backend.NameOf(p.Target) != name {
				continue
			}
			keys[p.Target] = true
			if want == "" || p.Target == want || strings.Contains(p.Target, want) {
				hits[p.Target] = true
			}
		}
		if hits[want] {
			return want, nil
		}
		sorted := slices.Sorted(maps.Keys(hits))
		switch {
		case len(hits) == 1:
			return sorted[0], nil
		case len(hits) > 1:
			return "", fmt.Errorf("workers of %d %s target keys are up on %s; name one with --worker-key:\n  %s", len(hits), name, url, strings.Join(sorted, "\n  "))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			what := "target " + name
			if want != "" {
				what = fmt.Sprintf("a %s target key containing %q", name, want)
			}
			up := "none"
			if len(keys) > 0 {
				up = strings.Join(slices.Sorted(maps.Keys(keys)), "; ")
			}
			return "", fmt.Errorf("no worker of %s announced itself on %s within %v (workers up: %s); start `tune worker --nats URL` on a host of that target, whose jobs go to stream %s", what, url, wait, up, JobsStream)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
