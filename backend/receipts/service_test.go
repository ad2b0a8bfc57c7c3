package receipts_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/hooks"
	"atrium/backend/receipts"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

var ctx = context.Background()

// newEnv opens a store and the receipt path over it. The clock is moved off a
// whole millisecond so that a stored timestamp and a live one must agree.
func newEnv(t *testing.T) (*sessionstest.Env, *receipts.Service) {
	t.Helper()
	e := sessionstest.New(t)
	e.Clock.Advance(1500 * time.Microsecond)
	return e, receipts.NewService(e.DB, e.Sessions, 0)
}

func mustApply(t *testing.T, s *receipts.Service, req receipts.Request) receipts.Receipt {
	t.Helper()
	r, err := s.Apply(ctx, req, nil)
	if err != nil {
		t.Fatalf("apply %+v: %v", req, err)
	}
	return r
}

// sameAnswer asserts that a replay returns what the first call returned.
func sameAnswer(t *testing.T, first, replay receipts.Receipt) {
	t.Helper()
	if first.Replayed || !replay.Replayed {
		t.Fatalf("replayed flags: first=%v replay=%v", first.Replayed, replay.Replayed)
	}
	replay.Replayed = false
	if !reflect.DeepEqual(first, replay) {
		t.Fatalf("replay differs\nfirst  %+v\nreplay %+v", first, replay)
	}
}

func archived(t *testing.T, e *sessionstest.Env, id string) bool {
	t.Helper()
	s, err := e.Sessions.Get(ctx, id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return s.Archived
}

func receiptRows(t *testing.T, e *sessionstest.Env) int64 {
	t.Helper()
	return e.Count(t, `SELECT COUNT(*) FROM receipts`)
}

func TestSameRequestTwiceReplays(t *testing.T) {
	t.Parallel()
	scenarios := []struct {
		name   string
		op     string
		first  []int // indexes into the sessions created
		retry  []int
		reason string
	}{
		{"delete one", receipts.OpDelete, []int{0}, []int{0}, hooks.ReasonDelete},
		{"bulk delete, retry reordered and duplicated", receipts.OpDelete, []int{0, 1}, []int{1, 0, 1, 0}, hooks.ReasonDelete},
		{"bulk delete, first duplicated", receipts.OpDelete, []int{1, 1, 0}, []int{0, 1}, hooks.ReasonDelete},
		{"archive one", receipts.OpArchive, []int{0}, []int{0, 0}, hooks.ReasonArchive},
		{"bulk archive, retry reordered", receipts.OpArchive, []int{0, 1}, []int{1, 0}, hooks.ReasonArchive},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			e, svc := newEnv(t)
			var ids []string
			for i := 0; i < 3; i++ {
				s := e.MustCreate(t, sessions.CreateParams{Title: fmt.Sprint("s", i)})
				e.MustAppend(t, s.ID, 2)
				ids = append(ids, s.ID)
			}
			pick := func(ix []int) []string {
				var out []string
				for _, i := range ix {
					out = append(out, ids[i])
				}
				return out
			}
			var progress []string
			first, err := svc.Apply(ctx, receipts.Request{RequestID: "req-1", Op: sc.op, SessionIDs: pick(sc.first)},
				func(done, total int) { progress = append(progress, fmt.Sprintf("%d/%d", done, total)) })
			if err != nil {
				t.Fatal(err)
			}
			if !first.Result.Changed || first.RequestID != "req-1" || first.Op != sc.op || !first.CreatedAt.Equal(e.Clock.Now().Truncate(time.Millisecond)) {
				t.Fatalf("first = %+v", first)
			}
			e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, "*": 0})
			events := e.Rec.Events(hooks.OnSessionDelete)
			if first.Result.EventID != events[0].ID {
				t.Fatalf("receipt event id %q, delivered %q", first.Result.EventID, events[0].ID)
			}
			del := e.Rec.Deletes(t)[0]
			if del.Reason != sc.reason || del.SessionID != ids[sc.first[0]] || len(del.DeletedIDs) != len(uniq(sc.first)) {
				t.Fatalf("payload = %+v", del)
			}

			e.Clock.Advance(time.Minute)
			replay, err := svc.Apply(ctx, receipts.Request{RequestID: "req-1", Op: sc.op, SessionIDs: pick(sc.retry)},
				func(done, total int) { progress = append(progress, "replay") })
			if err != nil {
				t.Fatal(err)
			}
			sameAnswer(t, first, replay)
			e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, "*": 0})
			if n := receiptRows(t, e); n != 1 {
				t.Fatalf("receipts = %d, want 1", n)
			}
			for _, p := range progress {
				if p == "replay" {
					t.Fatal("a replay ran the operation's progress")
				}
			}
			// The untouched session is untouched; the targets changed once.
			if !e.Visible(t, ids[2]) || archived(t, e, ids[2]) {
				t.Fatal("an unrelated session changed")
			}
			for _, i := range uniq(sc.first) {
				switch sc.op {
				case receipts.OpDelete:
					if e.Visible(t, ids[i]) {
						t.Fatalf("%s survived the delete", ids[i])
					}
				case receipts.OpArchive:
					if !archived(t, e, ids[i]) {
						t.Fatalf("%s not archived", ids[i])
					}
				}
			}
		})
	}
}

func uniq(ix []int) []int {
	seen := map[int]bool{}
	var out []int
	for _, i := range ix {
		if !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	return out
}

func TestSameIDForAnotherRequestIsAConflict(t *testing.T) {
	t.Parallel()
	e, svc := newEnv(t)
	a := e.MustCreate(t, sessions.CreateParams{Title: "a"})
	b := e.MustCreate(t, sessions.CreateParams{Title: "b"})
	first := mustApply(t, svc, receipts.Request{RequestID: "req-x", Op: receipts.OpArchive, SessionIDs: []string{a.ID}})
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, "*": 0})
	scenarios := []struct {
		name string
		req  receipts.Request
	}{
		{"other op", receipts.Request{RequestID: "req-x", Op: receipts.OpDelete, SessionIDs: []string{a.ID}}},
		{"inverse op", receipts.Request{RequestID: "req-x", Op: receipts.OpUnarchive, SessionIDs: []string{a.ID}}},
		{"other session", receipts.Request{RequestID: "req-x", Op: receipts.OpArchive, SessionIDs: []string{b.ID}}},
		{"more sessions", receipts.Request{RequestID: "req-x", Op: receipts.OpArchive, SessionIDs: []string{a.ID, b.ID}}},
		{"unknown session", receipts.Request{RequestID: "req-x", Op: receipts.OpArchive, SessionIDs: []string{"ghost"}}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			_, err := svc.Apply(ctx, sc.req, nil)
			if got := apperr.CodeOf(err); got != apperr.Conflict {
				t.Fatalf("code = %q (%v), want conflict", got, err)
			}
		})
	}
	// Nothing changed, nothing fired, and the stored receipt still replays.
	if !e.Visible(t, a.ID) || !archived(t, e, a.ID) || archived(t, e, b.ID) {
		t.Fatal("a conflicting request changed sessions")
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, "*": 0})
	if n := receiptRows(t, e); n != 1 {
		t.Fatalf("receipts = %d, want 1", n)
	}
	sameAnswer(t, first, mustApply(t, svc, receipts.Request{RequestID: "req-x", Op: receipts.OpArchive, SessionIDs: []string{a.ID}}))
}

func TestConcurrentDuplicatesMutateOnce(t *testing.T) {
	t.Parallel()
	e, svc := newEnv(t)
	a := e.MustCreate(t, sessions.CreateParams{Title: "a"})
	b := e.MustCreate(t, sessions.CreateParams{Title: "b"})
	e.MustChild(t, a.ID, sessions.RelationDelegate)
	const n = 50
	req := receipts.Request{RequestID: "dup-1", Op: receipts.OpDelete, SessionIDs: []string{a.ID, b.ID}}
	results := make([]receipts.Receipt, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = svc.Apply(ctx, req, nil)
		}()
	}
	close(start)
	wg.Wait()
	var firsts []receipts.Receipt
	replays := 0
	for i := range results {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		if results[i].Replayed {
			replays++
		} else {
			firsts = append(firsts, results[i])
		}
	}
	if len(firsts) != 1 || replays != n-1 {
		t.Fatalf("%d first runs and %d replays, want 1 and %d", len(firsts), replays, n-1)
	}
	for _, r := range results {
		if r.Replayed {
			sameAnswer(t, firsts[0], r)
		}
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, "*": 0})
	if got := e.Rec.Deletes(t)[0].DeletedIDs; len(got) != 3 {
		t.Fatalf("deleted_ids = %v, want both sessions and the delegate child", got)
	}
	if left := e.Count(t, `SELECT COUNT(*) FROM sessions WHERE trashed_at IS NULL`); left != 0 {
		t.Fatalf("sessions left = %d", left)
	}
	if rows := receiptRows(t, e); rows != 1 {
		t.Fatalf("receipts = %d, want 1", rows)
	}
	if evs := e.Count(t, `SELECT COUNT(*) FROM hook_events WHERE hook = 'on_session_delete'`); evs != 1 {
		t.Fatalf("on_session_delete events = %d, want 1", evs)
	}
}

func TestArchiveAndUnarchiveThroughReceipts(t *testing.T) {
	t.Parallel()
	e, svc := newEnv(t)
	root := e.MustCreate(t, sessions.CreateParams{Title: "root"})
	tip := e.MustChild(t, root.ID, sessions.RelationCompression)

	// A real transition fires once, reason archive, over the lineage.
	r1 := mustApply(t, svc, receipts.Request{RequestID: "arch-1", Op: receipts.OpArchive, SessionIDs: []string{root.ID}})
	if !r1.Result.Changed || r1.Result.Op != "archive" {
		t.Fatalf("archive result = %+v", r1.Result)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, "*": 0})
	p := e.Rec.Deletes(t)[0]
	if p.Reason != hooks.ReasonArchive || p.SessionID != root.ID || fmt.Sprint(p.DeletedIDs) != fmt.Sprint([]string{root.ID, tip.ID}) {
		t.Fatalf("payload = %+v", p)
	}
	// Its replay fires nothing.
	sameAnswer(t, r1, mustApply(t, svc, receipts.Request{RequestID: "arch-1", Op: receipts.OpArchive, SessionIDs: []string{root.ID}}))
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, "*": 0})

	// A new request archiving what is already archived: recorded, unchanged, silent.
	r2 := mustApply(t, svc, receipts.Request{RequestID: "arch-2", Op: receipts.OpArchive, SessionIDs: []string{tip.ID, root.ID}})
	if r2.Replayed || r2.Result.Changed || r2.Result.EventID != "" || len(r2.Result.AffectedIDs) != 0 {
		t.Fatalf("archive of archived = %+v", r2)
	}
	for _, o := range r2.Result.Outcomes {
		if o.Status != sessions.OutcomeUnchanged {
			t.Fatalf("outcome %+v, want unchanged", o)
		}
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, "*": 0})

	// Unarchiving fires on_session_restore (reason archive), never on_session_delete; its replay fires nothing.
	r3 := mustApply(t, svc, receipts.Request{RequestID: "unarch-1", Op: receipts.OpUnarchive, SessionIDs: []string{tip.ID}})
	if !r3.Result.Changed || r3.Result.EventID == "" || fmt.Sprint(r3.Result.AffectedIDs) != fmt.Sprint([]string{tip.ID, root.ID}) {
		t.Fatalf("unarchive = %+v", r3.Result)
	}
	if archived(t, e, root.ID) || archived(t, e, tip.ID) {
		t.Fatal("lineage still archived")
	}
	sameAnswer(t, r3, mustApply(t, svc, receipts.Request{RequestID: "unarch-1", Op: receipts.OpUnarchive, SessionIDs: []string{tip.ID}}))
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, hooks.OnSessionRestore: 1, "*": 0})
	var rp hooks.SessionRestore
	if err := e.Rec.Events(hooks.OnSessionRestore)[0].Decode(&rp); err != nil || rp.Reason != hooks.RestoreArchive ||
		rp.SessionID != tip.ID || fmt.Sprint(rp.RestoredIDs) != fmt.Sprint([]string{tip.ID, root.ID}) || rp.Profile != "default" {
		t.Fatalf("restore payload = %+v, %v", rp, err)
	}
	if n := receiptRows(t, e); n != 3 {
		t.Fatalf("receipts = %d, want 3", n)
	}
}

func TestUnknownSessionsStoreNoReceipt(t *testing.T) {
	t.Parallel()
	e, svc := newEnv(t)
	for _, op := range []string{receipts.OpDelete, receipts.OpArchive, receipts.OpUnarchive} {
		t.Run(op, func(t *testing.T) {
			_, err := svc.Apply(ctx, receipts.Request{RequestID: "nf-" + op, Op: op, SessionIDs: []string{"ghost-1", "ghost-2"}}, nil)
			if got := apperr.CodeOf(err); got != apperr.NotFound {
				t.Fatalf("code = %q (%v), want not_found", got, err)
			}
		})
	}
	if n := receiptRows(t, e); n != 0 {
		t.Fatalf("receipts = %d, want 0", n)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})

	// No receipt was kept, so once the session exists a retry runs for real.
	e.MustCreate(t, sessions.CreateParams{ID: "ghost-1", Title: "late"})
	r := mustApply(t, svc, receipts.Request{RequestID: "nf-delete", Op: receipts.OpDelete, SessionIDs: []string{"ghost-1", "ghost-2"}})
	if r.Replayed || !r.Result.Changed {
		t.Fatalf("retry = %+v", r)
	}
	want := []sessions.Outcome{{ID: "ghost-1", Status: sessions.OutcomeDeleted}, {ID: "ghost-2", Status: sessions.OutcomeNotFound, Error: "session not found"}}
	if !reflect.DeepEqual(r.Result.Outcomes, want) {
		t.Fatalf("outcomes = %+v, want %+v", r.Result.Outcomes, want)
	}
	// A partly unknown request is a result, so it is stored and replays.
	sameAnswer(t, r, mustApply(t, svc, receipts.Request{RequestID: "nf-delete", Op: receipts.OpDelete, SessionIDs: []string{"ghost-2", "ghost-1"}}))
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, "*": 0})
	if n := receiptRows(t, e); n != 1 {
		t.Fatalf("receipts = %d, want 1", n)
	}
}

func TestApplyValidatesBeforeAnythingRuns(t *testing.T) {
	t.Parallel()
	e, svc := newEnv(t)
	s := e.MustCreate(t, sessions.CreateParams{Title: "keep"})
	ok := []string{s.ID}
	scenarios := []struct {
		name string
		req  receipts.Request
	}{
		{"empty request id", receipts.Request{RequestID: "", Op: receipts.OpDelete, SessionIDs: ok}},
		{"request id with a slash", receipts.Request{RequestID: "a/b", Op: receipts.OpDelete, SessionIDs: ok}},
		{"request id with spaces", receipts.Request{RequestID: "req 1", Op: receipts.OpDelete, SessionIDs: ok}},
		{"request id with a newline", receipts.Request{RequestID: "req\n1", Op: receipts.OpDelete, SessionIDs: ok}},
		{"request id starting with punctuation", receipts.Request{RequestID: "-req", Op: receipts.OpDelete, SessionIDs: ok}},
		{"request id of 129 chars", receipts.Request{RequestID: strings.Repeat("r", 129), Op: receipts.OpDelete, SessionIDs: ok}},
		{"request id of 200 chars", receipts.Request{RequestID: strings.Repeat("r", 200), Op: receipts.OpDelete, SessionIDs: ok}},
		{"empty op", receipts.Request{RequestID: "req-1", Op: "", SessionIDs: ok}},
		{"unknown op", receipts.Request{RequestID: "req-1", Op: "destroy", SessionIDs: ok}},
		{"op in capitals", receipts.Request{RequestID: "req-1", Op: "DELETE", SessionIDs: ok}},
		{"no session ids", receipts.Request{RequestID: "req-1", Op: receipts.OpDelete}},
		{"empty session id list", receipts.Request{RequestID: "req-1", Op: receipts.OpDelete, SessionIDs: []string{}}},
		{"empty session id", receipts.Request{RequestID: "req-1", Op: receipts.OpDelete, SessionIDs: []string{""}}},
		{"path traversal", receipts.Request{RequestID: "req-1", Op: receipts.OpDelete, SessionIDs: []string{"../etc"}}},
		{"hostile id among good ones", receipts.Request{RequestID: "req-1", Op: receipts.OpArchive, SessionIDs: []string{s.ID, "a/../../b"}}},
		{"separator", receipts.Request{RequestID: "req-1", Op: receipts.OpArchive, SessionIDs: []string{`a\b`}}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			_, err := svc.Apply(ctx, sc.req, nil)
			if got := apperr.CodeOf(err); got != apperr.Invalid {
				t.Fatalf("code = %q (%v), want invalid", got, err)
			}
			if got := apperr.CodeOf(sc.req.Validate()); got != apperr.Invalid {
				t.Fatalf("Validate code = %q", got)
			}
		})
	}
	if n := receiptRows(t, e); n != 0 {
		t.Fatalf("receipts = %d, want 0", n)
	}
	if !e.Visible(t, s.ID) || archived(t, e, s.ID) {
		t.Fatal("an invalid request changed a session")
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})
	// The longest allowed request id, with every allowed character, works.
	long := "A" + strings.Repeat("z9_.:-", 21) + "x"
	if len(long) != 128 {
		t.Fatalf("test id is %d chars", len(long))
	}
	if r := mustApply(t, svc, receipts.Request{RequestID: long, Op: receipts.OpArchive, SessionIDs: ok}); r.RequestID != long {
		t.Fatalf("receipt id = %q", r.RequestID)
	}
}

func TestFingerprintIgnoresOrderAndRepetition(t *testing.T) {
	t.Parallel()
	fp := func(op string, ids ...string) string {
		return receipts.Request{RequestID: "r", Op: op, SessionIDs: ids}.Fingerprint()
	}
	if fp("delete", "a", "b") != fp("delete", "b", "a", "a", "b") {
		t.Fatal("order or repetition changed the fingerprint")
	}
	for _, other := range []string{fp("archive", "a", "b"), fp("delete", "a"), fp("delete", "a", "b", "c")} {
		if other == fp("delete", "a", "b") {
			t.Fatal("different requests share a fingerprint")
		}
	}
}

func TestExpiredReceiptsAreForgotten(t *testing.T) {
	t.Parallel()
	e, svc := newEnv(t)
	a := e.MustCreate(t, sessions.CreateParams{Title: "a"})
	b := e.MustCreate(t, sessions.CreateParams{Title: "b"})
	old := mustApply(t, svc, receipts.Request{RequestID: "req-old", Op: receipts.OpArchive, SessionIDs: []string{a.ID}})
	e.Clock.Advance(12 * time.Hour)
	mustApply(t, svc, receipts.Request{RequestID: "req-new", Op: receipts.OpArchive, SessionIDs: []string{b.ID}})
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 2, "*": 0})

	// Within the 24 h, a mismatched reuse is still a conflict and a retry replays.
	e.Clock.Advance(11*time.Hour + 59*time.Minute)
	if _, err := svc.Apply(ctx, receipts.Request{RequestID: "req-old", Op: receipts.OpUnarchive, SessionIDs: []string{a.ID}}, nil); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("reuse within the ttl: %v, want conflict", err)
	}
	sameAnswer(t, old, mustApply(t, svc, receipts.Request{RequestID: "req-old", Op: receipts.OpArchive, SessionIDs: []string{a.ID}}))
	if n, err := svc.Expire(ctx); err != nil || n != 0 {
		t.Fatalf("expire before the ttl = %d, %v", n, err)
	}

	// Past 24 h the id is free: the same id now runs as a new request.
	e.Clock.Advance(2 * time.Minute)
	r := mustApply(t, svc, receipts.Request{RequestID: "req-old", Op: receipts.OpUnarchive, SessionIDs: []string{a.ID}})
	if r.Replayed || !r.Result.Changed || r.Op != receipts.OpUnarchive || archived(t, e, a.ID) {
		t.Fatalf("reuse after expiry = %+v (archived %v)", r, archived(t, e, a.ID))
	}
	if n := e.Count(t, `SELECT COUNT(*) FROM receipts WHERE request_id = 'req-old' AND op = 'unarchive'`); n != 1 {
		t.Fatal("the expired receipt was not replaced")
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 2, hooks.OnSessionRestore: 1, "*": 0}) // unarchive: a restore

	// Expire removes what is past its time and nothing else.
	if n, err := svc.Expire(ctx); err != nil || n != 0 {
		t.Fatalf("expire at 24h01 = %d, %v; want 0 (req-new lives 12 h more)", n, err)
	}
	e.Clock.Advance(12 * time.Hour)
	if n, err := svc.Expire(ctx); err != nil || n != 1 {
		t.Fatalf("expire at 36h01 = %d, %v; want 1", n, err)
	}
	if n := e.Count(t, `SELECT COUNT(*) FROM receipts WHERE request_id = 'req-new'`); n != 0 {
		t.Fatal("req-new survived its expiry")
	}
	if n := receiptRows(t, e); n != 1 {
		t.Fatalf("receipts = %d, want 1", n)
	}
	// The expired request, repeated verbatim, runs again: b is already archived.
	again := mustApply(t, svc, receipts.Request{RequestID: "req-new", Op: receipts.OpArchive, SessionIDs: []string{b.ID}})
	if again.Replayed || again.Result.Changed {
		t.Fatalf("re-run after expiry = %+v", again)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 2, hooks.OnSessionRestore: 1, "*": 0})
}

func TestReceiptTTLOption(t *testing.T) {
	t.Parallel()
	e, _ := newEnv(t)
	svc := receipts.NewService(e.DB, e.Sessions, time.Hour)
	a := e.MustCreate(t, sessions.CreateParams{Title: "a"})
	mustApply(t, svc, receipts.Request{RequestID: "short", Op: receipts.OpArchive, SessionIDs: []string{a.ID}})
	e.Clock.Advance(time.Hour)
	if n, err := svc.Expire(ctx); err != nil || n != 1 {
		t.Fatalf("expire after the 1 h ttl = %d, %v; want 1", n, err)
	}
}

func TestFailedOperationStoresNoReceipt(t *testing.T) {
	t.Parallel()
	e, good := newEnv(t)
	a := e.MustCreate(t, sessions.CreateParams{Title: "a"})
	e.MustAppend(t, a.ID, 3)
	sidecar := filepath.Join(e.SessionsDir, a.ID+".jsonl")
	if err := os.WriteFile(sidecar, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A store that cannot queue its hook fails after it changed rows in the tx.
	broken := receipts.NewService(e.DB, sessions.NewService(e.DB, nil, sessions.Options{SessionsDir: e.SessionsDir}), 0)
	for _, op := range []string{receipts.OpDelete, receipts.OpArchive} {
		t.Run(op, func(t *testing.T) {
			_, err := broken.Apply(ctx, receipts.Request{RequestID: "rb-1", Op: op, SessionIDs: []string{a.ID}}, nil)
			if got := apperr.CodeOf(err); got != apperr.Internal {
				t.Fatalf("code = %q (%v), want internal", got, err)
			}
		})
	}
	if n := receiptRows(t, e); n != 0 {
		t.Fatalf("receipts = %d, want 0", n)
	}
	got, err := e.Sessions.Get(ctx, a.ID)
	if err != nil || got.Archived || got.MessageCount != 3 {
		t.Fatalf("after rollback: %+v, %v", got, err)
	}
	if n := e.Count(t, `SELECT COUNT(*) FROM messages WHERE session_id = ?`, a.ID); n != 3 {
		t.Fatalf("messages = %d, want 3", n)
	}
	if _, err := os.Stat(sidecar); err != nil {
		t.Fatalf("sidecar removed by a rolled-back delete: %v", err)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})
	if n := e.Count(t, `SELECT COUNT(*) FROM hook_events`); n != 0 {
		t.Fatalf("hook events = %d, want 0", n)
	}

	// The id was not used up: a retry on a working store runs for real.
	r := mustApply(t, good, receipts.Request{RequestID: "rb-1", Op: receipts.OpDelete, SessionIDs: []string{a.ID}})
	if r.Replayed || !r.Result.Changed || e.Visible(t, a.ID) {
		t.Fatalf("retry = %+v", r)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, "*": 0})
}

func TestCanceledContextStoresNothing(t *testing.T) {
	t.Parallel()
	e, svc := newEnv(t)
	a := e.MustCreate(t, sessions.CreateParams{Title: "a"})
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := svc.Apply(cctx, receipts.Request{RequestID: "cx-1", Op: receipts.OpDelete, SessionIDs: []string{a.ID}}, nil); err == nil {
		t.Fatal("apply with a canceled context succeeded")
	}
	if n := receiptRows(t, e); n != 0 || !e.Visible(t, a.ID) {
		t.Fatalf("receipts = %d, session exists = %v", n, e.Visible(t, a.ID))
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})
}

func TestRestoreAndPurgeGoThroughReceipts(t *testing.T) {
	t.Parallel()
	e, svc := newEnv(t)
	a := e.MustCreate(t, sessions.CreateParams{Title: "a"})
	b := e.MustCreate(t, sessions.CreateParams{Title: "b"})
	del := mustApply(t, svc, receipts.Request{RequestID: "del-1", Op: receipts.OpDelete, SessionIDs: []string{a.ID, b.ID}})
	if !del.Result.Trashed || del.Result.Batch != "del-1" || !e.Trashed(t, a.ID) {
		t.Fatalf("delete = %+v", del.Result)
	}
	// A restore, retried, restores once and fires once.
	r1 := mustApply(t, svc, receipts.Request{RequestID: "res-1", Op: receipts.OpRestore, SessionIDs: []string{a.ID}})
	sameAnswer(t, r1, mustApply(t, svc, receipts.Request{RequestID: "res-1", Op: receipts.OpRestore, SessionIDs: []string{a.ID}}))
	if !r1.Result.Changed || !e.Visible(t, a.ID) || !e.Trashed(t, b.ID) {
		t.Fatalf("restore = %+v", r1.Result)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, hooks.OnSessionRestore: 1, "*": 0})
	// The same id for a purge is a conflict.
	if _, err := svc.Apply(ctx, receipts.Request{RequestID: "res-1", Op: receipts.OpPurge, SessionIDs: []string{a.ID}}, nil); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("mismatched replay: %v", err)
	}
	// Empty the trash: b goes for good, nothing more fires; a retry replays.
	em := mustApply(t, svc, receipts.Request{RequestID: "empty-1", Op: receipts.OpEmptyTrash})
	sameAnswer(t, em, mustApply(t, svc, receipts.Request{RequestID: "empty-1", Op: receipts.OpEmptyTrash}))
	if fmt.Sprint(em.Result.AffectedIDs) != fmt.Sprint([]string{b.ID}) || e.Exists(t, b.ID) {
		t.Fatalf("empty trash = %+v", em.Result)
	}
	// Purge (delete now) of a live session: one event, not restorable.
	p := mustApply(t, svc, receipts.Request{RequestID: "purge-1", Op: receipts.OpPurge, SessionIDs: []string{a.ID}})
	if p.Result.Trashed || e.Exists(t, a.ID) {
		t.Fatalf("purge = %+v", p.Result)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 2, hooks.OnSessionRestore: 1, "*": 0})
	if _, err := svc.Apply(ctx, receipts.Request{RequestID: "empty-2", Op: receipts.OpEmptyTrash, OlderThan: "soon"}, nil); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("bad older_than: %v", err)
	}
}

func TestBulkByRuleOneTransactionOneReceiptOneEventAndUndo(t *testing.T) {
	t.Parallel()
	e, svc := newEnv(t)
	var cron []string
	for i := 0; i < 3; i++ {
		s := e.MustCreate(t, sessions.CreateParams{Title: fmt.Sprintf("cron %d", i), Source: "cron"})
		cron = append(cron, s.ID)
	}
	busy := e.MustCreate(t, sessions.CreateParams{Title: "busy cron", Source: "cron"})
	e.MustAppend(t, busy.ID, 5)
	child := e.MustChild(t, cron[0], sessions.RelationDelegate)
	keep := e.MustCreate(t, sessions.CreateParams{Title: "mine"})
	req := receipts.Request{RequestID: "rule-1", Op: receipts.OpDelete, Filter: map[string]string{"source": "cron", "messages": "<3"}}

	// The preview says what would go, changes nothing and fires nothing.
	pre, err := svc.Preview(ctx, req)
	if err != nil || pre.Matched != 3 || len(pre.AffectedIDs) != 4 || !e.Visible(t, cron[0]) || receiptRows(t, e) != 0 {
		t.Fatalf("preview = %+v, %v", pre, err)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})

	r := mustApply(t, svc, req)
	if r.Result.Matched != 3 || len(r.Result.AffectedIDs) != 4 || !r.Undoable || !e.Visible(t, busy.ID) || !e.Visible(t, keep.ID) || e.Visible(t, child.ID) {
		t.Fatalf("rule delete = %+v", r)
	}
	sameAnswer(t, r, mustApply(t, svc, req))
	// The same id with another rule is a conflict.
	other := req
	other.Filter = map[string]string{"source": "cron", "messages": "<4"}
	if _, err := svc.Apply(ctx, other, nil); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("other rule, same id: %v", err)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, "*": 0})
	if got := e.Rec.Deletes(t)[0].DeletedIDs; len(got) != 4 {
		t.Fatalf("deleted_ids = %v", got)
	}

	// Undo restores the whole request, once; a retried undo replays.
	u := undo(t, svc, "rule-1")
	if u.Op != receipts.OpUndo || fmt.Sprint(sortedIDs(u.Result.AffectedIDs)) != fmt.Sprint(sortedIDs(r.Result.AffectedIDs)) {
		t.Fatalf("undo = %+v", u)
	}
	sameAnswer(t, u, undo(t, svc, "rule-1"))
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, hooks.OnSessionRestore: 1, "*": 0})
	for _, id := range append(cron, child.ID) {
		if !e.Visible(t, id) {
			t.Fatalf("%s not back", id)
		}
	}
	recent, err := svc.Recent(ctx, 10)
	if err != nil || len(recent) != 2 || recent[1].RequestID != "rule-1" || !recent[1].Undone || recent[1].Undoable {
		t.Fatalf("recent = %+v, %v", recent, err)
	}
	// An undo of an undo is refused; so is an unknown request.
	if _, err := svc.Undo(ctx, "undo:rule-1"); apperr.CodeOf(err) != apperr.Rejected {
		t.Fatalf("undo of an undo: %v", err)
	}
	if _, err := svc.Undo(ctx, "nope"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("undo of unknown: %v", err)
	}

	// Archive by rule, undo: unarchive; purge by rule cannot be undone.
	a := mustApply(t, svc, receipts.Request{RequestID: "arch-r", Op: receipts.OpArchive, Filter: map[string]string{"title": "busy"}})
	if fmt.Sprint(a.Result.AffectedIDs) != fmt.Sprint([]string{busy.ID}) {
		t.Fatalf("archive by rule = %+v", a.Result)
	}
	undo(t, svc, "arch-r")
	if archived(t, e, busy.ID) {
		t.Fatal("undo of archive left it archived")
	}
	mustApply(t, svc, receipts.Request{RequestID: "purge-r", Op: receipts.OpPurge, Filter: map[string]string{"title": "mine"}})
	if _, err := svc.Undo(ctx, "purge-r"); apperr.CodeOf(err) != apperr.Rejected || e.Exists(t, keep.ID) {
		t.Fatalf("undo of a purge: %v", err)
	}
	// A rule that matches nothing changes nothing and fires nothing.
	e.Rec.Reset()
	none := mustApply(t, svc, receipts.Request{RequestID: "none", Op: receipts.OpDelete, Filter: map[string]string{"source": "gateway"}})
	if none.Result.Changed || none.Result.Matched != 0 {
		t.Fatalf("empty rule result = %+v", none.Result)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})
}

func TestRuleRequestsRefuseBadInput(t *testing.T) {
	t.Parallel()
	_, svc := newEnv(t)
	for _, req := range []receipts.Request{
		{RequestID: "x1", Op: receipts.OpDelete, Filter: map[string]string{}},                                 // no condition
		{RequestID: "x2", Op: receipts.OpDelete, Filter: map[string]string{"scope": "all"}},                   // still none
		{RequestID: "x3", Op: receipts.OpDelete, Filter: map[string]string{"messages": "lots"}},               // bad field
		{RequestID: "x4", Op: receipts.OpArchive, Filter: map[string]string{"scope": "trash", "pinned": "1"}}, // wrong scope
		{RequestID: "x5", Op: receipts.OpDelete, SessionIDs: []string{"a"}, Filter: map[string]string{"source": "cli"}},
		{RequestID: "x6", Op: receipts.OpEmptyTrash, Filter: map[string]string{"source": "cli"}},
		{RequestID: "x7", Op: receipts.OpUndo},
	} {
		if _, err := svc.Apply(ctx, req, nil); apperr.CodeOf(err) != apperr.Invalid {
			t.Errorf("%+v: %v, want invalid", req, err)
		}
	}
}

func undo(t *testing.T, svc *receipts.Service, target string) receipts.Receipt {
	t.Helper()
	r, err := svc.Undo(ctx, target)
	if err != nil {
		t.Fatalf("undo %s: %v", target, err)
	}
	return r
}

func sortedIDs(ids []string) []string {
	out := append([]string(nil), ids...)
	sort.Strings(out)
	return out
}
