//go:build linux && cgo

package db

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
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
	before := pageMemInUse()
	var n int64
	if err := d.Read.Raw(`SELECT sum(length(b)) FROM pm`).Scan(&n).Error; err != nil || n != 800000 {
		t.Fatalf("read the table: %d bytes, %v", n, err)
	}
	during := pageMemInUse()
	if during < before+150 {
		t.Fatalf("slots in use before a read of ~200 pages %d, after it %d: want 150 more", before, during)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if after := pageMemInUse(); after > during-150 {
		t.Fatalf("slots in use with the store open %d, closed %d: its caches' slots were not given back", during, after)
	}
}

// Values SQLite holds in memory of the region's block size and either side
// of it (blobs of 4,090-9,000 bytes, read from overflow pages; a string
// grown in steps to 15,000 bytes) keep every byte.
func TestValuesGrownThroughTheSlotSizeKeepEveryByte(t *testing.T) {
	ctx := context.Background()
	d, err := Open(ctx, filepath.Join(t.TempDir(), "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var got string
	if err := d.Read.Raw(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 3000)
		SELECT group_concat(printf('%05d', i), '') FROM n`).Scan(&got).Error; err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&want, "%05d", i)
	}
	if got != want.String() {
		t.Fatalf("a string of %d bytes came back as %d bytes, or changed", want.Len(), len(got))
	}
	if err := d.Write.Exec(`CREATE TABLE blobs(n INTEGER, b BLOB)`).Error; err != nil {
		t.Fatal(err)
	}
	sizes := []int{4090, 4097, 4400, 4608, 4609, 9000}
	blob := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + n)
		}
		return b
	}
	for _, n := range sizes {
		if err := d.Write.Exec(`INSERT INTO blobs VALUES (?, ?)`, n, blob(n)).Error; err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range sizes {
		var b []byte
		if err := d.QueryRow(ctx, `SELECT b FROM blobs WHERE n = ?`, n).Scan(&b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, blob(n)) {
			t.Fatalf("a blob of %d bytes came back as %d bytes, or changed", n, len(b))
		}
	}
}

// A block of the region reallocated within its slot stays put; grown past
// it, it moves out of the region with its bytes; a block of the size is
// then taken from the region again.
func TestRegionBlocksReallocateAndFree(t *testing.T) {
	if pageMemErr != nil {
		t.Fatal(pageMemErr)
	}
	if err := pageMemCheck(); err != nil {
		t.Fatal(err)
	}
}
