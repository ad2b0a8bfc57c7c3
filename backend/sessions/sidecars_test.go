package sessions_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"atrium/backend/db"
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

// killedDeleteEnv makes the test binary the process that is killed: it
// purges one session on the home named in it and is killed before its
// background task could remove the session's files.
const killedDeleteEnv = "ATRIUM_TEST_KILLED_DELETE"

// A process killed between a delete's commit and the removal of the
// deleted session's files leaves them recorded in the store: the next
// process that opens it removes them, and keeps every other session's.
func TestSidecarsOfADeleteWhoseProcessWasKilledGoAtTheNextOpen(t *testing.T) {
	if spec := os.Getenv(killedDeleteEnv); spec != "" {
		home, id, _ := strings.Cut(spec, "|")
		sessions.SetSidecarDelay(time.Hour) // the task never runs in this process
		e := sessionstest.Reopen(t, home)
		if _, err := e.Sessions.Purge(ctx, []string{id}, nil); err != nil {
			fmt.Println("purge:", err)
			os.Exit(3)
		}
		fmt.Println("purged")
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	t.Parallel()
	e := sessionstest.New(t)
	gone := e.MustCreate(t, sessions.CreateParams{Title: "gone"})
	kept := e.MustCreate(t, sessions.CreateParams{Title: "kept"})
	e.WriteSidecars(t, gone.ID+".jsonl", gone.ID+"/notes.md", kept.ID+".jsonl", "sessions.json")
	e.Close(t)

	cmd := exec.Command(os.Args[0], "-test.run=^TestSidecarsOfADeleteWhoseProcessWasKilledGoAtTheNextOpen$")
	cmd.Env = append(os.Environ(), killedDeleteEnv+"="+e.Home+"|"+gone.ID)
	out, err := cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL || string(out) != "purged\n" {
		t.Fatalf("the deleting process: %v, said %q; want it killed after the purge", err, out)
	}
	all := []string{gone.ID, gone.ID + ".jsonl", kept.ID + ".jsonl", "sessions.json"}
	if names := e.Sidecars(t); !slices.Equal(slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(all))) {
		t.Fatalf("after the kill the folder holds %v, want every file still there: %v", names, all)
	}

	next := sessionstest.Reopen(t, e.Home)
	if next.Exists(t, gone.ID) || !next.Exists(t, kept.ID) {
		t.Fatal("the purge did not commit before the kill")
	}
	next.SidecarsBecome(t, []string{kept.ID + ".jsonl", "sessions.json"})
	next.Close(t)
	if n := pendingAfterClose(t, e.Home); n != 0 {
		t.Fatalf("%d records of removed files stayed after Close", n)
	}
}

// pendingAfterClose counts the sidecar records in the closed store of home.
func pendingAfterClose(t *testing.T, home string) int64 {
	t.Helper()
	d, err := db.Open(ctx, filepath.Join(home, "state.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var n int64
	if err := d.Read.Raw(`SELECT COUNT(*) FROM sidecar_pending`).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// The task removes files without a write of its own: the records of
// removed files are cleared by the next delete's transaction (which
// records its own), and at Close. An id deleted, imported anew and
// deleted again has its new files removed too.
func TestSidecarRecordsAreClearedByTheNextDeleteAndAtClose(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	a := e.MustCreate(t, sessions.CreateParams{Title: "a"})
	b := e.MustCreate(t, sessions.CreateParams{Title: "b"})
	e.WriteSidecars(t, a.ID+".jsonl", b.ID+".jsonl")
	pending := func() int64 { return e.Count(t, `SELECT COUNT(*) FROM sidecar_pending`) }
	if _, err := e.Sessions.Purge(ctx, []string{a.ID}, nil); err != nil {
		t.Fatal(err)
	}
	e.SidecarsBecome(t, []string{b.ID + ".jsonl"})
	if n := pending(); n != 1 {
		t.Fatalf("%d records once the files went, want a's still there (no write of the task's own)", n)
	}
	// a comes back (an import) with a file of its own, and goes again with b.
	e.MustCreate(t, sessions.CreateParams{ID: a.ID, Title: "a again"})
	e.WriteSidecars(t, a.ID+".jsonl")
	if _, err := e.Sessions.Purge(ctx, []string{a.ID, b.ID}, nil); err != nil {
		t.Fatal(err)
	}
	e.SidecarsBecome(t, nil)
	if n := pending(); n != 2 {
		t.Fatalf("%d records after the second delete, want its two", n)
	}
	e.Close(t)
	if n := pendingAfterClose(t, e.Home); n != 0 {
		t.Fatalf("%d records stayed after Close", n)
	}
}

// The records of removed files go with the next write the store makes
// anyway: here the search indexer's, after an append to another session,
// with no delete after them and before any Close.
func TestSidecarRecordsAreClearedByTheIndexersNextWrite(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	a := e.MustCreate(t, sessions.CreateParams{Title: "a"})
	b := e.MustCreate(t, sessions.CreateParams{Title: "b"})
	e.MustAppend(t, a.ID, 3)
	e.WriteSidecars(t, a.ID+".jsonl", b.ID+".jsonl")
	if _, err := e.Sessions.Purge(ctx, []string{a.ID}, nil); err != nil {
		t.Fatal(err)
	}
	e.SidecarsBecome(t, []string{b.ID + ".jsonl"})
	e.MustAppend(t, b.ID, 1)
	deadline := time.Now().Add(10 * time.Second)
	for e.Count(t, `SELECT COUNT(*) FROM sidecar_pending`) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the record of a's removed files stayed after the indexer's write")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := e.Count(t, `SELECT COUNT(*) FROM messages WHERE id > (SELECT upto FROM fts_mark)`); n != 0 {
		t.Fatalf("%d messages not indexed: the records went some other way", n)
	}
	if names := e.Sidecars(t); !slices.Equal(names, []string{b.ID + ".jsonl"}) {
		t.Fatalf("the folder holds %v", names)
	}
}

// A store with no sessions folder (a profile move's target, a tool's
// store) indexes and deletes with no sidecar files to look after.
func TestAStoreWithoutASessionsFolderIndexesAndDeletes(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	svc := sessions.NewService(e.DB, e.Bus, sessions.Options{Profile: "default", ManualIndex: true})
	s, err := svc.Create(ctx, sessions.CreateParams{Title: "no folder"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AppendMessage(ctx, s.ID, sessions.NewMessage{Role: "user", Content: "hello folderless"}); err != nil {
		t.Fatal(err)
	}
	indexAll(t, svc)
	if _, err := svc.Purge(ctx, []string{s.ID}, nil); err != nil {
		t.Fatal(err)
	}
	indexAll(t, svc)
	if n := e.Count(t, `SELECT COUNT(*) FROM sidecar_pending`); n != 0 {
		t.Fatalf("%d sidecar records from a store with no sessions folder", n)
	}
}

// A delete whose transaction rolls back removes no file and leaves no
// record of one to remove.
func TestARolledBackDeleteKeepsItsSidecars(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	s := e.MustCreate(t, sessions.CreateParams{Title: "kept"})
	e.WriteSidecars(t, s.ID+".jsonl")
	errAbort := errors.New("the caller changed its mind")
	err := e.DB.InTx(ctx, func(tx *db.Tx) error {
		if _, err := e.Sessions.DeleteTx(ctx, tx, []string{s.ID}, sessions.DeleteOptions{Now: true}); err != nil {
			return err
		}
		if n := e.Count(t, `SELECT COUNT(*) FROM sidecar_pending`); n != 0 {
			return fmt.Errorf("the record is visible outside the transaction: %d", n)
		}
		return errAbort
	})
	if !errors.Is(err, errAbort) {
		t.Fatal(err)
	}
	if n := e.Count(t, `SELECT COUNT(*) FROM sidecar_pending`); n != 0 {
		t.Fatalf("%d records of files to remove after the rollback", n)
	}
	e.Close(t) // the task's last run
	if names := e.Sidecars(t); !slices.Equal(names, []string{s.ID + ".jsonl"}) {
		t.Fatalf("after the rollback and Close the folder holds %v", names)
	}
}

// A delete of more sessions than one run of the task takes (2,000) has
// every one's files removed, the last batch too, without waiting for
// another delete or Close.
func TestSidecarsOfADeleteLargerThanABatchAllGo(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	ids, err := e.Sessions.Seed(ctx, sessions.SeedParams{Count: 2001}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		e.WriteSidecars(t, id+".jsonl")
	}
	e.WriteSidecars(t, "sessions.json")
	if _, err := e.Sessions.Purge(ctx, ids, nil); err != nil {
		t.Fatal(err)
	}
	e.SidecarsBecome(t, []string{"sessions.json"})
}
