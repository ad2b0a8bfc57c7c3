package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sync"
)

// readStmtCache is how many statements each read connection keeps prepared
// for the queries Each and uncached reads run (the driver's own cache,
// _stmt_cache_size: a statement goes back to it when its rows close).
const readStmtCache = 32

// Each runs q on the read pool and calls row with each row's values as the
// driver hands them over: int64, float64, string, []byte or nil per column.
// The slice is reused from row to row; the values in it are the caller's to
// keep. The hot reads (a list page, a transcript, search hits) decode rows
// this way: database/sql's Rows and Scan cost a list page of 50 a fifth of
// its time (a lock and a conversion per value, through reflection for every
// integer and nullable column), and database/sql starts a goroutine per
// query whose context can be cancelled (~20-30 µs here, waking an idle
// thread), where the driver only registers a callback. row's error stops the
// read and is returned as it is.
func (d *DB) Each(ctx context.Context, q string, args []any, row func(v []driver.Value) error) error {
	named := make([]driver.NamedValue, len(args))
	for i, a := range args {
		v, err := driver.DefaultParameterConverter.ConvertValue(a)
		if err != nil {
			return fmt.Errorf("argument %d: %w", i+1, err)
		}
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	d.eachTexts.add(q)
	conn, err := d.readSQL.Conn(ctx)
	if err != nil {
		return d.classify(err)
	}
	defer conn.Close()
	var rowErr error
	err = conn.Raw(func(dc any) error {
		qc, ok := dc.(driver.QueryerContext)
		if !ok {
			return fmt.Errorf("the driver's connection %T cannot query", dc)
		}
		rows, err := qc.QueryContext(ctx, q, named)
		if err != nil {
			return err
		}
		defer rows.Close()
		v := make([]driver.Value, len(rows.Columns()))
		for {
			switch err := rows.Next(v); {
			case err == io.EOF:
				return nil
			case err != nil:
				return err
			}
			if rowErr = row(v); rowErr != nil {
				return nil
			}
		}
	})
	if rowErr != nil {
		return rowErr
	}
	return d.classify(err)
}

// textSet is a bounded set of SQL texts (dynamic SQL must not grow it
// forever: past maxSeen texts it starts again).
type textSet struct {
	mu sync.Mutex
	m  map[string]struct{}
}

func (t *textSet) add(q string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.m[q]; ok {
		return
	}
	if t.m == nil || len(t.m) >= maxSeen {
		t.m = map[string]struct{}{}
	}
	t.m[q] = struct{}{}
}

func (t *textSet) texts() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.m))
	for q := range t.m {
		out = append(out, q)
	}
	return out
}

// Row is Each for a query of one row: its values (sql.ErrNoRows when there
// is none).
func (d *DB) Row(ctx context.Context, q string, args ...any) ([]driver.Value, error) {
	var out []driver.Value
	err := d.Each(ctx, q, args, func(v []driver.Value) error {
		out = append([]driver.Value(nil), v...)
		return errOneRow
	})
	switch {
	case errors.Is(err, errOneRow):
		return out, nil
	case err != nil:
		return nil, err
	}
	return nil, sql.ErrNoRows
}

var errOneRow = errors.New("one row read")
