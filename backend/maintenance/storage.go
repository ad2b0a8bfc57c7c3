package maintenance

import (
	"context"
	"fmt"
	"time"

	"atrium/backend/db"
	"atrium/backend/sessions"
)

// Storage is what the store holds and what upkeep would do next: the
// window's storage page and `atrium storage`.
type Storage struct {
	Path      string                `json:"path"`
	DBBytes   int64                 `json:"db_bytes"`
	WALBytes  int64                 `json:"wal_bytes"`
	Pages     db.Pages              `json:"pages"`
	FreeBytes int64                 `json:"free_bytes"` // what a vacuum can give back
	Stats     sessions.Stats        `json:"stats"`
	Trash     sessions.TrashSummary `json:"trash"`
	Retention Retention             `json:"retention"`
}

// Retention is the retention preview: whether automatic pruning is on, what
// it would remove next and when, and whether it waits for the user.
type Retention struct {
	AutoPrune bool                  `json:"auto_prune"`
	Days      int                   `json:"days"`
	Preview   sessions.PrunePreview `json:"preview"`
	State     RetentionState        `json:"state"`
	// NeedsConfirmation: automatic pruning is on, something would go, and the
	// user has not confirmed a preview yet.
	NeedsConfirmation bool `json:"needs_confirmation"`
}

// Storage reports sizes, counts and the retention preview.
func (m *Service) Storage(ctx context.Context) (Storage, error) {
	out := Storage{Path: m.db.Path}
	out.DBBytes, out.WALBytes = m.db.Size()
	var err error
	if out.Pages, err = m.db.PageStats(ctx); err != nil {
		return Storage{}, err
	}
	out.FreeBytes = out.Pages.FreePages * out.Pages.PageSize
	if out.Stats, err = m.sessions.Stats(ctx); err != nil {
		return Storage{}, err
	}
	if out.Trash, err = m.sessions.Trash(ctx); err != nil {
		return Storage{}, err
	}
	if out.Retention, err = m.Retention(ctx); err != nil {
		return Storage{}, err
	}
	return out, nil
}

// Retention is the retention preview alone.
func (m *Service) Retention(ctx context.Context) (Retention, error) {
	cfg := m.config()
	days := cfg.RetentionDays
	if days <= 0 {
		days = 90
	}
	out := Retention{AutoPrune: cfg.AutoPrune, Days: days}
	var err error
	if out.Preview, err = m.sessions.PreviewPrune(ctx, days); err != nil {
		return Retention{}, err
	}
	if out.State, err = m.retentionState(ctx); err != nil {
		return Retention{}, err
	}
	out.NeedsConfirmation = out.AutoPrune && out.State.Confirmed == nil && out.Preview.Sessions > 0
	return out, nil
}

// VacuumReport says what a vacuum gave back.
type VacuumReport struct {
	Mode        string        `json:"mode"` // vacuum or incremental_vacuum
	BeforeBytes int64         `json:"before_bytes"`
	AfterBytes  int64         `json:"after_bytes"`
	FreedBytes  int64         `json:"freed_bytes"`
	Took        time.Duration `json:"took_ns"`
}

// Vacuum compacts the file (VACUUM, or incremental_vacuum on a store in
// auto_vacuum=INCREMENTAL mode) and reports the space it freed, the database
// and its WAL counted together.
func (m *Service) Vacuum(ctx context.Context) (VacuumReport, error) {
	start := time.Now()
	// Deleted messages leave the search index in background batches:
	// apply what is queued first, so their pages come back too.
	if m.sessions != nil {
		if err := m.sessions.FlushIndex(ctx); err != nil {
			return VacuumReport{}, fmt.Errorf("storage: %w", err)
		}
	}
	before, wal := m.db.Size()
	mode, err := m.db.Vacuum(ctx)
	if err != nil {
		return VacuumReport{}, fmt.Errorf("storage: %w", err)
	}
	after, wal2 := m.db.Size()
	r := VacuumReport{Mode: mode, BeforeBytes: before + wal, AfterBytes: after + wal2, Took: time.Since(start)}
	r.FreedBytes = max(0, r.BeforeBytes-r.AfterBytes)
	return r, nil
}
