// Package dbtest opens a real, migrated SQLite store in t.TempDir().
package dbtest

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"atrium/backend/db"
)

// Open opens a fresh store for t and closes it when t ends.
func Open(t testing.TB, clock func() time.Time) *db.DB {
	t.Helper()
	d, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "state.db"), db.Options{Clock: clock})
	if err != nil {
		t.Fatalf("dbtest.Open: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// Clock is a settable fake clock for tests, safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts a clock at a fixed instant.
func NewClock() *Clock { return &Clock{t: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)} }

// Now returns the current fake time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
