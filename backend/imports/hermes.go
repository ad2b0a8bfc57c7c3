package imports

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "github.com/mattn/go-sqlite3" // the "sqlite3" driver, for reading a foreign store

	"atrium/backend/apperr"
	"atrium/backend/sessions"
)

// The familiar agent's store (hermes_state.SessionDB) has changed shape
// across its versions: columns were added (title, finish_reason, reasoning,
// cwd, ...), never the few this reader needs. So the reader asks the store
// which columns it has and reads those it knows; only sessions.id,
// messages.session_id, role and content are required.

// hermesSession is one row of its sessions table, as far as it is read.
type hermesSession struct {
	id, source, userID, parent, title, endReason, modelConfig string
	started, ended                                            time.Time
}

// readHermes reads a state.db (or the folder that holds one), read-only.
func readHermes(ctx context.Context, path string, yield Yield, warn func(Problem)) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "state.db")
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path), RawQuery: "mode=ro&_busy_timeout=5000"}
	conn, err := sql.Open("sqlite3", u.String())
	if err != nil {
		return apperr.Wrap(apperr.Invalid, err, "open %s", path)
	}
	defer conn.Close()
	conn.SetMaxOpenConns(1)
	sessCols, err := tableColumns(ctx, conn, "sessions")
	if err != nil {
		return apperr.Wrap(apperr.Invalid, err, "%s is not a readable SQLite store", path)
	}
	msgCols, err := tableColumns(ctx, conn, "messages")
	if err != nil {
		return apperr.Wrap(apperr.Invalid, err, "%s is not a readable SQLite store", path)
	}
	for _, need := range [][2]string{{"sessions", "id"}, {"messages", "session_id"}, {"messages", "role"}, {"messages", "content"}} {
		cols := sessCols
		if need[0] == "messages" {
			cols = msgCols
		}
		if !cols[need[1]] {
			return apperr.New(apperr.Invalid, "%s is not the familiar agent's state.db: table %s has no column %s", path, need[0], need[1])
		}
	}
	rows, err := hermesSessions(ctx, conn, sessCols)
	if err != nil {
		return apperr.Wrap(apperr.Invalid, err, "read the sessions of %s", path)
	}
	byID := make(map[string]*hermesSession, len(rows))
	for i := range rows {
		byID[rows[i].id] = &rows[i]
	}
	var all map[string][]hermesRow
	if !hermesIndexed(ctx, conn) {
		// A store that lost its index: one pass, held in memory, rather
		// than a scan of the whole table for every session.
		if all, err = hermesAll(ctx, conn, msgCols); err != nil {
			return apperr.Wrap(apperr.Invalid, err, "read the messages of %s", path)
		}
	}
	for _, i := range parentsFirst(len(rows), func(i int) string { return rows[i].id }, func(i int) string { return rows[i].parent },
		func(i int) { rows[i].parent = "" }, path, warn) {
		r := rows[i]
		if err := ctx.Err(); err != nil {
			return err
		}
		it := sessions.Imported{
			Origin:    sessions.Origin{Kind: sessions.ImportHermes, Key: r.id, Path: path},
			Reading:   readingHermes,
			Title:     r.title,
			EndReason: r.endReason,
			SenderID:  r.userID,
		}
		it.Source, it.Platform = hermesSource(r.source)
		it.StartedAt = r.started
		if !r.ended.IsZero() {
			t := r.ended
			it.EndedAt = &t
			if it.EndReason == "" {
				it.EndReason = "ended"
			}
		}
		if r.parent != "" {
			it.ParentKey, it.Relation = r.parent, hermesRelation(r, byID)
		}
		rowsOf, ok := all[r.id]
		if all == nil {
			rowsOf, err = hermesRows(ctx, conn, msgCols, r.id)
			if err != nil {
				return apperr.Wrap(apperr.Invalid, err, "read the messages of session %s in %s", r.id, path)
			}
		} else if ok {
			delete(all, r.id)
		}
		msgs := hermesMessages(r.id, path, rowsOf, warn)
		it.Messages = msgs
		if it.Title == "" {
			for _, m := range msgs {
				if m.Role == "user" && strings.TrimSpace(m.Content) != "" {
					it.Title = promptTitle(m.Content)
					break
				}
			}
		}
		if err := yield(it); err != nil {
			return err
		}
	}
	return nil
}

// tableColumns is the columns of table in a foreign store (an error when it
// has no such table): what a reader can ask of it.
func tableColumns(ctx context.Context, conn *sql.DB, table string) (map[string]bool, error) {
	rows, err := conn.QueryContext(ctx, `SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		out[name] = true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no table %s", table)
	}
	return out, nil
}

// col is the column's text in a query, or a NULL of that name when the
// store has no such column.
func col(cols map[string]bool, name string) string {
	if cols[name] {
		return `"` + name + `"`
	}
	return "NULL"
}

func hermesSessions(ctx context.Context, conn *sql.DB, cols map[string]bool) ([]hermesSession, error) {
	q := fmt.Sprintf(`SELECT id, %s, %s, %s, %s, %s, %s, %s, %s FROM sessions ORDER BY %s, id`,
		col(cols, "source"), col(cols, "user_id"), col(cols, "parent_session_id"), col(cols, "title"), col(cols, "end_reason"),
		col(cols, "model_config"), col(cols, "started_at"), col(cols, "ended_at"), col(cols, "started_at"))
	rows, err := conn.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []hermesSession
	for rows.Next() {
		var id, source, user, parent, title, reason, config sql.NullString
		var started, ended any
		if err := rows.Scan(&id, &source, &user, &parent, &title, &reason, &config, &started, &ended); err != nil {
			return nil, err
		}
		if !id.Valid || id.String == "" {
			continue
		}
		r := hermesSession{id: id.String, source: source.String, userID: user.String, parent: parent.String,
			title: title.String, endReason: reason.String, modelConfig: config.String, started: anyTime(started), ended: anyTime(ended)}
		out = append(out, r)
	}
	return out, rows.Err()
}

// parentsFirst orders n sessions (their indexes; id and parent say each
// one's id and its parent's) so that each comes after its parent, keeping
// the store's order (oldest first) otherwise. A link that loops back on
// itself is cut (dropParent), with a problem said.
func parentsFirst(n int, id, parent func(i int) string, dropParent func(i int), path string, warn func(Problem)) []int {
	in := make(map[string]bool, n)
	for i := 0; i < n; i++ {
		in[id(i)] = true
	}
	children := map[string][]int{}
	var roots []int
	for i := 0; i < n; i++ {
		if p := parent(i); in[p] && p != id(i) {
			children[p] = append(children[p], i)
		} else {
			roots = append(roots, i)
		}
	}
	out := make([]int, 0, n)
	placed := make([]bool, n)
	var walk func(i int)
	walk = func(i int) {
		placed[i] = true
		out = append(out, i)
		for _, c := range children[id(i)] {
			if !placed[c] {
				walk(c)
			}
		}
	}
	for _, i := range roots {
		walk(i)
	}
	// What is left sits on a cycle of parent links.
	for i := 0; i < n; i++ {
		if !placed[i] {
			warn(Problem{Path: path, Message: fmt.Sprintf("session %s: its parent links loop back to it; imported without its parent", id(i))})
			dropParent(i)
			walk(i)
		}
	}
	return out
}

// hermesSource maps the familiar agent's source ("cli", "telegram",
// "cron", ...) onto Atrium's sources. The platform says where the
// conversation happened: a chat platform's name, else the agent's
// (PlatformHermes), so imported sessions can be picked out by platform.
func hermesSource(src string) (source, platform string) {
	switch strings.ToLower(strings.TrimSpace(src)) {
	case "", "cli", "tui", "acp", "local", "desktop":
		return "cli", PlatformHermes
	case "cron", "scheduler":
		return "cron", PlatformHermes
	case "subagent", "delegate", "delegation":
		return "subagent", PlatformHermes
	}
	return "gateway", strings.ToLower(strings.TrimSpace(src))
}

// hermesRelation tells how a child continues its parent there: a delegate
// carries the _delegate_from marker; a compression split ended its parent
// with the reason "compression"; anything else is a branch.
func hermesRelation(r hermesSession, byID map[string]*hermesSession) string {
	if strings.Contains(r.modelConfig, "_delegate_from") {
		var mc map[string]any
		if json.Unmarshal([]byte(r.modelConfig), &mc) == nil && mc["_delegate_from"] != nil {
			return sessions.RelationDelegate
		}
	}
	if p := byID[r.parent]; p != nil && p.endReason == "compression" {
		return sessions.RelationCompression
	}
	if r.source == "subagent" {
		return sessions.RelationDelegate
	}
	return sessions.RelationBranch
}

// hermesToolCall is one entry of a message's tool_calls (the OpenAI shape).
type hermesToolCall struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// hermesRow is one row of its messages table, as far as it is read.
type hermesRow struct {
	role, content, callID, calls, tool sql.NullString
	ts                                 any
}

// hermesQuery selects a session's message rows in the store's own order;
// without the session id bound, every session's, grouped.
func hermesQuery(cols map[string]bool, one bool) string {
	order := "rowid"
	if cols["timestamp"] {
		order = `"timestamp", rowid`
	}
	where := ""
	if one {
		where = "WHERE session_id = ?"
	} else {
		order = "session_id, " + order
	}
	return fmt.Sprintf(`SELECT session_id, role, content, %s, %s, %s, %s FROM messages %s ORDER BY %s`,
		col(cols, "tool_call_id"), col(cols, "tool_calls"), col(cols, "tool_name"), col(cols, "timestamp"), where, order)
}

// hermesIndexed reports whether messages has an index led by session_id
// (every version of the familiar agent's store makes one): then a session's
// messages are one lookup, else one query per session would read the whole
// table each time.
func hermesIndexed(ctx context.Context, conn *sql.DB) bool {
	var n int
	err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_index_list('messages') l
		WHERE (SELECT name FROM pragma_index_info(l.name) WHERE seqno = 0) = 'session_id'`).Scan(&n)
	return err == nil && n > 0
}

// hermesAll reads every message row at once, by session (a store without
// the index).
func hermesAll(ctx context.Context, conn *sql.DB, cols map[string]bool) (map[string][]hermesRow, error) {
	out := map[string][]hermesRow{}
	err := hermesScan(ctx, conn, hermesQuery(cols, false), nil, func(sid string, r hermesRow) { out[sid] = append(out[sid], r) })
	return out, err
}

// hermesRows reads one session's message rows.
func hermesRows(ctx context.Context, conn *sql.DB, cols map[string]bool, id string) ([]hermesRow, error) {
	var out []hermesRow
	err := hermesScan(ctx, conn, hermesQuery(cols, true), []any{id}, func(_ string, r hermesRow) { out = append(out, r) })
	return out, err
}

// hermesScan runs a hermesQuery and hands each row to each.
func hermesScan(ctx context.Context, conn *sql.DB, q string, args []any, each func(sid string, r hermesRow)) error {
	rows, err := conn.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var sid sql.NullString
		var r hermesRow
		if err := rows.Scan(&sid, &r.role, &r.content, &r.callID, &r.calls, &r.tool, &r.ts); err != nil {
			return err
		}
		each(sid.String, r)
	}
	return rows.Err()
}

// hermesMessages turns a session's rows into Atrium's messages.
func hermesMessages(id, path string, rows []hermesRow, warn func(Problem)) []sessions.ImportedMessage {
	var out []sessions.ImportedMessage
	for i, r := range rows {
		n := i + 1
		role, content, callID, calls, tool := r.role, r.content, r.callID, r.calls, r.tool
		at := anyTime(r.ts)
		switch role.String {
		case "user", "system":
			out = append(out, sessions.ImportedMessage{Role: role.String, Content: content.String, CreatedAt: at})
		case "tool":
			out = append(out, sessions.ImportedMessage{Role: "tool", Content: content.String, ToolName: tool.String,
				ToolCallID: callID.String, CreatedAt: at})
		case "assistant":
			if strings.TrimSpace(content.String) != "" {
				out = append(out, sessions.ImportedMessage{Role: "assistant", Content: content.String, CreatedAt: at})
			}
			if calls.String == "" || calls.String == "null" || calls.String == "[]" {
				continue
			}
			var list []hermesToolCall
			if err := json.Unmarshal([]byte(calls.String), &list); err != nil {
				warn(Problem{Path: path, Message: fmt.Sprintf("session %s, message %d: its tool calls are not a JSON list (%v); the calls are left out", id, n, err)})
				continue
			}
			for _, c := range list {
				name := c.Function.Name
				if name == "" {
					name = c.Name
				}
				out = append(out, sessions.ImportedMessage{Role: "assistant", Content: argumentsText(c.Function.Arguments),
					ToolName: name, ToolCallID: c.ID, CreatedAt: at})
			}
		default:
			warn(Problem{Path: path, Message: fmt.Sprintf("session %s, message %d: role %q is not one Atrium keeps; left out", id, n, role.String)})
		}
	}
	return out
}

// argumentsText is a call's arguments as text: the OpenAI shape keeps them
// as a JSON string holding JSON; some writers keep the object itself.
func argumentsText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return "{}"
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// anyTime reads a stored time: seconds since the epoch (REAL or INTEGER,
// or their text), or an ISO 8601 text. Anything else is no time.
func anyTime(v any) time.Time {
	switch x := v.(type) {
	case float64:
		return unixSeconds(x)
	case int64:
		return unixSeconds(float64(x))
	case []byte:
		return anyTime(string(x))
	case string:
		if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil {
			return unixSeconds(f)
		}
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999"} {
			if t, err := time.Parse(layout, strings.TrimSpace(x)); err == nil {
				return t.UTC()
			}
		}
	}
	return time.Time{}
}

// unixSeconds is a REAL of seconds since the epoch, to the millisecond.
func unixSeconds(v float64) time.Time {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 || v > 1e11 {
		return time.Time{}
	}
	sec, frac := math.Modf(v)
	return time.Unix(int64(sec), int64(math.Round(frac*1e3))*int64(time.Millisecond)).UTC()
}
