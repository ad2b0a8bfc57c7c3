package imports

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

const (
	geminiID      = "6f1d2c3b-4a59-4e8f-9a0b-1c2d3e4f5a6b"
	geminiOldID   = "0e9d8c7b-6a5f-4e3d-8c2b-1a0f9e8d7c6b"
	geminiAgentID = "b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d6e"
)

// geminiMeta is a conversation's first record.
func geminiMetaLine(id, start string) string {
	return `{"sessionId":"` + id + `","projectHash":"9b2e6d1f0c4a","startTime":"` + start + `","lastUpdated":"` + start + `"}`
}

// geminiSession is a conversation as Gemini CLI 0.3x writes it: its
// metadata; a prompt with a file the CLI read into it (displayContent is
// what the person typed); the model's text and two tool calls, written
// first without their results and then again, in place, with them (one
// failed); a notice; a thought and an answer; a question taken back with
// /rewind; a prompt with an image; the summary the CLI wrote at the end;
// and a line that is not JSON.
func geminiSession() []string {
	return []string{
		geminiMetaLine(geminiID, "2026-03-02T09:00:00.000Z"),
		`{"id":"u1","timestamp":"2026-03-02T09:00:05.000Z","type":"user","content":[{"text":"explain @main.go"},{"text":"\n--- Content from referenced files ---"},{"text":"\nContent from @main.go:\n"},{"text":"package main\n"},{"text":"\n--- End of content ---"}],"displayContent":[{"text":"explain @main.go"}]}`,
		`{"$set":{"lastUpdated":"2026-03-02T09:00:05.000Z"}}`,
		`{"id":"g1","timestamp":"2026-03-02T09:00:07.000Z","type":"gemini","content":"Let me look at it.","thoughts":[],"tokens":null,"model":"gemini-2.5-pro","toolCalls":[{"id":"read_file-1","name":"read_file","args":{"absolute_path":"/src/main.go"},"status":"executing","timestamp":"2026-03-02T09:00:07.500Z"}]}`,
		`{"id":"g1","timestamp":"2026-03-02T09:00:07.000Z","type":"gemini","content":"Let me look at it.","thoughts":[],"tokens":{"input":900,"output":20,"cached":0,"total":920},"model":"gemini-2.5-pro","toolCalls":[{"id":"read_file-1","name":"read_file","args":{"absolute_path":"/src/main.go"},"result":[{"functionResponse":{"id":"read_file-1","name":"read_file","response":{"output":"package main\n"}}}],"status":"success","timestamp":"2026-03-02T09:00:08.000Z","displayName":"ReadFile","resultDisplay":""},{"id":"run_shell_command-2","name":"run_shell_command","args":{"command":"go vet ./..."},"result":[{"functionResponse":{"id":"run_shell_command-2","name":"run_shell_command","response":{"error":"exit status 1"}}}],"status":"error","timestamp":"2026-03-02T09:00:09.000Z"}]}`,
		`{"id":"i1","timestamp":"2026-03-02T09:00:09.500Z","type":"info","content":"Switched to fallback model."}`,
		`{"id":"g2","timestamp":"2026-03-02T09:00:10.000Z","type":"gemini","content":[{"text":"**Reading the file**","thought":true},{"text":"It is an empty main package; "},{"text":"go vet fails."}],"thoughts":[{"subject":"Reading","description":"the file","timestamp":"2026-03-02T09:00:09.800Z"}],"model":"gemini-2.5-pro"}`,
		`{"id":"u2","timestamp":"2026-03-02T09:01:00.000Z","type":"user","content":"no, the other file"}`,
		`{"id":"g3","timestamp":"2026-03-02T09:01:02.000Z","type":"gemini","content":"Which one?","model":"gemini-2.5-pro"}`,
		`{"$rewindTo":"u2"}`,
		`{"id":"u3","timestamp":"2026-03-02T09:02:00.000Z","type":"user","content":[{"text":"what is in this picture?"},{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}}]}`,
		`not json`,
		`{"id":"g4","timestamp":"2026-03-02T09:02:03.000Z","type":"gemini","content":"A gopher.","model":"gemini-2.5-pro"}`,
		`{"$set":{"summary":"Explain main.go and a picture","lastUpdated":"2026-03-02T09:02:03.000Z"}}`,
	}
}

func geminiSessionWant(t *testing.T) []sessions.ImportedMessage {
	return []sessions.ImportedMessage{
		jlMsg(t, "user", "explain @main.go", "", "", "2026-03-02T09:00:05.000Z"),
		jlMsg(t, "assistant", "Let me look at it.", "", "", "2026-03-02T09:00:07.000Z"),
		jlMsg(t, "assistant", `{"absolute_path":"/src/main.go"}`, "read_file", "read_file-1", "2026-03-02T09:00:07.000Z"),
		jlMsg(t, "tool", "package main\n", "read_file", "read_file-1", "2026-03-02T09:00:08.000Z"),
		jlMsg(t, "assistant", `{"command":"go vet ./..."}`, "run_shell_command", "run_shell_command-2", "2026-03-02T09:00:07.000Z"),
		jlMsg(t, "tool", "Error: exit status 1", "run_shell_command", "run_shell_command-2", "2026-03-02T09:00:09.000Z"),
		jlMsg(t, "assistant", "It is an empty main package; go vet fails.", "", "", "2026-03-02T09:00:10.000Z"),
		jlMsg(t, "user", "what is in this picture?[attachment: image/png]", "", "", "2026-03-02T09:02:00.000Z"),
		jlMsg(t, "assistant", "A gopher.", "", "", "2026-03-02T09:02:03.000Z"),
	}
}

func geminiChats(root, project string) string {
	return filepath.Join(root, project, "chats")
}

func TestGeminiRealisticConversation(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(geminiChats(root, "9b2e6d1f0c4a"), "session-2026-03-02T09-00-6f1d2c3b.jsonl")
	jlWrite(t, path, geminiSession()...)
	items, probs := jlRead(t, readGemini, root)
	jlCheckProblems(t, probs, path, map[int]string{12: "not JSON"})
	if len(items) != 1 {
		t.Fatalf("read %d sessions, want 1", len(items))
	}
	it := items[0]
	if it.Origin != (sessions.Origin{Kind: sessions.ImportGemini, Key: geminiID, Path: path}) || it.Title != "Explain main.go and a picture" ||
		it.Platform != PlatformGemini || it.Source != "cli" || !it.StartedAt.Equal(jlAt(t, "2026-03-02T09:00:00.000Z")) ||
		it.EndedAt != nil || it.ParentKey != "" {
		t.Errorf("session %+v", it)
	}
	jlCheckMessages(t, "conversation", it.Messages, geminiSessionWant(t))

	// The file named on its own reads the same.
	one, _ := jlRead(t, readGemini, path)
	if len(one) != 1 || !reflect.DeepEqual(one[0].Messages, it.Messages) {
		t.Errorf("the file alone: %+v", one)
	}
}

// A conversation of the CLI's earlier versions: one pretty-printed JSON
// document, its content plain texts, no summary (the title is the first
// prompt). Beside another one that was resumed since: its .jsonl copy is
// the one read.
func TestGeminiLegacyDocuments(t *testing.T) {
	root := t.TempDir()
	chats := geminiChats(root, "c0ffee")
	legacy := filepath.Join(chats, "session-2025-08-01T10-00-0e9d8c7b.json")
	doc := `{
  "sessionId": "` + geminiOldID + `",
  "projectHash": "c0ffee",
  "startTime": "2025-08-01T10:00:00.000Z",
  "lastUpdated": "2025-08-01T10:05:00.000Z",
  "messages": [
    {"id": "a", "timestamp": "2025-08-01T10:00:01.000Z", "type": "user", "content": "How do I list files\nrecursively?"},
    {"id": "b", "timestamp": "2025-08-01T10:00:03.000Z", "type": "gemini", "content": "",
     "toolCalls": [{"id": "ls-1", "name": "list_directory", "args": {"path": "."}, "result": [{"functionResponse": {"id": "ls-1", "name": "list_directory", "response": {"output": "a\nb"}}}], "status": "success", "timestamp": "2025-08-01T10:00:04.000Z"},
                   {"id": "sh-2", "name": "run_shell_command", "args": {"command": "sleep 100"}, "status": "cancelled", "timestamp": "2025-08-01T10:00:05.000Z"},
                   {"id": "web-3", "name": "google_web_search", "args": {"query": "find -r"}, "result": null, "resultDisplay": "Search results for \"find -r\" returned.", "status": "success", "timestamp": "2025-08-01T10:00:06.000Z"}]},
    {"id": "c", "timestamp": "2025-08-01T10:00:07.000Z", "type": "gemini", "content": "Use find . -type f."},
    {"id": "d", "timestamp": "2025-08-01T10:00:08.000Z", "type": "error", "content": "[API Error: quota]"}
  ]
}`
	if err := os.MkdirAll(chats, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(legacy, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	resumedOld := filepath.Join(chats, "session-2025-08-02T11-00-6f1d2c3b.json")
	if err := os.WriteFile(resumedOld, []byte(`{"sessionId":"`+geminiID+`","projectHash":"c0ffee","messages":[{"id":"x","type":"user","content":"old copy"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	resumed := strings.TrimSuffix(resumedOld, ".json") + ".jsonl"
	jlWrite(t, resumed, geminiMetaLine(geminiID, "2025-08-02T11:00:00.000Z"),
		`{"id":"x","timestamp":"2025-08-02T11:00:01.000Z","type":"user","content":"old copy"}`,
		`{"id":"y","timestamp":"2025-08-02T11:00:02.000Z","type":"gemini","content":"and more since"}`)

	items, probs := jlRead(t, readGemini, root)
	if len(probs) != 0 {
		t.Errorf("problems: %v", probs)
	}
	if got := jlKeys(items); !reflect.DeepEqual(got, []string{geminiOldID, geminiID}) {
		t.Fatalf("sessions %v", got)
	}
	if items[0].Title != "How do I list files" || items[0].Origin.Path != legacy {
		t.Errorf("legacy session %+v", items[0])
	}
	jlCheckMessages(t, "legacy", items[0].Messages, []sessions.ImportedMessage{
		jlMsg(t, "user", "How do I list files\nrecursively?", "", "", "2025-08-01T10:00:01.000Z"),
		jlMsg(t, "assistant", `{"path":"."}`, "list_directory", "ls-1", "2025-08-01T10:00:03.000Z"),
		jlMsg(t, "tool", "a\nb", "list_directory", "ls-1", "2025-08-01T10:00:04.000Z"),
		jlMsg(t, "assistant", `{"command":"sleep 100"}`, "run_shell_command", "sh-2", "2025-08-01T10:00:03.000Z"),
		jlMsg(t, "tool", "(cancelled)", "run_shell_command", "sh-2", "2025-08-01T10:00:05.000Z"),
		jlMsg(t, "assistant", `{"query":"find -r"}`, "google_web_search", "web-3", "2025-08-01T10:00:03.000Z"),
		jlMsg(t, "tool", `Search results for "find -r" returned.`, "google_web_search", "web-3", "2025-08-01T10:00:06.000Z"),
		jlMsg(t, "assistant", "Use find . -type f.", "", "", "2025-08-01T10:00:07.000Z"),
	})
	if items[1].Origin.Path != resumed || len(items[1].Messages) != 2 || items[1].Messages[1].Content != "and more since" {
		t.Errorf("resumed session %+v", items[1])
	}
}

// When the CLI compresses or masks its history it writes the whole list
// again from the model's history ($set of messages): the calls are then
// among the model's parts and their results among the next user turn's,
// beside the tool calls it kept. Each call and each result is taken once,
// and records after the $set apply to the new list.
func TestGeminiHistoryWrittenAgain(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(geminiChats(root, "p"), "session-2026-04-01T08-00-6f1d2c3b.jsonl")
	jlWrite(t, path,
		geminiMetaLine(geminiID, "2026-04-01T08:00:00.000Z"),
		`{"id":"u1","timestamp":"2026-04-01T08:00:01.000Z","type":"user","content":"first try"}`,
		`{"$set":{"messages":[`+
			`{"id":"s1","timestamp":"2026-04-01T08:10:00.000Z","type":"user","content":[{"text":"<state_snapshot>the user asked for the date</state_snapshot>"}]},`+
			`{"id":"g1","timestamp":"2026-04-01T08:10:01.000Z","type":"gemini","content":[{"text":"Checking."},{"functionCall":{"id":"date-1","name":"run_shell_command","args":{"command":"date"}}}],`+
			`"toolCalls":[{"id":"date-1","name":"run_shell_command","args":{"command":"date"},"result":[{"functionResponse":{"id":"date-1","name":"run_shell_command","response":{"output":"Wed Apr 1"}}}],"status":"success","timestamp":"2026-04-01T08:10:02.000Z"}]},`+
			`{"id":"r1","timestamp":"2026-04-01T08:10:02.000Z","type":"user","content":[{"functionResponse":{"id":"date-1","name":"run_shell_command","response":{"output":"Wed Apr 1"}}}]},`+
			`{"id":"g2","timestamp":"2026-04-01T08:10:03.000Z","type":"gemini","content":[{"functionCall":{"id":"ls-2","name":"list_directory","args":{"path":"/"}}}]},`+
			`{"id":"r2","timestamp":"2026-04-01T08:10:04.000Z","type":"user","content":[{"functionResponse":{"id":"ls-2","name":"list_directory","response":{"output":"bin\netc"}}},{"text":"(two entries)"}]},`+
			`{"id":"r3","timestamp":"2026-04-01T08:10:04.500Z","type":"user","content":[{"functionResponse":{"id":"nobody","name":"x","response":{"output":"orphan"}}}]}`+
			`],"lastUpdated":"2026-04-01T08:10:04.000Z"}}`,
		`{"id":"g3","timestamp":"2026-04-01T08:10:05.000Z","type":"gemini","content":"It is Wednesday."}`,
		`{"$set":{"messages":[]}}`,
	)
	items, probs := jlRead(t, readGemini, path)
	if len(probs) != 0 || len(items) != 1 {
		t.Fatalf("items %d, problems %v", len(items), probs)
	}
	if items[0].Title != "<state_snapshot>the user asked for the date</state_snapshot>" {
		t.Errorf("title %q", items[0].Title)
	}
	jlCheckMessages(t, "rewritten", items[0].Messages, []sessions.ImportedMessage{
		jlMsg(t, "user", "<state_snapshot>the user asked for the date</state_snapshot>", "", "", "2026-04-01T08:10:00.000Z"),
		jlMsg(t, "assistant", "Checking.", "", "", "2026-04-01T08:10:01.000Z"),
		jlMsg(t, "assistant", `{"command":"date"}`, "run_shell_command", "date-1", "2026-04-01T08:10:01.000Z"),
		jlMsg(t, "tool", "Wed Apr 1", "run_shell_command", "date-1", "2026-04-01T08:10:02.000Z"),
		jlMsg(t, "assistant", `{"path":"/"}`, "list_directory", "ls-2", "2026-04-01T08:10:03.000Z"),
		jlMsg(t, "tool", "bin\netc", "list_directory", "ls-2", "2026-04-01T08:10:04.000Z"),
		jlMsg(t, "user", "(two entries)", "", "", "2026-04-01T08:10:04.000Z"),
		jlMsg(t, "assistant", "It is Wednesday.", "", "", "2026-04-01T08:10:05.000Z"),
	})
}

func TestGeminiProblemsAreReportedAndPassedOver(t *testing.T) {
	root := t.TempDir()
	chats := geminiChats(root, "p")
	bad := map[string]string{
		"session-2026-01-01T00-00-00000001.json":  `[1, 2]`,
		"session-2026-01-01T00-00-00000002.json":  `{"projectHash": "p", "messages": []}`,
		"session-2026-01-01T00-00-00000003.json":  `{"sessionId": "x`,
		"session-2026-01-01T00-00-00000004.jsonl": `{"type": "user", "content": "a record of nothing"}`,
	}
	for name, body := range bad {
		if err := os.MkdirAll(chats, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(chats, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	good := filepath.Join(chats, "session-2026-01-02T00-00-6f1d2c3b.jsonl")
	jlWrite(t, good, geminiMetaLine(geminiID, "2026-01-02T00:00:00.000Z"),
		`{"$rewindTo": 7}`,
		`{"$set": "lastUpdated"}`,
		`{"id":"m1","timestamp":"2026-01-02T00:00:01.000Z","type":"user","content":"still here"}`,
		`{"id":"m2","timestamp":"2026-01-02T00:00:02.000Z","type":"tip","content":"Try /help"}`,
		`{"id":"m3","timestamp":"2026-01-02T00:00:03.000Z","type":"gemini","content":"ok","toolCalls":[{"name":"nameless"}]}`,
		`{"id":"m4","timestamp":"2026-01-02T00:00:04.000Z","type":"gemini","content":"x","toolCalls":"none"}`,
	)
	// Files the CLI keeps beside its conversations are not conversations.
	jlWrite(t, filepath.Join(root, "p", "logs.json"), `[{"sessionId":"`+geminiID+`","messageId":0,"type":"user","message":"still here"}]`)
	jlWrite(t, filepath.Join(root, "p", "checkpoint-x.json"), `[]`)
	jlWrite(t, filepath.Join(chats, "notes.json"), `{}`)

	items, probs := jlRead(t, readGemini, root)
	if got := jlKeys(items); !reflect.DeepEqual(got, []string{geminiID}) {
		t.Fatalf("sessions %v", got)
	}
	jlCheckMessages(t, "good", items[0].Messages, []sessions.ImportedMessage{
		jlMsg(t, "user", "still here", "", "", "2026-01-02T00:00:01.000Z"),
		jlMsg(t, "assistant", "ok", "", "", "2026-01-02T00:00:03.000Z"),
	})
	want := map[string]string{
		"00000001.json":  "not a JSON object",
		"00000002.json":  "no sessionId",
		"00000003.json":  "not JSON",
		"00000004.jsonl": "neither a message nor",
	}
	got := map[string]int{}
	for _, p := range probs {
		matched := false
		for suffix, word := range want {
			if strings.HasSuffix(p.Path, suffix) {
				matched = true
				got[suffix]++
				if !strings.Contains(p.Message, word) {
					t.Errorf("problem %s: want it to say %q", p, word)
				}
			}
		}
		if !matched && p.Path != good {
			t.Errorf("unexpected problem %s", p)
		}
	}
	for suffix := range want {
		if got[suffix] != 1 {
			t.Errorf("%s: %d problems, want 1 (%v)", suffix, got[suffix], probs)
		}
	}
	var goodProbs []Problem
	for _, p := range probs {
		if p.Path == good {
			goodProbs = append(goodProbs, p)
		}
	}
	if len(goodProbs) != 5 {
		t.Errorf("problems of the good file: %v", goodProbs)
	}
	for i, word := range []string{`"$rewindTo"`, `"$set"`, `type "tip"`, "without its id and name", "unexpected shape"} {
		if i < len(goodProbs) && !strings.Contains(goodProbs[i].Message, word) {
			t.Errorf("problem %d of the good file: %s, want it to say %s", i+1, goodProbs[i], word)
		}
	}

	// A file that is neither, named on its own, is said to be so.
	_, one := jlRead(t, readGemini, filepath.Join(root, "notes.txt"))
	if len(one) != 1 || !strings.Contains(one[0].Message, "cannot read it") {
		t.Errorf("a missing file: %v", one)
	}
	txt := filepath.Join(root, "notes.txt")
	if err := os.WriteFile(txt, []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, one = jlRead(t, readGemini, txt); len(one) != 1 || !strings.Contains(one[0].Message, "not a .json or .jsonl file") {
		t.Errorf("a text file: %v", one)
	}
}

// The tmp folder of several projects: conversations first, in the order of
// their paths, then the subagents, each a delegate child of the
// conversation whose folder it is in; Open finds it where
// GEMINI_CLI_HOME says, else in the home folder.
func TestGeminiTmpFolderAndSubagents(t *testing.T) {
	home := t.TempDir()
	root := filepath.Join(home, ".gemini", "tmp")
	main1 := filepath.Join(geminiChats(root, "proj-b"), "session-2026-02-01T10-00-6f1d2c3b.jsonl")
	main2 := filepath.Join(geminiChats(root, "proj-a"), "session-2026-02-03T10-00-0e9d8c7b.jsonl")
	agent := filepath.Join(geminiChats(root, "proj-b"), geminiID, geminiAgentID+".jsonl")
	jlWrite(t, agent, `{"sessionId":"`+geminiAgentID+`","projectHash":"proj-b","startTime":"2026-02-01T10:00:30.000Z","lastUpdated":"2026-02-01T10:00:30.000Z","kind":"subagent","directories":["/src"]}`,
		`{"id":"a1","timestamp":"2026-02-01T10:00:31.000Z","type":"user","content":"Investigate the codebase"}`,
		`{"id":"a2","timestamp":"2026-02-01T10:00:40.000Z","type":"gemini","content":"Found three packages."}`)
	jlWrite(t, main1, geminiMetaLine(geminiID, "2026-02-01T10:00:00.000Z"),
		`{"id":"m1","timestamp":"2026-02-01T10:00:01.000Z","type":"user","content":"map this repo"}`,
		`{"id":"m2","timestamp":"2026-02-01T10:00:50.000Z","type":"gemini","content":"Three packages."}`)
	jlWrite(t, main2, geminiMetaLine(geminiOldID, "2026-02-03T10:00:00.000Z"),
		`{"id":"m1","timestamp":"2026-02-03T10:00:01.000Z","type":"user","content":"hello"}`)
	jlWrite(t, filepath.Join(root, "proj-b", "tool-outputs", "session-x.jsonl"), `{"sessionId":"nope","projectHash":"p"}`)

	env := map[string]string{"GEMINI_CLI_HOME": home}
	if got := DefaultPath(sessions.ImportGemini, func(k string) string { return env[k] }, "/nowhere"); got != root {
		t.Errorf("default path with GEMINI_CLI_HOME: %s", got)
	}
	if got := DefaultPath(sessions.ImportGemini, func(string) string { return "" }, home); got != root {
		t.Errorf("default path: %s", got)
	}
	rd, err := Open(sessions.ImportGemini, "", func(k string) string { return env[k] }, "/nowhere", nil)
	if err != nil {
		t.Fatal(err)
	}
	var items []sessions.Imported
	if err := rd.Each(context.Background(), func(it sessions.Imported) error { items = append(items, it); return nil }); err != nil {
		t.Fatal(err)
	}
	if got := jlKeys(items); !reflect.DeepEqual(got, []string{geminiOldID, geminiID, geminiAgentID}) {
		t.Fatalf("order %v", got)
	}
	if a := items[2]; a.ParentKey != geminiID || a.Relation != sessions.RelationDelegate || a.Title != "Investigate the codebase" {
		t.Errorf("subagent %+v", a)
	}

	envS := sessionstest.New(t)
	res, by := jlImport(t, envS, items)
	if res.Count(sessions.ImportStatusImported) != 3 || res.Messages != 5 {
		t.Fatalf("import %+v", res)
	}
	child, err := envS.Sessions.Get(context.Background(), by[geminiAgentID].ID)
	if err != nil {
		t.Fatal(err)
	}
	if child.ParentSessionID == nil || *child.ParentSessionID != geminiID || child.Relation != sessions.RelationDelegate || child.Platform != PlatformGemini {
		t.Errorf("child %+v", child)
	}
}

func TestGeminiImportAddsOnlyNewMessages(t *testing.T) {
	env := sessionstest.New(t)
	root := t.TempDir()
	path := filepath.Join(geminiChats(root, "p"), "session-2026-03-02T09-00-6f1d2c3b.jsonl")
	lines := geminiSession()
	jlWrite(t, path, lines[:7]...) // up to the first answer
	items, _ := jlRead(t, readGemini, root)
	_, by := jlImport(t, env, items)
	want := geminiSessionWant(t)
	if o := by[geminiID]; o.Status != sessions.ImportStatusImported || o.Messages != 7 || o.ID != geminiID {
		t.Fatalf("first import: %+v", o)
	}
	jlAppend(t, path, lines[7:]...)
	items, _ = jlRead(t, readGemini, root)
	_, by = jlImport(t, env, items)
	if o := by[geminiID]; o.Status != sessions.ImportStatusUpdated || o.Messages != len(want)-7 {
		t.Errorf("second import: %+v", o)
	}
	jlCheckStored(t, env, geminiID, want)
	s, err := env.Sessions.Get(context.Background(), geminiID)
	if err != nil {
		t.Fatal(err)
	}
	// The title was taken at the first import (the summary came later).
	if s.Title != "explain @main.go" || s.Platform != PlatformGemini || s.Ended() || !s.StartedAt.Time.Equal(jlAt(t, "2026-03-02T09:00:00.000Z")) {
		t.Errorf("stored session %+v", s)
	}
	items, _ = jlRead(t, readGemini, root)
	if _, by = jlImport(t, env, items); by[geminiID].Status != sessions.ImportStatusUnchanged {
		t.Errorf("third import: %+v", by[geminiID])
	}
}

// A question imported, then taken back in the CLI (/rewind) and asked
// again: the conversation there no longer begins with what was imported,
// so it is left as it was imported, and said to be so.
func TestGeminiRewindAfterAnImport(t *testing.T) {
	env := sessionstest.New(t)
	root := t.TempDir()
	path := filepath.Join(geminiChats(root, "p"), "session-2026-03-02T09-00-6f1d2c3b.jsonl")
	lines := geminiSession()
	jlWrite(t, path, lines[:9]...) // up to "Which one?"
	items, _ := jlRead(t, readGemini, root)
	if _, by := jlImport(t, env, items); by[geminiID].Status != sessions.ImportStatusImported || by[geminiID].Messages != 9 {
		t.Fatalf("first import: %+v", by[geminiID])
	}
	jlAppend(t, path, lines[9:]...) // the rewind, then a new question
	items, _ = jlRead(t, readGemini, root)
	_, by := jlImport(t, env, items)
	if o := by[geminiID]; o.Status != sessions.ImportStatusConflict || o.Messages != 0 || !strings.Contains(o.Note, "rewound or edited there") {
		t.Fatalf("after the rewind: %+v", o)
	}
	ms, err := env.Sessions.Messages(context.Background(), geminiID, true)
	if err != nil || len(ms) != 9 || ms[8].Content != "Which one?" {
		t.Fatalf("stored %d messages, %v", len(ms), err)
	}
}

// A conversation document, or one of OpenCode's files, larger than a line
// may be is said and passed over, not read whole into memory.
func TestOversizedDocumentsArePassedOver(t *testing.T) {
	defer func(n int) { maxLineBytes = n }(maxLineBytes)
	maxLineBytes = 256
	root := t.TempDir()
	big := filepath.Join(geminiChats(root, "p"), "session-2026-01-01T00-00-0e9d8c7b.json")
	jlWrite(t, big, `{"sessionId":"`+geminiOldID+`","projectHash":"p","messages":[{"id":"a","type":"user","content":"`+strings.Repeat("x", 300)+`"}]}`)
	small := filepath.Join(geminiChats(root, "p"), "session-2026-01-02T00-00-6f1d2c3b.json")
	jlWrite(t, small, `{"sessionId":"`+geminiID+`","projectHash":"p","messages":[{"id":"a","type":"user","content":"hi"}]}`)
	items, probs := jlRead(t, readGemini, root)
	if got := jlKeys(items); !reflect.DeepEqual(got, []string{geminiID}) || len(probs) != 1 || probs[0].Path != big ||
		!strings.Contains(probs[0].Message, "a file of more than 256 bytes: skipped") {
		t.Errorf("sessions %v, problems %v", got, probs)
	}

	storage := t.TempDir()
	jlWrite(t, filepath.Join(storage, "session", "p1", "ses_a.json"), `{"id":"ses_a","title":"t","time":{"created":1}}`)
	jlWrite(t, filepath.Join(storage, "message", "ses_a", "msg_a.json"), `{"id":"msg_a","role":"user","time":{"created":2}}`)
	jlWrite(t, filepath.Join(storage, "part", "msg_a", "prt_1.json"), `{"type":"text","text":"kept"}`)
	huge := filepath.Join(storage, "part", "msg_a", "prt_2.json")
	jlWrite(t, huge, `{"type":"text","text":"`+strings.Repeat("y", 300)+`"}`)
	items, probs = jlRead(t, readOpenCode, storage)
	if len(items) != 1 || len(items[0].Messages) != 1 || items[0].Messages[0].Content != "kept" || len(probs) != 1 || probs[0].Path != huge {
		t.Errorf("opencode: %+v, problems %v", items, probs)
	}
}

// A call among the model's parts that no result answers (the CLI stopped,
// or the answer was taken back) is answered as such before the
// conversation goes on, and at its end: a model refuses a call left open.
func TestGeminiCallWithoutItsResult(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(geminiChats(root, "p"), "session-2026-05-01T08-00-6f1d2c3b.jsonl")
	jlWrite(t, path, geminiMetaLine(geminiID, "2026-05-01T08:00:00.000Z"),
		`{"id":"g1","timestamp":"2026-05-01T08:00:01.000Z","type":"gemini","content":[{"functionCall":{"id":"a","name":"glob","args":{"pattern":"*.go"}}}]}`,
		`{"id":"u1","timestamp":"2026-05-01T08:00:05.000Z","type":"user","content":"never mind"}`,
		`{"id":"g2","timestamp":"2026-05-01T08:00:06.000Z","type":"gemini","content":[{"functionCall":{"id":"b","name":"ls","args":{}}}]}`,
	)
	items, probs := jlRead(t, readGemini, path)
	if len(items) != 1 || len(probs) != 0 {
		t.Fatalf("items %+v problems %v", items, probs)
	}
	jlCheckMessages(t, "open calls", items[0].Messages, []sessions.ImportedMessage{
		jlMsg(t, "assistant", `{"pattern":"*.go"}`, "glob", "a", "2026-05-01T08:00:01.000Z"),
		jlMsg(t, "tool", "(no result was recorded)", "glob", "a", "2026-05-01T08:00:05.000Z"),
		jlMsg(t, "user", "never mind", "", "", "2026-05-01T08:00:05.000Z"),
		jlMsg(t, "assistant", `{}`, "ls", "b", "2026-05-01T08:00:06.000Z"),
		jlMsg(t, "tool", "(no result was recorded)", "ls", "b", "2026-05-01T08:00:06.000Z"),
	})
}

// Imported while the CLI runs a tool call: the message that asked for it
// waits for the next import, which takes it whole with its result (an
// update, not a conversation changed at its source); one the CLI left so a
// day ago is imported as it was left.
func TestGeminiTurnStillRunning(t *testing.T) {
	env := sessionstest.New(t)
	root := t.TempDir()
	path := filepath.Join(geminiChats(root, "p"), "session-2026-03-02T09-00-6f1d2c3b.jsonl")
	lines := geminiSession()
	jlWrite(t, path, lines[:4]...) // the model's message with its call still executing
	items, _ := jlRead(t, readGemini, root)
	jlCheckMessages(t, "while running", items[0].Messages, geminiSessionWant(t)[:1])
	if _, by := jlImport(t, env, items); by[geminiID].Status != sessions.ImportStatusImported || by[geminiID].Messages != 1 {
		t.Fatalf("first import: %+v", by[geminiID])
	}
	jlAppend(t, path, lines[4:]...)
	items, _ = jlRead(t, readGemini, root)
	_, by := jlImport(t, env, items)
	if o := by[geminiID]; o.Status != sessions.ImportStatusUpdated || o.Messages != len(geminiSessionWant(t))-1 {
		t.Fatalf("after the call finished: %+v", o)
	}
	jlCheckStored(t, env, geminiID, geminiSessionWant(t))

	// A conversation the CLI stopped writing a day ago, its last call
	// never finished: imported as it was left.
	stale := filepath.Join(geminiChats(root, "q"), "session-2026-03-02T09-00-0e9d8c7b.jsonl")
	jlWrite(t, stale, append([]string{geminiMetaLine(geminiOldID, "2026-03-02T09:00:00.000Z")}, lines[1:4]...)...)
	old := time.Now().Add(-stillWriting - time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	items, _ = jlRead(t, readGemini, stale)
	if got := items[0].Messages; len(got) != 4 || got[3].Content != "(executing)" {
		t.Errorf("left a day ago: %+v", got)
	}

	// A call whose message is not the last one was left behind (the CLI
	// stopped): it is imported with what it has.
	c := newGeminiConv()
	for _, l := range []string{geminiMetaLine(geminiID, "2026-03-02T09:00:00.000Z"), lines[3], lines[1]} {
		c.record([]byte(l))
	}
	it, _ := c.imported(path, func(Problem) {})
	if len(it.Messages) != 4 || it.Messages[2].Content != "(executing)" {
		t.Errorf("a call left executing: %+v", it.Messages)
	}
}
