//go:build linux && cgo

package db

import (
	"context"
	"path/filepath"
	"testing"
)

// SQLite took the wrapper at start (pagemem_linux.go), a read's cache
// pages come from the region, and closing the store gives them back to it.
func TestCachePagesComeFromTheRegion(t *testing.T) {
	if pageMemErr != nil {
		t.Fatal(pageMemErr)
	}
	ctx := context.Background()
	d, err := Open(ctx, filepath.Join(t.TempDir(), "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// 400 rows of 2 KB: ~200 pages, more than a cache's first bulk
	// allocation (20 pages, from malloc) holds.
	if err := d.Write.Exec(`CREATE TABLE pm(b BLOB)`).Error; err != nil {
		t.Fatal(err)
	}
	if err := d.Write.Exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 400) INSERT INTO pm SELECT randomblob(2000) FROM n`).Error; err != nil {
		t.Fatal(err)
	}
	before := readPageMemStats()
	var n int64
	if err := d.Read.Raw(`SELECT sum(length(b)) FROM pm`).Scan(&n).Error; err != nil || n != 800000 {
		t.Fatalf("read the table: %d bytes, %v", n, err)
	}
	during := readPageMemStats()
	if during.Used < before.Used+150 {
		t.Fatalf("slots in use before a read of ~200 pages %d, after it %d: want 150 more", before.Used, during.Used)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if after := readPageMemStats(); after.Used > during.Used-150 {
		t.Fatalf("slots in use with the store open %d, closed %d: its caches' slots were not given back", during.Used, after.Used)
	}
}
