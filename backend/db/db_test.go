package db_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"atrium/backend/apperr"
	"atrium/backend/db"
)

func TestOpenSetsPragmasAndMigratesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	for _, sync := range []struct {
		opt  string
		want int
	}{{"", 1}, {"full", 2}} {
		d, err := db.Open(ctx, path, db.Options{Synchronous: sync.opt})
		if err != nil {
			t.Fatal(err)
		}
		var mode string
		var fk, syn, version int
		d.Write.Raw(`PRAGMA journal_mode`).Scan(&mode)
		d.Write.Raw(`PRAGMA foreign_keys`).Scan(&fk)
		d.Write.Raw(`PRAGMA synchronous`).Scan(&syn)
		d.Write.Raw(`SELECT MAX(version) FROM schema_migrations`).Scan(&version)
		if mode != "wal" || fk != 1 || syn != sync.want || version != db.SchemaVersion() {
			t.Fatalf("mode=%s fk=%d synchronous=%d version=%d", mode, fk, syn, version)
		}
		// The read pool refuses writes.
		if err := d.Read.Exec(`DELETE FROM sessions`).Error; err == nil {
			t.Fatal("read pool accepted a write")
		}
		_ = d.Close()
	}
	if _, err := db.Open(ctx, path, db.Options{Synchronous: "sometimes"}); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("bad synchronous: %v", err)
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	d, err := db.Open(ctx, path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Write.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future', 0)`, db.SchemaVersion()+1).Error; err != nil {
		t.Fatal(err)
	}
	_ = d.Close()
	_, err = db.Open(ctx, path, db.Options{})
	if apperr.CodeOf(err) != apperr.Rejected {
		t.Fatalf("newer schema: %v", err)
	}
}

func TestInTxAfterCommitRunsOnlyOnCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := db.Open(ctx, filepath.Join(t.TempDir(), "state.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ran := 0
	boom := errors.New("boom")
	err = d.InTx(ctx, func(tx *db.Tx) error {
		tx.AfterCommit(func() { ran++ })
		return boom
	})
	if !errors.Is(err, boom) || ran != 0 {
		t.Fatalf("rollback: err=%v ran=%d", err, ran)
	}
	func() {
		defer func() { _ = recover() }()
		_ = d.InTx(ctx, func(tx *db.Tx) error {
			tx.AfterCommit(func() { ran++ })
			panic("wiring bug")
		})
	}()
	if ran != 0 {
		t.Fatal("after-commit ran after a panic")
	}
	if err := d.InTx(ctx, func(tx *db.Tx) error { tx.AfterCommit(func() { ran++ }); return nil }); err != nil || ran != 1 {
		t.Fatalf("commit: err=%v ran=%d", err, ran)
	}
	// gorm's not-found and duplicate errors are translated once, here.
	err = d.InTx(ctx, func(tx *db.Tx) error {
		return tx.G.Exec(`INSERT INTO maintenance_runs (task, last_run_at) VALUES ('x', 1), ('x', 2)`).Error
	})
	if apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("duplicate: %v", err)
	}
}
