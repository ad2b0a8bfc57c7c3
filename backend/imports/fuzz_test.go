package imports

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"atrium/backend/sessions"
)

// FuzzForeignFiles feeds the readers input nobody wrote on purpose, as the
// lines of a Claude Code or Codex transcript or a Gemini CLI log, as a Gemini
// CLI document, as an OpenCode message and its part. None may panic; what
// they give is what the store takes (known roles, a tool message with its
// call id); and Gemini CLI's and OpenCode's conversations pair every tool
// result with the call before it and leave no call unanswered, so a
// conversation continued here is one a model accepts.
func FuzzForeignFiles(f *testing.F) {
	for _, lines := range [][]string{geminiSession(), codexSession(), claudeSession()} {
		for _, l := range lines {
			f.Add([]byte(l))
		}
		f.Add([]byte(lines[1] + "\n" + lines[2] + "\n" + lines[3]))
	}
	_, msgs := ocHistory()
	for _, m := range msgs {
		f.Add([]byte(m.data))
		for _, p := range m.parts {
			f.Add([]byte(p))
		}
	}
	f.Add([]byte(`{"$set":{"messages":[{"id":"a","type":"gemini","content":[{"functionCall":{"id":"c","name":"x"}}]},{"id":"b","type":"user","content":[{"functionResponse":{"id":"c"}}]}]}}`))
	f.Add([]byte(`{"sessionId":"s","messages":[{"id":"a","type":"gemini","toolCalls":[{"id":"c","name":"x","result":[[{"text":"deep"}]]}]}]}`))
	f.Add([]byte("{\"id\":\"a\",\"type\":\"user\",\"content\":\"q\"}\n{\"$rewindTo\":\"nope\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := bytes.Split(data, []byte("\n"))
		warn := func(Problem) {}

		c := newGeminiConv()
		c.record([]byte(`{"sessionId":"6f1d2c3b-4a59-4e8f-9a0b-1c2d3e4f5a6b","projectHash":"p"}`))
		for _, l := range lines {
			c.record(l)
		}
		if it, ok := c.imported("chats/session-a.jsonl", warn); ok {
			checkImported(t, "gemini-cli log", it.Messages, true)
		}
		if obj, why := jsonlObject(data); why == "" {
			if d, _ := geminiDocument(obj); d != nil {
				if it, ok := d.imported("chats/session-a.json", warn); ok {
					checkImported(t, "gemini-cli document", it.Messages, true)
				}
			}
		}

		cl := newClaudeReader("p/5f0c2c1e-8a4b-4d3e-9f6a-1b2c3d4e5f60.jsonl", true, warn)
		for i, l := range lines {
			cl.line(i+1, l)
		}
		for _, it := range cl.imported(cl.key(claudeMain, "")) {
			checkImported(t, "claude-code", it.Messages, false)
		}
		cx := &codexReader{path: "rollout.jsonl", warn: warn, calls: map[string]string{}}
		for i, l := range lines {
			cx.line(i+1, l)
		}
		checkImported(t, "codex", cx.msgs, false)

		s := openCodeSession{id: "ses_a", path: "opencode.db"}
		at := time.Unix(1, 0)
		conv := openCodeConversation(s, []openCodeMessage{
			{id: "msg_a", created: at, data: data, parts: []json.RawMessage{data}},
			{id: "msg_b", created: at, data: []byte(`{"role":"assistant"}`), parts: []json.RawMessage{data, []byte(`{"type":"text","text":"after"}`)}},
			{id: "msg_c", created: at, data: []byte(`{"role":"user"}`), parts: []json.RawMessage{data}},
		}, warn)
		checkImported(t, "opencode", conv.msgs, true)
	})
}

func checkImported(t *testing.T, reader string, msgs []sessions.ImportedMessage, paired bool) {
	t.Helper()
	open := map[string]bool{}
	for i, m := range msgs {
		if !slices.Contains(sessions.Roles, m.Role) {
			t.Fatalf("%s: message %d has role %q", reader, i+1, m.Role)
		}
		switch {
		case m.Role == "tool" && m.ToolCallID == "":
			t.Fatalf("%s: tool message %d without its call id", reader, i+1)
		case m.Role == "assistant" && m.ToolCallID != "":
			var args map[string]any
			if paired && json.Unmarshal([]byte(m.Content), &args) != nil {
				t.Fatalf("%s: the arguments of call %d are not a JSON object: %q", reader, i+1, m.Content)
			}
			open[m.ToolCallID] = true
		case m.Role == "tool" && paired:
			if !open[m.ToolCallID] {
				t.Fatalf("%s: result %d answers no call before it (%s)", reader, i+1, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		case paired && len(open) > 0:
			t.Fatalf("%s: message %d comes before the results of %v", reader, i+1, open)
		}
	}
	if paired && len(open) > 0 {
		t.Fatalf("%s: calls without a result: %v", reader, open)
	}
}
