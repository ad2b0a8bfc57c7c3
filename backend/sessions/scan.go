package sessions

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"strings"
	"time"

	"atrium/backend/db"
)

// Hand-written scans for the hot reads (lists, a session, a transcript):
// gorm's reflection scan was half of their CPU. The column lists name every
// column in the order the scans read them; TestScansCoverEveryColumn holds
// them to the schema.

const sessionColumnList = `pk, id, source, title, profile, parent_session_id, relation, started_at, ended_at, end_reason,
	last_activity_at, archived, archived_at, archived_by, pinned, message_count, token_count, platform, sender_id,
	sender_name, trashed_at, trash_batch, trash_reason, trash_reported, chain_root`

// messageColumnList is every column of messages but session_id: a
// transcript is read by its session's id, which every row would repeat.
const messageColumnList = `id, role, content, sent_content, tool_name, tool_call_id, token_count, created_at, active, pos`

// columns prefixes every column of list with alias.
func columns(list, alias string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		parts[i] = alias + "." + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

var (
	sessionCols  = columns(sessionColumnList, "sessions")
	sessionColsS = columns(sessionColumnList, "s")
)

type scanner interface{ Scan(dest ...any) error }

func msTime(ms int64) db.Time { return db.Time{Time: time.UnixMilli(ms).UTC()} }

// Rows are decoded from the values the driver hands over (int64, float64,
// string, []byte or nil per column): database/sql's Scan converts every
// integer and every nullable column through reflection, a third of a list
// page's Go time. scanValues scans a row into such values (database/sql
// hands a value to a *any as it is).
func scanValues(sc scanner, n int) ([]driver.Value, error) {
	v := make([]driver.Value, n)
	p := make([]any, n)
	for i := range v {
		p[i] = (*any)(&v[i])
	}
	if err := sc.Scan(p...); err != nil {
		return nil, err
	}
	return v, nil
}

func vInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case float64:
		return int64(x)
	case bool:
		if x {
			return 1
		}
	}
	return 0
}

func vStr(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	}
	return ""
}

func vStrPtr(v any) *string {
	if v == nil {
		return nil
	}
	s := vStr(v)
	return &s
}

func vMsPtr(v any) *db.Time {
	if v == nil {
		return nil
	}
	t := msTime(vInt(v))
	return &t
}

func vFloatPtr(v any) *float64 {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case int64:
		f = float64(x)
	default:
		return nil
	}
	return &f
}

// sessionColumnCount is how many columns sessionColumnList names.
var sessionColumnCount = len(strings.Split(sessionColumnList, ","))

// sessionOf decodes one row of sessionColumnList.
func sessionOf(v []driver.Value) Session {
	return Session{PK: vInt(v[0]), ID: vStr(v[1]), Source: vStr(v[2]), Title: vStr(v[3]), Profile: vStr(v[4]),
		ParentSessionID: vStrPtr(v[5]), Relation: vStr(v[6]), StartedAt: msTime(vInt(v[7])), EndedAt: vMsPtr(v[8]),
		EndReason: vStr(v[9]), LastActivityAt: msTime(vInt(v[10])), Archived: vInt(v[11]) != 0, ArchivedAt: vMsPtr(v[12]),
		ArchivedBy: vStr(v[13]), Pinned: vInt(v[14]) != 0, MessageCount: vInt(v[15]), TokenCount: vInt(v[16]),
		Platform: vStr(v[17]), SenderID: vStr(v[18]), SenderName: vStr(v[19]), TrashedAt: vMsPtr(v[20]),
		TrashBatch: vStr(v[21]), TrashReason: vStr(v[22]), TrashReported: vInt(v[23]) != 0, ChainRoot: vStrPtr(v[24])}
}

// scanSession reads one row of sessionColumnList.
func scanSession(sc scanner) (Session, error) {
	v, err := scanValues(sc, sessionColumnCount)
	if err != nil {
		return Session{}, err
	}
	return sessionOf(v), nil
}

// eachSession reads the rows of q, each sessionColumnList then as many more
// columns as more takes (none when more is nil), through each (db.Each, or
// a View's on one snapshot). n is how
// many rows are expected (the slice's room: a list page grown row by row
// allocated two and a half times its size; at most 128 are made room for).
func eachSession(ctx context.Context, each eachFunc, q string, args []any, n int, more func(Session, []driver.Value)) ([]Session, error) {
	out := make([]Session, 0, min(n, 128))
	err := each(ctx, q, args, func(v []driver.Value) error {
		s := sessionOf(v)
		if more != nil {
			more(s, v[sessionColumnCount:])
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// messageOf decodes one row of messageColumnList, a message of session.
func messageOf(session string, v []driver.Value) Message {
	return Message{ID: vInt(v[0]), SessionID: session, Role: vStr(v[1]), Content: vStr(v[2]), SentContent: vStrPtr(v[3]),
		ToolName: vStr(v[4]), ToolCallID: vStr(v[5]), TokenCount: vInt(v[6]), CreatedAt: msTime(vInt(v[7])),
		Active: vInt(v[8]) != 0, Pos: vFloatPtr(v[9])}
}

// scanAll reads every row with one and closes rows (err is the query's).
func scanAll[T any](rows *sql.Rows, err error, one func(scanner) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := one(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// queryIDs runs a query of one text column and returns its values ([] for
// none).
func queryIDs(ctx context.Context, read queryFunc, q string, args ...any) ([]string, error) {
	ids, err := queryColumn[string](ctx, read, q, args...)
	if ids == nil && err == nil {
		ids = []string{}
	}
	return ids, err
}

// queryColumn runs a query of one column and returns its values.
func queryColumn[T any](ctx context.Context, read queryFunc, q string, args ...any) ([]T, error) {
	rows, err := read(ctx, q, args...)
	return scanAll(rows, err, func(sc scanner) (T, error) {
		var v T
		err := sc.Scan(&v)
		return v, err
	})
}
