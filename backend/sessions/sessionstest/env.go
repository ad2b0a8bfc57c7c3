// Package sessionstest builds a real store, hook bus and session service on a
// temp SQLite file, with Must* fixtures.
package sessionstest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"atrium/backend/db"
	"atrium/backend/db/dbtest"
	"atrium/backend/hooks"
	"atrium/backend/hooks/hookstest"
	"atrium/backend/sessions"
)

// Env is one test's store.
type Env struct {
	Clock       *dbtest.Clock
	DB          *db.DB
	Bus         *hooks.Bus
	Sessions    *sessions.Service
	Rec         *hookstest.Recorder
	Home        string
	SessionsDir string

	closeOnce sync.Once
}

// New opens a store with a recorder subscribed to every observer hook. Call
// register (optional) to add more subscribers before the bus starts.
func New(t testing.TB, register ...func(bus *hooks.Bus)) *Env {
	return NewWith(t, busOptions, register...)
}

// busOptions are the bus options of New and Reopen.
var busOptions = hooks.Options{Timeout: 5 * time.Second}

// NewWith is New with explicit bus options.
func NewWith(t testing.TB, opts hooks.Options, register ...func(bus *hooks.Bus)) *Env {
	t.Helper()
	return open(t, t.TempDir(), opts, register...)
}

// Reopen opens the store of an earlier Env's home (closed, or left by a
// process that was killed), as the next process on that home would.
func Reopen(t testing.TB, home string, register ...func(bus *hooks.Bus)) *Env {
	t.Helper()
	return open(t, home, busOptions, register...)
}

func open(t testing.TB, home string, opts hooks.Options, register ...func(bus *hooks.Bus)) *Env {
	t.Helper()
	clock := dbtest.NewClock()
	d, err := db.Open(context.Background(), filepath.Join(home, "state.db"), db.Options{Clock: clock.Now})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	bus := hooks.NewBus(d, opts)
	rec := hookstest.Record(t, bus)
	for _, r := range register {
		r(bus)
	}
	if err := bus.Start(context.Background()); err != nil {
		t.Fatalf("start bus: %v", err)
	}
	dir := filepath.Join(home, "sessions")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	svc := sessions.NewService(d, bus, sessions.Options{Profile: "default", SessionsDir: dir})
	e := &Env{Clock: clock, DB: d, Bus: bus, Sessions: svc, Rec: rec, Home: home, SessionsDir: dir}
	t.Cleanup(func() { e.Close(t) })
	return e
}

// Close closes the bus and the store, once (a test may close them before
// its cleanup does, to look at what the store's last background run did).
func (e *Env) Close(t testing.TB) {
	t.Helper()
	e.closeOnce.Do(func() {
		if err := e.Bus.Close(context.Background()); err != nil {
			t.Errorf("close the bus: %v", err)
		}
		if err := e.DB.Close(); err != nil {
			t.Errorf("close the store: %v", err)
		}
	})
}

// MustCreate creates a session or fails the test.
func (e *Env) MustCreate(t testing.TB, p sessions.CreateParams) sessions.Session {
	t.Helper()
	s, err := e.Sessions.Create(context.Background(), p)
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	return s
}

// MustChild creates a child of parent with the given relation. A delegate
// child's subagent_start is part of the setup: it is not recorded.
func (e *Env) MustChild(t testing.TB, parent, relation string) sessions.Session {
	t.Helper()
	s := e.MustCreate(t, sessions.CreateParams{Title: relation + " of " + parent, ParentID: parent, Relation: relation})
	if relation == sessions.RelationDelegate && e.Rec != nil {
		e.Rec.Forget(hooks.SubagentStart)
	}
	return s
}

// MustAppend appends n user messages.
func (e *Env) MustAppend(t testing.TB, id string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := e.Sessions.AppendMessage(context.Background(), id, sessions.NewMessage{Role: "user", Content: "hello from the test"}); err != nil {
			t.Fatalf("append: %v", err)
		}
	}
}

// MustEnd ends a session.
func (e *Env) MustEnd(t testing.TB, id string) {
	t.Helper()
	if _, _, err := e.Sessions.End(context.Background(), id, "user"); err != nil {
		t.Fatalf("end: %v", err)
	}
}

// Exists reports whether a session row exists.
func (e *Env) Exists(t testing.TB, id string) bool {
	t.Helper()
	var n int64
	if err := e.DB.Read.Raw(`SELECT COUNT(*) FROM sessions WHERE id = ?`, id).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// Count runs a COUNT(*) query.
func (e *Env) Count(t testing.TB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := e.DB.Read.Raw(q, args...).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// WriteSidecars writes each name (a path under the sessions folder; its
// folders are made) with one byte in it, as an agent's files beside a session.
func (e *Env) WriteSidecars(t testing.TB, names ...string) {
	t.Helper()
	for _, name := range names {
		p := filepath.Join(e.SessionsDir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Sidecars lists the names in the sessions folder (files and folders, not
// what is inside the folders).
func (e *Env) Sidecars(t testing.TB) []string {
	t.Helper()
	left, err := os.ReadDir(e.SessionsDir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(left))
	for _, l := range left {
		names = append(names, l.Name())
	}
	return names
}

// SidecarsBecome waits until the sessions folder holds exactly want (the
// files of sessions deleted for good go in the background, shortly after
// the delete), or fails the test after 10 s with what it holds.
func (e *Env) SidecarsBecome(t testing.TB, want []string) {
	t.Helper()
	w := slices.Sorted(slices.Values(want))
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := slices.Sorted(slices.Values(e.Sidecars(t)))
		if slices.Equal(got, w) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sessions folder holds %d names, want %d: %v", len(got), len(w), got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Visible reports whether a session row exists outside the trash.
func (e *Env) Visible(t testing.TB, id string) bool {
	t.Helper()
	return e.Count(t, `SELECT COUNT(*) FROM sessions WHERE id = ? AND trashed_at IS NULL`, id) == 1
}

// Trashed reports whether a session row is in the trash.
func (e *Env) Trashed(t testing.TB, id string) bool {
	t.Helper()
	return e.Count(t, `SELECT COUNT(*) FROM sessions WHERE id = ? AND trashed_at IS NOT NULL`, id) == 1
}

// Store is another session service over this env's store and bus, with
// options (Profile and SessionsDir default to the env's): e.g. a store that
// keeps no trash.
func (e *Env) Store(o sessions.Options) *sessions.Service {
	if o.Profile == "" {
		o.Profile = "default"
	}
	if o.SessionsDir == "" {
		o.SessionsDir = e.SessionsDir
	}
	return sessions.NewService(e.DB, e.Bus, o)
}

// NoTrash is a store that deletes at once (sessions.trash_days: 0).
func (e *Env) NoTrash() *sessions.Service {
	zero := 0
	return e.Store(sessions.Options{TrashDays: &zero})
}

// WaitFor polls cond until it holds, failing the test after d.
func WaitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// LastToolResult is the content of session id's last tool message (what
// the model read of its last tool call); "" and false when it has none.
func LastToolResult(t testing.TB, s *sessions.Service, id string) (string, bool) {
	t.Helper()
	msgs, err := s.Messages(context.Background(), id, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "tool" {
			return msgs[i].Content, true
		}
	}
	return "", false
}
