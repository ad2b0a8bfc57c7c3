package db

import (
	"database/sql/driver"
	"fmt"
	"time"
)

// Time is a timestamp stored as Unix milliseconds (INTEGER), so ordering and
// range filters in SQL are integer comparisons. The zero Time is stored as NULL.
type Time struct{ time.Time }

// At wraps t.
func At(t time.Time) Time { return Time{t} }

// Ms is t as Unix milliseconds, the form every query parameter uses.
func Ms(t time.Time) int64 { return t.UnixMilli() }

// Value implements driver.Valuer.
func (t Time) Value() (driver.Value, error) {
	if t.IsZero() {
		return nil, nil
	}
	return t.UnixMilli(), nil
}

// Scan implements sql.Scanner.
func (t *Time) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		t.Time = time.Time{}
	case int64:
		t.Time = time.UnixMilli(x).UTC()
	default:
		return fmt.Errorf("db.Time: cannot scan %T", v)
	}
	return nil
}

// Ptr returns nil for the zero time, for optional JSON fields.
func (t Time) Ptr() *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.Time
	return &u
}
