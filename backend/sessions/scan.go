package sessions

import (
	"context"
	"database/sql"
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

const messageColumnList = `id, session_id, role, content, sent_content, tool_name, tool_call_id, token_count, created_at, active, pos`

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
	messageCols  = columns(messageColumnList, "messages")
)

type scanner interface{ Scan(dest ...any) error }

// extraScanner reads a row of a column list followed by more columns: the
// list's scan fills its own, extra the ones after.
type extraScanner struct {
	sc    scanner
	extra []any
}

func (e extraScanner) Scan(dest ...any) error { return e.sc.Scan(append(dest, e.extra...)...) }

func msTime(ms int64) db.Time { return db.Time{Time: time.UnixMilli(ms).UTC()} }

func msTimePtr(v sql.NullInt64) *db.Time {
	if !v.Valid {
		return nil
	}
	t := msTime(v.Int64)
	return &t
}

func strPtr(v sql.NullString) *string {
	if !v.Valid {
		return nil
	}
	s := v.String
	return &s
}

// scanSession reads one row of sessionColumnList.
func scanSession(sc scanner) (Session, error) {
	var s Session
	var parent, chainRoot sql.NullString
	var ended, archivedAt, trashedAt sql.NullInt64
	var started, last, archived, pinned, reported int64
	if err := sc.Scan(&s.PK, &s.ID, &s.Source, &s.Title, &s.Profile, &parent, &s.Relation, &started, &ended, &s.EndReason,
		&last, &archived, &archivedAt, &s.ArchivedBy, &pinned, &s.MessageCount, &s.TokenCount, &s.Platform, &s.SenderID,
		&s.SenderName, &trashedAt, &s.TrashBatch, &s.TrashReason, &reported, &chainRoot); err != nil {
		return Session{}, err
	}
	s.ParentSessionID, s.ChainRoot = strPtr(parent), strPtr(chainRoot)
	s.StartedAt, s.LastActivityAt = msTime(started), msTime(last)
	s.EndedAt, s.ArchivedAt, s.TrashedAt = msTimePtr(ended), msTimePtr(archivedAt), msTimePtr(trashedAt)
	s.Archived, s.Pinned, s.TrashReported = archived != 0, pinned != 0, reported != 0
	return s, nil
}

// scanSessions reads every row of sessionColumnList and closes rows.
func scanSessions(rows *sql.Rows, err error) ([]Session, error) {
	return scanAll(rows, err, scanSession)
}

// scanMessages reads every row of messageColumnList and closes rows.
func scanMessages(rows *sql.Rows, err error) ([]Message, error) {
	return scanAll(rows, err, scanMessage)
}

func scanMessage(sc scanner) (Message, error) {
	var m Message
	var sent sql.NullString
	var pos sql.NullFloat64
	var created, active int64
	if err := sc.Scan(&m.ID, &m.SessionID, &m.Role, &m.Content, &sent, &m.ToolName, &m.ToolCallID, &m.TokenCount,
		&created, &active, &pos); err != nil {
		return Message{}, err
	}
	m.SentContent, m.CreatedAt, m.Active = strPtr(sent), msTime(created), active != 0
	if pos.Valid {
		p := pos.Float64
		m.Pos = &p
	}
	return m, nil
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
