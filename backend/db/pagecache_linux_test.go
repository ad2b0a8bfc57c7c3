//go:build linux && cgo

package db

import (
	"context"
	"path/filepath"
	"testing"
)

// The page caches take their pages from the region set up at start
// (pagecache_linux.go): SQLite accepted it, and a read puts pages in it.
func TestPageCachesUseTheRegion(t *testing.T) {
	if pageCacheErr != nil {
		t.Fatal(pageCacheErr)
	}
	ctx := context.Background()
	d, err := Open(ctx, filepath.Join(t.TempDir(), "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var n int64
	if err := d.Read.Raw(`SELECT count(*) FROM sqlite_schema`).Scan(&n).Error; err != nil || n == 0 {
		t.Fatalf("read the schema: %d rows, %v", n, err)
	}
	if used := pageCacheUsed(); used <= 0 {
		t.Fatalf("slots in use after a read: %d, want some", used)
	}
}
