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
	// The user saw the retention preview once (nothing qualified yet).
	if res, err := m.ConfirmRetention(ctx); err != nil || res == nil || res.Changed {
		t.Fatalf("confirm = %+v, %v", res, err)
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

func TestRetentionNeverRunsBeforeItsPreviewWasSeen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, interactive := range []bool{false, true} {
		e := sessionstest.New(t)
		old := e.MustCreate(t, sessions.CreateParams{Title: "old"})
		e.MustAppend(t, old.ID, 2)
		e.MustEnd(t, old.ID)
		e.Clock.Advance(40 * 24 * time.Hour)
		m := maintenance.NewService(e.DB, e.Sessions, nil, maintenance.Config{AutoPrune: true, RetentionDays: 30, Interactive: interactive}, nil)
		var asked []sessions.PrunePreview
		m.OnRetentionPending(func(p sessions.PrunePreview) { asked = append(asked, p) })
		ret, err := m.Retention(ctx)
		if err != nil || !ret.NeedsConfirmation || ret.Preview.Sessions != 1 || ret.Preview.Messages != 2 || ret.Preview.Titles[0] != "old" || !ret.Preview.ToTrash {
			t.Fatalf("preview = %+v, %v", ret, err)
		}
		rep, err := m.Run(ctx, false)
		if err != nil || rep.Prune != nil || rep.RetentionHeld == "" || !e.Visible(t, old.ID) {
			t.Fatalf("interactive=%v first run = %+v, %v", interactive, rep, err)
		}
		e.Clock.Advance(25 * time.Hour)
		rep, err = m.Run(ctx, false)
		if interactive {
			// The window asked (each run) and nothing runs until the user confirms.
			if err != nil || rep.Prune != nil || len(asked) != 2 || asked[0].Sessions != 1 {
				t.Fatalf("window, a day later = %+v, asked %d, %v", rep, len(asked), err)
			}
			res, err := m.ConfirmRetention(ctx)
			if err != nil || res == nil || len(res.AffectedIDs) != 1 {
				t.Fatalf("confirm = %+v, %v", res, err)
			}
		} else if err != nil || rep.Prune == nil || len(rep.Prune.AffectedIDs) != 1 || len(asked) != 0 {
			// Headless: logged with its preview, deferred a day, then it runs.
			t.Fatalf("headless, a day later = %+v, %v", rep, err)
		}
		if !e.Trashed(t, old.ID) {
			t.Fatalf("interactive=%v: the pruned session is not in the trash", interactive)
		}
		e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, hooks.OnSessionFinalize: 1, "*": 0})
		if ret, _ := m.Retention(ctx); ret.NeedsConfirmation || ret.State.Confirmed == nil {
			t.Fatalf("after: %+v", ret)
		}
	}
}

func TestStorageReportAndVacuum(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := sessionstest.New(t)
	m := maintenance.NewService(e.DB, e.Sessions, nil, maintenance.Config{RetentionDays: 90}, nil)
	ids, err := e.Sessions.Seed(ctx, sessions.SeedParams{Count: 300, Messages: 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Sessions.Delete(ctx, ids[:100], nil); err != nil {
		t.Fatal(err)
	}
	st, err := m.Storage(ctx)
	if err != nil || st.Stats.Sessions != 200 || st.Stats.Messages != 4000 || st.Trash.Sessions != 100 || st.Trash.Messages != 2000 ||
		len(st.Stats.ByAge) != 6 || len(st.Stats.BySource) != 7 || st.DBBytes == 0 || st.Retention.NeedsConfirmation {
		t.Fatalf("storage = %+v, %v", st, err)
	}
	var inBuckets int64
	for _, b := range st.Stats.ByAge {
		inBuckets += b.Sessions
	}
	if inBuckets != 200 {
		t.Fatalf("age buckets hold %d", inBuckets)
	}
	if _, err := e.Sessions.EmptyTrash(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	// A new store is in auto_vacuum=INCREMENTAL mode: an incremental vacuum
	// gives the space back.
	if st.Pages.AutoVacuum != "incremental" {
		t.Fatalf("a new store's auto_vacuum = %q", st.Pages.AutoVacuum)
	}
	// The delete's event is delivered and its delivery recorded in the
	// background; that write (the event row and its overflow pages
	// rewritten) landing after the vacuum left a page free under load.
	if err := e.Bus.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	v, err := m.Vacuum(ctx)
	if err != nil || v.Mode != "incremental_vacuum" || v.FreedBytes <= 0 || v.AfterBytes >= v.BeforeBytes {
		t.Fatalf("vacuum = %+v, %v", v, err)
	}
	if st, _ := m.Storage(ctx); st.FreeBytes != 0 {
		t.Fatalf("free after vacuum = %d", st.FreeBytes)
	}
	// A store made before auto_vacuum (NONE) gets a full VACUUM, which
	// converts it; the next vacuum is incremental.
	raw, err := e.DB.Write.DB()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`PRAGMA auto_vacuum = NONE`); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`VACUUM`); err != nil {
		t.Fatal(err)
	}
	if st, _ := m.Storage(ctx); st.Pages.AutoVacuum != "none" {
		t.Fatalf("auto_vacuum after the old-store setup = %q", st.Pages.AutoVacuum)
	}
	if _, err := e.Sessions.Purge(ctx, ids[100:150], nil); err != nil {
		t.Fatal(err)
	}
	v, err = m.Vacuum(ctx)
	if err != nil || v.Mode != "vacuum" || v.FreedBytes <= 0 {
		t.Fatalf("full vacuum = %+v, %v", v, err)
	}
	if st, _ := m.Storage(ctx); st.Pages.AutoVacuum != "incremental" || st.FreeBytes != 0 {
		t.Fatalf("after the full vacuum: auto_vacuum %q, %d bytes free", st.Pages.AutoVacuum, st.FreeBytes)
	}
	if _, err := e.Sessions.Purge(ctx, ids[150:200], nil); err != nil {
		t.Fatal(err)
	}
	v, err = m.Vacuum(ctx)
	if err != nil || v.Mode != "incremental_vacuum" || v.FreedBytes <= 0 {
		t.Fatalf("incremental vacuum = %+v, %v", v, err)
	}
}

// Maintenance's upkeep: the index queues are applied and the index merged
// (dropping the deleted entries), and the space the deletes freed goes back
// to the file system.
func TestRunMergesTheSearchIndexAndGivesSpaceBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := sessionstest.New(t)
	m := maintenance.NewService(e.DB, e.Sessions, nil, maintenance.Config{RetentionDays: 90}, nil)
	ids, err := e.Sessions.Seed(ctx, sessions.SeedParams{Count: 200, Messages: 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Index what the seed queued, in several batches (several segments).
	for {
		more, err := e.Sessions.IndexPending(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			break
		}
	}
	if _, err := e.Sessions.Purge(ctx, ids[:150], nil); err != nil {
		t.Fatal(err)
	}
	queued := func() (n int64) {
		_ = e.DB.QueryRow(ctx, `SELECT (SELECT count(*) FROM fts_pending) + (SELECT count(*) FROM fts_gone) + (SELECT count(*) FROM messages WHERE id > (SELECT upto FROM fts_mark))`).Scan(&n)
		return n
	}
	before, _ := e.DB.PageStats(ctx)
	rep, err := m.Run(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := e.DB.PageStats(ctx)
	if rep.IndexMerges == 0 || rep.FreedBytes <= 0 || queued() != 0 || after.FreePages != 0 || after.PageCount >= before.PageCount {
		t.Fatalf("report %+v; queued %d; pages %+v -> %+v", rep, queued(), before, after)
	}
	// The search still finds what is left, and only that.
	hits, err := e.Sessions.Search(ctx, "kernel", sessions.SearchOptions{Limit: 500})
	if err != nil || len(hits) != 50 {
		t.Fatalf("search after upkeep: %d hits, %v", len(hits), err)
	}
}
