package imports

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"atrium/backend/compaction"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

// ---- helpers shared with codex_test.go ----

type jlReadFunc func(ctx context.Context, root string, yield Yield, warn func(Problem)) error

// jlWrite writes lines (one JSON record each, as Go literals) to path,
// making its folders.
func jlWrite(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func jlAppend(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		t.Fatal(err)
	}
}

// jlRead runs a reader over root and gives what it yielded and reported.
func jlRead(t *testing.T, read jlReadFunc, root string) ([]sessions.Imported, []Problem) {
	t.Helper()
	var items []sessions.Imported
	var probs []Problem
	err := read(context.Background(), root, func(it sessions.Imported) error { items = append(items, it); return nil },
		func(p Problem) { probs = append(probs, p) })
	if err != nil {
		t.Fatalf("read %s: %v", root, err)
	}
	return items, probs
}

func jlAt(t *testing.T, s string) time.Time {
	t.Helper()
	if s == "" {
		return time.Time{}
	}
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return at.UTC()
}

func jlMsg(t *testing.T, role, content, tool, id, at string) sessions.ImportedMessage {
	return sessions.ImportedMessage{Role: role, Content: content, ToolName: tool, ToolCallID: id, CreatedAt: jlAt(t, at)}
}

func jlCheckMessages(t *testing.T, what string, got, want []sessions.ImportedMessage) {
	t.Helper()
	for i := 0; i < len(got) || i < len(want); i++ {
		switch {
		case i >= len(got):
			t.Errorf("%s: message %d missing: %+v", what, i+1, want[i])
		case i >= len(want):
			t.Errorf("%s: message %d not expected: %+v", what, i+1, got[i])
		case !reflect.DeepEqual(got[i], want[i]):
			t.Errorf("%s: message %d\n got %+v\nwant %+v", what, i+1, got[i], want[i])
		}
	}
}

// jlCheckStored compares what the store holds of session id with want
// (a zero time in want: any), and returns what it holds.
func jlCheckStored(t *testing.T, env *sessionstest.Env, id string, want []sessions.ImportedMessage) []sessions.Message {
	t.Helper()
	ms, err := env.Sessions.Messages(context.Background(), id, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != len(want) {
		t.Fatalf("stored %d messages, want %d", len(ms), len(want))
	}
	for i, m := range ms {
		w := want[i]
		if m.Role != w.Role || m.Content != w.Content || m.ToolName != w.ToolName || m.ToolCallID != w.ToolCallID {
			t.Errorf("stored message %d: %s %q %s %s, want %s %q %s %s", i+1, m.Role, m.Content, m.ToolName, m.ToolCallID,
				w.Role, w.Content, w.ToolName, w.ToolCallID)
		}
		if !w.CreatedAt.IsZero() && !m.CreatedAt.Time.Equal(w.CreatedAt) {
			t.Errorf("stored message %d at %v, want %v", i+1, m.CreatedAt.Time, w.CreatedAt)
		}
	}
	return ms
}

func jlKeys(items []sessions.Imported) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Origin.Key)
	}
	return out
}

// jlCheckProblems wants exactly the problems at lines (in order), each
// message holding its word.
func jlCheckProblems(t *testing.T, probs []Problem, path string, want map[int]string) {
	t.Helper()
	if len(probs) != len(want) {
		t.Errorf("problems: got %d, want %d: %v", len(probs), len(want), probs)
	}
	for _, p := range probs {
		w, ok := want[p.Line]
		switch {
		case !ok:
			t.Errorf("unexpected problem %s", p)
		case p.Path != path:
			t.Errorf("problem %s: path %q, want %q", p, p.Path, path)
		case !strings.Contains(p.Message, w):
			t.Errorf("problem %s: want it to say %q", p, w)
		}
	}
}

// jlImport imports items into env's store and gives each outcome by key.
func jlImport(t *testing.T, env *sessionstest.Env, items []sessions.Imported) (sessions.ImportResult, map[string]sessions.ImportOutcome) {
	t.Helper()
	res, err := env.Sessions.Import(context.Background(), items, sessions.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]sessions.ImportOutcome{}
	for _, o := range res.Outcomes {
		by[o.Origin.Key] = o
	}
	return res, by
}

// ---- Claude Code ----

const (
	claudeSID     = "5f0c2c1e-8a4b-4d3e-9f6a-1b2c3d4e5f60"
	claudeSID2    = "0b7e4f9a-2c1d-4e8f-a3b5-c6d7e8f90a1b"
	claudeAgentID = "a4e80a2"
)

// claudeRec is one record as Claude Code writes it: the common fields,
// then the record's own (a JSON object's members, without braces).
func claudeRec(typ, uuid, parent, at, rest string) string {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	return fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"userType":"external","cwd":"/home/dev/demo","sessionId":"%s","version":"2.1.12","gitBranch":"main","type":"%s",%s,"uuid":"%s","timestamp":"%s"}`,
		p, claudeSID, typ, rest, uuid, at)
}

func claudeUser(uuid, parent, at, content string) string {
	return claudeRec("user", uuid, parent, at, `"message":{"role":"user","content":`+content+`}`)
}

func claudeAssistant(uuid, parent, at, msgID, content string) string {
	return claudeRec("assistant", uuid, parent, at, `"requestId":"req_011","message":{"model":"claude-opus-4-5-20251101","id":"`+msgID+
		`","type":"message","role":"assistant","content":`+content+`,"stop_reason":null,"usage":{"input_tokens":2,"output_tokens":1}}`)
}

// claudeSession is a realistic session: a queue operation and snapshot
// first, a meta caveat, a question, one reply split over three records
// (thinking, text, tool call), results as text and as blocks (an image
// among them), an error result, parallel calls in one record, a user
// message of text and image blocks, bookkeeping, a record written twice,
// a /compact (its boundary and its summary), and a reply without a
// readable time.
func claudeSession() []string {
	return []string{
		`{"type":"queue-operation","operation":"dequeue","timestamp":"2026-01-20T11:57:17.716Z","sessionId":"` + claudeSID + `"}`,
		`{"type":"file-history-snapshot","messageId":"u1","snapshot":{"messageId":"u1","trackedFileBackups":{},"timestamp":"2026-01-20T11:57:18.000Z"},"isSnapshotUpdate":false}`,
		claudeRec("user", "m0", "", "2026-01-20T11:57:18.100Z", `"isMeta":true,"message":{"role":"user","content":"Caveat: The messages below were generated by the user while running local commands."}`),
		claudeUser("u1", "m0", "2026-01-20T11:57:18.500Z", `"Fix the failing test in math_utils.py"`),
		claudeAssistant("a1", "u1", "2026-01-20T11:57:20.000Z", "msg_01", `[{"type":"thinking","thinking":"The user wants a fix. Read first.","signature":"EuEDCkYICxgC"}]`),
		claudeAssistant("a2", "a1", "2026-01-20T11:57:20.500Z", "msg_01", `[{"type":"text","text":"I'll read the file first."}]`),
		claudeAssistant("a3", "a2", "2026-01-20T11:57:21.000Z", "msg_01", `[{"type":"tool_use","id":"toolu_01","name":"Read","input":{ "file_path": "src/math_utils.py", "limit": 50 },"caller":{"type":"direct"}}]`),
		claudeRec("user", "u2", "a3", "2026-01-20T11:57:21.500Z", `"message":{"role":"user","content":[{"tool_use_id":"toolu_01","type":"tool_result","content":"     1→def add(a, b):\n     2→    return a - b"}]},"toolUseResult":{"type":"text","file":{"filePath":"src/math_utils.py","content":"def add(a, b):\n    return a - b","numLines":2,"startLine":1,"totalLines":2}},"sourceToolAssistantUUID":"a3"`),
		claudeAssistant("a4", "u2", "2026-01-20T11:57:23.000Z", "msg_02", `[{"type":"text","text":"Found it: add subtracts."},{"type":"tool_use","id":"toolu_02","name":"Edit","input":{"file_path":"src/math_utils.py","old_string":"a - b","new_string":"a + b"}},{"type":"tool_use","id":"toolu_03","name":"Bash","input":{"command":"pytest -q","description":"Run the tests"}}]`),
		claudeUser("u3", "a4", "2026-01-20T11:57:25.000Z", `[{"type":"tool_result","tool_use_id":"toolu_02","content":[{"type":"text","text":"The file has been updated."},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},{"type":"text","text":"1 hunk applied."}]},{"type":"tool_result","tool_use_id":"toolu_03","content":"1 failed, 3 passed","is_error":true}]`),
		claudeUser("u4", "u3", "2026-01-20T11:57:30.000Z", `[{"type":"text","text":"Here is the screenshot"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},{"type":"text","text":"the red one"}]`),
		`{"parentUuid":"u4","isSidechain":false,"type":"system","subtype":"turn_duration","durationMs":31869,"isMeta":false,"uuid":"s1","timestamp":"2026-01-20T11:57:31.000Z","sessionId":"` + claudeSID + `"}`,
		`{"type":"progress","data":{"type":"hook_progress","hookEvent":"Stop","hookName":"Stop","command":"notify"},"parentToolUseID":"x","toolUseID":"x","uuid":"p1","parentUuid":"s1","timestamp":"2026-01-20T11:57:31.500Z","sessionId":"` + claudeSID + `"}`,
		claudeAssistant("a2", "a1", "2026-01-20T11:57:20.500Z", "msg_01", `[{"type":"text","text":"I'll read the file first."}]`),
		`{"parentUuid":null,"logicalParentUuid":"u4","isSidechain":false,"type":"system","subtype":"compact_boundary","content":"Conversation compacted","isMeta":false,"uuid":"cb","timestamp":"2026-01-20T11:58:00.000Z","compactMetadata":{"trigger":"manual","preTokens":21000},"sessionId":"` + claudeSID + `"}`,
		claudeRec("user", "c1", "cb", "2026-01-20T11:58:00.100Z", `"isCompactSummary":true,"isVisibleInTranscriptOnly":true,"message":{"role":"user","content":"This session is being continued from a previous conversation.\nSummary: the adder was fixed."}`),
		claudeAssistant("a5", "c1", "yesterday", "msg_03", `[{"type":"text","text":"Fixed: the red test passes now."}]`),
	}
}

func claudeSessionWant(t *testing.T) []sessions.ImportedMessage {
	return []sessions.ImportedMessage{
		jlMsg(t, "user", "Fix the failing test in math_utils.py", "", "", "2026-01-20T11:57:18.500Z"),
		jlMsg(t, "assistant", "I'll read the file first.", "", "", "2026-01-20T11:57:20.500Z"),
		jlMsg(t, "assistant", `{"file_path":"src/math_utils.py","limit":50}`, "Read", "toolu_01", "2026-01-20T11:57:21.000Z"),
		jlMsg(t, "tool", "     1→def add(a, b):\n     2→    return a - b", "Read", "toolu_01", "2026-01-20T11:57:21.500Z"),
		jlMsg(t, "assistant", "Found it: add subtracts.", "", "", "2026-01-20T11:57:23.000Z"),
		jlMsg(t, "assistant", `{"file_path":"src/math_utils.py","old_string":"a - b","new_string":"a + b"}`, "Edit", "toolu_02", "2026-01-20T11:57:23.000Z"),
		jlMsg(t, "assistant", `{"command":"pytest -q","description":"Run the tests"}`, "Bash", "toolu_03", "2026-01-20T11:57:23.000Z"),
		jlMsg(t, "tool", "The file has been updated.\n\n1 hunk applied.", "Edit", "toolu_02", "2026-01-20T11:57:25.000Z"),
		jlMsg(t, "tool", "Error: 1 failed, 3 passed", "Bash", "toolu_03", "2026-01-20T11:57:25.000Z"),
		jlMsg(t, "user", "Here is the screenshot\n\nthe red one", "", "", "2026-01-20T11:57:30.000Z"),
		jlMsg(t, "system", compaction.SummaryPrefix+"\nThis session is being continued from a previous conversation.\nSummary: the adder was fixed.", "", "", "2026-01-20T11:58:00.100Z"),
		jlMsg(t, "assistant", "Fixed: the red test passes now.", "", "", ""),
	}
}

func TestClaudeRealisticTranscript(t *testing.T) {
	path := filepath.Join(t.TempDir(), "projects", "-home-dev-demo", claudeSID+".jsonl")
	jlWrite(t, path, claudeSession()...)
	items, probs := jlRead(t, readClaude, path)
	if len(probs) != 0 {
		t.Errorf("problems: %v", probs)
	}
	if len(items) != 1 {
		t.Fatalf("got %d sessions, want 1: %v", len(items), jlKeys(items))
	}
	it := items[0]
	want := sessions.Imported{
		Origin:    sessions.Origin{Kind: sessions.ImportClaude, Key: claudeSID, Path: path},
		Reading:   readingClaude,
		Title:     "Fix the failing test in math_utils.py",
		Source:    "cli",
		Platform:  PlatformClaude,
		StartedAt: jlAt(t, "2026-01-20T11:57:17.716Z"), // the queue operation: the first time of the file
	}
	jlCheckMessages(t, "claude", it.Messages, claudeSessionWant(t))
	it.Messages = nil
	if !reflect.DeepEqual(it, want) {
		t.Errorf("session\n got %+v\nwant %+v", it, want)
	}
	// A record at a time: a long line (far past bufio's buffer) reads whole.
	long := strings.Repeat("0123456789abcdef", 300<<10/16) // 300 KiB
	jlAppend(t, path, claudeUser("u9", "a5", "2026-01-20T12:00:00Z", `"`+long+`"`))
	items, probs = jlRead(t, readClaude, path)
	if len(probs) != 0 || len(items) != 1 {
		t.Fatalf("after a long line: %d sessions, problems %v", len(items), probs)
	}
	ms := items[0].Messages
	if last := ms[len(ms)-1]; last.Content != long || last.Role != "user" {
		t.Errorf("the long line's message: %d bytes of %s, want %d of user", len(last.Content), last.Role, len(long))
	}
}

func TestClaudeTitles(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name  string
		lines []string
		want  string
	}{
		{"first user message", []string{
			claudeUser("u1", "", "2026-01-20T10:00:00Z", `"  \n  Why is CI red?\nIt passed yesterday."`),
			claudeUser("u2", "u1", "2026-01-20T10:01:00Z", `"second question"`),
		}, "Why is CI red?"},
		{"a slash command's echo is passed over", []string{
			claudeUser("u1", "", "2026-01-20T10:00:00Z", `"<command-name>/model</command-name>\n<command-message>model</command-message>"`),
			claudeUser("u2", "u1", "2026-01-20T10:01:00Z", `"Rename the package"`),
		}, "Rename the package"},
		{"only a slash command", []string{
			claudeUser("u1", "", "2026-01-20T10:00:00Z", `"<command-name>/init</command-name>"`),
		}, "<command-name>/init</command-name>"},
		{"the last summary of this file", []string{
			`{"type":"summary","summary":"Older work in another session","leafUuid":"elsewhere"}`,
			claudeUser("u1", "", "2026-01-20T10:00:00Z", `"hello"`),
			`{"type":"summary","summary":"Fixing the adder","leafUuid":"u1"}`,
			`{"type":"summary","summary":"A later summary of another session","leafUuid":"elsewhere-2"}`,
		}, "Fixing the adder"},
		{"the last summary when none is of this file", []string{
			`{"type":"summary","summary":"First","leafUuid":"x"}`,
			`{"type":"summary","summary":"Second","leafUuid":"y"}`,
			claudeUser("u1", "", "2026-01-20T10:00:00Z", `"hello"`),
		}, "Second"},
		{"a rename wins over generated titles", []string{
			`{"type":"summary","summary":"A summary","leafUuid":"u1"}`,
			claudeUser("u1", "", "2026-01-20T10:00:00Z", `"hello"`),
			`{"type":"custom-title","customTitle":"old name","sessionId":"` + claudeSID + `"}`,
			`{"type":"ai-title","aiTitle":"Generated","sessionId":"` + claudeSID + `"}`,
			`{"type":"custom-title","customTitle":"auth refactor","sessionId":"` + claudeSID + `"}`,
			`{"type":"agent-name","agentName":"auth refactor","sessionId":"` + claudeSID + `"}`,
		}, "auth refactor"},
		{"a generated title wins over summaries", []string{
			`{"type":"summary","summary":"A summary","leafUuid":"u1"}`,
			claudeUser("u1", "", "2026-01-20T10:00:00Z", `"hello"`),
			`{"type":"ai-title","aiTitle":"Design the portfolio page","sessionId":"` + claudeSID + `"}`,
		}, "Design the portfolio page"},
		{"cut to one clean line", []string{
			`{"type":"summary","summary":"Line one\twith a tab\nline two","leafUuid":"u1"}`,
		}, "Line one with a tab"},
		{"nothing to name it by", []string{
			`{"type":"file-history-snapshot","messageId":"x","snapshot":{},"isSnapshotUpdate":false}`,
		}, ""},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("case%d", i), claudeSID+".jsonl")
			jlWrite(t, path, c.lines...)
			items, probs := jlRead(t, readClaude, path)
			if len(probs) != 0 || len(items) != 1 {
				t.Fatalf("%d sessions, problems %v", len(items), probs)
			}
			if items[0].Title != c.want {
				t.Errorf("title %q, want %q", items[0].Title, c.want)
			}
		})
	}
}

func TestClaudeBadLinesAreReportedAndPassedOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), claudeSID+".jsonl")
	jlWrite(t, path,
		claudeUser("u1", "", "2026-01-20T10:00:00Z", `"first"`),      // 1
		`{"type":"user","message":{"role":"user","content":"cut off`, // 2: not JSON
		``, // 3: blank, still counted
		`{"type":"assistant","uuid":"a0","message":"hello"}`, // 4: no message object
		`["a","list"]`, // 5: not an object
		claudeAssistant("a1", "u1", "2026-01-20T10:00:01Z", "msg_1", `42`),         // 6: content neither text nor blocks
		`{"uuid":"x","message":{"role":"user","content":"no type"}}`,               // 7
		`{"type":"summary","summary":{"text":"not a text"},"leafUuid":"u1"}`,       // 8
		`{"type":"user","sessionId":7,"message":{"content":"odd id, still read"}}`, // 9: a sessionId not a text is no id
		claudeUser("u3", "u1", "2026-01-20T10:00:04Z", `"last"`),                   // 10
	)
	items, probs := jlRead(t, readClaude, path)
	jlCheckProblems(t, probs, path, map[int]string{
		2: "not JSON",
		4: "without a message object",
		5: "not a JSON object",
		6: "neither a text nor a list of blocks",
		7: `without a "type"`,
		8: "summary is not a text",
	})
	if len(items) != 1 {
		t.Fatalf("%d sessions", len(items))
	}
	jlCheckMessages(t, "after bad lines", items[0].Messages, []sessions.ImportedMessage{
		jlMsg(t, "user", "first", "", "", "2026-01-20T10:00:00Z"),
		jlMsg(t, "user", "odd id, still read", "", "", ""),
		jlMsg(t, "user", "last", "", "", "2026-01-20T10:00:04Z"),
	})
}

func TestClaudeBlockProblems(t *testing.T) {
	path := filepath.Join(t.TempDir(), claudeSID+".jsonl")
	jlWrite(t, path,
		claudeAssistant("a2", "", "2026-01-20T10:00:02Z", "msg_1", `[{"type":"tool_use","name":"Bash","input":{}},"loose text",{"type":"text","text":"still here"}]`),
		claudeUser("u2", "a2", "2026-01-20T10:00:03Z", `[{"type":"tool_result","content":"orphan"},{"type":"tool_result","tool_use_id":"toolu_9","content":{"odd":true}}]`),
	)
	_, probs := jlRead(t, readClaude, path)
	want := []Problem{
		{Path: path, Line: 1, Message: "tool_use block 1 without its id and name"},
		{Path: path, Line: 1, Message: "block 2 is not a content block"},
		{Path: path, Line: 2, Message: "tool_result block 1 without its tool_use_id"},
		{Path: path, Line: 2, Message: "tool_result block 2: content of an unexpected shape, kept as JSON"},
	}
	if !reflect.DeepEqual(probs, want) {
		t.Errorf("problems\n got %v\nwant %v", probs, want)
	}
	items, _ := jlRead(t, readClaude, path)
	jlCheckMessages(t, "around bad blocks", items[0].Messages, []sessions.ImportedMessage{
		jlMsg(t, "assistant", "still here", "", "", "2026-01-20T10:00:02Z"),
		jlMsg(t, "tool", `{"odd":true}`, "", "toolu_9", "2026-01-20T10:00:03Z"),
	})
}

func TestClaudeLineLimitAndUnreadableFiles(t *testing.T) {
	old := maxLineBytes
	maxLineBytes = 1 << 10
	defer func() { maxLineBytes = old }()
	dir := t.TempDir()
	path := filepath.Join(dir, claudeSID+".jsonl")
	jlWrite(t, path,
		claudeUser("u1", "", "2026-01-20T10:00:00Z", `"before"`),
		claudeUser("u2", "u1", "2026-01-20T10:00:01Z", `"`+strings.Repeat("x", 3000)+`"`),
		claudeUser("u3", "u2", "2026-01-20T10:00:02Z", `"after"`),
	)
	// A file that cannot be opened: a link to nothing.
	gone := filepath.Join(dir, claudeSID2+".jsonl")
	if err := os.Symlink(filepath.Join(dir, "missing"), gone); err != nil {
		t.Skip("no symlinks here:", err)
	}
	// And what is not a transcript.
	jlWrite(t, filepath.Join(dir, "sessions-index.json"), `{"version":1,"entries":[]}`)
	jlWrite(t, filepath.Join(dir, "memory", "MEMORY.md"), "# notes")
	items, probs := jlRead(t, readClaude, dir)
	if len(probs) != 2 {
		t.Fatalf("problems %v", probs)
	}
	for _, p := range probs {
		switch p.Path {
		case path:
			if p.Line != 2 || !strings.Contains(p.Message, "more than 1024 bytes") {
				t.Errorf("long line: %s", p)
			}
		case gone:
			if p.Line != 0 || !strings.Contains(p.Message, "cannot read") {
				t.Errorf("missing file: %s", p)
			}
		default:
			t.Errorf("unexpected problem %s", p)
		}
	}
	if len(items) != 1 {
		t.Fatalf("sessions %v", jlKeys(items))
	}
	jlCheckMessages(t, "around a long line", items[0].Messages, []sessions.ImportedMessage{
		jlMsg(t, "user", "before", "", "", "2026-01-20T10:00:00Z"),
		jlMsg(t, "user", "after", "", "", "2026-01-20T10:00:02Z"),
	})
	// A file root that is not a transcript is said so.
	_, probs = jlRead(t, readClaude, filepath.Join(dir, "sessions-index.json"))
	if len(probs) != 1 || !strings.Contains(probs[0].Message, "not a .jsonl file") {
		t.Errorf("a .json root: %v", probs)
	}
}

// claudeSide is a record of a sidechain in its parent's file (1.0's way).
func claudeSide(typ, uuid, parent, at, content string) string {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	return fmt.Sprintf(`{"parentUuid":%s,"isSidechain":true,"userType":"external","cwd":"/home/dev/demo","sessionId":"%s","version":"1.0.61","type":"%s","message":{"role":"%s","content":%s},"uuid":"%s","timestamp":"%s"}`,
		p, claudeSID, typ, typ, content, uuid, at)
}

// claudeProjects lays out a projects folder with every kind of file: two
// projects; a session with two sidechains in its file and a subagent's
// file under <id>/subagents; a session whose file is gone but whose
// subagent's file is there; 2.0's project-level agent file; an empty
// session file; files that are not transcripts.
func claudeProjects(t *testing.T) (root string, paths map[string]string) {
	root = filepath.Join(t.TempDir(), "projects")
	paths = map[string]string{
		"main":   filepath.Join(root, "-home-dev-demo", claudeSID+".jsonl"),
		"sub":    filepath.Join(root, "-home-dev-demo", claudeSID, "subagents", "agent-"+claudeAgentID+".jsonl"),
		"orphan": filepath.Join(root, "-home-dev-demo", "11111111-2222-4333-8444-555555555555", "subagents", "agent-c0ffee1.jsonl"),
		"agent":  filepath.Join(root, "-home-dev-other", "agent-b123456.jsonl"),
		"other":  filepath.Join(root, "-home-dev-other", claudeSID2+".jsonl"),
		"empty":  filepath.Join(root, "-home-dev-other", "ffffffff-0000-4000-8000-000000000000.jsonl"),
	}
	jlWrite(t, paths["main"],
		claudeUser("u1", "", "2026-01-20T10:00:00Z", `"Research the cache layer"`),
		claudeAssistant("a1", "u1", "2026-01-20T10:00:01Z", "msg_1", `[{"type":"tool_use","id":"toolu_T1","name":"Task","input":{"description":"find cache code","prompt":"Find the cache code"}},{"type":"tool_use","id":"toolu_T2","name":"Task","input":{"description":"find tests","prompt":"Find the cache tests"}}]`),
		claudeSide("user", "s1", "", "2026-01-20T10:00:02Z", `"Find the cache code"`),
		claudeSide("user", "t1", "", "2026-01-20T10:00:02.500Z", `"Find the cache tests"`),
		claudeSide("assistant", "s2", "s1", "2026-01-20T10:00:03Z", `[{"type":"tool_use","id":"toolu_S1","name":"Grep","input":{"pattern":"cache"}}]`),
		claudeSide("assistant", "t2", "t1", "2026-01-20T10:00:03.500Z", `[{"type":"text","text":"cache_test.go"}]`),
		claudeSide("user", "s3", "s2", "2026-01-20T10:00:04Z", `[{"type":"tool_result","tool_use_id":"toolu_S1","content":"cache.go"}]`),
		claudeSide("assistant", "s4", "s3", "2026-01-20T10:00:05Z", `[{"type":"text","text":"It is in cache.go"}]`),
		claudeUser("u2", "a1", "2026-01-20T10:00:06Z", `[{"type":"tool_result","tool_use_id":"toolu_T1","content":[{"type":"text","text":"It is in cache.go"}]},{"type":"tool_result","tool_use_id":"toolu_T2","content":"cache_test.go"}]`),
		claudeAssistant("a2", "u2", "2026-01-20T10:00:07Z", "msg_2", `[{"type":"text","text":"The cache is in cache.go, tested in cache_test.go."}]`),
	)
	jlWrite(t, paths["sub"],
		`{"parentUuid":null,"isSidechain":true,"userType":"external","cwd":"/home/dev/demo","sessionId":"`+claudeSID+`","version":"2.1.37","agentId":"`+claudeAgentID+`","type":"user","message":{"role":"user","content":"Review cache.go"},"uuid":"x1","timestamp":"2026-01-20T10:01:00Z"}`,
		`{"parentUuid":"x1","isSidechain":true,"userType":"external","cwd":"/home/dev/demo","sessionId":"`+claudeSID+`","version":"2.1.37","agentId":"`+claudeAgentID+`","type":"assistant","message":{"id":"msg_x","role":"assistant","content":[{"type":"text","text":"Looks fine."}]},"uuid":"x2","timestamp":"2026-01-20T10:01:05Z"}`,
	)
	jlWrite(t, paths["orphan"],
		`{"parentUuid":null,"isSidechain":true,"sessionId":"11111111-2222-4333-8444-555555555555","agentId":"c0ffee1","type":"user","message":{"role":"user","content":"Left behind"},"uuid":"o1","timestamp":"2026-01-19T09:00:00Z"}`,
	)
	jlWrite(t, paths["agent"],
		`{"parentUuid":null,"isSidechain":true,"sessionId":"`+claudeSID2+`","agentId":"b123456","type":"user","message":{"role":"user","content":"Count the files"},"uuid":"g1","timestamp":"2026-01-21T09:00:01Z"}`,
		`{"parentUuid":"g1","isSidechain":true,"sessionId":"`+claudeSID2+`","agentId":"b123456","type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"12 files."}]},"uuid":"g2","timestamp":"2026-01-21T09:00:02Z"}`,
	)
	jlWrite(t, paths["other"],
		`{"parentUuid":null,"isSidechain":false,"sessionId":"`+claudeSID2+`","type":"user","message":{"role":"user","content":"How many files?"},"uuid":"h1","timestamp":"2026-01-21T09:00:00Z"}`,
		`{"parentUuid":"h1","isSidechain":false,"sessionId":"`+claudeSID2+`","type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Twelve."}]},"uuid":"h2","timestamp":"2026-01-21T09:00:03Z"}`,
	)
	if err := os.WriteFile(paths["empty"], nil, 0o644); err != nil {
		t.Fatal(err)
	}
	jlWrite(t, filepath.Join(root, "-home-dev-demo", "sessions-index.json"), `{"version":1,"entries":[]}`)
	jlWrite(t, filepath.Join(root, "-home-dev-demo", claudeSID, "subagents", "agent-"+claudeAgentID+".meta.json"), `{}`)
	return root, paths
}

func TestClaudeProjectsFolderSubagentsAndOrder(t *testing.T) {
	root, paths := claudeProjects(t)
	items, probs := jlRead(t, readClaude, root)
	if len(probs) != 0 {
		t.Errorf("problems %v", probs)
	}
	orphanParent := "11111111-2222-4333-8444-555555555555"
	// Each session, then its sidechains in the order they began, then its
	// subagents' files; last, by path, the files whose parent was not read
	// with them (a subagent's whose session's file is gone; 2.0's
	// project-level agent file).
	wantKeys := []string{claudeSID, claudeSID + "/s1", claudeSID + "/t1", claudeSID + "/" + claudeAgentID,
		claudeSID2, "ffffffff-0000-4000-8000-000000000000",
		orphanParent + "/c0ffee1", claudeSID2 + "/b123456"}
	if got := jlKeys(items); !reflect.DeepEqual(got, wantKeys) {
		t.Fatalf("order\n got %v\nwant %v", got, wantKeys)
	}
	by := map[string]sessions.Imported{}
	for _, it := range items {
		by[it.Origin.Key] = it
	}
	own := by[claudeSID]
	if own.ParentKey != "" || own.Title != "Research the cache layer" || own.Origin.Path != paths["main"] {
		t.Errorf("the session %+v", own)
	}
	jlCheckMessages(t, "the session without its sidechains", own.Messages, []sessions.ImportedMessage{
		jlMsg(t, "user", "Research the cache layer", "", "", "2026-01-20T10:00:00Z"),
		jlMsg(t, "assistant", `{"description":"find cache code","prompt":"Find the cache code"}`, "Task", "toolu_T1", "2026-01-20T10:00:01Z"),
		jlMsg(t, "assistant", `{"description":"find tests","prompt":"Find the cache tests"}`, "Task", "toolu_T2", "2026-01-20T10:00:01Z"),
		jlMsg(t, "tool", "It is in cache.go", "Task", "toolu_T1", "2026-01-20T10:00:06Z"),
		jlMsg(t, "tool", "cache_test.go", "Task", "toolu_T2", "2026-01-20T10:00:06Z"),
		jlMsg(t, "assistant", "The cache is in cache.go, tested in cache_test.go.", "", "", "2026-01-20T10:00:07Z"),
	})
	for key, want := range map[string][]sessions.ImportedMessage{
		claudeSID + "/s1": {
			jlMsg(t, "user", "Find the cache code", "", "", "2026-01-20T10:00:02Z"),
			jlMsg(t, "assistant", `{"pattern":"cache"}`, "Grep", "toolu_S1", "2026-01-20T10:00:03Z"),
			jlMsg(t, "tool", "cache.go", "Grep", "toolu_S1", "2026-01-20T10:00:04Z"),
			jlMsg(t, "assistant", "It is in cache.go", "", "", "2026-01-20T10:00:05Z"),
		},
		claudeSID + "/t1": {
			jlMsg(t, "user", "Find the cache tests", "", "", "2026-01-20T10:00:02.500Z"),
			jlMsg(t, "assistant", "cache_test.go", "", "", "2026-01-20T10:00:03.500Z"),
		},
		claudeSID + "/" + claudeAgentID: {
			jlMsg(t, "user", "Review cache.go", "", "", "2026-01-20T10:01:00Z"),
			jlMsg(t, "assistant", "Looks fine.", "", "", "2026-01-20T10:01:05Z"),
		},
		claudeSID2 + "/b123456": {
			jlMsg(t, "user", "Count the files", "", "", "2026-01-21T09:00:01Z"),
			jlMsg(t, "assistant", "12 files.", "", "", "2026-01-21T09:00:02Z"),
		},
	} {
		it := by[key]
		jlCheckMessages(t, key, it.Messages, want)
		wantParent := strings.SplitN(key, "/", 2)[0]
		if it.ParentKey != wantParent || it.Relation != sessions.RelationDelegate || it.Title != want[0].Content ||
			!it.StartedAt.Equal(want[0].CreatedAt) {
			t.Errorf("%s: parent %q relation %q title %q started %v", key, it.ParentKey, it.Relation, it.Title, it.StartedAt)
		}
	}
	if o := by[orphanParent+"/c0ffee1"]; o.ParentKey != orphanParent || o.Relation != sessions.RelationDelegate || len(o.Messages) != 1 {
		t.Errorf("orphan subagent %+v", o)
	}
	if e := by["ffffffff-0000-4000-8000-000000000000"]; len(e.Messages) != 0 || e.Origin.Path != paths["empty"] || !e.StartedAt.IsZero() {
		t.Errorf("empty file %+v", e)
	}

	// Twice the same.
	again, _ := jlRead(t, readClaude, root)
	if !reflect.DeepEqual(items, again) {
		t.Error("a second run over the same files differs")
	}

	// One project's folder.
	items, _ = jlRead(t, readClaude, filepath.Dir(paths["other"]))
	if got, want := jlKeys(items), []string{claudeSID2, "ffffffff-0000-4000-8000-000000000000", claudeSID2 + "/b123456"}; !reflect.DeepEqual(got, want) {
		t.Errorf("project folder: %v, want %v", got, want)
	}
	// One transcript: with its sidechains and its subagents' files.
	items, _ = jlRead(t, readClaude, paths["main"])
	if got, want := jlKeys(items), []string{claudeSID, claudeSID + "/s1", claudeSID + "/t1", claudeSID + "/" + claudeAgentID}; !reflect.DeepEqual(got, want) {
		t.Errorf("one file: %v, want %v", got, want)
	}
	// One subagent's file.
	items, _ = jlRead(t, readClaude, paths["sub"])
	if len(items) != 1 || items[0].Origin.Key != claudeSID+"/"+claudeAgentID || items[0].ParentKey != claudeSID {
		t.Errorf("one subagent file: %+v", items)
	}
}

func TestClaudeKeys(t *testing.T) {
	dir := t.TempDir()
	// A resumed session's file opens with copies of the session resumed
	// from: the file's name is its id.
	resumed := filepath.Join(dir, claudeSID2+".jsonl")
	jlWrite(t, resumed,
		claudeUser("u1", "", "2026-01-20T10:00:00Z", `"copied from the first session"`),
		`{"parentUuid":"u1","isSidechain":false,"sessionId":"`+claudeSID2+`","type":"user","message":{"role":"user","content":"new here"},"uuid":"n1","timestamp":"2026-01-21T10:00:00Z"}`,
	)
	// A copy under another name: the id inside.
	renamed := filepath.Join(dir, "exported-chat.jsonl")
	jlWrite(t, renamed, claudeUser("u1", "", "2026-01-20T10:00:00Z", `"hi"`))
	// No id anywhere: the name.
	bare := filepath.Join(dir, "scratch.jsonl")
	jlWrite(t, bare, `{"type":"user","message":{"role":"user","content":"hi"},"uuid":"z1"}`)
	for path, want := range map[string]string{resumed: claudeSID2, renamed: claudeSID, bare: "scratch"} {
		items, probs := jlRead(t, readClaude, path)
		if len(items) != 1 || len(probs) != 0 || items[0].Origin.Key != want {
			t.Errorf("%s: %v %v, want key %s", filepath.Base(path), jlKeys(items), probs, want)
		}
	}
}

func TestClaudeStopsOnCancelAndYieldError(t *testing.T) {
	root, _ := claudeProjects(t)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := readClaude(ctx, root, func(sessions.Imported) error { n++; cancel(); return nil }, func(Problem) {})
	if !errors.Is(err, context.Canceled) || n != 3 { // the first file's session and its sidechains, then the check
		t.Errorf("cancelled: err %v after %d sessions", err, n)
	}
	stop := errors.New("stop")
	n = 0
	err = readClaude(context.Background(), root, func(sessions.Imported) error { n++; return stop }, func(Problem) {})
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("yield error: err %v after %d sessions", err, n)
	}
}

func TestClaudeImportAddsOnlyNewMessages(t *testing.T) {
	env := sessionstest.New(t)
	root, paths := claudeProjects(t)
	// The main file ends mid-reply: its first record only.
	lines := claudeSession()
	jlWrite(t, paths["main"], lines[:6]...)
	items, _ := jlRead(t, readClaude, root)
	res, by := jlImport(t, env, items)
	if o := by[claudeSID]; o.Status != sessions.ImportStatusImported || o.Messages != 2 || o.Title != "Fix the failing test in math_utils.py" {
		t.Fatalf("first import: %+v", o)
	}
	if o := by["ffffffff-0000-4000-8000-000000000000"]; o.Status != sessions.ImportStatusSkipped {
		t.Errorf("empty file: %+v", o)
	}
	sub := by[claudeSID+"/"+claudeAgentID]
	if sub.Status != sessions.ImportStatusImported {
		t.Fatalf("subagent: %+v (all %+v)", sub, res.Outcomes)
	}
	ctx := context.Background()
	got, err := env.Sessions.Get(ctx, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ParentSessionID == nil || *got.ParentSessionID != claudeSID || got.Relation != sessions.RelationDelegate {
		t.Errorf("subagent's link: %v %q", got.ParentSessionID, got.Relation)
	}

	// The reply goes on, and the session with it.
	jlAppend(t, paths["main"], lines[6:]...)
	items, _ = jlRead(t, readClaude, root)
	_, by = jlImport(t, env, items)
	if o := by[claudeSID]; o.Status != sessions.ImportStatusUpdated || o.Messages != len(claudeSessionWant(t))-2 {
		t.Errorf("second import: %+v", o)
	}
	for key, o := range by {
		if key != claudeSID && o.Status != sessions.ImportStatusUnchanged && o.Status != sessions.ImportStatusSkipped {
			t.Errorf("second import of %s: %+v", key, o)
		}
	}
	want := claudeSessionWant(t)
	ms := jlCheckStored(t, env, claudeSID, want)
	// The last, without a time of its own, takes the one before it.
	if last := ms[len(ms)-1]; !last.CreatedAt.Time.Equal(want[len(want)-2].CreatedAt) {
		t.Errorf("the last message at %v", last.CreatedAt.Time)
	}

	// Nothing new.
	items, _ = jlRead(t, readClaude, root)
	_, by = jlImport(t, env, items)
	for key, o := range by {
		if o.Status != sessions.ImportStatusUnchanged && o.Status != sessions.ImportStatusSkipped || o.Messages != 0 {
			t.Errorf("third import of %s: %+v", key, o)
		}
	}
	if o := by[claudeSID]; o.Status != sessions.ImportStatusUnchanged {
		t.Errorf("third import: %+v", o)
	}
}
