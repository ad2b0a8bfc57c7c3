package db_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"atrium/backend/apperr"
	"atrium/backend/db"
)

// The store, its WAL and its shared memory are private to their owner, and
// a store an older Atrium left world-readable is made private on open.
func TestStoreFilesArePrivate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	d, err := db.Open(ctx, path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.InTx(ctx, func(tx *db.Tx) error {
		return tx.G.Exec(`INSERT INTO processes (id, host, pid, started_at, heartbeat_at) VALUES ('p', 'h', 1, 0, 0)`).Error
	}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %o, want 600", filepath.Base(p), info.Mode().Perm())
		}
	}
	_ = d.Close()
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err = db.Open(ctx, path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Fatalf("an old 0644 store stays %o", info.Mode().Perm())
	}
}

// Opening and closing an up-to-date store writes nothing to it.
func TestOpeningAnUpToDateStoreDoesNotWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	d, err := db.Open(ctx, path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = d.Close()
	sum := func() [32]byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return sha256.Sum256(b)
	}
	before := sum()
	for range 3 {
		d, err := db.Open(ctx, path, db.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := d.Read.Raw(`SELECT COUNT(*) FROM sessions`).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		_ = d.Close()
	}
	if sum() != before {
		t.Fatal("opening the store for reading changed it")
	}
}

// Concurrent first opens of one new file all succeed (separate processes
// are covered in the cli tests; separate connections race the same way).
func TestConcurrentFirstOpens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := db.Open(ctx, path, db.Options{})
			if err == nil {
				err = d.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("open %d: %v", i, err)
		}
	}
}

// A store in a folder this user cannot write opens for reading; its writes
// fail with the store's read-only error (the cli tests cover a read-only
// file system as root).
func TestUnwritableFolderReadsAndRefusesWrites(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("skipped: root writes any folder; the read-only file system case runs in cli (TestReadOnlyHome...)")
	}
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	d, err := db.Open(ctx, path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = d.Close()
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
	d, err = db.Open(ctx, path, db.Options{})
	if err != nil {
		t.Fatalf("open read-only: %v", err)
	}
	defer d.Close()
	var n int
	if err := d.Read.Raw(`SELECT COUNT(*) FROM sessions`).Scan(&n).Error; err != nil {
		t.Fatalf("read: %v", err)
	}
	err = d.InTx(ctx, func(tx *db.Tx) error { return nil })
	if !errors.Is(err, db.ErrReadOnly) || apperr.CodeOf(err) != apperr.Rejected {
		t.Fatalf("write: %v", err)
	}
}
