package maintenance_test

import (
	"context"
	"testing"
	"time"

	"atrium/backend/hooks"
	"atrium/backend/maintenance"
	"atrium/backend/receipts"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

func TestMaintenanceRunsOncePerDayAndFiresPerEntryPoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := sessionstest.New(t)
	rec := receipts.NewService(e.DB, e.Sessions, 0)
	m := maintenance.NewService(e.DB, e.Sessions, rec, maintenance.Config{AutoPrune: true, RetentionDays: 30, ArchiveIdleDays: 10}, nil)
	// One of each: an empty ended session, a ghost, an old ended one, an idle live one.
	empty := e.MustCreate(t, sessions.CreateParams{Title: "empty"})
	e.MustEnd(t, empty.ID)
	ghost := e.MustCreate(t, sessions.CreateParams{})
	old := e.MustCreate(t, sessions.CreateParams{Title: "old"})
	e.MustAppend(t, old.ID, 1)
	e.MustEnd(t, old.ID)
	idle := e.MustCreate(t, sessions.CreateParams{Title: "idle"})
	e.MustAppend(t, idle.ID, 1)
	if _, err := rec.Apply(ctx, receipts.Request{RequestID: "r1", Op: "archive", SessionIDs: []string{idle.ID}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Sessions.Unarchive(ctx, []string{idle.ID}); err != nil {
		t.Fatal(err)
	}
	e.Rec.Reset()
	e.Clock.Advance(40 * 24 * time.Hour)

	rep, err := m.Run(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Ran || len(rep.EmptySweep.AffectedIDs) != 1 || len(rep.GhostPrune.AffectedIDs) != 1 || len(rep.Prune.AffectedIDs) != 1 ||
		len(rep.ArchiveIdle.AffectedIDs) != 1 || rep.ReceiptsExpired != 1 {
		t.Fatalf("report = %+v", rep)
	}
	// Three deleting entry points, three events; automatic archiving is silent.
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 3, "*": 0})
	reasons := map[string]string{}
	for _, p := range e.Rec.Deletes(t) {
		reasons[p.Reason] = p.DeletedIDs[0]
	}
	if reasons["empty_sweep"] != empty.ID || reasons["ghost_prune"] != ghost.ID || reasons["prune"] != old.ID {
		t.Fatalf("reasons = %v", reasons)
	}
	// Throttled: a second run within a day does nothing, even from another
	// service on the same store (another process).
	other := maintenance.NewService(e.DB, e.Sessions, rec, maintenance.Config{}, nil)
	e.Clock.Advance(23 * time.Hour)
	if rep, err := other.Run(ctx, false); err != nil || rep.Ran {
		t.Fatalf("second run: %+v %v", rep, err)
	}
	e.Clock.Advance(2 * time.Hour)
	if rep, err := other.Run(ctx, false); err != nil || !rep.Ran {
		t.Fatalf("run after a day: %+v %v", rep, err)
	}
	if rep, err := other.Run(ctx, true); err != nil || !rep.Ran {
		t.Fatalf("forced run: %+v %v", rep, err)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 3, "*": 0})
}
