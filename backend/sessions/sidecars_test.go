package sessions_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"atrium/backend/db"
	"atrium/backend/hooks"
	"atrium/backend/sessions"
)

// The files of sessions deleted for good go in the background; whatever is
// queued when the store closes is gone when Close returns, and an id that is
// a session again by then keeps its (new) files.
func TestSidecarsOfDeletedSessionsGoByTheTimeTheStoreCloses(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	d, err := db.Open(ctx, filepath.Join(home, "state.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bus := hooks.NewBus(d, hooks.Options{Timeout: 5 * time.Second})
	if err := bus.Start(ctx); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, "sessions")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	zero := 0
	svc := sessions.NewService(d, bus, sessions.Options{SessionsDir: dir, TrashDays: &zero})
	write := func(names ...string) {
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var gone []sessions.Session
	for range 3 {
		s, err := svc.Create(ctx, sessions.CreateParams{Title: "gone"})
		if err != nil {
			t.Fatal(err)
		}
		write(s.ID+".jsonl", s.ID+".index.json")
		gone = append(gone, s)
	}
	again, err := svc.Create(ctx, sessions.CreateParams{Title: "imported again"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(gone, again) {
		if _, err := svc.Delete(ctx, []string{s.ID}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// The same id comes back (an import) with its own file before the
	// removal of the first one's files ran (or after: it is kept either way).
	if _, err := svc.Create(ctx, sessions.CreateParams{ID: again.ID, Title: "imported again"}); err != nil {
		t.Fatal(err)
	}
	write(again.ID + ".jsonl")
	if err := bus.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range left {
		names = append(names, l.Name())
	}
	if !slices.Equal(names, []string{again.ID + ".jsonl"}) {
		t.Fatalf("after Close the folder holds %v, want only the imported session's file", names)
	}
}
