package imports

import (
	"context"

	"atrium/backend/sessions"
)

// Batch bounds of one import transaction: the writer is not held for a
// whole foreign store, and a window open meanwhile stays responsive.
const (
	BatchSessions = 200
	BatchMessages = 20000
)

// Report is what one import did (or, dry, would do).
type Report struct {
	Kind     string                   `json:"kind"`
	Path     string                   `json:"path"`
	DryRun   bool                     `json:"dry_run"`
	Counts   map[string]int           `json:"counts"`
	Messages int                      `json:"messages"`
	Outcomes []sessions.ImportOutcome `json:"outcomes"`
	Problems []Problem                `json:"problems"`
}

// RunOptions adjust Run.
type RunOptions struct {
	DryRun bool
	// Warn is told each problem as it is found (they are in the report too).
	Warn func(Problem)
	// Progress is told how many sessions were read so far, and done once.
	Progress func(read int, done bool)
}

// Run reads kind's history at path ("" = its default place, from env and
// home) and imports it into svc in batches. An error to open or read what
// path names stops it; what was imported by then stays imported.
func Run(ctx context.Context, svc *sessions.Service, kind, path string, env func(string) string, home string, o RunOptions) (Report, error) {
	rep := Report{Kind: kind, DryRun: o.DryRun, Counts: map[string]int{}, Outcomes: []sessions.ImportOutcome{}, Problems: []Problem{}}
	rd, err := Open(kind, path, env, home, func(p Problem) {
		rep.Problems = append(rep.Problems, p)
		if o.Warn != nil {
			o.Warn(p)
		}
	})
	if err != nil {
		return rep, err
	}
	rep.Path = rd.Path
	opts := sessions.ImportOptions{DryRun: o.DryRun}
	if o.DryRun {
		opts.Planned = map[sessions.Origin]bool{}
	}
	var batch []sessions.Imported
	msgs, read := 0, 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		res, err := svc.Import(ctx, batch, opts)
		if err != nil {
			return err
		}
		for _, out := range res.Outcomes {
			rep.Counts[out.Status]++
		}
		rep.Outcomes = append(rep.Outcomes, res.Outcomes...)
		rep.Messages += res.Messages
		batch, msgs = batch[:0], 0
		if o.Progress != nil {
			o.Progress(read, false)
		}
		return nil
	}
	err = rd.Each(ctx, func(it sessions.Imported) error {
		read++
		batch = append(batch, it)
		msgs += len(it.Messages)
		if len(batch) >= BatchSessions || msgs >= BatchMessages {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if o.Progress != nil {
		o.Progress(read, true)
	}
	return rep, err
}
