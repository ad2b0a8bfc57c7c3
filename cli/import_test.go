package cli_test

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"
)

// familiarAgentHome is a familiar agent's home with a state.db as its store writes one: a CLI
// session with a tool call, its compression continuation, a Telegram chat.
func familiarAgentHome(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	d, err := sql.Open("sqlite3", filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, q := range []string{
		`CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, model TEXT, model_config TEXT, system_prompt TEXT,
			parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL, end_reason TEXT, message_count INTEGER DEFAULT 0,
			tool_call_count INTEGER DEFAULT 0, input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0, title TEXT)`,
		`CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, role TEXT NOT NULL, content TEXT,
			tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL, token_count INTEGER, finish_reason TEXT)`,
		`INSERT INTO sessions (id, source, started_at, ended_at, end_reason, title) VALUES ('20260301_090000_aaaaaa', 'cli', 1772355600, 1772356200, 'compression', 'Deploy the docs')`,
		`INSERT INTO sessions (id, source, parent_session_id, started_at, title) VALUES ('20260301_091000_bbbbbb', 'cli', '20260301_090000_aaaaaa', 1772356200, 'Deploy the docs #2')`,
		`INSERT INTO sessions (id, source, user_id, started_at) VALUES ('20260302_080000_dddddd', 'telegram', '4242', 1772438400)`,
		`INSERT INTO messages (session_id, role, content, timestamp) VALUES ('20260301_090000_aaaaaa', 'user', 'deploy the docs please', 1772355601)`,
		`INSERT INTO messages (session_id, role, content, tool_calls, timestamp) VALUES ('20260301_090000_aaaaaa', 'assistant', '',
			'[{"id":"call_1","type":"function","function":{"name":"terminal","arguments":"{\"command\":\"make docs\"}"}}]', 1772355602)`,
		`INSERT INTO messages (session_id, role, content, tool_call_id, tool_name, timestamp) VALUES ('20260301_090000_aaaaaa', 'tool', 'docs built', 'call_1', 'terminal', 1772355603)`,
		`INSERT INTO messages (session_id, role, content, timestamp) VALUES ('20260301_091000_bbbbbb', 'user', 'and publish them', 1772356201)`,
		`INSERT INTO messages (session_id, role, content, timestamp) VALUES ('20260302_080000_dddddd', 'user', 'is the zebra deployed?', 1772438401)`,
	} {
		if _, err := d.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return dir
}

func TestImportFromTheFamiliarAgentThroughTheCommandLine(t *testing.T) {
	home := t.TempDir()
	hh := familiarAgentHome(t)
	env := []string{"HERMES_HOME=" + hh}

	// Its keys and settings beside its store: named, with how to bring
	// them, never copied.
	for _, f := range []string{".env", "config.yaml"} {
		if err := os.WriteFile(filepath.Join(hh, f), []byte("# theirs\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte("# mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Its memory: the same files and format, read as they are.
	if err := os.MkdirAll(filepath.Join(hh, "memories"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hh, "memories", "USER.md"), []byte("Prefers metric units"), 0o600); err != nil {
		t.Fatal(err)
	}

	// Dry run first: said, nothing written.
	r := atriumExec(t, home, "", env, "sessions", "import", "hermes", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "would import from hermes "+filepath.Join(hh, "state.db")+": 3 imported; 5 message(s) to add") {
		t.Fatalf("dry run: %+v", r)
	}
	// The profile has a config.yaml of its own: only the keys are named.
	if !strings.Contains(r.stdout, "note: "+filepath.Join(hh, ".env")+" holds that agent's keys, which Atrium reads as they are: cp -p "+filepath.Join(hh, ".env")+" "+filepath.Join(home, ".env")+"\n") ||
		strings.Contains(r.stdout, "config.yaml holds") || strings.Contains(r.stdout, "MEMORY.md") ||
		!strings.Contains(r.stdout, "note: "+filepath.Join(hh, "memories", "USER.md")+" holds that agent's profile of you (its memory), which Atrium reads as they are: mkdir -p "+
			filepath.Join(home, "memories")+" && cp -p "+filepath.Join(hh, "memories", "USER.md")+" "+filepath.Join(home, "memories", "USER.md")+"\n") {
		t.Fatalf("the notes: %q", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(home, ".env")); err == nil {
		t.Fatal("an import copied the keys")
	}
	if r := atrium(t, home, "sessions", "list", "--json"); strings.Contains(r.stdout, "20260301") {
		t.Fatalf("a dry run wrote: %s", r.stdout)
	}

	// The default place is $HERMES_HOME/state.db.
	r = atriumExec(t, home, "", env, "sessions", "import", "hermes", "--json")
	if r.code != 0 {
		t.Fatalf("import: %+v", r)
	}
	var rep struct {
		Kind     string         `json:"kind"`
		Counts   map[string]int `json:"counts"`
		Messages int            `json:"messages"`
		Outcomes []struct {
			ID, Status string
		} `json:"outcomes"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Kind != "hermes" || rep.Counts["imported"] != 3 || rep.Messages != 5 || len(rep.Outcomes) != 3 {
		t.Fatalf("report %+v (%v): %s", rep, err, r.stdout)
	}
	// As a user finds them: the chain is one conversation, the tool call a
	// call, the chat a gateway session, searchable.
	r = atrium(t, home, "sessions", "lineage", "20260301_091000_bbbbbb")
	if r.code != 0 || !strings.Contains(r.stdout, "20260301_090000_aaaaaa") {
		t.Fatalf("lineage: %+v", r)
	}
	r = atrium(t, home, "messages", "list", "20260301_090000_aaaaaa", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"tool_name": "terminal"`) || !strings.Contains(r.stdout, `{\"command\":\"make docs\"}`) {
		t.Fatalf("messages: %+v", r)
	}
	r = atrium(t, home, "sessions", "search", "zebra")
	if r.code != 0 || !strings.Contains(r.stdout, "20260302_080000_dddddd") {
		t.Fatalf("search: %+v", r)
	}
	r = atrium(t, home, "sessions", "show", "20260302_080000_dddddd", "--json")
	if !strings.Contains(r.stdout, `"platform": "telegram"`) || !strings.Contains(r.stdout, `"sender_id": "4242"`) {
		t.Fatalf("show: %s", r.stdout)
	}
	// History, not activity: no event in the log, no plugin host started.
	if r := atrium(t, home, "events", "list", "--json"); strings.Contains(r.stdout, "hook") {
		t.Fatalf("an import wrote events: %s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(home, "run", "host.sock")); err == nil {
		t.Fatal("an import started a plugin host")
	}

	// Again, with a path this time: nothing doubled.
	r = atriumExec(t, home, "", nil, "sessions", "import", "hermes", hh)
	if r.code != 0 || !strings.Contains(r.stdout, "3 unchanged; 0 message(s) added") {
		t.Fatalf("again: %+v", r)
	}

	// A conflict: exit 4, with the session named and its note, the rest
	// imported.
	other := t.TempDir()
	if r := atrium(t, other, "sessions", "create", "--id", "20260302_080000_dddddd", "--title", "mine"); r.code != 0 {
		t.Fatal(r)
	}
	r = atriumExec(t, other, "", env, "sessions", "import", "hermes")
	if r.code != 4 || !strings.Contains(r.stdout, "2 imported, 1 conflict") ||
		!strings.Contains(r.stdout, "20260302_080000_dddddd") || !strings.Contains(r.stdout, "exists and was not imported") ||
		!strings.Contains(r.stderr, "1 session(s) not imported") {
		t.Fatalf("conflict: %+v", r)
	}

	// Bad input: an unknown kind, a missing path, a file that is no store.
	if r := atrium(t, home, "sessions", "import", "openclaw"); r.code != 2 || !strings.Contains(r.stderr, `unknown import kind "openclaw"`) {
		t.Fatalf("unknown kind: %+v", r)
	}
	if r := atrium(t, home, "sessions", "import", "hermes", filepath.Join(hh, "nope.db")); r.code != 3 || !strings.Contains(r.stderr, "does not exist") {
		t.Fatalf("missing path: %+v", r)
	}
	junk := filepath.Join(t.TempDir(), "junk.db")
	os.WriteFile(junk, []byte(strings.Repeat("x", 4096)), 0o600)
	if r := atrium(t, home, "sessions", "import", "hermes", junk); r.code != 2 || !strings.Contains(r.stderr, "not a readable SQLite store") {
		t.Fatalf("junk: %+v", r)
	}
	if r := atrium(t, home, "sessions", "import"); r.code != 2 || !strings.Contains(r.stderr, "takes a kind") {
		t.Fatalf("no kind: %+v", r)
	}
}

func TestImportTranscriptsWithABrokenLine(t *testing.T) {
	home := t.TempDir()
	// Claude Code: ~/.claude/projects/<project>/<session>.jsonl, one line
	// of it broken.
	cc := t.TempDir()
	proj := filepath.Join(cc, "projects", "-home-u-app")
	os.MkdirAll(proj, 0o700)
	lines := []string{
		`{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"5f0c7a4e-1111-4c2b-9a55-0a1b2c3d4e5f","timestamp":"2026-03-01T09:00:00.000Z","cwd":"/home/u/app","isSidechain":false,"message":{"role":"user","content":"rename the config loader"}}`,
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"5f0c7a4e-1111-4c2b-9a55-0a1b2c3d4e5f","timestamp":"2026-03-01T09:00:05.000Z","isSidechain":false,"message":{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Grep","input":{"pattern":"loadConfig"}}]}}`,
		`{"type":"user","uuid":"u2","par`,
		`{"type":"user","uuid":"u3","parentUuid":"a1","sessionId":"5f0c7a4e-1111-4c2b-9a55-0a1b2c3d4e5f","timestamp":"2026-03-01T09:00:06.000Z","isSidechain":false,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"config.go:12: func loadConfig()"}]}}`,
		`{"type":"assistant","uuid":"a2","parentUuid":"u3","sessionId":"5f0c7a4e-1111-4c2b-9a55-0a1b2c3d4e5f","timestamp":"2026-03-01T09:00:09.000Z","isSidechain":false,"message":{"id":"msg_2","role":"assistant","content":[{"type":"text","text":"It is in config.go."}]}}`,
	}
	file := filepath.Join(proj, "5f0c7a4e-1111-4c2b-9a55-0a1b2c3d4e5f.jsonl")
	os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
	r := atriumExec(t, home, "", []string{"CLAUDE_CONFIG_DIR=" + cc}, "sessions", "import", "claude-code")
	if r.code != 0 || !strings.Contains(r.stdout, "1 imported; 4 message(s) added") ||
		!strings.Contains(r.stderr, "atrium: warning: skipped "+file+":3:") {
		t.Fatalf("claude code: %+v", r)
	}
	r = atrium(t, home, "messages", "list", "5f0c7a4e-1111-4c2b-9a55-0a1b2c3d4e5f", "--json")
	if !strings.Contains(r.stdout, `"tool_call_id": "toolu_1"`) || !strings.Contains(r.stdout, "It is in config.go.") {
		t.Fatalf("claude messages: %s", r.stdout)
	}
	// The file grew: only the new message is added.
	f, _ := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"type":"user","uuid":"u4","parentUuid":"a2","sessionId":"5f0c7a4e-1111-4c2b-9a55-0a1b2c3d4e5f","timestamp":"2026-03-01T09:01:00.000Z","isSidechain":false,"message":{"role":"user","content":"thanks"}}` + "\n")
	f.Close()
	r = atriumExec(t, home, "", nil, "sessions", "import", "claude", file)
	if r.code != 0 || !strings.Contains(r.stdout, "1 updated; 1 message(s) added") {
		t.Fatalf("grown transcript: %+v", r)
	}

	// Codex: ~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl.
	cx := t.TempDir()
	day := filepath.Join(cx, "sessions", "2026", "03", "02")
	os.MkdirAll(day, 0o700)
	rollout := strings.Join([]string{
		`{"timestamp":"2026-03-02T10:00:00.000Z","type":"session_meta","payload":{"id":"0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b","timestamp":"2026-03-02T10:00:00.000Z","cwd":"/home/u/app","originator":"codex_cli_rs","cli_version":"0.46.0"}}`,
		`{"timestamp":"2026-03-02T10:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/home/u/app</cwd>\n</environment_context>"}]}}`,
		`{"timestamp":"2026-03-02T10:00:02.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"count the lines of main.go"}]}}`,
		`{"timestamp":"2026-03-02T10:00:03.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"wc\",\"-l\",\"main.go\"]}","call_id":"call_9"}}`,
		`{"timestamp":"2026-03-02T10:00:04.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_9","output":"{\"output\":\"42 main.go\\n\",\"metadata\":{\"exit_code\":0}}"}}`,
		`{"timestamp":"2026-03-02T10:00:05.000Z","type":"event_msg","payload":{"type":"agent_message","message":"42 lines."}}`,
		`{"timestamp":"2026-03-02T10:00:05.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"42 lines."}]}}`,
	}, "\n") + "\n"
	os.WriteFile(filepath.Join(day, "rollout-2026-03-02T10-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl"), []byte(rollout), 0o600)
	r = atriumExec(t, home, "", []string{"CODEX_HOME=" + cx}, "sessions", "import", "codex")
	if r.code != 0 || !strings.Contains(r.stdout, "1 imported; 4 message(s) added") {
		t.Fatalf("codex: %+v", r)
	}
	r = atrium(t, home, "sessions", "show", "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "--json")
	if !strings.Contains(r.stdout, `"title": "count the lines of main.go"`) {
		t.Fatalf("codex session: %s", r.stdout)
	}
	// Gemini CLI: $GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/session-*.jsonl
	// ("gemini" for short), one of its records broken.
	gh := t.TempDir()
	chats := filepath.Join(gh, ".gemini", "tmp", "3f9a0c1d", "chats")
	os.MkdirAll(chats, 0o700)
	conv := filepath.Join(chats, "session-2026-03-03T08-00-2c4e6a8b.jsonl")
	os.WriteFile(conv, []byte(strings.Join([]string{
		`{"sessionId":"2c4e6a8b-0d1f-4a3c-8e5b-7d9f1a3c5e7b","projectHash":"3f9a0c1d","startTime":"2026-03-03T08:00:00.000Z","lastUpdated":"2026-03-03T08:00:00.000Z"}`,
		`{"id":"u1","timestamp":"2026-03-03T08:00:01.000Z","type":"user","content":[{"text":"which Go version?"}]}`,
		`{"id":"g1","timestamp":"2026-03-03T08:00:02.000Z","type":"gemini","content":"","toolCalls":[{"id":"run_shell_command-1","name":"run_shell_command","args":{"command":"go version"},"result":[{"functionResponse":{"id":"run_shell_command-1","name":"run_shell_command","response":{"output":"go1.26.8"}}}],"status":"success","timestamp":"2026-03-03T08:00:03.000Z"}]}`,
		`{"id":"g2","timestamp":"2026-03-03T08:00:04.000Z","type":"gemini","con`,
		`{"id":"g3","timestamp":"2026-03-03T08:00:05.000Z","type":"gemini","content":"Go 1.26.8."}`,
	}, "\n")+"\n"), 0o600)
	r = atriumExec(t, home, "", []string{"GEMINI_CLI_HOME=" + gh}, "sessions", "import", "gemini")
	if r.code != 0 || !strings.Contains(r.stdout, "1 imported; 4 message(s) added") ||
		!strings.Contains(r.stderr, "atrium: warning: skipped "+conv+":4:") {
		t.Fatalf("gemini cli: %+v", r)
	}
	r = atrium(t, home, "messages", "list", "2c4e6a8b-0d1f-4a3c-8e5b-7d9f1a3c5e7b", "--json")
	if !strings.Contains(r.stdout, `"tool_call_id": "run_shell_command-1"`) || !strings.Contains(r.stdout, "go1.26.8") || !strings.Contains(r.stdout, "Go 1.26.8.") {
		t.Fatalf("gemini messages: %s", r.stdout)
	}

	// OpenCode: $XDG_DATA_HOME/opencode/opencode.db.
	xdg := t.TempDir()
	os.MkdirAll(filepath.Join(xdg, "opencode"), 0o700)
	oc, err := sql.Open("sqlite3", filepath.Join(xdg, "opencode", "opencode.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, parent_id TEXT, slug TEXT NOT NULL, directory TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL)`,
		`CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL)`,
		`CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL)`,
		`INSERT INTO session VALUES ('ses_4c1d2e3f0ffeOpenCodeSess01', 'p', NULL, 's', '/src', 'Rename the flag', '1.2.6', 1772445600000, 1772445600000)`,
		`INSERT INTO message VALUES ('msg_a', 'ses_4c1d2e3f0ffeOpenCodeSess01', 1772445601000, 0, '{"role":"user","time":{"created":1772445601000}}')`,
		`INSERT INTO part VALUES ('prt_a', 'msg_a', 'ses_4c1d2e3f0ffeOpenCodeSess01', 0, 0, '{"type":"text","text":"rename --fast to --quick"}')`,
		`INSERT INTO message VALUES ('msg_b', 'ses_4c1d2e3f0ffeOpenCodeSess01', 1772445602000, 0, '{"role":"assistant","time":{"created":1772445602000,"completed":1772445605000}}')`,
		`INSERT INTO part VALUES ('prt_b1', 'msg_b', 'ses_4c1d2e3f0ffeOpenCodeSess01', 0, 0, '{"type":"tool","callID":"call_1","tool":"grep","state":{"status":"completed","input":{"pattern":"--fast"},"output":"main.go:9","title":"","metadata":{},"time":{"start":1772445603000,"end":1772445604000}}}')`,
		`INSERT INTO part VALUES ('prt_b2', 'msg_b', 'ses_4c1d2e3f0ffeOpenCodeSess01', 0, 0, '{"type":"text","text":"Renamed in main.go."}')`,
	} {
		if _, err := oc.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	oc.Close()
	r = atriumExec(t, home, "", []string{"XDG_DATA_HOME=" + xdg}, "sessions", "import", "opencode")
	if r.code != 0 || !strings.Contains(r.stdout, "1 imported; 4 message(s) added") {
		t.Fatalf("opencode: %+v", r)
	}
	r = atrium(t, home, "messages", "list", "ses_4c1d2e3f0ffeOpenCodeSess01", "--json")
	if !strings.Contains(r.stdout, `"tool_call_id": "call_1"`) || !strings.Contains(r.stdout, "main.go:9") || !strings.Contains(r.stdout, "Renamed in main.go.") {
		t.Fatalf("opencode messages: %s", r.stdout)
	}

	// What an import brought is picked out by its platform: to list, or to
	// delete by rule.
	r = atrium(t, home, "sessions", "list", "--platform", "claude-code", "--json")
	if !strings.Contains(r.stdout, "5f0c7a4e-1111-4c2b-9a55-0a1b2c3d4e5f") || strings.Contains(r.stdout, "0199a1b2") {
		t.Fatalf("list by platform: %s", r.stdout)
	}
	var preview struct {
		Count int      `json:"count"`
		IDs   []string `json:"ids"`
	}
	mustJSON(t, atrium(t, home, "sessions", "delete", "--platform", "codex", "--dry-run", "--json"), &preview)
	if preview.Count != 1 || len(preview.IDs) != 1 || preview.IDs[0] != "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b" {
		t.Fatalf("delete by platform, dry run: %+v", preview)
	}
}
