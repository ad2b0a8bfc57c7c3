package sessions_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/db"
	"atrium/backend/hooks"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

func restores(t *testing.T, e *sessionstest.Env) []hooks.SessionRestore {
	t.Helper()
	var out []hooks.SessionRestore
	for _, ev := range e.Rec.Events(hooks.OnSessionRestore) {
		var p hooks.SessionRestore
		if err := ev.Decode(&p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func TestTrashRestoreFiresOnceAndBringsTheWholeDeleteBack(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	root := e.MustCreate(t, sessions.CreateParams{Title: "root"})
	tip := e.MustChild(t, root.ID, sessions.RelationCompression)
	del := e.MustChild(t, root.ID, sessions.RelationDelegate)
	e.MustAppend(t, tip.ID, 2)
	if _, err := e.Sessions.Delete(ctx, []string{tip.ID}, nil); err != nil {
		t.Fatal(err)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, "*": 0})

	// Hidden from the list, the count, the ids and search; shown in the trash.
	page, _ := e.Sessions.List(ctx, sessions.Filter{})
	if len(page.Sessions) != 0 {
		t.Fatalf("list shows %d trashed sessions", len(page.Sessions))
	}
	trash, _ := e.Sessions.List(ctx, sessions.Filter{Rule: sessions.Rule{Scope: sessions.ScopeTrash}})
	if len(trash.Sessions) != 3 || trash.Sessions[0].Where() != sessions.ScopeTrash {
		t.Fatalf("trash = %+v", trash.Sessions)
	}
	if hits, _ := e.Sessions.Search(ctx, "hello", sessions.SearchOptions{}); len(hits) != 0 {
		t.Fatalf("search found %d trashed sessions", len(hits))
	}
	if hits, _ := e.Sessions.Search(ctx, "hello", sessions.SearchOptions{Scope: sessions.ScopeTrash}); len(hits) != 1 || hits[0].Session.ID != tip.ID {
		t.Fatalf("search in the trash = %+v", hits)
	}
	// Nothing can be done to a trashed session but restore and purge.
	if _, err := e.Sessions.AppendMessage(ctx, tip.ID, sessions.NewMessage{Role: "user", Content: "x"}); apperr.CodeOf(err) != apperr.Rejected {
		t.Fatalf("append to trashed: %v", err)
	}
	if _, err := e.Sessions.Archive(ctx, []string{tip.ID}); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("archive trashed: %v", err)
	}
	if _, err := e.Sessions.SetPinned(ctx, tip.ID, true); apperr.CodeOf(err) != apperr.Rejected {
		t.Fatalf("pin trashed: %v", err)
	}
	// Deleting it again is a no-op.
	again, err := e.Sessions.Delete(ctx, []string{tip.ID}, nil)
	if err != nil || again.Changed || again.Outcomes[0].Status != sessions.OutcomeUnchanged {
		t.Fatalf("delete of trashed = %+v, %v", again, err)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, "*": 0})

	// Restoring the delegate child brings back everything that delete took.
	res, err := e.Sessions.Restore(ctx, []string{del.ID})
	if err != nil || !res.Changed || res.Op != "restore" {
		t.Fatalf("restore = %+v, %v", res, err)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, hooks.OnSessionRestore: 1, "*": 0})
	p := restores(t, e)[0]
	if p.SessionID != del.ID || p.Reason != hooks.RestoreTrash || p.Profile != "default" || p.RestoredIDs[0] != del.ID ||
		sorted(p.RestoredIDs) != sorted([]string{root.ID, tip.ID, del.ID}) {
		t.Fatalf("restore payload = %+v", p)
	}
	for _, id := range []string{root.ID, tip.ID, del.ID} {
		if !e.Visible(t, id) {
			t.Fatalf("%s not restored", id)
		}
	}
	if s, _ := e.Sessions.Get(ctx, tip.ID); s.MessageCount != 2 || s.TrashBatch != "" {
		t.Fatalf("restored = %+v", s)
	}

	// A no-op restore fires nothing; an unknown id is not found.
	noop, err := e.Sessions.Restore(ctx, []string{root.ID})
	if err != nil || noop.Changed || noop.Outcomes[0].Status != sessions.OutcomeUnchanged {
		t.Fatalf("restore of a live session = %+v, %v", noop, err)
	}
	if _, err := e.Sessions.Restore(ctx, []string{"nope"}); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("restore unknown: %v", err)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, hooks.OnSessionRestore: 1, "*": 0})
}

func TestOneDeletePerSessionAcrossTrashAndPurge(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	a := e.MustCreate(t, sessions.CreateParams{Title: "a"})
	b := e.MustCreate(t, sessions.CreateParams{Title: "b"})
	c := e.MustCreate(t, sessions.CreateParams{Title: "c"})
	if _, err := e.Sessions.Delete(ctx, []string{a.ID}, nil); err != nil {
		t.Fatal(err)
	}
	e.Clock.Advance(10 * 24 * time.Hour)
	if _, err := e.Sessions.Delete(ctx, []string{b.ID}, nil); err != nil {
		t.Fatal(err)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 2, "*": 0})

	// Purging by age takes only what has been there trash_days.
	e.Clock.Advance(20*24*time.Hour - time.Millisecond)
	if res, err := e.Sessions.PurgeExpired(ctx, nil); err != nil || res.Changed {
		t.Fatalf("purge before 30 days = %+v, %v", res, err)
	}
	e.Clock.Advance(time.Millisecond)
	res, err := e.Sessions.PurgeExpired(ctx, nil)
	if err != nil || fmt.Sprint(res.AffectedIDs) != fmt.Sprint([]string{a.ID}) {
		t.Fatalf("purge at 30 days = %+v, %v", res, err)
	}
	if e.Exists(t, a.ID) || !e.Trashed(t, b.ID) {
		t.Fatal("purge took the wrong rows")
	}
	// "Delete now" of a trashed row: gone, nothing more fires.
	if res, err := e.Sessions.Purge(ctx, []string{b.ID}, nil); err != nil || !res.Changed || res.EventID != "" || e.Exists(t, b.ID) {
		t.Fatalf("purge of trashed = %+v, %v", res, err)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 2, "*": 0})
	// "Delete now" of a live row skips the trash: one event, not restorable.
	e.Rec.Reset()
	if res, err := e.Sessions.Purge(ctx, []string{c.ID}, nil); err != nil || res.Trashed || e.Exists(t, c.ID) {
		t.Fatalf("delete now = %+v, %v", res, err)
	}
	p := onlyDelete(t, e)
	if p.Restorable || p.PurgeAfter != nil || p.Reason != hooks.ReasonDelete || fmt.Sprint(p.DeletedIDs) != fmt.Sprint([]string{c.ID}) {
		t.Fatalf("payload = %+v", p)
	}
}

func TestPurgeReportsRowsWhoseMoveWasNotReported(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	a := e.MustCreate(t, sessions.CreateParams{Title: "a"})
	// A row that arrived in the trash without a report (adopted by a move).
	if err := e.DB.InTx(ctx, func(tx *db.Tx) error {
		return tx.G.Exec(`UPDATE sessions SET trashed_at = 0, trash_batch = 'x', trash_reason = 'prune', trash_reported = 0 WHERE id = ?`, a.ID).Error
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Sessions.EmptyTrash(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	p := onlyDelete(t, e)
	if p.Reason != hooks.ReasonPrune || p.Restorable || fmt.Sprint(p.DeletedIDs) != fmt.Sprint([]string{a.ID}) {
		t.Fatalf("payload = %+v", p)
	}
}

func TestTrashDaysZeroAndTrashAutomatic(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	now := e.NoTrash()
	a := e.MustCreate(t, sessions.CreateParams{Title: "a"})
	if res, err := now.Delete(ctx, []string{a.ID}, nil); err != nil || res.Trashed || e.Exists(t, a.ID) {
		t.Fatalf("delete with trash_days 0 = %+v, %v", res, err)
	}
	if p := onlyDelete(t, e); p.Restorable || p.PurgeAfter != nil {
		t.Fatalf("payload = %+v", p)
	}
	e.Rec.Reset()

	// Automatic deletes go to the trash by default...
	empty := e.MustCreate(t, sessions.CreateParams{Title: "empty"})
	e.MustEnd(t, empty.ID)
	e.Rec.Reset()
	res, err := e.Sessions.SweepEmpty(ctx, nil)
	if err != nil || !res.Trashed || !e.Trashed(t, empty.ID) {
		t.Fatalf("sweep = %+v, %v", res, err)
	}
	if p := onlyDelete(t, e); p.Reason != hooks.ReasonEmptySweep || !p.Restorable {
		t.Fatalf("sweep payload = %+v", p)
	}
	// ...and not with trash_automatic: false.
	off := false
	direct := e.Store(sessions.Options{TrashAutomatic: &off})
	e.Rec.Reset()
	other := e.MustCreate(t, sessions.CreateParams{Title: "other"})
	e.MustEnd(t, other.ID)
	e.Rec.Reset()
	if res, err := direct.SweepEmpty(ctx, nil); err != nil || res.Trashed || e.Exists(t, other.ID) {
		t.Fatalf("sweep without automatic trash = %+v, %v", res, err)
	}
	if p := onlyDelete(t, e); p.Restorable {
		t.Fatalf("payload = %+v", p)
	}
	// The trashed empty session is not swept twice.
	e.Rec.Reset()
	if res, err := e.Sessions.SweepEmpty(ctx, nil); err != nil || res.Changed {
		t.Fatalf("second sweep = %+v, %v", res, err)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})
}

func TestRestoreRollsBackAndFiresNothing(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	a := e.MustCreate(t, sessions.CreateParams{Title: "a"})
	if _, err := e.Sessions.Delete(ctx, []string{a.ID}, nil); err != nil {
		t.Fatal(err)
	}
	e.Rec.Reset()
	boom := errors.New("boom")
	err := e.DB.InTx(ctx, func(tx *db.Tx) error {
		if _, err := e.Sessions.RestoreTx(ctx, tx, []string{a.ID}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) || !e.Trashed(t, a.ID) {
		t.Fatalf("rollback: %v, trashed %v", err, e.Trashed(t, a.ID))
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})
}

func TestRestoreKeepsSeparateDeletesApart(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	parent := e.MustCreate(t, sessions.CreateParams{Title: "parent"})
	child := e.MustChild(t, parent.ID, sessions.RelationDelegate)
	if _, err := e.Sessions.Delete(ctx, []string{child.ID}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Sessions.Delete(ctx, []string{parent.ID}, nil); err != nil {
		t.Fatal(err)
	}
	// The child went first, on its own: the parent's delete did not report it again.
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 2, "*": 0})
	ds := e.Rec.Deletes(t)
	if len(ds) != 2 || fmt.Sprint(ds[1].DeletedIDs) != fmt.Sprint([]string{parent.ID}) {
		t.Fatalf("deletes = %+v", ds)
	}
	res, err := e.Sessions.Restore(ctx, []string{parent.ID})
	if err != nil || fmt.Sprint(res.AffectedIDs) != fmt.Sprint([]string{parent.ID}) || !e.Trashed(t, child.ID) {
		t.Fatalf("restore = %+v, %v", res, err)
	}
}

func mustRule(t *testing.T, fields map[string]string) sessions.Rule {
	t.Helper()
	r, err := sessions.ParseRule(fields)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPreviewDeleteSaysWhatDeleteAndPurgeDo(t *testing.T) {
	t.Parallel()
	for _, now := range []bool{false, true} {
		e := sessionstest.New(t)
		root := e.MustCreate(t, sessions.CreateParams{Title: "root"})
		tip := e.MustChild(t, root.ID, sessions.RelationCompression)
		del := e.MustChild(t, tip.ID, sessions.RelationDelegate)
		gone := e.MustChild(t, root.ID, sessions.RelationDelegate)
		e.MustChild(t, root.ID, sessions.RelationBranch)
		if _, err := e.Sessions.Delete(ctx, []string{gone.ID}, nil); err != nil { // already in the trash
			t.Fatal(err)
		}
		ids := []string{"missing", tip.ID}
		pre, err := e.Sessions.PreviewDelete(ctx, ids, now)
		if err != nil {
			t.Fatal(err)
		}
		e.Rec.Reset()
		res, err := e.Sessions.DeleteWith(ctx, ids, sessions.DeleteOptions{Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(pre.AffectedIDs) != fmt.Sprint(res.AffectedIDs) || pre.Trashed != res.Trashed || fmt.Sprint(pre.Outcomes) != fmt.Sprint(res.Outcomes) {
			t.Fatalf("now=%v: preview %+v, delete %+v", now, pre, res)
		}
		want := 3 // root, tip, del (gone is in the trash already)
		if now {
			want = 4 // a purge takes the trashed child too
		}
		if len(res.AffectedIDs) != want || res.AffectedIDs[0] != tip.ID || !contains(res.AffectedIDs, del.ID) {
			t.Fatalf("now=%v: affected %v", now, res.AffectedIDs)
		}
	}
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
