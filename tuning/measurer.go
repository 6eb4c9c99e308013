package tuning

import (
	"context"

	"github.com/tessera-ml/tessera/backend"
	"github.com/tessera-ml/tessera/measure/remote"
	"github.com/tessera-ml/tessera/search"
)

// Measurer returns where a session's candidates are measured, and the
// target key of what measures them: this machine (tg.Measurer, checking
// each candidate's output if verify, its tensors within maxMemory bytes)
// or, where r names a NATS server (r.URL), the workers of tg's target
// there (remote.Open, verifying as this machine would), a
// *remote.Measurer that the caller closes.
func Measurer(ctx context.Context, tg *backend.Target, r remote.DialOptions, verify bool, maxMemory int64) (search.Measurer, string, error) {
	if r.URL == "" {
		local := tg.Measurer(verify)
		local.MaxMemory = maxMemory
		return local, tg.Key(), nil
	}
	r.Verify = verify
	rm, err := remote.Open(ctx, tg.Name, r)
	if err != nil {
		return nil, "", err
	}
	return rm, rm.Key(), nil
}
