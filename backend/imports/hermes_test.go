package imports_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	_ "github.com/mattn/go-sqlite3"

	"atrium/backend/apperr"
	"atrium/backend/imports"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

// The familiar agent's schema as its store creates it (the columns of its
// version 4: title and finish_reason added to version 1's).
const hermesSchema = `
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, model TEXT, model_config TEXT, system_prompt TEXT,
    parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL, end_reason TEXT,
    message_count INTEGER DEFAULT 0, tool_call_count INTEGER DEFAULT 0, input_tokens INTEGER DEFAULT 0,
    output_tokens INTEGER DEFAULT 0, title TEXT,
    FOREIGN KEY (parent_session_id) REFERENCES sessions(id));
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id), role TEXT NOT NULL,
    content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL,
    token_count INTEGER, finish_reason TEXT);
CREATE INDEX idx_messages_session ON messages(session_id, timestamp);
CREATE VIRTUAL TABLE messages_fts USING fts5(content, content=messages, content_rowid=id);
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END;
INSERT INTO schema_version VALUES (4);
`

// t0 is 2026-03-01 09:00:00 UTC in the store's seconds.
const t0 = 1772355600.0

type hermesStore struct {
	t    *testing.T
	path string
	db   *sql.DB
}

func newHermes(t *testing.T, schema string) *hermesStore {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	d, err := sql.Open("sqlite3", path+"?_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if _, err := d.Exec(schema); err != nil {
		t.Fatal(err)
	}
	return &hermesStore{t: t, path: path, db: d}
}

func (h *hermesStore) exec(q string, args ...any) {
	h.t.Helper()
	if _, err := h.db.Exec(q, args...); err != nil {
		h.t.Fatalf("%s: %v", q, err)
	}
}

func (h *hermesStore) session(id, source string, parent any, started float64, ended any, reason any, extra ...any) {
	h.t.Helper()
	userID, title, config := any(nil), any(nil), any(nil)
	if len(extra) > 0 {
		userID = extra[0]
	}
	if len(extra) > 1 {
		title = extra[1]
	}
	if len(extra) > 2 {
		config = extra[2]
	}
	h.exec(`INSERT INTO sessions (id, source, user_id, model, model_config, parent_session_id, started_at, ended_at, end_reason, title)
		VALUES (?, ?, ?, 'some-model', ?, ?, ?, ?, ?, ?)`, id, source, userID, config, parent, started, ended, reason, title)
}

func (h *hermesStore) message(session, role string, content any, at float64, extra ...any) {
	h.t.Helper()
	callID, calls, tool := any(nil), any(nil), any(nil)
	if len(extra) > 0 {
		callID = extra[0]
	}
	if len(extra) > 1 {
		calls = extra[1]
	}
	if len(extra) > 2 {
		tool = extra[2]
	}
	h.exec(`INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		session, role, content, callID, calls, tool, at)
}

// fill writes what the familiar agent writes in a day: a CLI session with
// tool calls that compression split in two, a delegate subagent, a Telegram
// conversation, an empty session, and a message of a role Atrium does not
// keep.
func (h *hermesStore) fill() {
	h.session("20260301_090000_aaaaaa", "cli", nil, t0, t0+600, "compression", nil, "Fix the flaky test")
	h.message("20260301_090000_aaaaaa", "user", "Why does TestSlack fail one run in fifty?", t0+1)
	h.message("20260301_090000_aaaaaa", "assistant", "Let me look at the test.", t0+2, nil,
		`[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"slack_test.go\"}"}},`+
			`{"id":"call_2","type":"function","function":{"name":"terminal","arguments":"{\"command\":\"go test -count=50\"}"}}]`)
	h.message("20260301_090000_aaaaaa", "tool", "package gateway ...", t0+3, "call_1", nil, "read_file")
	h.message("20260301_090000_aaaaaa", "tool", "FAIL 1 of 50", t0+4, "call_2", nil, "terminal")
	h.message("20260301_090000_aaaaaa", "assistant", "The typing call is cancelled at turn end.", t0+5)
	// The compression split: the old part ended with "compression", the
	// new one continues it, titled as the familiar agent titles it.
	h.session("20260301_091000_bbbbbb", "cli", "20260301_090000_aaaaaa", t0+600, nil, nil, nil, "Fix the flaky test #2")
	h.message("20260301_091000_bbbbbb", "user", "[summary of the earlier part]", t0+601)
	h.message("20260301_091000_bbbbbb", "assistant", "Done: the call now outlives the turn.", t0+602, nil, "[]")
	h.message("20260301_091000_bbbbbb", "session_meta", "{}", t0+603)
	// A delegate subagent of the first part.
	h.session("20260301_090500_cccccc", "cli", "20260301_090000_aaaaaa", t0+300, t0+320, "completed", nil, nil,
		`{"_delegate_from":"20260301_090000_aaaaaa"}`)
	h.message("20260301_090500_cccccc", "user", "Read the Slack adapter\nand report", t0+301)
	h.message("20260301_090500_cccccc", "assistant", "Reported.", t0+319, nil, "not json")
	// A Telegram conversation, still open.
	h.session("20260302_080000_dddddd", "telegram", nil, t0+86400, nil, nil, "424242")
	h.message("20260302_080000_dddddd", "user", "remind me of the flaky test", t0+86401)
	h.message("20260302_080000_dddddd", "assistant", "It is fixed.", t0+86402)
	// Nothing in it.
	h.session("20260303_080000_eeeeee", "cli", nil, t0+2*86400, t0+2*86400+5, "user_exit")
}

func readAll(t *testing.T, kind, path string) ([]sessions.Imported, []imports.Problem) {
	t.Helper()
	var probs []imports.Problem
	r, err := imports.Open(kind, path, func(string) string { return "" }, t.TempDir(), func(p imports.Problem) { probs = append(probs, p) })
	if err != nil {
		t.Fatal(err)
	}
	var out []sessions.Imported
	if err := r.Each(context.Background(), func(it sessions.Imported) error { out = append(out, it); return nil }); err != nil {
		t.Fatal(err)
	}
	return out, probs
}

func importAll(t *testing.T, env *sessionstest.Env, items []sessions.Imported, dry bool) sessions.ImportResult {
	t.Helper()
	res, err := env.Sessions.Import(context.Background(), items, sessions.ImportOptions{DryRun: dry})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func statuses(res sessions.ImportResult) map[string]string {
	out := map[string]string{}
	for _, o := range res.Outcomes {
		out[o.ID] = o.Status
	}
	return out
}

func TestHermesStoreImportsWithLineageToolCallsAndTimes(t *testing.T) {
	h := newHermes(t, hermesSchema)
	h.fill()
	items, probs := readAll(t, sessions.ImportHermes, h.path)

	// Parents first: the first part before its continuation and its delegate.
	var order []string
	for _, it := range items {
		order = append(order, it.Origin.Key)
	}
	if want := "20260301_090000_aaaaaa 20260301_090500_cccccc 20260301_091000_bbbbbb 20260302_080000_dddddd 20260303_080000_eeeeee"; strings.Join(order, " ") != want {
		t.Fatalf("order %v, want %s", order, want)
	}
	// What could not be read is said, with where.
	var said []string
	for _, p := range probs {
		said = append(said, p.String())
	}
	if len(probs) != 2 || !strings.Contains(said[0], "20260301_090500_cccccc, message 2: its tool calls are not a JSON list") ||
		!strings.Contains(said[1], `20260301_091000_bbbbbb, message 3: role "session_meta" is not one Atrium keeps`) {
		t.Fatalf("problems %q", said)
	}

	env := sessionstest.New(t)
	ctx := context.Background()
	// A dry run says what would happen and writes nothing.
	dry := importAll(t, env, items, true)
	if dry.Count(sessions.ImportStatusImported) != 4 || dry.Count(sessions.ImportStatusSkipped) != 1 || env.Exists(t, "20260301_090000_aaaaaa") {
		t.Fatalf("dry run: %+v", dry)
	}
	res := importAll(t, env, items, false)
	want := map[string]string{"20260301_090000_aaaaaa": "imported", "20260301_090500_cccccc": "imported", "20260301_091000_bbbbbb": "imported",
		"20260302_080000_dddddd": "imported", "20260303_080000_eeeeee": "skipped"}
	if got := statuses(res); !equalMaps(got, want) {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	if res.Messages != 7+2+2+2 {
		t.Fatalf("%d messages added, want 13", res.Messages)
	}

	first, err := env.Sessions.Get(ctx, "20260301_090000_aaaaaa")
	if err != nil {
		t.Fatal(err)
	}
	if first.Title != "Fix the flaky test" || first.Source != "cli" || first.Platform != "hermes" || first.EndReason != "compression" || first.EndedAt == nil ||
		!first.StartedAt.Equal(time.Unix(int64(t0), 0)) || !first.EndedAt.Equal(time.Unix(int64(t0)+600, 0)) ||
		!first.LastActivityAt.Equal(time.Unix(int64(t0)+5, 0)) || first.MessageCount != 7 {
		t.Fatalf("first part %+v", first)
	}
	msgs, err := env.Sessions.Messages(ctx, first.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range msgs {
		got = append(got, m.Role+"|"+m.ToolName+"|"+m.ToolCallID+"|"+m.Content)
	}
	wantMsgs := []string{
		"user|||Why does TestSlack fail one run in fifty?",
		"assistant|||Let me look at the test.",
		`assistant|read_file|call_1|{"path":"slack_test.go"}`,
		`assistant|terminal|call_2|{"command":"go test -count=50"}`,
		"tool|read_file|call_1|package gateway ...",
		"tool|terminal|call_2|FAIL 1 of 50",
	}
	if strings.Join(got[:6], "\n") != strings.Join(wantMsgs, "\n") {
		t.Fatalf("messages\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantMsgs, "\n"))
	}
	if !msgs[4].CreatedAt.Equal(time.Unix(int64(t0)+3, 0)) {
		t.Fatalf("a message keeps its time: %v", msgs[4].CreatedAt)
	}

	// The compression split is one conversation in Atrium, with its divider.
	second, _ := env.Sessions.Get(ctx, "20260301_091000_bbbbbb")
	if second.ParentSessionID == nil || *second.ParentSessionID != first.ID || second.Relation != sessions.RelationCompression ||
		second.ChainRoot == nil || *second.ChainRoot != first.ID || second.Ended() {
		t.Fatalf("continuation %+v", second)
	}
	chain, err := env.Sessions.ChainOf(ctx, second.ID)
	if err != nil || len(chain.Parts) != 2 || chain.Rotations[1] == nil || chain.Rotations[1].FromSessionID != first.ID {
		t.Fatalf("chain %+v %v", chain, err)
	}
	delegate, _ := env.Sessions.Get(ctx, "20260301_090500_cccccc")
	if delegate.Relation != sessions.RelationDelegate || delegate.Title != "Read the Slack adapter" {
		t.Fatalf("delegate %+v", delegate)
	}
	tg, _ := env.Sessions.Get(ctx, "20260302_080000_dddddd")
	if tg.Source != "gateway" || tg.Platform != "telegram" || tg.SenderID != "424242" || tg.Ended() {
		t.Fatalf("telegram session %+v", tg)
	}
	// Imported messages are searchable.
	hits, err := env.Sessions.Search(ctx, "flaky", sessions.SearchOptions{})
	if err != nil || len(hits) == 0 {
		t.Fatalf("search: %v %v", hits, err)
	}
	// History, not activity: no hook fired.
	env.Rec.Expect(t, env.Bus, map[string]int{})

	// Again: nothing new, nothing doubled.
	again := importAll(t, env, items, false)
	if again.Count(sessions.ImportStatusUnchanged) != 4 || again.Messages != 0 {
		t.Fatalf("second import %+v", again)
	}
	// The familiar agent went on: the Telegram conversation grew and ended.
	h.message("20260302_080000_dddddd", "user", "thanks", t0+90000)
	h.exec(`UPDATE sessions SET ended_at = ?, end_reason = 'user_exit' WHERE id = '20260302_080000_dddddd'`, t0+90001)
	items, _ = readAll(t, sessions.ImportHermes, filepath.Dir(h.path)) // the folder works too
	more := importAll(t, env, items, false)
	if s := statuses(more); s["20260302_080000_dddddd"] != "updated" || more.Messages != 1 || more.Count(sessions.ImportStatusUpdated) != 1 {
		t.Fatalf("after the source grew: %+v", more)
	}
	tg, _ = env.Sessions.Get(ctx, "20260302_080000_dddddd")
	if tg.MessageCount != 3 || tg.EndReason != "user_exit" || !tg.EndedAt.Equal(time.Unix(int64(t0)+90001, 0)) ||
		!tg.LastActivityAt.Equal(time.Unix(int64(t0)+90000, 0)) {
		t.Fatalf("grown session %+v", tg)
	}
	env.Rec.Expect(t, env.Bus, map[string]int{})
}

func TestHermesImportRefusesToOverwriteAndRespectsTheTrash(t *testing.T) {
	h := newHermes(t, hermesSchema)
	h.fill()
	items, _ := readAll(t, sessions.ImportHermes, h.path)
	env := sessionstest.New(t)
	ctx := context.Background()
	// An Atrium session that happens to have a familiar agent's id.
	env.MustCreate(t, sessions.CreateParams{ID: "20260302_080000_dddddd", Title: "mine"})
	res := importAll(t, env, items, false)
	var conflict sessions.ImportOutcome
	for _, o := range res.Outcomes {
		if o.ID == "20260302_080000_dddddd" {
			conflict = o
		}
	}
	if conflict.Status != sessions.ImportStatusConflict || !strings.Contains(conflict.Note, "exists and was not imported") {
		t.Fatalf("conflict %+v", conflict)
	}
	if s, _ := env.Sessions.Get(ctx, "20260302_080000_dddddd"); s.Title != "mine" || s.MessageCount != 0 {
		t.Fatalf("the existing session was touched: %+v", s)
	}

	// A deleted import sits in the trash: importing again does not bring a
	// second copy back beside it.
	if _, err := env.Sessions.Delete(ctx, []string{"20260301_090500_cccccc"}, nil); err != nil {
		t.Fatal(err)
	}
	env.Rec.Reset()
	again := importAll(t, env, items, false)
	if s := statuses(again); s["20260301_090500_cccccc"] != "skipped" {
		t.Fatalf("trashed import: %v", s)
	}
	// Purged for good, it comes back on the next import.
	if _, err := env.Sessions.Purge(ctx, []string{"20260301_090500_cccccc"}, nil); err != nil {
		t.Fatal(err)
	}
	env.Rec.Reset()
	back := importAll(t, env, items, false)
	if s := statuses(back); s["20260301_090500_cccccc"] != "imported" {
		t.Fatalf("purged import: %v", s)
	}
	env.Rec.Expect(t, env.Bus, map[string]int{})
}

func TestHermesOldestSchemaAndBrokenStores(t *testing.T) {
	// The first version: no title column, no finish_reason.
	// Without its index on messages.session_id too: read in one pass.
	old := strings.Replace(strings.Replace(hermesSchema, ", title TEXT,", ",", 1), ",\n    token_count INTEGER, finish_reason TEXT);", ", token_count INTEGER);", 1)
	old = strings.Replace(old, "CREATE INDEX idx_messages_session ON messages(session_id, timestamp);", "", 1)
	if old == hermesSchema || strings.Contains(old, "title TEXT") || strings.Contains(old, "finish_reason") || strings.Contains(old, "idx_messages_session") {
		t.Fatal("the old schema is not the old one")
	}
	h := newHermes(t, old)
	h.exec(`INSERT INTO sessions (id, source, started_at) VALUES ('s1', 'discord', ?)`, t0)
	h.message("s1", "user", "hello\nthere", t0+1)
	h.exec(`INSERT INTO sessions (id, source, started_at) VALUES ('s2', 'cli', ?)`, t0+10)
	h.message("s2", "user", strings.Repeat("please refactor the payments module ", 8), t0+11)
	items, probs := readAll(t, sessions.ImportHermes, h.path)
	if len(items) != 2 || len(probs) != 0 || items[0].Title != "hello" || items[0].Platform != "discord" {
		t.Fatalf("old schema: %+v %v", items, probs)
	}
	// A title made of a long first prompt is cut at a word, as a list shows it.
	if tt := items[1].Title; utf8.RuneCountInString(tt) > 80 || !strings.HasSuffix(tt, " please…") || strings.Contains(tt, "  ") {
		t.Fatalf("prompt title %q", tt)
	}
	env := sessionstest.New(t)
	importAll(t, env, items, false)
	if s, _ := env.Sessions.Get(context.Background(), "s1"); s.Title != "hello" {
		t.Fatalf("title %q", s.Title)
	}

	dir := t.TempDir()
	none := func(string) string { return "" }
	// Not there.
	if _, err := imports.Open(sessions.ImportHermes, filepath.Join(dir, "missing.db"), none, dir, nil); apperr.CodeOf(err) != apperr.NotFound ||
		!strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing store: %v", err)
	}
	// Not SQLite at all.
	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, []byte(strings.Repeat("not a database ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := imports.Open(sessions.ImportHermes, junk, none, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Each(context.Background(), func(sessions.Imported) error { return nil }); apperr.CodeOf(err) != apperr.Invalid ||
		!strings.Contains(err.Error(), "not a readable SQLite store") {
		t.Fatalf("junk store: %v", err)
	}
	// SQLite, but another program's.
	other := filepath.Join(dir, "other.db")
	d, _ := sql.Open("sqlite3", other)
	if _, err := d.Exec(`CREATE TABLE sessions (token TEXT); CREATE TABLE messages (body TEXT)`); err != nil {
		t.Fatal(err)
	}
	d.Close()
	r, _ = imports.Open(sessions.ImportHermes, other, none, dir, nil)
	if err := r.Each(context.Background(), func(sessions.Imported) error { return nil }); err == nil ||
		!strings.Contains(err.Error(), "is not the familiar agent's state.db: table sessions has no column id") {
		t.Fatalf("foreign store: %v", err)
	}
	// The store is only read: its bytes are the same after a read.
	before, _ := os.ReadFile(h.path)
	readAll(t, sessions.ImportHermes, h.path)
	if after, _ := os.ReadFile(h.path); string(before) != string(after) {
		t.Fatal("reading changed the foreign store")
	}
}

func TestDefaultPaths(t *testing.T) {
	env := map[string]string{}
	get := func(k string) string { return env[k] }
	home := filepath.FromSlash("/home/u")
	for kind, want := range map[string]string{sessions.ImportHermes: "/home/u/.hermes/state.db",
		sessions.ImportClaude: "/home/u/.claude/projects", sessions.ImportCodex: "/home/u/.codex/sessions"} {
		if got := imports.DefaultPath(kind, get, home); got != filepath.FromSlash(want) {
			t.Errorf("%s: %s, want %s", kind, got, want)
		}
	}
	env["HERMES_HOME"], env["CLAUDE_CONFIG_DIR"], env["CODEX_HOME"] = "/h", "/c", "/x"
	for kind, want := range map[string]string{sessions.ImportHermes: "/h/state.db", sessions.ImportClaude: "/c/projects", sessions.ImportCodex: "/x/sessions"} {
		if got := imports.DefaultPath(kind, get, home); got != filepath.FromSlash(want) {
			t.Errorf("%s with its variable: %s, want %s", kind, got, want)
		}
	}
	if _, err := imports.Open("openclaw", "", get, home, nil); apperr.CodeOf(err) != apperr.Invalid {
		t.Errorf("unknown kind: %v", err)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
