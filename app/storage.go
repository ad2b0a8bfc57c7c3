package app

import (
	"context"
	"os"
	"time"

	"atrium/backend/imports"
	"atrium/backend/maintenance"
	"atrium/backend/sessions"
	"atrium/backend/stack"
)

// Storage is the storage page: what the store holds, what retention would
// remove next, and the vacuum.
type Storage struct {
	base
	st *stack.Stack
}

// NewStorage binds st.
func NewStorage(ctx context.Context, st *stack.Stack) *Storage {
	return &Storage{base: base{ctx: ctx}, st: st}
}

// BucketDTO counts sessions and messages under a name (a source, an age).
type BucketDTO struct {
	Name     string `json:"name"`
	Sessions int64  `json:"sessions"`
	Messages int64  `json:"messages"`
}

// RetentionDTO is the retention preview: what the next automatic prune
// would remove (sessions older than Days, first Titles), or when the next
// session would qualify, and whether it waits for the user's confirmation.
type RetentionDTO struct {
	AutoPrune         bool       `json:"auto_prune"`
	Days              int        `json:"days"`
	Sessions          int        `json:"sessions"`
	Messages          int64      `json:"messages"`
	Titles            []string   `json:"titles"`
	NextAt            *time.Time `json:"next_at"`
	ToTrash           bool       `json:"to_trash"` // pruned sessions go to the trash first
	NeedsConfirmation bool       `json:"needs_confirmation"`
	ConfirmedAt       *time.Time `json:"confirmed_at"`
}

// StorageDTO is the storage page.
type StorageDTO struct {
	Path       string       `json:"path"`
	DBBytes    int64        `json:"db_bytes"`
	WALBytes   int64        `json:"wal_bytes"`
	FreeBytes  int64        `json:"free_bytes"` // what a vacuum can give back now
	AutoVacuum string       `json:"auto_vacuum"`
	Sessions   int64        `json:"sessions"`
	Messages   int64        `json:"messages"`
	BySource   []BucketDTO  `json:"by_source"`
	ByAge      []BucketDTO  `json:"by_age"`
	Trash      TrashDTO     `json:"trash"`
	Retention  RetentionDTO `json:"retention"`
}

// VacuumDTO says what a vacuum gave back.
type VacuumDTO struct {
	Mode        string `json:"mode"` // vacuum or incremental_vacuum
	BeforeBytes int64  `json:"before_bytes"`
	AfterBytes  int64  `json:"after_bytes"`
	FreedBytes  int64  `json:"freed_bytes"`
	TookMs      int64  `json:"took_ms"`
}

func toBuckets(bs []sessions.Bucket) []BucketDTO {
	out := make([]BucketDTO, len(bs))
	for i, b := range bs {
		out[i] = BucketDTO(b)
	}
	return out
}

func toRetention(r maintenance.Retention) RetentionDTO {
	return RetentionDTO{AutoPrune: r.AutoPrune, Days: r.Days, Sessions: r.Preview.Sessions, Messages: r.Preview.Messages,
		Titles: nonNil(r.Preview.Titles), NextAt: r.Preview.NextAt, ToTrash: r.Preview.ToTrash, NeedsConfirmation: r.NeedsConfirmation,
		ConfirmedAt: r.State.Confirmed}
}

// Report is the storage page's data.
func (s *Storage) Report() (StorageDTO, error) {
	ctx, cancel := s.with(readTimeout)
	defer cancel()
	r, err := s.st.Maintenance.Storage(ctx)
	if err != nil {
		return StorageDTO{}, err
	}
	return StorageDTO{Path: r.Path, DBBytes: r.DBBytes, WALBytes: r.WALBytes, FreeBytes: r.FreeBytes, AutoVacuum: r.Pages.AutoVacuum,
		Sessions: r.Stats.Sessions, Messages: r.Stats.Messages, BySource: toBuckets(r.Stats.BySource), ByAge: toBuckets(r.Stats.ByAge),
		Trash: toTrash(r.Trash), Retention: toRetention(r.Retention)}, nil
}

// Vacuum gives free space back to the file system and says how much.
func (s *Storage) Vacuum() (VacuumDTO, error) {
	ctx, cancel := s.with(writeTimeout)
	defer cancel()
	r, err := s.st.Maintenance.Vacuum(ctx)
	if err != nil {
		return VacuumDTO{}, err
	}
	return VacuumDTO{Mode: r.Mode, BeforeBytes: r.BeforeBytes, AfterBytes: r.AfterBytes, FreedBytes: r.FreedBytes, TookMs: r.Took.Milliseconds()}, nil
}

// ConfirmRetention records that the user saw the retention preview and
// agrees; the prune runs now (automatic pruning on). It returns the page.
func (s *Storage) ConfirmRetention() (StorageDTO, error) {
	ctx, cancel := s.with(writeTimeout)
	if _, err := s.st.Maintenance.ConfirmRetention(ctx); err != nil {
		cancel()
		return StorageDTO{}, err
	}
	cancel()
	return s.Report()
}

// importTimeout bounds one import from the window or the dashboard: a
// large store of another agent takes seconds per 10,000 sessions.
const importTimeout = 10 * time.Minute

// importShown bounds the outcomes and problems an import returns to the
// UI: the ones with something to say, the first of them.
const importShown = 100

// ImportSourceDTO is an agent whose sessions can be imported, where they
// would be read from, and whether anything is there.
type ImportSourceDTO struct {
	Kind  string `json:"kind"`
	Label string `json:"label"`
	Path  string `json:"path"`
	Found bool   `json:"found"`
}

// ImportRequest asks to import one agent's sessions from their default
// place (the window and the dashboard name no path: a browser must not
// make Atrium read any file it likes).
type ImportRequest struct {
	Kind   string `json:"kind"`
	DryRun bool   `json:"dry_run"`
}

// ImportOutcomeDTO is one imported session with something to say.
type ImportOutcomeDTO struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Title    string `json:"title"`
	Messages int    `json:"messages"`
	Note     string `json:"note"`
}

// ImportDTO is what an import did, or would do (dry run).
type ImportDTO struct {
	Kind     string             `json:"kind"`
	Path     string             `json:"path"`
	DryRun   bool               `json:"dry_run"`
	Counts   map[string]int     `json:"counts"`
	Messages int                `json:"messages"`
	Notable  []ImportOutcomeDTO `json:"notable"`  // conflicts and notes, the first importShown
	Problems []string           `json:"problems"` // what could not be read, the first importShown
	Skipped  int                `json:"skipped"`  // how many problems in all
}

var importLabels = map[string]string{
	sessions.ImportHermes:   "Hermes agent (state.db)",
	sessions.ImportClaude:   "Claude Code",
	sessions.ImportCodex:    "Codex",
	sessions.ImportGemini:   "Gemini CLI",
	sessions.ImportOpenCode: "OpenCode",
}

// ImportSources lists the agents Atrium imports from, with where each keeps
// its sessions on this machine.
func (s *Storage) ImportSources() ([]ImportSourceDTO, error) {
	home, _ := os.UserHomeDir()
	out := make([]ImportSourceDTO, 0, len(sessions.ImportKinds))
	for _, k := range sessions.ImportKinds {
		p := imports.DefaultPath(k, os.Getenv, home)
		_, err := os.Stat(p)
		out = append(out, ImportSourceDTO{Kind: k, Label: importLabels[k], Path: p, Found: err == nil})
	}
	return out, nil
}

// Import imports one agent's sessions from its default place (see
// `atrium sessions import`). It fires no hook.
func (s *Storage) Import(in ImportRequest) (ImportDTO, error) {
	ctx, cancel := s.with(importTimeout)
	defer cancel()
	home, _ := os.UserHomeDir()
	rep, err := imports.Run(ctx, s.st.Sessions, in.Kind, "", os.Getenv, home, imports.RunOptions{DryRun: in.DryRun})
	if err != nil {
		return ImportDTO{}, err
	}
	out := ImportDTO{Kind: rep.Kind, Path: rep.Path, DryRun: rep.DryRun, Counts: rep.Counts, Messages: rep.Messages,
		Notable: []ImportOutcomeDTO{}, Problems: []string{}, Skipped: len(rep.Problems)}
	for _, o := range rep.Outcomes {
		if len(out.Notable) < importShown && (o.Note != "" || o.Status == sessions.ImportStatusConflict) {
			out.Notable = append(out.Notable, ImportOutcomeDTO{ID: o.ID, Status: o.Status, Title: o.Title, Messages: o.Messages, Note: o.Note})
		}
	}
	for _, p := range rep.Problems[:min(len(rep.Problems), importShown)] {
		out.Problems = append(out.Problems, p.String())
	}
	return out, nil
}
