package db

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mattn/go-sqlite3"
)

// Every connection of both pools keeps its plans whatever is bound
// (stablePlans): without it each statement whose plan reads a bound value
// is parsed and planned again at every run.
func TestConnectionsKeepTheirPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := Open(ctx, filepath.Join(t.TempDir(), "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if e := plansErr.Load(); e != nil {
		t.Fatalf("a connection could not keep its plans: %v", *e)
	}
	check := func(pool string, s *sql.DB, n int) {
		t.Helper()
		var conns []*sql.Conn
		defer func() {
			for _, c := range conns {
				_ = c.Close()
			}
		}()
		for i := range n { // n connections at once: each a different one
			c, err := s.Conn(ctx)
			if err != nil {
				t.Fatalf("%s connection %d: %v", pool, i, err)
			}
			conns = append(conns, c)
			err = c.Raw(func(dc any) error {
				sc, ok := dc.(*sqlite3.SQLiteConn)
				if !ok {
					return fmt.Errorf("driver connection %T", dc)
				}
				if !plansStable(sc) {
					return fmt.Errorf("%s connection %d plans with bound values", pool, i)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	check("read", d.readSQL, 4)
	check("write", d.writeSQL, 1)
	// The raw baselines' way in.
	raw, err := sql.Open("sqlite3", "file:"+d.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	c, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Raw(func(dc any) error {
		sc := dc.(*sqlite3.SQLiteConn)
		if plansStable(sc) {
			return fmt.Errorf("a plain driver connection has the guarantee already: the check proves nothing")
		}
		if err := Configure(sc); err != nil {
			return err
		}
		if !plansStable(sc) {
			return fmt.Errorf("Configure did not set the guarantee")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
