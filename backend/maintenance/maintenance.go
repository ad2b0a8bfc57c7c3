// Package maintenance runs the store's automatic upkeep: the empty sweep,
// ghost-row pruning, retention pruning (opt-in), archiving of idle sessions
// (opt-in, silent), purging the trash of what has been there
// sessions.trash_days, and expiry of delivered events and receipts. Long-lived
// processes run it at start and then daily; a timestamp in the store throttles
// it so two processes never run it twice in a day.
package maintenance

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"atrium/backend/db"
	"atrium/backend/hooks"
	"atrium/backend/receipts"
	"atrium/backend/sessions"
)

// Config says which tasks run.
type Config struct {
	AutoPrune       bool
	RetentionDays   int
	ArchiveIdleDays int // 0: off
	EventRetention  time.Duration
}

// Service runs maintenance on one store.
type Service struct {
	db       *db.DB
	sessions *sessions.Service
	receipts *receipts.Service
	cfg      Config
	log      *slog.Logger
}

// NewService builds the maintenance runner.
func NewService(d *db.DB, s *sessions.Service, r *receipts.Service, cfg Config, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{db: d, sessions: s, receipts: r, cfg: cfg, log: log}
}

// Report says what one run did.
type Report struct {
	Ran             bool             `json:"ran"`
	SkippedReason   string           `json:"skipped_reason,omitempty"`
	EmptySweep      *sessions.Result `json:"empty_sweep,omitempty"`
	GhostPrune      *sessions.Result `json:"ghost_prune,omitempty"`
	Prune           *sessions.Result `json:"prune,omitempty"`
	ArchiveIdle     *sessions.Result `json:"archive_idle,omitempty"`
	TrashPurge      *sessions.Result `json:"trash_purge,omitempty"`
	EventsPruned    int64            `json:"events_pruned"`
	ReceiptsExpired int64            `json:"receipts_expired"`
}

const task = "daily"

// Interval between automatic runs.
const Interval = 24 * time.Hour

// Run runs every enabled task. Unless force is set, it does nothing when
// another run (by any process) happened within the last day.
func (m *Service) Run(ctx context.Context, force bool) (Report, error) {
	var rep Report
	claimed := false
	err := m.db.InTx(ctx, func(tx *db.Tx) error {
		var last []int64
		g := tx.G.WithContext(ctx)
		if err := g.Raw(`SELECT last_run_at FROM maintenance_runs WHERE task = ?`, task).Scan(&last).Error; err != nil {
			return err
		}
		if !force && len(last) == 1 && tx.Now.Sub(time.UnixMilli(last[0])) < Interval {
			rep.SkippedReason = "already ran within the last 24 h"
			return nil
		}
		claimed = true
		return g.Exec(`INSERT INTO maintenance_runs (task, last_run_at) VALUES (?, ?)
			ON CONFLICT (task) DO UPDATE SET last_run_at = excluded.last_run_at`, task, db.Ms(tx.Now)).Error
	})
	if err != nil || !claimed {
		return rep, err
	}
	rep.Ran = true
	steps := []struct {
		name string
		on   bool
		run  func() error
	}{
		{"empty sweep", true, func() error { r, err := m.sessions.SweepEmpty(ctx, nil); rep.EmptySweep = &r; return err }},
		{"ghost prune", true, func() error { r, err := m.sessions.PruneGhosts(ctx, nil); rep.GhostPrune = &r; return err }},
		{"retention prune", m.cfg.AutoPrune, func() error {
			r, err := m.sessions.Prune(ctx, m.cfg.RetentionDays, nil)
			rep.Prune = &r
			return err
		}},
		{"idle archive", m.cfg.ArchiveIdleDays > 0, func() error {
			r, err := m.sessions.ArchiveIdle(ctx, m.cfg.ArchiveIdleDays)
			rep.ArchiveIdle = &r
			return err
		}},
		{"trash purge", true, func() error { r, err := m.sessions.PurgeExpired(ctx, nil); rep.TrashPurge = &r; return err }},
		{"event expiry", true, func() error {
			keep := m.cfg.EventRetention
			if keep <= 0 {
				keep = hooks.DefaultEventRetention
			}
			n, err := hooks.PruneDelivered(ctx, m.db, keep)
			rep.EventsPruned = n
			return err
		}},
		{"receipt expiry", m.receipts != nil, func() error {
			n, err := m.receipts.Expire(ctx)
			rep.ReceiptsExpired = n
			return err
		}},
	}
	for _, s := range steps {
		if !s.on {
			continue
		}
		if err := s.run(); err != nil {
			return rep, fmt.Errorf("maintenance %s: %w", s.name, err)
		}
	}
	return rep, nil
}

// Loop runs maintenance now and then once an hour checks whether a day has
// passed, until ctx ends. Failures are logged, never fatal.
func (m *Service) Loop(ctx context.Context) {
	tick := time.NewTicker(time.Hour)
	defer tick.Stop()
	for {
		if _, err := m.Run(ctx, false); err != nil && ctx.Err() == nil {
			m.log.Warn("automatic maintenance", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
