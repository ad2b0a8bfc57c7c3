package imports

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/sessions"
)

// OpenCode keeps its history in $XDG_DATA_HOME/opencode (else
// ~/.local/share/opencode). Since its 1.2 versions that is opencode.db, a
// SQLite store: session (id, parent_id, title, time_created, ...), message
// (id, session_id, time_created, data: the message's JSON without its ids)
// and part (id, message_id, session_id, data: the part's JSON). Before, the
// same objects were files under storage/: session/<project>/<id>.json,
// message/<session>/<id>.json and part/<message>/<id>.json, each with its
// ids; OpenCode moves them into the store when it is upgraded.
//
// A message is {role: "user"|"assistant", time: {created}, ...}; an
// assistant's "summary": true marks the summary a compaction wrote. Its
// parts, in the order of their ids: "text" (synthetic: written by OpenCode,
// not the person; ignored), "file" (an attachment), "tool" ({callID, tool,
// state: {status: pending|running|completed|error, input, output, error}}),
// "compaction" (the person asked for one), and parts that are not the
// conversation (reasoning, step-start, step-finish, snapshot, patch, agent,
// subtask, retry). A subagent's session (the task tool) has its parent in
// parent_id.

// openCodeSession is one session's row (or file).
type openCodeSession struct {
	id, parent, title, path string
	created, updated        time.Time
}

// openCodeMessage is one message with its parts, in order.
type openCodeMessage struct {
	id      string
	created time.Time
	data    json.RawMessage
	parts   []json.RawMessage
}

// openCodeSource is where an OpenCode history is read from: its store, or
// the files of its earlier versions.
type openCodeSource interface {
	sessions(ctx context.Context) ([]openCodeSession, error)
	messages(ctx context.Context, s openCodeSession) ([]openCodeMessage, error)
	close()
}

// readOpenCode reads OpenCode's history at root: its data folder (the
// store in it, else its storage folder), opencode.db itself, or a storage
// folder.
func readOpenCode(ctx context.Context, root string, yield Yield, warn func(Problem)) error {
	src, err := openOpenCode(root, warn)
	if err != nil {
		return err
	}
	defer src.close()
	all, err := src.sessions(ctx)
	if err != nil {
		return apperr.Wrap(apperr.Invalid, err, "read the sessions of %s", root)
	}
	order := parentsFirst(len(all), func(i int) string { return all[i].id }, func(i int) string { return all[i].parent },
		func(i int) { all[i].parent = "" }, root, warn)
	for _, i := range order {
		if err := ctx.Err(); err != nil {
			return err
		}
		s := all[i]
		msgs, err := src.messages(ctx, s)
		if err != nil {
			return apperr.Wrap(apperr.Invalid, err, "read the messages of session %s in %s", s.id, root)
		}
		if n := len(msgs); n > 0 && openCodeRunning(msgs[n-1]) && writtenLately(s.updated) {
			// The model is still answering: its message comes in at the
			// next import, whole, rather than now with part of its text
			// or a call without its result (OpenCode writes them again in
			// place as they grow).
			msgs = msgs[:n-1]
		}
		conv := openCodeConversation(s, msgs, warn)
		it := sessions.Imported{
			Origin:    sessions.Origin{Kind: sessions.ImportOpenCode, Key: s.id, Path: s.path},
			Reading:   readingOpenCode,
			Title:     promptTitle(s.title),
			Source:    "cli",
			Platform:  PlatformOpenCode,
			StartedAt: s.created,
			Messages:  conv.msgs,
		}
		if openCodeDefaultTitle(s.title) || it.Title == "" {
			it.Title = promptTitle(conv.title)
		}
		if s.parent != "" {
			it.ParentKey, it.Relation = s.parent, sessions.RelationDelegate
		}
		if err := yield(it); err != nil {
			return err
		}
	}
	return nil
}

// openCodeDefaultTitle: the title OpenCode gives a session before it names
// it ("New session - <time>", a subagent's "Child session - <time>").
func openCodeDefaultTitle(t string) bool {
	return strings.HasPrefix(t, "New session - ") || strings.HasPrefix(t, "Child session - ")
}

func openOpenCode(root string, warn func(Problem)) (openCodeSource, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return nil, apperr.Wrap(apperr.Invalid, err, "import from %s", root)
	}
	if !fi.IsDir() {
		return openOpenCodeStore(root)
	}
	if db := filepath.Join(root, "opencode.db"); exists(db) {
		return openOpenCodeStore(db)
	}
	for _, dir := range []string{filepath.Join(root, "storage"), root} {
		if st, err := os.Stat(filepath.Join(dir, "session")); err == nil && st.IsDir() {
			return &openCodeFiles{root: dir, warn: warn}, nil
		}
	}
	return nil, apperr.New(apperr.NotFound, "nothing to import from opencode: %s holds neither opencode.db nor a storage folder", root)
}

// ---- the store (opencode.db) ----

type openCodeStore struct {
	path string
	conn *sql.DB
}

func openOpenCodeStore(path string) (openCodeSource, error) {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path), RawQuery: "mode=ro&_busy_timeout=5000"}
	conn, err := sql.Open("sqlite3", u.String())
	if err != nil {
		return nil, apperr.Wrap(apperr.Invalid, err, "open %s", path)
	}
	conn.SetMaxOpenConns(1)
	// A store that cannot be read at all is said so; one that lacks a
	// table or a column the reader takes is not OpenCode's.
	var n int
	if err := conn.QueryRow(`SELECT COUNT(*) FROM sqlite_schema`).Scan(&n); err != nil {
		conn.Close()
		return nil, apperr.Wrap(apperr.Invalid, err, "%s is not a readable SQLite store", path)
	}
	for _, need := range []struct {
		table string
		cols  []string
	}{{"session", []string{"id", "parent_id", "title", "time_created"}}, {"message", []string{"id", "session_id", "time_created", "data"}},
		{"part", []string{"id", "message_id", "session_id", "data"}}} {
		have, err := tableColumns(context.Background(), conn, need.table)
		if err != nil {
			conn.Close()
			return nil, apperr.Wrap(apperr.Invalid, err, "%s is not OpenCode's store", path)
		}
		for _, c := range need.cols {
			if !have[c] {
				conn.Close()
				return nil, apperr.New(apperr.Invalid, "%s is not OpenCode's store: table %s has no column %s", path, need.table, c)
			}
		}
	}
	return &openCodeStore{path: path, conn: conn}, nil
}

func (o *openCodeStore) close() { o.conn.Close() }

func (o *openCodeStore) sessions(ctx context.Context) ([]openCodeSession, error) {
	rows, err := o.conn.QueryContext(ctx, `SELECT id, COALESCE(parent_id, ''), COALESCE(title, ''), COALESCE(time_created, 0),
		COALESCE(time_updated, 0) FROM session ORDER BY time_created, id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []openCodeSession
	for rows.Next() {
		var s openCodeSession
		var created, updated int64
		if err := rows.Scan(&s.id, &s.parent, &s.title, &created, &updated); err != nil {
			return nil, err
		}
		s.created, s.updated, s.path = openCodeTime(created), openCodeTime(updated), o.path
		out = append(out, s)
	}
	return out, rows.Err()
}

func (o *openCodeStore) messages(ctx context.Context, s openCodeSession) ([]openCodeMessage, error) {
	rows, err := o.conn.QueryContext(ctx, `SELECT id, COALESCE(time_created, 0), data FROM message WHERE session_id = ? ORDER BY time_created, id`, s.id)
	if err != nil {
		return nil, err
	}
	var out []openCodeMessage
	at := map[string]int{}
	for rows.Next() {
		var m openCodeMessage
		var created int64
		var data sql.RawBytes
		if err := rows.Scan(&m.id, &created, &data); err != nil {
			rows.Close()
			return nil, err
		}
		m.created, m.data = openCodeTime(created), append(json.RawMessage(nil), data...)
		at[m.id] = len(out)
		out = append(out, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	parts, err := o.conn.QueryContext(ctx, `SELECT message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id`, s.id)
	if err != nil {
		return nil, err
	}
	defer parts.Close()
	for parts.Next() {
		var mid string
		var data sql.RawBytes
		if err := parts.Scan(&mid, &data); err != nil {
			return nil, err
		}
		if i, ok := at[mid]; ok {
			out[i].parts = append(out[i].parts, append(json.RawMessage(nil), data...))
		}
	}
	return out, parts.Err()
}

// openCodeRunning says whether an assistant message is still being written:
// not completed and not failed, or with a tool call pending or running.
func openCodeRunning(m openCodeMessage) bool {
	var info struct {
		Role  string          `json:"role"`
		Error json.RawMessage `json:"error"`
		Time  struct {
			Completed int64 `json:"completed"`
		} `json:"time"`
	}
	if json.Unmarshal(m.data, &info) != nil || info.Role != "assistant" {
		return false
	}
	if info.Time.Completed == 0 && (len(info.Error) == 0 || jsonKind(info.Error) == 'n') {
		return true
	}
	for _, raw := range m.parts {
		var p struct {
			Type  string `json:"type"`
			State struct {
				Status string `json:"status"`
			} `json:"state"`
		}
		if json.Unmarshal(raw, &p) == nil && p.Type == "tool" && (p.State.Status == "pending" || p.State.Status == "running") {
			return true
		}
	}
	return false
}

// openCodeTime reads OpenCode's times: milliseconds since the epoch.
func openCodeTime(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// ---- the files of earlier versions (storage/) ----

type openCodeFiles struct {
	root string
	warn func(Problem)
}

func (o *openCodeFiles) close() {}

// jsonFiles lists the .json files of dir, sorted (none when it does not
// exist).
func (o *openCodeFiles) jsonFiles(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !os.IsNotExist(err) {
			o.warn(ioProblem(dir, err))
		}
		return nil
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && strings.EqualFold(filepath.Ext(e.Name()), ".json") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out
}

func (o *openCodeFiles) sessions(context.Context) ([]openCodeSession, error) {
	var out []openCodeSession
	walkFiles(filepath.Join(o.root, "session"), o.warn, func(p string) {
		if !strings.EqualFold(filepath.Ext(p), ".json") {
			return
		}
		obj := jsonFile(p, o.warn)
		if obj == nil {
			return
		}
		s := openCodeSession{id: fieldText(obj, "id"), parent: fieldText(obj, "parentID"), title: fieldText(obj, "title"), path: p}
		if s.id == "" {
			o.warn(Problem{Path: p, Message: "a session without its id"})
			return
		}
		var t struct {
			Created int64 `json:"created"`
			Updated int64 `json:"updated"`
		}
		_ = json.Unmarshal(obj["time"], &t)
		s.created, s.updated = openCodeTime(t.Created), openCodeTime(t.Updated)
		out = append(out, s)
	})
	sortByCreated(out, func(s openCodeSession) (time.Time, string) { return s.created, s.id })
	return out, nil
}

func (o *openCodeFiles) messages(_ context.Context, s openCodeSession) ([]openCodeMessage, error) {
	var out []openCodeMessage
	for _, p := range o.jsonFiles(filepath.Join(o.root, "message", s.id)) {
		obj := jsonFile(p, o.warn)
		if obj == nil {
			continue
		}
		m := openCodeMessage{id: fieldText(obj, "id")}
		if m.id == "" {
			o.warn(Problem{Path: p, Message: "a message without its id"})
			continue
		}
		m.data, _ = json.Marshal(obj)
		var t struct {
			Time struct {
				Created int64 `json:"created"`
			} `json:"time"`
		}
		_ = json.Unmarshal(m.data, &t)
		m.created = openCodeTime(t.Time.Created)
		for _, pp := range o.jsonFiles(filepath.Join(o.root, "part", m.id)) {
			if part := jsonFile(pp, o.warn); part != nil {
				raw, _ := json.Marshal(part)
				m.parts = append(m.parts, raw)
			}
		}
		out = append(out, m)
	}
	sortByCreated(out, func(m openCodeMessage) (time.Time, string) { return m.created, m.id })
	return out, nil
}

// sortByCreated orders what the files gave as the store's queries order
// it: by creation time, then id.
func sortByCreated[T any](s []T, key func(T) (time.Time, string)) {
	slices.SortStableFunc(s, func(a, b T) int {
		ta, ia := key(a)
		tb, ib := key(b)
		return cmp.Or(ta.Compare(tb), strings.Compare(ia, ib))
	})
}

// ---- messages ----

type openCodeConv struct {
	msgs  []sessions.ImportedMessage
	title string // the first thing the person said
}

type openCodePart struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Synthetic bool            `json:"synthetic"`
	Ignored   bool            `json:"ignored"`
	Mime      string          `json:"mime"`
	Filename  string          `json:"filename"`
	URL       string          `json:"url"`
	CallID    string          `json:"callID"`
	Tool      string          `json:"tool"`
	State     json.RawMessage `json:"state"`
	Time      struct {
		Start int64 `json:"start"`
		End   int64 `json:"end"`
	} `json:"time"`
}

type openCodeToolState struct {
	Status string          `json:"status"`
	Input  json.RawMessage `json:"input"`
	Output string          `json:"output"`
	Error  string          `json:"error"`
	Time   struct {
		Start int64 `json:"start"`
		End   int64 `json:"end"`
	} `json:"time"`
}

// openCodeConversation turns a session's messages into Atrium's: the
// person's words; the model's text, its tool calls each with its result,
// in the order it wrote them; a compaction's summary as Atrium keeps its
// own.
func openCodeConversation(s openCodeSession, msgs []openCodeMessage, warn func(Problem)) openCodeConv {
	var c openCodeConv
	for _, m := range msgs {
		var info struct {
			Role    string          `json:"role"`
			Summary json.RawMessage `json:"summary"`
		}
		if err := json.Unmarshal(m.data, &info); err != nil {
			warn(Problem{Path: s.path, Message: fmt.Sprintf("message %s of session %s: not a message object", m.id, s.id)})
			continue
		}
		var parts []openCodePart
		for _, raw := range m.parts {
			var p openCodePart
			if err := json.Unmarshal(raw, &p); err != nil {
				warn(Problem{Path: s.path, Message: fmt.Sprintf("a part of message %s of session %s of an unexpected shape: %v", m.id, s.id, err)})
				continue
			}
			parts = append(parts, p)
		}
		switch info.Role {
		case "user":
			if text := openCodeText(parts, true); strings.TrimSpace(text) != "" {
				c.msgs = append(c.msgs, sessions.ImportedMessage{Role: "user", Content: text, CreatedAt: m.created})
				if c.title == "" {
					c.title = text
				}
			}
		case "assistant":
			if jsonKind(info.Summary) == 't' {
				if text := openCodeText(parts, false); strings.TrimSpace(text) != "" {
					c.msgs = append(c.msgs, sessions.ImportedMessage{Role: "system", Content: jsonlSummaryPrefix + "\n" + text, CreatedAt: m.created})
				}
				continue
			}
			c.assistant(parts, m.created)
		default:
			warn(Problem{Path: s.path, Message: fmt.Sprintf("message %s of session %s has role %q: skipped", m.id, s.id, info.Role)})
		}
	}
	return c
}

// assistant keeps a model message: its text up to each tool call, the call,
// its result.
func (c *openCodeConv) assistant(parts []openCodePart, at time.Time) {
	var text []openCodePart
	flush := func() {
		if t := openCodeText(text, false); strings.TrimSpace(t) != "" {
			c.msgs = append(c.msgs, sessions.ImportedMessage{Role: "assistant", Content: t, CreatedAt: at})
		}
		text = text[:0]
	}
	for _, p := range parts {
		switch p.Type {
		case "text", "file":
			text = append(text, p)
		case "tool":
			if p.CallID == "" || p.Tool == "" {
				continue
			}
			flush()
			var st openCodeToolState
			_ = json.Unmarshal(p.State, &st)
			args, ok := jsonCompact(st.Input)
			if !ok || !isJSONObject(json.RawMessage(args)) {
				args = "{}"
			}
			callAt, doneAt := at, at
			if t := openCodeTime(st.Time.Start); !t.IsZero() {
				callAt, doneAt = t, t
			}
			if t := openCodeTime(st.Time.End); !t.IsZero() {
				doneAt = t
			}
			c.msgs = append(c.msgs, sessions.ImportedMessage{Role: "assistant", Content: args, ToolName: p.Tool, ToolCallID: p.CallID, CreatedAt: callAt},
				sessions.ImportedMessage{Role: "tool", Content: openCodeResult(st), ToolName: p.Tool, ToolCallID: p.CallID, CreatedAt: doneAt})
		}
	}
	flush()
}

// openCodeText is the text of parts: texts (the person's only, unless
// synthetic is allowed: OpenCode's own notes beside them), and a note for
// each attachment.
func openCodeText(parts []openCodePart, person bool) string {
	var out []string
	for _, p := range parts {
		switch {
		case p.Type == "text" && !p.Ignored && !(person && p.Synthetic) && p.Text != "":
			out = append(out, p.Text)
		case p.Type == "file":
			name := p.Filename
			if name == "" && !strings.HasPrefix(p.URL, "data:") {
				name = p.URL
			}
			out = append(out, "[file: "+nonEmptyText(name, nonEmptyText(p.Mime, "attachment"))+"]")
		}
	}
	return strings.Join(out, "\n\n")
}

// openCodeResult is a tool call's result: its output, its error, or that it
// did not finish.
func openCodeResult(st openCodeToolState) string {
	switch st.Status {
	case "completed":
		return st.Output
	case "error":
		return errorText(nonEmptyText(st.Error, "the call failed"))
	default:
		return "(not finished: " + nonEmptyText(st.Status, "no state") + ")"
	}
}
