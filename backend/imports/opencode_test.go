package imports

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/compaction"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

const (
	ocRoot  = "ses_4b2f0c1e8ffeAbCdEfGhIjKlMn"
	ocChild = "ses_4b2f0d77affeChildSessionXy"
	ocNew   = "ses_4b2f1000bffeNewSessionAbCd"
	ocEmpty = "ses_4b2f2000cffeEmptySessionZz"
)

// ocSchema is the part of OpenCode's store the reader reads, as its
// migrations make it (more columns than are read).
const ocSchema = `
CREATE TABLE project (id TEXT PRIMARY KEY, worktree TEXT NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL);
CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL REFERENCES project(id) ON DELETE CASCADE, workspace_id TEXT,
  parent_id TEXT, slug TEXT NOT NULL, directory TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL, share_url TEXT,
  cost REAL NOT NULL DEFAULT 0, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, time_compacting INTEGER, time_archived INTEGER);
CREATE INDEX session_parent_idx ON session (parent_id);
CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
  time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL REFERENCES message(id) ON DELETE CASCADE, session_id TEXT NOT NULL,
  time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE INDEX part_message_id_id_idx ON part (message_id, id);
CREATE INDEX part_session_idx ON part (session_id);
`

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// ocMs is a time of the fixture: seconds after 2026-04-01T10:00:00Z, in
// OpenCode's milliseconds.
func ocMs(sec float64) int64 {
	return time.Date(2026, 4, 1, 10, 0, 0, 0, time.UTC).UnixMilli() + int64(sec*1000)
}

func ocAt(sec float64) string {
	return time.UnixMilli(ocMs(sec)).UTC().Format(time.RFC3339Nano)
}

type ocMsg struct {
	id, session string
	at          float64
	data        string   // the message's JSON (without its ids, as the store keeps it)
	parts       []string // each part's JSON, in order
}

// ocHistory is a realistic history: a session with a prompt (OpenCode's
// note of the file it read beside it, and the file), the model's reasoning,
// text and two tool calls (one failed), a compaction the person asked for
// and its summary, a call left unfinished (OpenCode stopped) and the
// person's next words; a subagent's session under it; a session never
// named; an empty one.
func ocHistory() (sess [][5]string, msgs []ocMsg) {
	sess = [][5]string{ // id, parent, title, created (seconds, as text)
		{ocRoot, "", "Fix the flaky test", "0"},
		{ocChild, ocRoot, "Child session - 2026-04-01T10:00:30.000Z", "30"},
		{ocNew, "", "New session - 2026-04-01T11:00:00.000Z", "3600"},
		{ocEmpty, "", "New session - 2026-04-01T12:00:00.000Z", "7200"},
	}
	user := `{"role":"user","time":{"created":%d},"agent":"build","model":{"providerID":"anthropic","modelID":"claude-sonnet-4"}}`
	asst := `{"role":"assistant","time":{"created":%d,"completed":%d},"parentID":"x","modelID":"claude-sonnet-4","providerID":"anthropic","mode":"build","agent":"build","path":{"cwd":"/src","root":"/src"},"cost":0.01,"tokens":{"input":10,"output":5,"reasoning":0,"cache":{"read":0,"write":0}}%s}`
	f := func(format string, args ...any) string { return sprintf(format, args...) }
	msgs = []ocMsg{
		{"msg_01", ocRoot, 1, f(user, ocMs(1)), []string{
			`{"type":"text","text":"why does TestCache flake?"}`,
			`{"type":"text","text":"Called the Read tool with the following input: {\"filePath\":\"/src/cache_test.go\"}","synthetic":true}`,
			`{"type":"file","mime":"text/plain","filename":"cache_test.go","url":"file:///src/cache_test.go"}`,
		}},
		{"msg_02", ocRoot, 2, f(asst, ocMs(2), ocMs(9), ""), []string{
			`{"type":"step-start","snapshot":"4f1c"}`,
			`{"type":"reasoning","text":"The test shares a map.","time":{"start":` + f("%d", ocMs(2)) + `}}`,
			`{"type":"text","text":"Looking at it.","time":{"start":` + f("%d", ocMs(2)) + `}}`,
			`{"type":"tool","callID":"toolu_01","tool":"read","state":{"status":"completed","input":{"filePath":"/src/cache_test.go"},"output":"<file>\n00001| package cache\n</file>","title":"cache_test.go","metadata":{},"time":{"start":` + f("%d,\"end\":%d", ocMs(3), ocMs(4)) + `}}}`,
			`{"type":"tool","callID":"toolu_02","tool":"bash","state":{"status":"error","input":{"command":"go test -race ./..."},"error":"exit status 1","time":{"start":` + f("%d,\"end\":%d", ocMs(5), ocMs(7)) + `}}}`,
			`{"type":"text","text":"It races on a shared map."}`,
			`{"type":"step-finish","reason":"stop","cost":0.01,"tokens":{"input":10,"output":5,"reasoning":0,"cache":{"read":0,"write":0}}}`,
		}},
		{"msg_03", ocRoot, 10, f(user, ocMs(10)), []string{`{"type":"compaction","auto":false}`}},
		{"msg_04", ocRoot, 11, f(asst, ocMs(11), ocMs(12), `,"summary":true`), []string{`{"type":"text","text":"We found a race on the cache's map in TestCache."}`}},
		{"msg_05", ocRoot, 20, f(user, ocMs(20)), []string{`{"type":"text","text":"fix it"}`, `{"type":"text","text":"ignored note","ignored":true}`}},
		{"msg_06", ocRoot, 21, f(asst, ocMs(21), 0, ""), []string{
			`{"type":"text","text":"Editing."}`,
			`{"type":"tool","callID":"toolu_03","tool":"edit","state":{"status":"running","input":{"filePath":"/src/cache.go"},"time":{"start":` + f("%d", ocMs(22)) + `}}}`,
		}},
		{"msg_06b", ocRoot, 25, f(user, ocMs(25)), []string{`{"type":"text","text":"never mind"}`}},
		{"msg_07", ocChild, 31, f(user, ocMs(31)), []string{`{"type":"text","text":"Find every use of the cache map"}`}},
		{"msg_08", ocChild, 32, f(asst, ocMs(32), ocMs(33), ""), []string{`{"type":"text","text":"Three uses, in cache.go."}`}},
		{"msg_09", ocNew, 3601, f(user, ocMs(3601)), []string{`{"type":"text","text":"hello there"}`, `{"type":"file","mime":"image/png","url":"data:image/png;base64,iVBORw0KGgo="}`}},
		{"msg_10", ocNew, 3602, f(asst, ocMs(3602), ocMs(3603), ""), []string{`{"type":"text","text":"Hi!"}`}},
	}
	return sess, msgs
}

func ocRootWant(t *testing.T) []sessions.ImportedMessage {
	return []sessions.ImportedMessage{
		jlMsg(t, "user", "why does TestCache flake?\n\n[file: cache_test.go]", "", "", ocAt(1)),
		jlMsg(t, "assistant", "Looking at it.", "", "", ocAt(2)),
		jlMsg(t, "assistant", `{"filePath":"/src/cache_test.go"}`, "read", "toolu_01", ocAt(3)),
		jlMsg(t, "tool", "<file>\n00001| package cache\n</file>", "read", "toolu_01", ocAt(4)),
		jlMsg(t, "assistant", `{"command":"go test -race ./..."}`, "bash", "toolu_02", ocAt(5)),
		jlMsg(t, "tool", "Error: exit status 1", "bash", "toolu_02", ocAt(7)),
		jlMsg(t, "assistant", "It races on a shared map.", "", "", ocAt(2)),
		jlMsg(t, "system", compaction.SummaryPrefix+"\nWe found a race on the cache's map in TestCache.", "", "", ocAt(11)),
		jlMsg(t, "user", "fix it", "", "", ocAt(20)),
		jlMsg(t, "assistant", "Editing.", "", "", ocAt(21)),
		jlMsg(t, "assistant", `{"filePath":"/src/cache.go"}`, "edit", "toolu_03", ocAt(22)),
		jlMsg(t, "tool", "(not finished: running)", "edit", "toolu_03", ocAt(22)),
		jlMsg(t, "user", "never mind", "", "", ocAt(25)),
	}
}

// ocSQL opens the OpenCode store at path for a test to write in; the func
// it returns runs one statement, failing the test on an error.
func ocSQL(t *testing.T, path string) func(q string, args ...any) {
	t.Helper()
	d, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return func(q string, args ...any) {
		t.Helper()
		if _, err := d.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// ocStore writes the history into an opencode.db under dir.
func ocStore(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "opencode.db")
	exec := ocSQL(t, path)
	exec(ocSchema)
	exec(`INSERT INTO project VALUES ('p1', '/src', 0, 0)`)
	sess, msgs := ocHistory()
	for _, s := range sess {
		var parent any
		if s[1] != "" {
			parent = s[1]
		}
		sec := 0.0
		json.Unmarshal([]byte(s[3]), &sec)
		exec(`INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created, time_updated)
			VALUES (?, 'p1', ?, 'slug', '/src', ?, '1.2.6', ?, ?)`, s[0], parent, s[2], ocMs(sec), ocMs(sec))
	}
	for _, m := range msgs {
		exec(`INSERT INTO message VALUES (?, ?, ?, ?, ?)`, m.id, m.session, ocMs(m.at), ocMs(m.at), m.data)
		for i, p := range m.parts {
			exec(`INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)`, sprintf("prt_%s_%02d", m.id, i), m.id, m.session, ocMs(m.at), ocMs(m.at), p)
		}
	}
	return path
}

func ocCheck(t *testing.T, items []sessions.Imported, path func(id string) string) {
	t.Helper()
	if got := jlKeys(items); !reflect.DeepEqual(got, []string{ocRoot, ocChild, ocNew, ocEmpty}) {
		t.Fatalf("sessions %v", got)
	}
	root := items[0]
	if root.Origin != (sessions.Origin{Kind: sessions.ImportOpenCode, Key: ocRoot, Path: path(ocRoot)}) || root.Title != "Fix the flaky test" ||
		root.Platform != PlatformOpenCode || root.Source != "cli" || !root.StartedAt.Equal(jlAt(t, ocAt(0))) || root.ParentKey != "" || root.EndedAt != nil {
		t.Errorf("root %+v", root)
	}
	jlCheckMessages(t, "root", root.Messages, ocRootWant(t))
	if c := items[1]; c.ParentKey != ocRoot || c.Relation != sessions.RelationDelegate || c.Title != "Find every use of the cache map" || len(c.Messages) != 2 {
		t.Errorf("child %+v", c)
	}
	if n := items[2]; n.Title != "hello there" || len(n.Messages) != 2 || n.Messages[0].Content != "hello there\n\n[file: image/png]" {
		t.Errorf("unnamed %+v", n)
	}
	if e := items[3]; len(e.Messages) != 0 {
		t.Errorf("empty %+v", e)
	}
}

func TestOpenCodeStore(t *testing.T) {
	dir := t.TempDir()
	db := ocStore(t, dir)
	for _, root := range []string{dir, db} {
		items, probs := jlRead(t, readOpenCode, root)
		if len(probs) != 0 {
			t.Errorf("%s: problems %v", root, probs)
		}
		ocCheck(t, items, func(string) string { return db })
	}

	// Imported: the subagent under its session, the empty one skipped;
	// again, nothing new.
	env := sessionstest.New(t)
	items, _ := jlRead(t, readOpenCode, dir)
	res, by := jlImport(t, env, items)
	if res.Count(sessions.ImportStatusImported) != 3 || by[ocEmpty].Status != sessions.ImportStatusSkipped {
		t.Fatalf("import %+v", res)
	}
	jlCheckStored(t, env, ocRoot, ocRootWant(t))
	child, err := env.Sessions.Get(context.Background(), ocChild)
	if err != nil || child.ParentSessionID == nil || *child.ParentSessionID != ocRoot || child.Relation != sessions.RelationDelegate {
		t.Fatalf("child %+v %v", child, err)
	}
	again, _ := jlImport(t, env, items)
	if again.Count(sessions.ImportStatusUnchanged) != 3 || again.Messages != 0 {
		t.Errorf("again %+v", again)
	}
}

// What the store cannot give is said: a message or a part that is not
// JSON, a message of a role Atrium does not know; the rest is read. A
// file that is not a store, a store that is not OpenCode's, a folder with
// neither: an error before anything is read.
func TestOpenCodeProblems(t *testing.T) {
	dir := t.TempDir()
	db := ocStore(t, dir)
	exec := ocSQL(t, db)
	for _, q := range []string{
		`UPDATE message SET data = '{"role":' WHERE id = 'msg_08'`,
		`UPDATE part SET data = '[1]' WHERE id = 'prt_msg_10_00'`,
		`INSERT INTO message VALUES ('msg_11', '` + ocNew + `', ` + sprintf("%d", ocMs(3700)) + `, 0, '{"role":"system","time":{"created":1}}')`,
	} {
		exec(q)
	}
	items, probs := jlRead(t, readOpenCode, db)
	if len(items) != 4 || len(items[1].Messages) != 1 || len(items[2].Messages) != 1 {
		t.Fatalf("items %+v", items)
	}
	want := []string{"message msg_08 of session " + ocChild + ": not a message object", "a part of message msg_10", `message msg_11 of session ` + ocNew + ` has role "system"`}
	if len(probs) != len(want) {
		t.Fatalf("problems %v", probs)
	}
	for i, w := range want {
		if !strings.Contains(probs[i].Message, w) || probs[i].Path != db {
			t.Errorf("problem %d: %s, want %q", i+1, probs[i], w)
		}
	}

	junk := filepath.Join(t.TempDir(), "opencode.db")
	os.WriteFile(junk, []byte(strings.Repeat("x", 4096)), 0o600)
	other := filepath.Join(t.TempDir(), "other.db")
	o, _ := sql.Open("sqlite3", other)
	o.Exec(`CREATE TABLE session (id TEXT)`)
	o.Close()
	for path, word := range map[string]string{junk: "not a readable SQLite store", other: "not OpenCode's store", t.TempDir(): "neither opencode.db nor a storage folder"} {
		err := readOpenCode(context.Background(), path, func(sessions.Imported) error { return nil }, func(Problem) {})
		if err == nil || !strings.Contains(err.Error(), word) {
			t.Errorf("%s: %v, want %q", path, err, word)
		}
	}
	if err := readOpenCode(context.Background(), t.TempDir(), func(sessions.Imported) error { return nil }, func(Problem) {}); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("an empty folder: %v", err)
	}
}

// OpenCode before its store: the same history as files under storage/,
// each object with its ids; read from the data folder or the storage
// folder itself. A broken file is said and passed over.
func TestOpenCodeStorageFiles(t *testing.T) {
	data := t.TempDir()
	storage := filepath.Join(data, "storage")
	write := func(path string, v string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	withIDs := func(raw string, ids map[string]string) string {
		var obj map[string]any
		if err := json.Unmarshal([]byte(raw), &obj); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		for k, v := range ids {
			obj[k] = v
		}
		b, _ := json.Marshal(obj)
		return string(b)
	}
	sess, msgs := ocHistory()
	paths := map[string]string{}
	for _, s := range sess {
		sec := 0.0
		json.Unmarshal([]byte(s[3]), &sec)
		info := sprintf(`{"id":%q,"slug":"s","version":"0.15.0","projectID":"p1","directory":"/src","title":%q,"time":{"created":%d,"updated":%d}}`, s[0], s[2], ocMs(sec), ocMs(sec))
		if s[1] != "" {
			info = withIDs(info, map[string]string{"parentID": s[1]})
		}
		paths[s[0]] = filepath.Join(storage, "session", "p1", s[0]+".json")
		write(paths[s[0]], info)
	}
	for _, m := range msgs {
		write(filepath.Join(storage, "message", m.session, m.id+".json"), withIDs(m.data, map[string]string{"id": m.id, "sessionID": m.session}))
		for i, p := range m.parts {
			pid := sprintf("prt_%s_%02d", m.id, i)
			write(filepath.Join(storage, "part", m.id, pid+".json"), withIDs(p, map[string]string{"id": pid, "messageID": m.id, "sessionID": m.session}))
		}
	}
	for _, root := range []string{data, storage} {
		items, probs := jlRead(t, readOpenCode, root)
		if len(probs) != 0 {
			t.Errorf("%s: problems %v", root, probs)
		}
		ocCheck(t, items, func(id string) string { return paths[id] })
	}
	broken := filepath.Join(storage, "message", ocNew, "msg_99.json")
	write(broken, `{"id":`)
	items, probs := jlRead(t, readOpenCode, data)
	if len(items) != 4 || len(probs) != 1 || probs[0].Path != broken || !strings.Contains(probs[0].Message, "not JSON") {
		t.Errorf("a broken file: %d sessions, problems %v", len(items), probs)
	}

	// Where OpenCode keeps it: $XDG_DATA_HOME/opencode, else
	// ~/.local/share/opencode.
	env := map[string]string{"XDG_DATA_HOME": "/xdg"}
	if got := DefaultPath(sessions.ImportOpenCode, func(k string) string { return env[k] }, "/home/u"); got != "/xdg/opencode" {
		t.Errorf("with XDG_DATA_HOME: %s", got)
	}
	if got := DefaultPath(sessions.ImportOpenCode, func(string) string { return "relative" }, "/home/u"); got != "/home/u/.local/share/opencode" {
		t.Errorf("without: %s", got)
	}
}

// Imported while the model answers: its message (not completed, or a call
// still running) waits for the next import, which takes it whole as an
// update rather than finding the conversation changed at its source; one
// left so for a day is imported as it was left.
func TestOpenCodeAnswerStillBeingWritten(t *testing.T) {
	dir := t.TempDir()
	db := ocStore(t, dir)
	exec := ocSQL(t, db)
	at := sprintf("%d", ocMs(3610))
	exec(`UPDATE session SET time_updated = ` + sprintf("%d", time.Now().UnixMilli()) + ` WHERE id = '` + ocNew + `'`) // OpenCode is writing it
	exec(`INSERT INTO message VALUES ('msg_zz', '` + ocNew + `', ` + at + `, 0, '{"role":"assistant","time":{"created":` + at + `}}')`)
	exec(`INSERT INTO part VALUES ('prt_zz_1', 'msg_zz', '` + ocNew + `', 0, 0, '{"type":"text","text":"Half an ans"}')`)
	env := sessionstest.New(t)
	items, _ := jlRead(t, readOpenCode, db)
	if _, by := jlImport(t, env, items); by[ocNew].Messages != 2 {
		t.Fatalf("while writing: %+v", by[ocNew])
	}
	exec(`UPDATE part SET data = '{"type":"text","text":"Half an answer, then a call."}' WHERE id = 'prt_zz_1'`)
	exec(`INSERT INTO part VALUES ('prt_zz_2', 'msg_zz', '` + ocNew + `', 0, 0, '{"type":"tool","callID":"c9","tool":"ls","state":{"status":"running","input":{},"time":{"start":1}}}')`)
	exec(`UPDATE message SET data = '{"role":"assistant","time":{"created":` + at + `,"completed":` + at + `}}' WHERE id = 'msg_zz'`)
	items, _ = jlRead(t, readOpenCode, db)
	if _, by := jlImport(t, env, items); by[ocNew].Status != sessions.ImportStatusUnchanged {
		t.Fatalf("a call still running: %+v", by[ocNew])
	}
	exec(`UPDATE part SET data = '{"type":"tool","callID":"c9","tool":"ls","state":{"status":"completed","input":{},"output":"a b","title":"","metadata":{},"time":{"start":1,"end":2}}}' WHERE id = 'prt_zz_2'`)
	items, _ = jlRead(t, readOpenCode, db)
	_, by := jlImport(t, env, items)
	if o := by[ocNew]; o.Status != sessions.ImportStatusUpdated || o.Messages != 3 {
		t.Fatalf("once answered: %+v", o)
	}
	jlCheckStored(t, env, ocNew, []sessions.ImportedMessage{
		jlMsg(t, "user", "hello there\n\n[file: image/png]", "", "", ""),
		jlMsg(t, "assistant", "Hi!", "", "", ""),
		jlMsg(t, "assistant", "Half an answer, then a call.", "", "", ""),
		jlMsg(t, "assistant", "{}", "ls", "c9", ""),
		jlMsg(t, "tool", "a b", "ls", "c9", ""),
	})

	// OpenCode stopped a day ago in the middle of an answer: it will not
	// be finished, and is imported as it was left.
	exec(`INSERT INTO message VALUES ('msg_zzz', '` + ocNew + `', ` + sprintf("%d", ocMs(3620)) + `, 0, '{"role":"assistant","time":{"created":1}}')`)
	exec(`INSERT INTO part VALUES ('prt_zzz', 'msg_zzz', '` + ocNew + `', 0, 0, '{"type":"text","text":"Cut o"}')`)
	exec(`UPDATE session SET time_updated = ` + sprintf("%d", time.Now().Add(-stillWriting-time.Hour).UnixMilli()) + ` WHERE id = '` + ocNew + `'`)
	items, _ = jlRead(t, readOpenCode, db)
	if _, by := jlImport(t, env, items); by[ocNew].Status != sessions.ImportStatusUpdated || by[ocNew].Messages != 1 {
		t.Fatalf("a day later: %+v", by[ocNew])
	}
}
