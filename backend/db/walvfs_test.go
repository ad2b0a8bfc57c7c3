package db

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// vfsDSN opens path as the writer does (WAL, synchronous NORMAL, BEGIN
// IMMEDIATE) through the WAL VFS, waiting up to busyMs for another writer.
func vfsDSN(path string, busyMs int) string {
	return fmt.Sprintf("file:%s?_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=%d&_txlock=immediate&vfs=%s", path, busyMs, walVFS())
}

// openVFS opens path through the WAL VFS on one connection, as the writer does.
func openVFS(t *testing.T, path string, pragmas ...string) *sql.DB {
	t.Helper()
	if walVFS() == "" {
		t.Fatal(walVFSErr)
	}
	s, err := sql.Open(driverName, vfsDSN(path, 5000))
	if err != nil {
		t.Fatal(err)
	}
	s.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = s.Close() })
	for _, p := range pragmas {
		if _, err := s.Exec(p); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func mustExec(t *testing.T, s *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := s.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// wholeAndHolds checks path from a new connection of SQLite's default VFS:
// integrity_check says ok, and table t holds, by tag, exactly the bytes of
// want, as they were written (zeros).
func wholeAndHolds(t *testing.T, path string, want map[string]int) {
	t.Helper()
	s, err := sql.Open(driverName, "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ok string
	if err := s.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check: %q %v", ok, err)
	}
	rows, err := s.Query(`SELECT tag, length(body), body = zeroblob(length(body)) FROM t`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]int{}
	for rows.Next() {
		var tag string
		var n int
		var zero bool
		if err := rows.Scan(&tag, &n, &zero); err != nil {
			t.Fatal(err)
		}
		if !zero {
			t.Fatalf("a %q row holds other bytes than it was written with", tag)
		}
		got[tag] += n
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rows by tag: %v, want %v", got, want)
	}
}

func TestWriterWritesEachCommitOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	d, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Write.Exec(`CREATE TABLE t(tag TEXT, body BLOB)`).Error; err != nil {
		t.Fatal(err)
	}
	c0, w0, _ := walVFSStats()
	const n = 50
	for i := range n {
		// Two pages and more per commit: the table's, an overflow page.
		if err := d.Write.Exec(`INSERT INTO t VALUES ('a', zeroblob(5000 + ?))`, i).Error; err != nil {
			t.Fatal(err)
		}
	}
	c1, w1, _ := walVFSStats()
	if c1-c0 != n || w1-w0 != n {
		t.Fatalf("%d commits: the VFS counted %d commits in %d writes, want %d in %d", n, c1-c0, w1-w0, n, n)
	}
	var got int
	if err := d.Read.Raw(`SELECT count(*) FROM t`).Scan(&got).Error; err != nil || got != n {
		t.Fatalf("a reader sees %d rows (%v), want %d", got, err, n)
	}
}

// A transaction larger than the connection's page cache writes pages to
// the WAL before it commits. When it rolls back, another writer commits at
// the same place in the WAL; nothing of the first may land over it later.
func TestRolledBackFramesNeverLandOnALaterCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	a := openVFS(t, path, `PRAGMA cache_size=10`, `PRAGMA wal_autocheckpoint=0`)
	b := openVFS(t, path, `PRAGMA wal_autocheckpoint=0`)
	mustExec(t, a, `CREATE TABLE t(tag TEXT, body BLOB)`)
	mustExec(t, a, `INSERT INTO t VALUES ('before', zeroblob(100))`)
	walSize := func() int64 {
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	// An empty WAL: A's rollback then reads nothing back from the WAL
	// (which would write its pending frames out on the way).
	mustExec(t, b, `PRAGMA wal_checkpoint(TRUNCATE)`)
	before := walSize()

	tx, err := a.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for range 60 {
		if _, err := tx.Exec(`INSERT INTO t VALUES ('rolled back', zeroblob(3000))`); err != nil {
			t.Fatal(err)
		}
	}
	_, _, l0 := walVFSStats()
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	// Its spilled pages were still pending when it gave up the write lock.
	if _, _, l1 := walVFSStats(); l1 == l0 {
		t.Fatal("the rollback left no frames pending: this test no longer covers its case")
	}
	// B commits where A's spilled pages went.
	for range 40 {
		mustExec(t, b, `INSERT INTO t VALUES ('b', zeroblob(3000))`)
	}
	if walSize() <= before {
		t.Fatal("B wrote nothing to the WAL")
	}
	// A writes again: its own frames go after B's.
	mustExec(t, a, `INSERT INTO t VALUES ('a', zeroblob(3000))`)
	wholeAndHolds(t, path, map[string]int{"before": 100, "b": 40 * 3000, "a": 3000})
	// And once copied into the database file.
	mustExec(t, b, `PRAGMA wal_checkpoint(TRUNCATE)`)
	wholeAndHolds(t, path, map[string]int{"before": 100, "b": 40 * 3000, "a": 3000})
}
