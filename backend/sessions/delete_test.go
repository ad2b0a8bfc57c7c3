package sessions_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/samber/lo"

	"atrium/backend/apperr"
	"atrium/backend/db"
	"atrium/backend/hooks"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

func sorted(ids []string) string {
	c := append([]string(nil), ids...)
	sort.Strings(c)
	return fmt.Sprint(c)
}

func onlyDelete(t *testing.T, e *sessionstest.Env) hooks.SessionDelete {
	t.Helper()
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, "*": 0})
	return e.Rec.Deletes(t)[0]
}

func TestDeleteCascadesDelegatesKeepsBranchesTakesWholeChain(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	root := e.MustCreate(t, sessions.CreateParams{Title: "root"})
	mid := e.MustChild(t, root.ID, sessions.RelationCompression)
	tip := e.MustChild(t, mid.ID, sessions.RelationCompression)
	del := e.MustChild(t, root.ID, sessions.RelationDelegate)
	grand := e.MustChild(t, del.ID, sessions.RelationDelegate)
	branch := e.MustChild(t, tip.ID, sessions.RelationBranch)
	other := e.MustCreate(t, sessions.CreateParams{Title: "unrelated"})
	e.MustAppend(t, root.ID, 2)
	e.MustAppend(t, grand.ID, 1)
	e.MustAppend(t, branch.ID, 1)
	// Sidecar files: removed for deleted ids only.
	e.WriteSidecars(t, root.ID+".jsonl", grand.ID+".index.json", branch.ID+".jsonl", other.ID+".jsonl")

	// Deleting the middle link takes the whole conversation.
	res, err := e.Sessions.Delete(ctx, []string{mid.ID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := onlyDelete(t, e)
	want := []string{root.ID, mid.ID, tip.ID, del.ID, grand.ID}
	if sorted(p.DeletedIDs) != sorted(want) || p.DeletedIDs[0] != mid.ID {
		t.Fatalf("deleted_ids = %v, want %v with the requested id first", p.DeletedIDs, want)
	}
	if p.SessionID != mid.ID || p.Reason != "delete" || p.Profile != "default" || p.SessionsDir != e.SessionsDir {
		t.Fatalf("payload = %+v", p)
	}
	if res.EventID != e.Rec.Events(hooks.OnSessionDelete)[0].ID {
		t.Fatalf("result event id %s does not match the delivered one", res.EventID)
	}
	if !p.Restorable || p.PurgeAfter == nil || *p.PurgeAfter != e.Clock.Now().Add(30*24*time.Hour).UTC().Format("2006-01-02T15:04:05+00:00") {
		t.Fatalf("restorable/purge_after = %v/%v", p.Restorable, p.PurgeAfter)
	}
	if !res.Trashed || res.Batch == "" {
		t.Fatalf("result = %+v, want trashed with a batch", res)
	}
	// In the trash: out of view, messages and sidecars kept, the branch
	// child still linked (a restore brings the link back with it).
	for _, id := range want {
		if !e.Trashed(t, id) {
			t.Fatalf("%s not in the trash", id)
		}
	}
	if n := e.Count(t, `SELECT COUNT(*) FROM messages`); n != 4 {
		t.Fatalf("messages = %d, want all 4 kept in the trash", n)
	}
	if left, _ := os.ReadDir(e.SessionsDir); len(left) != 4 {
		t.Fatalf("sidecars = %d, want 4 kept", len(left))
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, "*": 0})

	// Emptying the trash removes rows, messages and sidecars, and fires
	// nothing more: one delete per session.
	purged, err := e.Sessions.EmptyTrash(ctx, 0, nil)
	if err != nil || !purged.Changed || sorted(purged.AffectedIDs) != sorted(want) || purged.EventID != "" {
		t.Fatalf("empty trash = %+v, %v", purged, err)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, "*": 0})
	for _, id := range want {
		if e.Exists(t, id) {
			t.Fatalf("%s survived", id)
		}
	}
	b, err := e.Sessions.Get(ctx, branch.ID)
	if err != nil {
		t.Fatalf("branch child must survive: %v", err)
	}
	if b.ParentSessionID != nil || b.Relation != "" || b.MessageCount != 1 {
		t.Fatalf("branch child = %+v, want its parent link cleared", b)
	}
	if n := e.Count(t, `SELECT COUNT(*) FROM messages`); n != 1 {
		t.Fatalf("messages left = %d, want the branch's 1", n)
	}
	e.SidecarsBecome(t, []string{branch.ID + ".jsonl", other.ID + ".jsonl"})
}

// A row with no child that is not a compression child goes alone (the
// plan skips the recursion and the detaching for it); in the same batch a
// row with children still takes its delegates and detaches its branch.
func TestDeleteOfRowsAloneAndRowsWithChildrenInOneBatch(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	parent := e.MustCreate(t, sessions.CreateParams{Title: "parent"})
	del := e.MustChild(t, parent.ID, sessions.RelationDelegate)
	branch := e.MustChild(t, parent.ID, sessions.RelationBranch)
	tipParent := e.MustCreate(t, sessions.CreateParams{Title: "chain root"})
	tip := e.MustChild(t, tipParent.ID, sessions.RelationCompression)
	alone := e.MustCreate(t, sessions.CreateParams{Title: "alone"})
	kept := e.MustCreate(t, sessions.CreateParams{Title: "kept"})

	// A delegate child with no child of its own goes alone: its parent and
	// its sibling stay, the sibling's link intact.
	if _, err := e.Sessions.Purge(ctx, []string{del.ID}, nil); err != nil {
		t.Fatal(err)
	}
	if p := onlyDelete(t, e); fmt.Sprint(p.DeletedIDs) != fmt.Sprint([]string{del.ID}) {
		t.Fatalf("deleted_ids = %v, want only %s", p.DeletedIDs, del.ID)
	}
	if s, _ := e.Sessions.Get(ctx, branch.ID); s.ParentSessionID == nil || *s.ParentSessionID != parent.ID || s.Relation != sessions.RelationBranch {
		t.Fatalf("the sibling's link changed: %+v", s)
	}
	e.Rec.Reset()
	del2 := e.MustChild(t, parent.ID, sessions.RelationDelegate)

	// One batch: a row alone, a compression tip (its chain goes), and the
	// parent (its delegate goes, its branch is detached).
	if _, err := e.Sessions.Purge(ctx, []string{alone.ID, tip.ID, parent.ID}, nil); err != nil {
		t.Fatal(err)
	}
	p := onlyDelete(t, e)
	want := []string{alone.ID, tip.ID, parent.ID, tipParent.ID, del2.ID}
	if sorted(p.DeletedIDs) != sorted(want) || fmt.Sprint(p.DeletedIDs[:3]) != fmt.Sprint(want[:3]) {
		t.Fatalf("deleted_ids = %v, want %v with the requested ids first", p.DeletedIDs, want)
	}
	s, err := e.Sessions.Get(ctx, branch.ID)
	if err != nil || s.ParentSessionID != nil || s.Relation != "" {
		t.Fatalf("the branch was not detached: %+v, %v", s, err)
	}
	if !e.Exists(t, kept.ID) {
		t.Fatal("an unrelated session went")
	}

	// A row whose only child is a branch is not alone: the branch stays,
	// detached (not left with a relation to nothing).
	e.Rec.Reset()
	lone := e.MustCreate(t, sessions.CreateParams{Title: "has a branch"})
	br := e.MustChild(t, lone.ID, sessions.RelationBranch)
	if _, err := e.Sessions.Purge(ctx, []string{lone.ID}, nil); err != nil {
		t.Fatal(err)
	}
	if p := onlyDelete(t, e); fmt.Sprint(p.DeletedIDs) != fmt.Sprint([]string{lone.ID}) {
		t.Fatalf("deleted_ids = %v, want only %s", p.DeletedIDs, lone.ID)
	}
	if s, err := e.Sessions.Get(ctx, br.ID); err != nil || s.ParentSessionID != nil || s.Relation != "" {
		t.Fatalf("the branch was not detached: %+v, %v", s, err)
	}
}

func TestBulkDeleteOneEventFirstAffectedIDAndUnknowns(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	a := e.MustCreate(t, sessions.CreateParams{Title: "a"})
	b := e.MustCreate(t, sessions.CreateParams{Title: "b"})
	c := e.MustChild(t, b.ID, sessions.RelationDelegate)
	res, err := e.Sessions.Delete(ctx, []string{"ghost", b.ID, a.ID, b.ID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := onlyDelete(t, e)
	if p.SessionID != b.ID {
		t.Fatalf("session_id = %s, want the first requested id that was affected (%s)", p.SessionID, b.ID)
	}
	if fmt.Sprint(p.DeletedIDs) != fmt.Sprint([]string{b.ID, a.ID, c.ID}) {
		t.Fatalf("deleted_ids = %v", p.DeletedIDs)
	}
	wantOutcomes := fmt.Sprint([]sessions.Outcome{{ID: "ghost", Status: "not_found", Error: "session not found"}, {ID: b.ID, Status: "deleted"}, {ID: a.ID, Status: "deleted"}})
	if fmt.Sprint(res.Outcomes) != wantOutcomes {
		t.Fatalf("outcomes = %v", res.Outcomes)
	}
}

func TestDeleteNoOpsFireNothing(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	a := e.MustCreate(t, sessions.CreateParams{Title: "a"})
	scenarios := []struct {
		name string
		ids  []string
		code apperr.Code
	}{
		{"unknown id", []string{"nope"}, apperr.NotFound},
		{"several unknown", []string{"nope", "nada"}, apperr.NotFound},
		{"no ids", nil, apperr.Invalid},
		{"hostile id first", []string{"../../etc", a.ID}, apperr.Invalid},
		{"hostile id later", []string{a.ID, "a/b"}, apperr.Invalid},
		{"control character", []string{"a\x1b[2J"}, apperr.Invalid},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			_, err := e.Sessions.Delete(ctx, sc.ids, nil)
			if apperr.CodeOf(err) != sc.code {
				t.Fatalf("code %q (%v), want %q", apperr.CodeOf(err), err, sc.code)
			}
		})
	}
	if !e.Exists(t, a.ID) {
		t.Fatal("a hostile id in a bulk request must refuse the whole request")
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})
	if n := e.Count(t, `SELECT COUNT(*) FROM hook_events`); n != 0 {
		t.Fatalf("event rows = %d", n)
	}
}

func TestDeleteRollbackFiresNothingAndKeepsFiles(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	a := e.MustCreate(t, sessions.CreateParams{Title: "a"})
	e.MustAppend(t, a.ID, 2)
	side := filepath.Join(e.SessionsDir, a.ID+".jsonl")
	if err := os.WriteFile(side, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom after delete")
	err := e.DB.InTx(ctx, func(tx *db.Tx) error {
		if _, err := e.Sessions.DeleteTx(ctx, tx, []string{a.ID}, sessions.DeleteOptions{}); err != nil {
			return err
		}
		if _, err := e.Sessions.ArchiveTx(ctx, tx, []string{"nope"}); err == nil {
			t.Error("archive of a missing id should fail")
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})
	if !e.Exists(t, a.ID) || e.Count(t, `SELECT COUNT(*) FROM messages`) != 2 || e.Count(t, `SELECT COUNT(*) FROM hook_events`) != 0 {
		t.Fatal("rollback lost data or kept an event row")
	}
	if _, err := os.Stat(side); err != nil {
		t.Fatalf("sidecar removed on rollback: %v", err)
	}
}

func TestArchiveFiresOnceForRealTransitionsOverTheLineage(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	root := e.MustCreate(t, sessions.CreateParams{Title: "root"})
	tip := e.MustChild(t, root.ID, sessions.RelationCompression)
	del := e.MustChild(t, root.ID, sessions.RelationDelegate)
	e.MustAppend(t, tip.ID, 3)
	side := filepath.Join(e.SessionsDir, tip.ID+".jsonl")
	if err := os.WriteFile(side, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := e.Sessions.Archive(ctx, []string{tip.ID})
	if err != nil {
		t.Fatal(err)
	}
	p := onlyDelete(t, e)
	if p.Reason != "archive" || p.SessionID != tip.ID || fmt.Sprint(p.DeletedIDs) != fmt.Sprint([]string{tip.ID, root.ID}) {
		t.Fatalf("payload = %+v", p)
	}
	if !res.Changed || res.Outcomes[0].Status != "archived" {
		t.Fatalf("result = %+v", res)
	}
	for _, id := range []string{root.ID, tip.ID} {
		s, _ := e.Sessions.Get(ctx, id)
		if !s.Archived || s.ArchivedBy != "user" || s.ArchivedAt == nil {
			t.Fatalf("%s not archived by user: %+v", id, s)
		}
	}
	if s, _ := e.Sessions.Get(ctx, del.ID); s.Archived {
		t.Fatal("a delegate child is not part of the lineage")
	}
	// Archived keeps messages and sidecar files.
	if n := e.Count(t, `SELECT COUNT(*) FROM messages WHERE session_id = ?`, tip.ID); n != 3 {
		t.Fatalf("messages after archive = %d", n)
	}
	if _, err := os.Stat(side); err != nil {
		t.Fatal("archive removed a sidecar file")
	}

	// Archiving again: no change, nothing fires.
	e.Rec.Reset()
	res, err = e.Sessions.Archive(ctx, []string{root.ID, tip.ID})
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed || res.Outcomes[0].Status != "unchanged" || len(res.AffectedIDs) != 0 {
		t.Fatalf("re-archive result = %+v", res)
	}
	// Unarchive brings the lineage back and fires on_session_restore
	// (archive) once, never on_session_delete; a second one fires nothing.
	res, err = e.Sessions.Unarchive(ctx, []string{root.ID})
	if err != nil || !res.Changed || sorted(res.AffectedIDs) != sorted([]string{root.ID, tip.ID}) {
		t.Fatalf("unarchive = %+v, %v", res, err)
	}
	if res, _ := e.Sessions.Unarchive(ctx, []string{root.ID}); res.Changed {
		t.Fatal("second unarchive changed something")
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionRestore: 1, "*": 0})
	e.Rec.Reset()
	if _, err := e.Sessions.Archive(ctx, []string{"nope"}); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("archive unknown: %v", err)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})
}

// A batch of standalone sessions and members of chains: each requested id
// takes its whole chain (from the middle of one, both ways), a delegate
// child stays, a standalone session goes alone, and one event lists them.
func TestArchiveOfAMixedBatchTakesEachChainAndOnlyIt(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	alone := e.MustCreate(t, sessions.CreateParams{Title: "alone"})
	parent := e.MustCreate(t, sessions.CreateParams{Title: "has a delegate"})
	delegate := e.MustChild(t, parent.ID, sessions.RelationDelegate)
	root := e.MustCreate(t, sessions.CreateParams{Title: "root"})
	mid := e.MustChild(t, root.ID, sessions.RelationCompression)
	tip := e.MustChild(t, mid.ID, sessions.RelationCompression)
	other := e.MustCreate(t, sessions.CreateParams{Title: "other root"})
	otherTip := e.MustChild(t, other.ID, sessions.RelationCompression)
	untouched := e.MustCreate(t, sessions.CreateParams{Title: "untouched"})

	res, err := e.Sessions.Archive(ctx, []string{alone.ID, mid.ID, parent.ID, other.ID, "nope"})
	if err != nil {
		t.Fatal(err)
	}
	p := onlyDelete(t, e)
	want := []string{alone.ID, mid.ID, parent.ID, other.ID, root.ID, tip.ID, otherTip.ID}
	if sorted(p.DeletedIDs) != sorted(want) || p.Reason != "archive" {
		t.Fatalf("payload = %+v, want the ids %v", p, want)
	}
	statuses := lo.Map(res.Outcomes, func(o sessions.Outcome, _ int) string { return o.Status })
	if fmt.Sprint(statuses) != "[archived archived archived archived not_found]" {
		t.Fatalf("outcomes = %+v", res.Outcomes)
	}
	for _, id := range want {
		if s, _ := e.Sessions.Get(ctx, id); !s.Archived {
			t.Fatalf("%s not archived", id)
		}
	}
	for _, id := range []string{delegate.ID, untouched.ID} {
		if s, _ := e.Sessions.Get(ctx, id); s.Archived {
			t.Fatalf("%s archived", id)
		}
	}
}

func TestArchiveIdleIsSilentSparesPinnedAndLiveChains(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	old := e.MustCreate(t, sessions.CreateParams{Title: "old"})
	pinned := e.MustCreate(t, sessions.CreateParams{Title: "pinned", Pinned: true})
	chainRoot := e.MustCreate(t, sessions.CreateParams{Title: "chain"})
	chainTip := e.MustChild(t, chainRoot.ID, sessions.RelationCompression)
	e.Clock.Advance(40 * 24 * time.Hour)
	e.MustAppend(t, chainTip.ID, 1) // the tip is active today
	fresh := e.MustCreate(t, sessions.CreateParams{Title: "fresh"})
	res, err := e.Sessions.ArchiveIdle(ctx, 30)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.AffectedIDs) != fmt.Sprint([]string{old.ID}) {
		t.Fatalf("archived %v, want only %s", res.AffectedIDs, old.ID)
	}
	s, _ := e.Sessions.Get(ctx, old.ID)
	if !s.Archived || s.ArchivedBy != "auto" {
		t.Fatalf("old = %+v", s)
	}
	for _, id := range []string{pinned.ID, chainRoot.ID, chainTip.ID, fresh.ID} {
		if s, _ := e.Sessions.Get(ctx, id); s.Archived {
			t.Fatalf("%s archived", id)
		}
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})
}

func TestSweepEmptyAndGhosts(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	emptyEnded := e.MustCreate(t, sessions.CreateParams{Title: "empty"})
	e.MustEnd(t, emptyEnded.ID)
	emptyLive := e.MustCreate(t, sessions.CreateParams{Title: "live"})
	withMsgs := e.MustCreate(t, sessions.CreateParams{Title: "talky"})
	e.MustAppend(t, withMsgs.ID, 1)
	e.MustEnd(t, withMsgs.ID)
	archivedEmpty := e.MustCreate(t, sessions.CreateParams{Title: "arch"})
	e.MustEnd(t, archivedEmpty.ID)
	if _, err := e.Sessions.Archive(ctx, []string{archivedEmpty.ID}); err != nil {
		t.Fatal(err)
	}
	parentEmpty := e.MustCreate(t, sessions.CreateParams{Title: "parent"})
	child := e.MustChild(t, parentEmpty.ID, sessions.RelationDelegate)
	e.MustAppend(t, child.ID, 1)
	e.MustEnd(t, parentEmpty.ID)
	// An ended, empty compression link whose continuation is live stays.
	linkRoot := e.MustCreate(t, sessions.CreateParams{Title: "link"})
	linkTip := e.MustChild(t, linkRoot.ID, sessions.RelationCompression)
	e.MustEnd(t, linkRoot.ID)
	e.MustEnd(t, linkTip.ID)
	ghost := e.MustCreate(t, sessions.CreateParams{})
	e.Rec.Reset()

	res, err := e.Sessions.SweepEmpty(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := onlyDelete(t, e)
	if p.Reason != "empty_sweep" || fmt.Sprint(p.DeletedIDs) != fmt.Sprint([]string{emptyEnded.ID}) || p.SessionID != emptyEnded.ID {
		t.Fatalf("payload = %+v", p)
	}
	if len(res.AffectedIDs) != 1 {
		t.Fatalf("result = %+v", res)
	}
	for _, id := range []string{emptyLive.ID, withMsgs.ID, archivedEmpty.ID, parentEmpty.ID, child.ID, linkRoot.ID, linkTip.ID, ghost.ID} {
		if !e.Exists(t, id) {
			t.Fatalf("sweep removed %s", id)
		}
	}
	// Nothing left to sweep: nothing fires.
	e.Rec.Reset()
	if res, err := e.Sessions.SweepEmpty(ctx, nil); err != nil || res.Changed {
		t.Fatalf("second sweep: %+v %v", res, err)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})

	// Ghosts: untitled, empty, never ended, started over a day ago.
	if res, _ := e.Sessions.PruneGhosts(ctx, nil); res.Changed {
		t.Fatal("a fresh ghost is not a ghost yet")
	}
	e.Clock.Advance(25 * time.Hour)
	recent := e.MustCreate(t, sessions.CreateParams{})
	res, err = e.Sessions.PruneGhosts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	p = onlyDelete(t, e)
	if p.Reason != "ghost_prune" || fmt.Sprint(p.DeletedIDs) != fmt.Sprint([]string{ghost.ID}) {
		t.Fatalf("ghost payload = %+v", p)
	}
	if !e.Exists(t, recent.ID) || !e.Exists(t, emptyLive.ID) {
		t.Fatal("ghost prune removed a titled or recent row")
	}
}

func TestPruneRetentionNeverSplitsAChain(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	old := e.MustCreate(t, sessions.CreateParams{Title: "old"})
	e.MustAppend(t, old.ID, 2)
	e.MustEnd(t, old.ID)
	oldPinned := e.MustCreate(t, sessions.CreateParams{Title: "pinned", Pinned: true})
	e.MustEnd(t, oldPinned.ID)
	oldLive := e.MustCreate(t, sessions.CreateParams{Title: "live"})
	// A chain whose tip is still live: the old ended links stay.
	liveRoot := e.MustCreate(t, sessions.CreateParams{Title: "lr"})
	liveTip := e.MustChild(t, liveRoot.ID, sessions.RelationCompression)
	e.MustEnd(t, liveRoot.ID)
	// A chain that is entirely old and ended goes as a whole, delegates too.
	deadRoot := e.MustCreate(t, sessions.CreateParams{Title: "dr"})
	deadTip := e.MustChild(t, deadRoot.ID, sessions.RelationCompression)
	deadDelegate := e.MustChild(t, deadTip.ID, sessions.RelationDelegate)
	for _, id := range []string{deadRoot.ID, deadTip.ID, deadDelegate.ID} {
		e.MustEnd(t, id)
	}
	e.Clock.Advance(100 * 24 * time.Hour)
	recent := e.MustCreate(t, sessions.CreateParams{Title: "recent"})
	e.MustEnd(t, recent.ID)
	e.Rec.Reset()

	res, err := e.Sessions.Prune(ctx, 90, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := onlyDelete(t, e)
	want := []string{old.ID, deadRoot.ID, deadTip.ID, deadDelegate.ID}
	if p.Reason != "prune" || sorted(p.DeletedIDs) != sorted(want) || sorted(res.AffectedIDs) != sorted(want) {
		t.Fatalf("pruned %v, want %v", p.DeletedIDs, want)
	}
	for _, id := range []string{oldPinned.ID, oldLive.ID, liveRoot.ID, liveTip.ID, recent.ID} {
		if !e.Exists(t, id) {
			t.Fatalf("prune removed %s", id)
		}
	}
	if _, err := e.Sessions.Prune(ctx, 0, nil); err == nil {
		t.Fatal("prune with 0 days must be refused")
	}
}

// Most prune candidates are alone (no child, in no chain) and skip the
// closure and the detaching of children; the others still take both, in
// the same prune, and the preview says the same.
func TestPruneOfRowsAloneAndRowsWithFamilies(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	noTrash := e.NoTrash() // the purge path, where children are detached
	alone := e.MustCreate(t, sessions.CreateParams{Title: "alone"})
	e.MustAppend(t, alone.ID, 2)
	e.MustEnd(t, alone.ID)
	// An old parent with a recent branch: the parent goes, the branch stays
	// with its link cleared.
	branchParent := e.MustCreate(t, sessions.CreateParams{Title: "bp"})
	e.MustEnd(t, branchParent.ID)
	branch := e.MustChild(t, branchParent.ID, sessions.RelationBranch)
	// An old delegate of a live parent: the delegate goes alone.
	liveParent := e.MustCreate(t, sessions.CreateParams{Title: "lp"})
	delegate := e.MustChild(t, liveParent.ID, sessions.RelationDelegate)
	e.MustEnd(t, delegate.ID)
	// An old chain whose tip is recent: nothing of it goes.
	chainRoot := e.MustCreate(t, sessions.CreateParams{Title: "cr"})
	e.MustEnd(t, chainRoot.ID)
	chainTip := e.MustChild(t, chainRoot.ID, sessions.RelationCompression)
	// An old chain, ended throughout, with a delegate: it goes whole.
	deadRoot := e.MustCreate(t, sessions.CreateParams{Title: "dr"})
	deadTip := e.MustChild(t, deadRoot.ID, sessions.RelationCompression)
	deadDelegate := e.MustChild(t, deadTip.ID, sessions.RelationDelegate)
	for _, id := range []string{deadRoot.ID, deadTip.ID, deadDelegate.ID} {
		e.MustEnd(t, id)
	}
	e.Clock.Advance(100 * 24 * time.Hour)
	e.MustAppend(t, branch.ID, 1)
	e.MustEnd(t, branch.ID)
	e.MustAppend(t, chainTip.ID, 1)
	e.MustEnd(t, chainTip.ID)
	e.Rec.Reset()

	want := []string{alone.ID, branchParent.ID, delegate.ID, deadRoot.ID, deadTip.ID, deadDelegate.ID}
	preview, err := noTrash.PreviewPrune(ctx, 90)
	if err != nil {
		t.Fatal(err)
	}
	if preview.Sessions != len(want) || preview.Messages != 2 {
		t.Fatalf("preview %+v, want %d sessions and 2 messages", preview, len(want))
	}
	res, err := noTrash.Prune(ctx, 90, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := onlyDelete(t, e)
	if p.Reason != "prune" || p.Restorable || sorted(p.DeletedIDs) != sorted(want) || sorted(res.AffectedIDs) != sorted(want) {
		t.Fatalf("pruned %v (restorable %v), want %v", p.DeletedIDs, p.Restorable, want)
	}
	for _, id := range want {
		if e.Exists(t, id) {
			t.Fatalf("prune kept %s", id)
		}
	}
	for _, id := range []string{branch.ID, liveParent.ID, chainRoot.ID, chainTip.ID} {
		if !e.Exists(t, id) {
			t.Fatalf("prune removed %s", id)
		}
	}
	if n := e.Count(t, `SELECT COUNT(*) FROM sessions WHERE id = ? AND parent_session_id IS NULL AND relation = ''`, branch.ID); n != 1 {
		t.Fatal("the surviving branch still points at its pruned parent")
	}
	if n := e.Count(t, `SELECT COUNT(*) FROM sessions WHERE id = ? AND parent_session_id = ?`, chainTip.ID, chainRoot.ID); n != 1 {
		t.Fatal("the kept chain lost its link")
	}
}

func TestPruneOfManyIsOneTransactionOneEvent(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	noTrash := e.NoTrash() // the purge path: one statement per table, whatever the count
	const n = 1234         // more rows than one statement could take as bound parameters
	err := e.DB.InTx(ctx, func(tx *db.Tx) error {
		for i := 0; i < n; i++ {
			if err := tx.G.Exec(`INSERT INTO sessions (id, source, title, profile, started_at, ended_at, last_activity_at)
				VALUES (?, 'cli', 't', 'default', 0, 0, 0)`, fmt.Sprintf("s%05d", i)).Error; err != nil {
				return err
			}
			if _, err := e.Sessions.AppendMessageTx(ctx, tx, fmt.Sprintf("s%05d", i), sessions.NewMessage{Role: "user", Content: "x"}); err == nil {
				return fmt.Errorf("appending to an ended session must fail")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var calls [][2]int
	res, err := noTrash.Prune(ctx, 1, func(done, total int) { calls = append(calls, [2]int{done, total}) })
	if err != nil {
		t.Fatal(err)
	}
	if len(res.AffectedIDs) != n || e.Count(t, `SELECT COUNT(*) FROM sessions`) != 0 {
		t.Fatalf("pruned %d", len(res.AffectedIDs))
	}
	if fmt.Sprint(calls) != fmt.Sprint([][2]int{{n, n}}) {
		t.Fatalf("progress = %v", calls)
	}
	p := onlyDelete(t, e)
	if len(p.DeletedIDs) != n {
		t.Fatalf("event carries %d ids", len(p.DeletedIDs))
	}
}

func TestDeleteCurrentIfEmpty(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	talky := e.MustCreate(t, sessions.CreateParams{Title: "talky"})
	e.MustAppend(t, talky.ID, 1)
	parent := e.MustCreate(t, sessions.CreateParams{Title: "parent"})
	e.MustChild(t, parent.ID, sessions.RelationBranch)
	empty := e.MustCreate(t, sessions.CreateParams{Title: "empty"})
	e.Rec.Reset()
	for _, id := range []string{talky.ID, parent.ID} {
		res, err := e.Sessions.DeleteCurrent(ctx, id, true)
		if err != nil || res.Changed || res.Outcomes[0].Status != "kept" || !e.Exists(t, id) {
			t.Fatalf("if-empty on %s: %+v %v", id, res, err)
		}
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})
	res, err := e.Sessions.DeleteCurrent(ctx, empty.ID, true)
	if err != nil || !res.Changed {
		t.Fatalf("%+v %v", res, err)
	}
	if p := onlyDelete(t, e); p.Reason != "delete" || fmt.Sprint(p.DeletedIDs) != fmt.Sprint([]string{empty.ID}) {
		t.Fatalf("payload %+v", p)
	}
	// Without if-empty: /exit --delete of a session with messages.
	e.Rec.Reset()
	if _, err := e.Sessions.DeleteCurrent(ctx, talky.ID, false); err != nil {
		t.Fatal(err)
	}
	onlyDelete(t, e)
	if _, err := e.Sessions.DeleteCurrent(ctx, "missing", true); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("missing: %v", err)
	}
}

// A delete removes every <id>.* and the folder <id> of each deleted id from
// a sessions folder of more names than one read of it returns (1,024), and
// nothing else: not another session's, not a name that only starts with
// the id.
func TestDeleteRemovesEverySidecarFromALargeFolder(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	svc := e.NoTrash()
	a := e.MustCreate(t, sessions.CreateParams{Title: "a"})
	b := e.MustCreate(t, sessions.CreateParams{Title: "b"})
	keep := e.MustCreate(t, sessions.CreateParams{Title: "keep"})
	var kept []string
	for i := range 2500 {
		kept = append(kept, fmt.Sprintf("other-%04d.jsonl", i))
	}
	kept = append(kept, keep.ID+".jsonl", a.ID+"x.jsonl", b.ID+"-notes.txt")
	e.WriteSidecars(t, kept...)
	e.WriteSidecars(t, a.ID+".jsonl", a.ID+".index.json", b.ID+".jsonl", filepath.Join(b.ID, "tool-output.txt"))
	if _, err := svc.Delete(ctx, []string{a.ID, b.ID}, nil); err != nil {
		t.Fatal(err)
	}
	e.SidecarsBecome(t, kept)
}
