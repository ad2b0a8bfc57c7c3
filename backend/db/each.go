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
	var rowErr error
	err := d.onReader(ctx, func(dc any) error {
		var err error
		rowErr, err = d.each(ctx, dc, q, args, row)
		return err
	})
	if rowErr != nil {
		return rowErr
	}
	return d.classify(err)
}

// onReader runs f on the driver's connection of one read connection.
func (d *DB) onReader(ctx context.Context, f func(dc any) error) error {
	conn, err := d.readSQL.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(f)
}

// each runs q on the driver's connection dc; row's error is returned
// apart from the read's.
func (d *DB) each(ctx context.Context, dc any, q string, args []any, row func(v []driver.Value) error) (rowErr, err error) {
	named := make([]driver.NamedValue, len(args))
	for i, a := range args {
		v, err := driver.DefaultParameterConverter.ConvertValue(a)
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i+1, err)
		}
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	d.eachTexts.add(q)
	qc, ok := dc.(driver.QueryerContext)
	if !ok {
		return nil, fmt.Errorf("the driver's connection %T cannot query", dc)
	}
	rows, err := qc.QueryContext(ctx, q, named)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	v := make([]driver.Value, len(rows.Columns()))
	for {
		switch err := rows.Next(v); {
		case err == io.EOF:
			return nil, nil
		case err != nil:
			return nil, err
		}
		if rowErr = row(v); rowErr != nil {
			return rowErr, nil
		}
	}
}

// EachFunc is the signature of Each: View passes f one on its snapshot.
type EachFunc func(ctx context.Context, q string, args []any, row func(v []driver.Value) error) error

// View runs f with an Each whose reads all see one snapshot of the store:
// they run on one read connection inside one read transaction. Besides the
// consistency (a read made of several statements sees no commit land
// between them), the connection takes the WAL's read lock once, not once
// per statement (two fcntl calls and an fstat each, which this kind of
// machine makes dear). f must not keep the function past its return.
func (d *DB) View(ctx context.Context, f func(each EachFunc) error) error {
	var fErr error
	dropped := false
	err := d.onReader(ctx, func(dc any) error {
		ec, ok := dc.(driver.ExecerContext)
		if !ok {
			return fmt.Errorf("the driver's connection %T cannot execute", dc)
		}
		// Without ctx's cancellation: given one, the driver runs an Exec in a
		// goroutine of its own. BEGIN (deferred) takes no lock, and ROLLBACK
		// must run.
		if _, err := ec.ExecContext(context.WithoutCancel(ctx), "BEGIN", nil); err != nil {
			return err
		}
		fErr = f(func(ctx context.Context, q string, args []any, row func(v []driver.Value) error) error {
			rowErr, err := d.each(ctx, dc, q, args, row)
			if rowErr != nil {
				return rowErr
			}
			return d.classify(err)
		})
		// Only reads ran: ROLLBACK ends the snapshot. A connection that
		// could not end it never goes back to the pool (every later read
		// on it would see this snapshot); a panic in f discards it too.
		// What f read stands either way.
		if _, err := ec.ExecContext(context.WithoutCancel(ctx), "ROLLBACK", nil); err != nil {
			dropped = true
			return driver.ErrBadConn
		}
		return nil
	})
	if fErr != nil || dropped {
		return fErr
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
