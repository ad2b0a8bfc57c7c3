package db_test

import (
	"context"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"testing"

	"atrium/backend/db"
)

// After a store is opened, the process's collection goal stays above twice
// the heap floor even when almost nothing is live: collections do not come
// every 4 MB of reads (goheap.go).
func TestOpenKeepsTheCollectionGoalAboveTheFloor(t *testing.T) {
	d, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "state.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	if goal := s[0].Value.Uint64(); goal < 32<<20 {
		t.Fatalf("the collection goal after a collection is %d bytes, want at least 32 MiB", goal)
	}
}
