package sessions_test

import (
	"testing"

	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

// The files of sessions deleted for good go in the background; whatever is
// queued when the store closes is gone when Close returns, and an id that is
// a session again by then keeps its (new) files.
func TestSidecarsOfDeletedSessionsGoByTheTimeTheStoreCloses(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	svc := e.Sessions // the service whose task removes the files
	var gone []sessions.Session
	for range 3 {
		s := e.MustCreate(t, sessions.CreateParams{Title: "gone"})
		e.WriteSidecars(t, s.ID+".jsonl", s.ID+".index.json")
		gone = append(gone, s)
	}
	again := e.MustCreate(t, sessions.CreateParams{Title: "imported again"})
	for _, s := range append(gone, again) {
		if _, err := svc.Purge(ctx, []string{s.ID}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// The same id comes back (an import) with its own file before the
	// removal of the first one's files ran (or after: it is kept either way).
	e.MustCreate(t, sessions.CreateParams{ID: again.ID, Title: "imported again"})
	e.WriteSidecars(t, again.ID+".jsonl")
	e.Close(t)
	if names := e.Sidecars(t); len(names) != 1 || names[0] != again.ID+".jsonl" {
		t.Fatalf("after Close the folder holds %v, want only the imported session's file", names)
	}
}
