package imports

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"atrium/backend/compaction"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

const (
	codexID      = "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5"
	codexChildID = "019a2d80-0000-7000-8000-00000000c41d"
	codexOldID   = "5973b6c0-94b8-487b-a530-2aeb6098ae0e"
)

func codexPath(root, day, at, id string) string {
	return filepath.Join(root, filepath.FromSlash(day), "rollout-"+at+"-"+id+".jsonl")
}

// codexItem is a response_item line of the envelope layout.
func codexItem(at, payload string) string {
	return `{"timestamp":"` + at + `","type":"response_item","payload":` + payload + `}`
}

// codexSession is a realistic rollout of the envelope layout: its meta;
// the developer and AGENTS.md / environment messages Codex writes itself;
// the question, repeated by an event_msg; turn settings; reasoning; a
// shell call whose output is the older {output, metadata} text; an
// apply_patch custom call; an MCP call whose output is content items; a
// web search; the answer; a compaction; a local shell call that failed.
func codexSession() []string {
	return []string{
		`{"timestamp":"2025-10-29T00:59:38.317Z","type":"session_meta","payload":{"id":"` + codexID + `","timestamp":"2025-10-29T00:59:38.308Z","cwd":"/home/dev/demo","originator":"codex_cli_rs","cli_version":"0.46.0","instructions":null,"source":"cli","model_provider":"openai","git":{"commit_hash":"4f1c","branch":"main"}}}`,
		codexItem("2025-10-29T00:59:38.320Z", `{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>\nFilesystem sandboxing: workspace-write.\n</permissions instructions>"}]}`),
		codexItem("2025-10-29T00:59:38.321Z", `{"type":"message","role":"user","content":[{"type":"input_text","text":"# AGENTS.md instructions for /home/dev/demo\n\n<INSTRUCTIONS>\nBe terse.\n</INSTRUCTIONS>"}]}`),
		codexItem("2025-10-29T00:59:38.322Z", `{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/home/dev/demo</cwd>\n  <shell>bash</shell>\n</environment_context>"}]}`),
		codexItem("2025-10-29T00:59:40.000Z", `{"type":"message","role":"user","content":[{"type":"input_text","text":"List the Go files and count them"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="}]}`),
		`{"timestamp":"2025-10-29T00:59:40.001Z","type":"event_msg","payload":{"type":"user_message","message":"List the Go files and count them","kind":"plain","images":[]}}`,
		`{"timestamp":"2025-10-29T00:59:40.002Z","type":"turn_context","payload":{"cwd":"/home/dev/demo","approval_policy":"on-request","sandbox_policy":{"mode":"workspace-write"},"model":"gpt-5-codex","effort":"high","summary":"auto"}}`,
		codexItem("2025-10-29T00:59:41.000Z", `{"type":"reasoning","summary":[{"type":"summary_text","text":"**Listing files**"}],"content":null,"encrypted_content":"gAAAAABo"}`),
		codexItem("2025-10-29T00:59:42.000Z", `{"type":"function_call","name":"shell","arguments":"{\"command\": [\"bash\", \"-lc\", \"ls *.go | wc -l\"], \"workdir\": \"/home/dev/demo\"}","call_id":"call_abc"}`),
		codexItem("2025-10-29T00:59:43.000Z", `{"type":"function_call_output","call_id":"call_abc","output":"{\"output\":\"3\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.1}}"}`),
		`{"timestamp":"2025-10-29T00:59:43.001Z","type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":null}}`,
		codexItem("2025-10-29T00:59:44.000Z", `{"type":"custom_tool_call","status":"completed","call_id":"call_patch","name":"apply_patch","input":"*** Begin Patch\n*** Add File: b.go\n+package b\n*** End Patch\n"}`),
		codexItem("2025-10-29T00:59:44.500Z", `{"type":"custom_tool_call_output","call_id":"call_patch","output":"Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA b.go\n"}`),
		codexItem("2025-10-29T00:59:45.000Z", `{"type":"function_call","name":"docs__search","arguments":"{\"q\":\"go vet\"}","call_id":"call_mcp"}`),
		codexItem("2025-10-29T00:59:45.500Z", `{"type":"function_call_output","call_id":"call_mcp","output":[{"type":"input_text","text":"result one"},{"type":"input_image","image_url":"data:image/png;base64,AAAA"},{"type":"input_text","text":"result two"}]}`),
		codexItem("2025-10-29T00:59:46.000Z", `{"type":"web_search_call","status":"completed","action":{"type":"search","query":"go vet flags"}}`),
		codexItem("2025-10-29T00:59:47.000Z", `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"There are 3 Go files;"},{"type":"output_text","text":"I added b.go."}]}`),
		`{"timestamp":"2025-10-29T00:59:47.001Z","type":"event_msg","payload":{"type":"agent_message","message":"There are 3 Go files; I added b.go."}}`,
		codexItem("2025-10-29T00:59:48.000Z", `{"type":"message","role":"user","content":[{"type":"input_text","text":"<turn_aborted>\nThe user interrupted the previous turn.\n</turn_aborted>"}]}`),
		`{"timestamp":"2025-10-29T01:10:00.000Z","type":"compacted","payload":{"message":"Listed 3 Go files and added b.go.","replacement_history":[]}}`,
		codexItem("2025-10-29T01:10:01.000Z", `{"type":"local_shell_call","call_id":"call_ls","status":"completed","action":{"type":"exec","command":["ls","-la"],"timeout_ms":1000,"working_directory":null,"env":null,"user":null}}`),
		codexItem("2025-10-29T01:10:02.000Z", `{"type":"function_call_output","call_id":"call_ls","output":{"content":"ls: permission denied","success":false}}`),
	}
}

func codexSessionWant(t *testing.T) []sessions.ImportedMessage {
	patch, _ := json.Marshal(map[string]string{"input": "*** Begin Patch\n*** Add File: b.go\n+package b\n*** End Patch\n"})
	return []sessions.ImportedMessage{
		jlMsg(t, "user", "List the Go files and count them", "", "", "2025-10-29T00:59:40.000Z"),
		jlMsg(t, "assistant", `{"command":["bash","-lc","ls *.go | wc -l"],"workdir":"/home/dev/demo"}`, "shell", "call_abc", "2025-10-29T00:59:42.000Z"),
		jlMsg(t, "tool", "3\n", "shell", "call_abc", "2025-10-29T00:59:43.000Z"),
		jlMsg(t, "assistant", string(patch), "apply_patch", "call_patch", "2025-10-29T00:59:44.000Z"),
		jlMsg(t, "tool", "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA b.go\n", "apply_patch", "call_patch", "2025-10-29T00:59:44.500Z"),
		jlMsg(t, "assistant", `{"q":"go vet"}`, "docs__search", "call_mcp", "2025-10-29T00:59:45.000Z"),
		jlMsg(t, "tool", "result one\n\nresult two", "docs__search", "call_mcp", "2025-10-29T00:59:45.500Z"),
		jlMsg(t, "assistant", "There are 3 Go files;\n\nI added b.go.", "", "", "2025-10-29T00:59:47.000Z"),
		jlMsg(t, "system", compaction.SummaryPrefix+"\nListed 3 Go files and added b.go.", "", "", "2025-10-29T01:10:00.000Z"),
		jlMsg(t, "assistant", `{"type":"exec","command":["ls","-la"],"timeout_ms":1000,"working_directory":null,"env":null,"user":null}`, "local_shell", "call_ls", "2025-10-29T01:10:01.000Z"),
		jlMsg(t, "tool", "Error: ls: permission denied", "local_shell", "call_ls", "2025-10-29T01:10:02.000Z"),
	}
}

func TestCodexRealisticRollout(t *testing.T) {
	path := codexPath(t.TempDir(), "2025/10/29", "2025-10-29T00-59-38", codexID)
	jlWrite(t, path, codexSession()...)
	items, probs := jlRead(t, readCodex, path)
	if len(probs) != 0 {
		t.Errorf("problems: %v", probs)
	}
	if len(items) != 1 {
		t.Fatalf("got %d sessions", len(items))
	}
	it := items[0]
	jlCheckMessages(t, "codex", it.Messages, codexSessionWant(t))
	it.Messages = nil
	want := sessions.Imported{
		Origin:    sessions.Origin{Kind: sessions.ImportCodex, Key: codexID, Path: path},
		Reading:   readingCodex,
		Title:     "List the Go files and count them",
		Source:    "cli",
		Platform:  PlatformCodex,
		StartedAt: jlAt(t, "2025-10-29T00:59:38.308Z"), // the meta's own time, not its line's
	}
	if !reflect.DeepEqual(it, want) {
		t.Errorf("session\n got %+v\nwant %+v", it, want)
	}
}

// codexOldSession is the older layout: the session itself on the first
// line, bare items after, state lines between, no times on the items.
func codexOldSession() []string {
	return []string{
		`{"id":"` + codexOldID + `","timestamp":"2025-04-25T17:46:07.123Z","instructions":null,"git":{"commit_hash":"9ab2","branch":"main"}}`,
		`{"record_type":"state"}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"<user_instructions>\n\nBe brief.\n\n</user_instructions>"}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\nCurrent working directory: /home/dev/demo\n</environment_context>"}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"What does main.go do?"}]}`,
		`{"record_type":"state"}`,
		`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAA"}`,
		`{"type":"function_call","id":"fc_1","name":"shell","arguments":"{\"command\":[\"cat\",\"main.go\"]}","call_id":"call_1"}`,
		`{"type":"function_call_output","call_id":"call_1","output":"{\"output\":\"package main\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.01}}"}`,
		`{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"It declares package main."}]}`,
		`{"record_type":"state"}`,
	}
}

func TestCodexOlderLayout(t *testing.T) {
	path := codexPath(t.TempDir(), "2025/04/25", "2025-04-25T17-46-07", codexOldID)
	jlWrite(t, path, codexOldSession()...)
	items, probs := jlRead(t, readCodex, path)
	if len(probs) != 0 || len(items) != 1 {
		t.Fatalf("%d sessions, problems %v", len(items), probs)
	}
	it := items[0]
	jlCheckMessages(t, "older layout", it.Messages, []sessions.ImportedMessage{
		jlMsg(t, "user", "What does main.go do?", "", "", ""),
		jlMsg(t, "assistant", `{"command":["cat","main.go"]}`, "shell", "call_1", ""),
		jlMsg(t, "tool", "package main\n", "shell", "call_1", ""),
		jlMsg(t, "assistant", "It declares package main.", "", "", ""),
	})
	if it.Origin.Key != codexOldID || it.Title != "What does main.go do?" || !it.StartedAt.Equal(jlAt(t, "2025-04-25T17:46:07.123Z")) {
		t.Errorf("session %+v", it)
	}
}

func TestCodexInjectedMessagesAreSkipped(t *testing.T) {
	path := codexPath(t.TempDir(), "2025/11/02", "2025-11-02T08-00-00", codexID)
	user := func(text string) string {
		b, _ := json.Marshal(text)
		return codexItem("2025-11-02T08:00:01Z", `{"type":"message","role":"user","content":[{"type":"input_text","text":`+string(b)+`}]}`)
	}
	jlWrite(t, path,
		`{"timestamp":"2025-11-02T08:00:00Z","type":"session_meta","payload":{"id":"`+codexID+`","timestamp":"2025-11-02T08:00:00Z","cwd":"/home/dev/demo","originator":"codex_cli_rs","cli_version":"0.58.0"}}`,
		user("<environment_context>\n  <cwd>/home/dev/demo</cwd>\n</environment_context>"),
		user("  <ENVIRONMENT_CONTEXT>upper case, leading space</ENVIRONMENT_CONTEXT>"),
		user("<user_instructions>\nold instructions\n</user_instructions>"),
		user("# AGENTS.md instructions for /home/dev/demo\n\n<INSTRUCTIONS>\nx\n</INSTRUCTIONS>"),
		user("<skill>\n<name>deploy</name>\n</skill>"),
		user("<turn_aborted>\ninterrupted\n</turn_aborted>"),
		user("<subagent_notification>{\"agent_id\":\"x\",\"status\":\"completed\"}</subagent_notification>"),
		codexItem("2025-11-02T08:00:01Z", `{"type":"message","role":"user","content":[{"type":"input_text","text":"Real question, with the environment attached"},{"type":"input_text","text":"<environment_context>x</environment_context>"}]}`),
		codexItem("2025-11-02T08:00:01Z", `{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}`),
		codexItem("2025-11-02T08:00:01Z", `{"type":"message","role":"developer","content":[{"type":"input_text","text":"Developer words"}]}`),
		user("Please mention <environment_context> in the README"),
		codexItem("2025-11-02T08:00:02Z", `{"type":"message","role":"system","content":[{"type":"input_text","text":"A system note"}]}`),
		user("<user_shell_command>\nls\n</user_shell_command>"),
	)
	items, probs := jlRead(t, readCodex, path)
	if len(probs) != 0 || len(items) != 1 {
		t.Fatalf("%d sessions, problems %v", len(items), probs)
	}
	jlCheckMessages(t, "injected", items[0].Messages, []sessions.ImportedMessage{
		jlMsg(t, "user", "Please mention <environment_context> in the README", "", "", "2025-11-02T08:00:01Z"),
		jlMsg(t, "system", "A system note", "", "", "2025-11-02T08:00:02Z"),
		jlMsg(t, "user", "<user_shell_command>\nls\n</user_shell_command>", "", "", "2025-11-02T08:00:01Z"),
	})
	if got := items[0].Title; got != "Please mention <environment_context> in the README" {
		t.Errorf("title %q", got)
	}
}

func TestCodexBadLinesAreReportedAndPassedOver(t *testing.T) {
	path := codexPath(t.TempDir(), "2025/10/29", "2025-10-29T00-59-38", codexID)
	lines := codexSession()
	jlWrite(t, path,
		lines[0], // 1
		lines[4], // 2: the question
		`{"timestamp":"2025-10-29T00:59:41Z","type":"response_item","payload":{"type":"function_call","name":"shell","argu`, // 3: cut off
		`{"timestamp":"2025-10-29T00:59:41Z","type":"response_item","payload":"a text"}`,                                    // 4: payload not an object
		codexItem("2025-10-29T00:59:41Z", `{"type":"function_call","name":"shell","arguments":"{}"}`),                       // 5: no call_id
		codexItem("2025-10-29T00:59:41Z", `{"type":"message","role":"assistant","content":"a text, not items"}`),            // 6
		codexItem("2025-10-29T00:59:41Z", `{"type":"message","role":"critic","content":[]}`),                                // 7: an unknown role
		`42`, // 8
		`{"timestamp":"2025-10-29T00:59:41Z","type":["response_item"]}`,                                       // 9: type not a text
		`{"timestamp":"2025-10-29T00:59:41Z","note":"no type, no id"}`,                                        // 10
		codexItem("2025-10-29T00:59:41Z", `{"type":"function_call_output","call_id":"call_x","output":12.5}`), // 11: odd output, kept as JSON
		`{"timestamp":"2025-10-29T00:59:41Z","type":"session_meta","payload":{"id":7}}`,                       // 12: meta of a wrong shape
		lines[16], // 13: the answer
	)
	items, probs := jlRead(t, readCodex, path)
	jlCheckProblems(t, probs, path, map[int]string{
		3:  "not JSON",
		4:  "without its payload object",
		5:  "without its name and call_id",
		6:  "a message of an unexpected shape",
		7:  `role "critic"`,
		8:  "not a JSON object",
		9:  `"type" is not a text`,
		10: "neither a rollout item nor a session header",
		11: "output has an unexpected shape",
		12: "session meta of an unexpected shape",
	})
	if len(items) != 1 {
		t.Fatalf("%d sessions", len(items))
	}
	jlCheckMessages(t, "after bad lines", items[0].Messages, []sessions.ImportedMessage{
		jlMsg(t, "user", "List the Go files and count them", "", "", "2025-10-29T00:59:40.000Z"),
		jlMsg(t, "tool", "12.5", "", "call_x", "2025-10-29T00:59:41Z"),
		jlMsg(t, "assistant", "There are 3 Go files;\n\nI added b.go.", "", "", "2025-10-29T00:59:47.000Z"),
	})
}

// codexSessions lays out a sessions folder: an older-layout rollout; the
// realistic one; a subagent it spawned, whose rollout copies the parent's
// history (its session_meta included) after its own meta; a fork of it;
// one without a session_meta (its id from its name); one with no id at
// all; an empty rollout; files that are not rollouts.
func codexSessions(t *testing.T) (root string, paths map[string]string) {
	root = filepath.Join(t.TempDir(), "sessions")
	paths = map[string]string{
		"old":     codexPath(root, "2025/04/25", "2025-04-25T17-46-07", codexOldID),
		"main":    codexPath(root, "2025/10/29", "2025-10-29T00-59-38", codexID),
		"child":   codexPath(root, "2025/10/29", "2025-10-29T01-00-05", codexChildID),
		"fork":    codexPath(root, "2025/10/30", "2025-10-30T09-00-00", "019a3000-0000-7000-8000-0000000f0e4c"),
		"nameid":  codexPath(root, "2025/10/31", "2025-10-31T10-00-00", "019a3100-0000-7000-8000-000000000001"),
		"noid":    filepath.Join(root, "2025", "10", "31", "scratch.jsonl"),
		"empty":   codexPath(root, "2025/11/01", "2025-11-01T00-00-00", "019a3200-0000-7000-8000-000000000002"),
		"ignored": filepath.Join(root, "rollout-2025-04-16-legacy.json"),
	}
	jlWrite(t, paths["old"], codexOldSession()...)
	jlWrite(t, paths["main"], codexSession()...)
	parent := codexSession()
	jlWrite(t, paths["child"], append([]string{
		`{"timestamp":"2025-10-29T01:00:05.000Z","type":"session_meta","payload":{"id":"` + codexChildID + `","timestamp":"2025-10-29T01:00:05.000Z","cwd":"/home/dev/demo","originator":"codex_cli_rs","cli_version":"0.80.0","source":{"subagent":{"thread_spawn":{"parent_thread_id":"` + codexID + `","depth":1,"agent_role":"worker"}}},"thread_source":"subagent"}}`,
		parent[0], // the parent's meta, copied: not this file's
		parent[4],
	}, codexItem("2025-10-29T01:00:06.000Z", `{"type":"message","role":"user","content":[{"type":"input_text","text":"Count the test files"}]}`),
		codexItem("2025-10-29T01:00:07.000Z", `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Two."}]}`))...)
	jlWrite(t, paths["fork"],
		`{"timestamp":"2025-10-30T09:00:00.000Z","type":"session_meta","payload":{"id":"019a3000-0000-7000-8000-0000000f0e4c","forked_from_id":"`+codexID+`","timestamp":"2025-10-30T09:00:00.000Z","cwd":"/home/dev/demo","originator":"codex_cli_rs","cli_version":"0.80.0","source":"cli"}}`,
		codexItem("2025-10-30T09:00:01.000Z", `{"type":"message","role":"user","content":[{"type":"input_text","text":"Try it another way"}]}`),
	)
	jlWrite(t, paths["nameid"],
		`{"timestamp":"2025-10-31T10:00:00.500Z","type":"turn_context","payload":{"model":"gpt-5"}}`,
		codexItem("2025-10-31T10:00:01.000Z", `{"type":"message","role":"user","content":[{"type":"input_text","text":"No meta here"}]}`),
	)
	jlWrite(t, paths["noid"], codexItem("2025-10-31T11:00:00Z", `{"type":"message","role":"user","content":[{"type":"input_text","text":"orphan"}]}`))
	if err := os.MkdirAll(filepath.Dir(paths["empty"]), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(paths["empty"], nil, 0o644); err != nil {
		t.Fatal(err)
	}
	jlWrite(t, paths["ignored"], `{"session":{"id":"x"},"items":[]}`)
	jlWrite(t, filepath.Join(root, "2025", "10", "notes.txt"), "not a rollout")
	return root, paths
}

func TestCodexSessionsFolder(t *testing.T) {
	root, paths := codexSessions(t)
	items, probs := jlRead(t, readCodex, root)
	if len(probs) != 1 || probs[0].Path != paths["noid"] || probs[0].Line != 0 || !strings.Contains(probs[0].Message, "no session id") {
		t.Errorf("problems %v", probs)
	}
	want := []string{codexOldID, codexID, codexChildID, "019a3000-0000-7000-8000-0000000f0e4c",
		"019a3100-0000-7000-8000-000000000001", "019a3200-0000-7000-8000-000000000002"}
	if got := jlKeys(items); !reflect.DeepEqual(got, want) {
		t.Fatalf("order\n got %v\nwant %v", got, want)
	}
	child := items[2]
	if child.ParentKey != codexID || child.Relation != sessions.RelationDelegate || child.Title != "List the Go files and count them" ||
		!child.StartedAt.Equal(jlAt(t, "2025-10-29T01:00:05Z")) || len(child.Messages) != 3 {
		t.Errorf("subagent %+v", child)
	}
	if fork := items[3]; fork.ParentKey != codexID || fork.Relation != sessions.RelationBranch || fork.Title != "Try it another way" {
		t.Errorf("fork %+v", fork)
	}
	if byName := items[4]; byName.Origin.Path != paths["nameid"] || byName.ParentKey != "" || byName.Title != "No meta here" ||
		!byName.StartedAt.Equal(jlAt(t, "2025-10-31T10:00:00.500Z")) {
		t.Errorf("id from the name %+v", byName)
	}
	if empty := items[5]; len(empty.Messages) != 0 || !empty.StartedAt.IsZero() {
		t.Errorf("empty %+v", empty)
	}
	again, _ := jlRead(t, readCodex, root)
	if !reflect.DeepEqual(items, again) {
		t.Error("a second run over the same files differs")
	}
	// A day's folder.
	items, _ = jlRead(t, readCodex, filepath.Dir(paths["main"]))
	if got := jlKeys(items); !reflect.DeepEqual(got, []string{codexID, codexChildID}) {
		t.Errorf("one day: %v", got)
	}
	// Stop on cancel, and on the yield's error.
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := readCodex(ctx, root, func(sessions.Imported) error { n++; cancel(); return nil }, func(Problem) {})
	if !errors.Is(err, context.Canceled) || n != 1 {
		t.Errorf("cancelled: %v after %d", err, n)
	}
	stop := errors.New("stop")
	if err := readCodex(context.Background(), root, func(sessions.Imported) error { return stop }, func(Problem) {}); !errors.Is(err, stop) {
		t.Errorf("yield error: %v", err)
	}
}

func TestCodexImportAddsOnlyNewMessages(t *testing.T) {
	env := sessionstest.New(t)
	root, paths := codexSessions(t)
	lines := codexSession()
	jlWrite(t, paths["main"], lines[:10]...) // up to the shell's output
	items, _ := jlRead(t, readCodex, root)
	_, by := jlImport(t, env, items)
	if o := by[codexID]; o.Status != sessions.ImportStatusImported || o.Messages != 3 {
		t.Fatalf("first import: %+v", o)
	}
	ctx := context.Background()
	for key, rel := range map[string]string{codexChildID: sessions.RelationDelegate, "019a3000-0000-7000-8000-0000000f0e4c": sessions.RelationBranch} {
		s, err := env.Sessions.Get(ctx, by[key].ID)
		if err != nil {
			t.Fatal(err)
		}
		if s.ParentSessionID == nil || *s.ParentSessionID != codexID || s.Relation != rel {
			t.Errorf("%s: parent %v relation %q", key, s.ParentSessionID, s.Relation)
		}
	}
	if o := by["019a3200-0000-7000-8000-000000000002"]; o.Status != sessions.ImportStatusSkipped {
		t.Errorf("empty: %+v", o)
	}

	jlAppend(t, paths["main"], lines[10:]...)
	items, _ = jlRead(t, readCodex, root)
	_, by = jlImport(t, env, items)
	want := codexSessionWant(t)
	if o := by[codexID]; o.Status != sessions.ImportStatusUpdated || o.Messages != len(want)-3 {
		t.Errorf("second import: %+v", o)
	}
	for key, o := range by {
		if key != codexID && o.Status != sessions.ImportStatusUnchanged && o.Status != sessions.ImportStatusSkipped {
			t.Errorf("second import of %s: %+v", key, o)
		}
	}
	jlCheckStored(t, env, codexID, want)
	s, err := env.Sessions.Get(ctx, codexID)
	if err != nil {
		t.Fatal(err)
	}
	if s.Title != "List the Go files and count them" || !s.StartedAt.Time.Equal(jlAt(t, "2025-10-29T00:59:38.308Z")) || s.Ended() || s.Source != "cli" {
		t.Errorf("stored session %+v", s)
	}

	items, _ = jlRead(t, readCodex, root)
	_, by = jlImport(t, env, items)
	for key, o := range by {
		if o.Status != sessions.ImportStatusUnchanged && o.Status != sessions.ImportStatusSkipped || o.Messages != 0 {
			t.Errorf("third import of %s: %+v", key, o)
		}
	}
	if o := by[codexID]; o.Status != sessions.ImportStatusUnchanged {
		t.Errorf("third import: %+v", o)
	}
}
