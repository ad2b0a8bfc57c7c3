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
	// Interactive: a window runs this maintenance and can ask the user to
	// confirm the first automatic prune (OnRetentionPending). Otherwise the
	// first prune is logged with its preview and deferred a day.
	Interactive bool
	// Current, when set, gives these settings as they are at each use
	// (config.yaml changed while the process runs applies at the next run,
	// and to what Retention shows); Interactive stays this Config's.
	Current func() Config
}

// Service runs maintenance on one store.
type Service struct {
	db       *db.DB
	sessions *sessions.Service
	receipts *receipts.Service
	cfg      Config
	log      *slog.Logger
	pending  func(sessions.PrunePreview)
}

// OnRetentionPending sets who is told, in an interactive process, that the
// first automatic prune waits for the user's confirmation (the window asks).
func (m *Service) OnRetentionPending(fn func(sessions.PrunePreview)) { m.pending = fn }

// NewService builds the maintenance runner.
func NewService(d *db.DB, s *sessions.Service, r *receipts.Service, cfg Config, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{db: d, sessions: s, receipts: r, cfg: cfg, log: log}
}

// config is the settings now (read once by each operation).
func (m *Service) config() Config {
	if m.cfg.Current == nil {
		return m.cfg
	}
	c := m.cfg.Current()
	c.Interactive, c.Current = m.cfg.Interactive, nil
	return c
}

// Report says what one run did.
type Report struct {
	Ran           bool             `json:"ran"`
	SkippedReason string           `json:"skipped_reason,omitempty"`
	EmptySweep    *sessions.Result `json:"empty_sweep,omitempty"`
	GhostPrune    *sessions.Result `json:"ghost_prune,omitempty"`
	Prune         *sessions.Result `json:"prune,omitempty"`
	ArchiveIdle   *sessions.Result `json:"archive_idle,omitempty"`
	TrashPurge    *sessions.Result `json:"trash_purge,omitempty"`
	// RetentionHeld says why the retention prune did not run (it waits for
	// the user to have seen its preview once).
	RetentionHeld   string `json:"retention_held,omitempty"`
	EventsPruned    int64  `json:"events_pruned"`
	ReceiptsExpired int64  `json:"receipts_expired"`
	IndexMerges     int    `json:"index_merges"` // search-index merge steps that did work
	FreedBytes      int64  `json:"freed_bytes"`  // given back by incremental vacuum
}

const task = "daily"

// Upkeep bounds per run: the writer is held a step at a time.
const (
	indexMergeBudget  = 3 * time.Second
	vacuumPagesPerRun = 1 << 18 // 1 GiB of 4 KiB pages
)

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
	cfg := m.config()
	steps := []struct {
		name string
		on   bool
		run  func() error
	}{
		{"empty sweep", true, func() error { r, err := m.sessions.SweepEmpty(ctx, nil); rep.EmptySweep = &r; return err }},
		{"ghost prune", true, func() error { r, err := m.sessions.PruneGhosts(ctx, nil); rep.GhostPrune = &r; return err }},
		{"retention prune", cfg.AutoPrune, func() error {
			held, err := m.holdRetention(ctx, cfg)
			if err != nil || held != "" {
				rep.RetentionHeld = held
				return err
			}
			r, err := m.sessions.Prune(ctx, cfg.RetentionDays, nil)
			rep.Prune = &r
			return err
		}},
		{"idle archive", cfg.ArchiveIdleDays > 0, func() error {
			r, err := m.sessions.ArchiveIdle(ctx, cfg.ArchiveIdleDays)
			rep.ArchiveIdle = &r
			return err
		}},
		{"trash purge", true, func() error { r, err := m.sessions.PurgeExpired(ctx, nil); rep.TrashPurge = &r; return err }},
		{"event expiry", true, func() error {
			keep := cfg.EventRetention
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
		// Upkeep, last: what the deletes above left behind.
		{"search index merge", true, func() error {
			n, err := m.sessions.MergeIndex(ctx, indexMergeBudget)
			rep.IndexMerges = n
			return err
		}},
		{"incremental vacuum", true, func() error {
			n, err := m.db.IncrementalVacuum(ctx, vacuumPagesPerRun)
			rep.FreedBytes = n
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

// Retention confirmation is kept in maintenance_runs, by task name.
const (
	taskConfirmed = "retention_confirmed" // the user saw the preview and agreed
	taskPreviewed = "retention_previewed" // a headless host logged the preview
	taskPending   = "retention_pending"   // a window was asked to confirm
)

// holdRetention says why the automatic prune must wait ("" when it may
// run): retention never runs before the user has seen its preview once. In
// a window the first prune asks (OnRetentionPending) and waits for
// ConfirmRetention; on a headless host the preview is logged and the prune
// deferred a day. A prune with nothing to remove needs no confirmation.
func (m *Service) holdRetention(ctx context.Context, cfg Config) (string, error) {
	st, err := m.retentionState(ctx)
	if err != nil || st.Confirmed != nil {
		return "", err
	}
	pre, err := m.sessions.PreviewPrune(ctx, cfg.RetentionDays)
	if err != nil || pre.Sessions == 0 {
		return "", err
	}
	now := m.db.Now()
	if cfg.Interactive {
		if err := m.mark(ctx, taskPending, now); err != nil {
			return "", err
		}
		if m.pending != nil {
			m.pending(pre)
		}
		return "waiting for the user to confirm the first automatic prune in the window", nil
	}
	switch {
	case st.Previewed == nil:
		m.log.Warn("retention preview: the first automatic prune is deferred a day; set sessions.auto_prune: false to stop it",
			"sessions", pre.Sessions, "messages", pre.Messages, "older_than_days", pre.Days, "first", pre.Titles,
			"to_trash", pre.ToTrash, "runs_after", now.Add(Interval).UTC().Format(time.RFC3339))
		if err := m.mark(ctx, taskPreviewed, now); err != nil {
			return "", err
		}
		return "preview logged; the first automatic prune runs a day later", nil
	case now.Sub(*st.Previewed) < Interval:
		return "preview logged less than a day ago; the first automatic prune waits", nil
	}
	return "", m.mark(ctx, taskConfirmed, now) // logged a day ago: that counts as seen
}

// RetentionState says whether the automatic prune was confirmed, previewed
// in a log, or is waiting for a window's confirmation.
type RetentionState struct {
	Confirmed *time.Time `json:"confirmed_at"`
	Previewed *time.Time `json:"previewed_at"`
	Pending   *time.Time `json:"pending_since"`
}

func (m *Service) retentionState(ctx context.Context) (RetentionState, error) {
	var rows []struct {
		Task      string
		LastRunAt int64
	}
	if err := m.db.Read.WithContext(ctx).Raw(`SELECT task, last_run_at FROM maintenance_runs WHERE task IN (?, ?, ?)`,
		taskConfirmed, taskPreviewed, taskPending).Scan(&rows).Error; err != nil {
		return RetentionState{}, fmt.Errorf("retention state: %w", err)
	}
	var st RetentionState
	for _, r := range rows {
		t := time.UnixMilli(r.LastRunAt).UTC()
		switch r.Task {
		case taskConfirmed:
			st.Confirmed = &t
		case taskPreviewed:
			st.Previewed = &t
		case taskPending:
			st.Pending = &t
		}
	}
	return st, nil
}

func (m *Service) mark(ctx context.Context, task string, at time.Time) error {
	return m.db.InTx(ctx, func(tx *db.Tx) error {
		return tx.G.WithContext(ctx).Exec(`INSERT INTO maintenance_runs (task, last_run_at) VALUES (?, ?)
			ON CONFLICT (task) DO UPDATE SET last_run_at = excluded.last_run_at`, task, db.Ms(at)).Error
	})
}

// ConfirmRetention records that the user saw the retention preview and
// agreed, and runs the prune now when automatic pruning is on.
func (m *Service) ConfirmRetention(ctx context.Context) (*sessions.Result, error) {
	if err := m.mark(ctx, taskConfirmed, m.db.Now()); err != nil {
		return nil, err
	}
	cfg := m.config()
	if !cfg.AutoPrune || cfg.RetentionDays <= 0 {
		return nil, nil
	}
	r, err := m.sessions.Prune(ctx, cfg.RetentionDays, nil)
	if err != nil {
		return nil, err
	}
	return &r, nil
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
