package tuning

import (
	"context"

	"github.com/tessera-ml/tessera/assemble"
	"github.com/tessera-ml/tessera/frontend"
	"github.com/tessera-ml/tessera/graph"
	"github.com/tessera-ml/tessera/partition"
	"github.com/tessera-ml/tessera/tsrt"
)

// BuildOptions say how LoadBuild loads the model a build builds (tune
// build).
type BuildOptions struct {
	Load      frontend.LoadOptions // how to read the model (frontend.Load)
	Partition partition.Options    // how to extract its tasks
	// Ranges are the values of the inputs' dynamic dimensions to build
	// over, by name (tune build --range); none builds the model as Load
	// binds it.
	Ranges map[string][2]int
	// Layouts are the activation layouts to weigh, in order of preference
	// on a tie (assemble.Layouts).
	Layouts []string
	// Assemble are the build's options: their Records choose the layout.
	Assemble assemble.Options
	// Threads run the models that time the layouts end to end; Dir is
	// where the model is built (BuildSource.Reason names both).
	Threads int
	Dir     string
}

// BuildSource is what a build generates from (LoadBuild): the model's
// graph and plan, the build's options, and what a user should know.
type BuildSource struct {
	Graph *graph.Graph
	Plan  *partition.Plan
	// Options are BuildOptions.Assemble, over ranges with their Batch and
	// Dim set.
	Options assemble.Options
	// Reason says why the layout was chosen, where there was a choice
	// (assemble.LayoutChoice.Reason); Notes say how the model was read.
	Reason string
	Notes  []string
}

// LoadBuild loads the model at path as a build of it builds it: over
// o.Ranges, the model over them (LoadDims, RangeModel) in the first of
// o.Layouts, without a race of the layouts; else in the layout that
// assemble.ChooseLayout chooses by o.Assemble's records, which may build
// and time each end to end (ctx ends that).
func LoadBuild(ctx context.Context, path string, o BuildOptions) (*BuildSource, error) {
	src := &BuildSource{Options: o.Assemble}
	if len(o.Ranges) > 0 {
		// With --layout auto the first is channels-last, the layout tune
		// tunes by default.
		l, bp, dp, err := LoadDims(path, assemble.LayoutLoadOptions(o.Load, o.Layouts[0]), o.Ranges, o.Partition)
		if err != nil {
			return nil, err
		}
		src.Options.Batch, src.Options.Dim = bp, dp
		rm := RangeModel(bp, dp)
		src.Graph, src.Plan, src.Notes = rm.Graph, rm.Plan, l.Notes
		return src, nil
	}
	c, err := assemble.ChooseLayout(ctx, path, o.Load, o.Partition, o.Layouts, o.Assemble, tsrt.RunOptions{Threads: o.Threads})
	if err != nil {
		return nil, err
	}
	src.Graph, src.Plan, src.Notes = c.Chosen.Graph, c.Chosen.Plan, c.Chosen.Notes
	src.Reason = c.Reason(o.Threads, o.Dir)
	return src, nil
}
