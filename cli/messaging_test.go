package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"atrium/backend/gateway/gatewaytest"
)

// messagingModel is a loopback model whose turn calls send_message with
// the arguments the person's message names (by its text), then answers
// with what the tool said.
func messagingModel(t *testing.T, calls map[string]map[string]any) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := readChat(r)
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "tool" {
			writeAnswer(w, map[string]any{"role": "assistant", "content": "the tool said: " + last.Content})
			return
		}
		args, ok := calls[last.Content]
		if !ok {
			writeAnswer(w, map[string]any{"role": "assistant", "content": "nothing to send"})
			return
		}
		b, _ := json.Marshal(args)
		writeAnswer(w, map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"id": "call_1", "type": "function",
			"function": map[string]any{"name": "send_message", "arguments": string(b)}}}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// toolSaid is what send_message answered, as the loopback model repeated it.
func toolSaid(t *testing.T, r run) map[string]any {
	t.Helper()
	text := strings.TrimSpace(r.stdout)
	i := strings.Index(text, "the tool said: ")
	if r.code != 0 || i < 0 {
		t.Fatalf("send: %+v", r)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(text[i+len("the tool said: "):])), &out); err != nil {
		t.Fatalf("the tool's answer %q: %v", text, err)
	}
	return out
}

// The familiar send_message from a terminal session: to the platform's
// home channel (TELEGRAM_HOME_CHANNEL) with a file, sent at once though no
// gateway runs; to an explicit chat's topic; a platform not configured,
// a name it cannot resolve, and a missing argument are errors the model
// reads; list names the platform and its home channel, and a chat once
// someone wrote in it. With a gateway running, that process sends it and
// the tool says so once it has.
func TestSendMessageFromATerminal(t *testing.T) {
	t.Parallel()
	home, work := t.TempDir(), t.TempDir()
	chart := filepath.Join(work, "chart.png")
	if err := os.WriteFile(chart, []byte("PNG-chart"), 0o600); err != nil {
		t.Fatal(err)
	}
	model := messagingModel(t, map[string]map[string]any{
		"to telegram":      {"target": "telegram", "message": "The weekly chart.\nMEDIA:" + chart},
		"to the topic":     {"target": "telegram:-100200:17", "message": "Deploy done."},
		"to discord":       {"target": "discord", "message": "hi"},
		"to a name":        {"target": "telegram:#general", "message": "hi"},
		"without a target": {"message": "hi"},
		"list them":        {"action": "list"},
		"while it runs":    {"target": "telegram:42", "message": "From the terminal, while the gateway runs."},
	})
	tg := gatewaytest.NewTelegram(t, cliTGToken)
	cfg := fmt.Sprintf("model:\n  provider: custom\n  base_url: %s/v1\n  default: m\n  api_key_env: ATRIUM_T_MSG_KEY\n"+
		"gateway:\n  telegram:\n    token_env: TG_TEST_TOKEN\n    base_url: %s\n    allowed_users: [42]\n    poll_timeout_seconds: 1\n", model.URL, tg.URL)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// The session is made in this process before the .env is written: an
	// in-process command loads the home's .env into this process, where
	// every parallel test's commands would see its familiar names.
	sid := create(t, home, "--title", "ops")
	familiarEnv(t, home, "ATRIUM_T_MSG_KEY=sk-msg\nTELEGRAM_HOME_CHANNEL=-100999\n")
	env := []string{"TG_TEST_TOKEN=" + cliTGToken}
	send := func(text string) map[string]any {
		t.Helper()
		return toolSaid(t, atriumExec(t, home, "", env, "send", sid, text))
	}

	got := send("to telegram")
	if got["success"] != true || got["chat_id"] != "-100999" || got["note"] != "Sent to telegram home channel (chat_id: -100999)" || got["message_id"] == "" {
		t.Fatalf("to the home channel: %v", got)
	}
	if texts := tg.SentTexts(); len(texts) != 1 || texts[0] != "The weekly chart." {
		t.Fatalf("texts %q", texts)
	}
	if u := tg.Uploads(); len(u) != 1 || u[0].Method != "sendPhoto" || string(u[0].Data) != "PNG-chart" || u[0].Fields["chat_id"] != "-100999" {
		t.Fatalf("uploads %+v", u)
	}
	got = send("to the topic")
	if got["success"] != true || got["thread_id"] != "17" {
		t.Fatalf("to a topic: %v", got)
	}
	if s := tg.Sent(); len(s) != 2 || fmt.Sprint(s[1]["chat_id"]) != "-100200" || fmt.Sprint(s[1]["message_thread_id"]) != "17" {
		t.Fatalf("sent %v", s)
	}
	for text, want := range map[string]string{
		"to discord":       "Platform 'discord' is not configured. The profile's gateway has: telegram",
		"to a name":        "Could not resolve '#general' on telegram. Use send_message(action='list')",
		"without a target": "Both 'target' and 'message' are required when action='send'",
	} {
		if got := send(text); !strings.HasPrefix(fmt.Sprint(got["error"]), want) {
			t.Fatalf("%s: %v, want an error starting %q", text, got, want)
		}
	}
	got = send("list them")
	targets, _ := got["targets"].([]any)
	if len(targets) != 1 || fmt.Sprint(targets[0]) != "map[chat_id:-100999 name:home channel target:telegram]" {
		t.Fatalf("list: %v", got)
	}

	// A gateway runs: it sends the message, the tool waits for it.
	_, logs := gatewayRun(t, home)
	waitFor(t, "the gateway connected", 30*time.Second, func() bool { return strings.Contains(logs.String(), `"state":"connected"`) })
	got = send("while it runs")
	if got["success"] != true || got["queued"] != nil || got["message_id"] == "" {
		t.Fatalf("with a gateway running: %v", got)
	}
	if texts := tg.SentTexts(); len(texts) != 3 || texts[2] != "From the terminal, while the gateway runs." {
		t.Fatalf("texts %q", texts)
	}
	// Once Ada wrote to the bot, her DM is a target list names.
	tg.Push(42, "Ada", 42, "private", "hello")
	waitFor(t, "the answer to Ada", 30*time.Second, func() bool { return len(tg.SentTexts()) == 4 })
	got = send("list them")
	targets, _ = got["targets"].([]any)
	if len(targets) != 2 {
		t.Fatalf("list: %v", got)
	}
	if dm, _ := targets[1].(map[string]any); dm["target"] != "telegram:42" || dm["type"] != "dm" || !strings.Contains(fmt.Sprint(dm["name"]), "Ada") {
		t.Fatalf("Ada's DM in the list: %v", targets[1])
	}
	// Now that her DM is a conversation, a message sent there is mirrored
	// into its session, as the agent's words, for when she answers; the
	// terminal's own session has it only as the tool's call.
	if got = send("while it runs"); got["success"] != true {
		t.Fatalf("to Ada's DM: %v", got)
	}
	var page struct {
		Sessions []struct{ ID, Title string } `json:"sessions"`
	}
	mustJSON(t, atriumExec(t, home, "", nil, "sessions", "list", "--json"), &page)
	var ada string
	for _, s := range page.Sessions {
		if s.ID != sid {
			ada = s.ID
		}
	}
	var msgs []struct{ Role, Content string }
	mustJSON(t, atriumExec(t, home, "", nil, "messages", "list", ada, "--json"), &msgs)
	if n := len(msgs); n < 3 || msgs[n-1].Role != "assistant" || msgs[n-1].Content != "From the terminal, while the gateway runs." || msgs[n-3].Content != "hello" {
		t.Fatalf("Ada's conversation: %+v", msgs)
	}
	mustJSON(t, atriumExec(t, home, "", nil, "messages", "list", sid, "--json"), &msgs)
	for _, m := range msgs {
		if m.Role == "assistant" && m.Content == "From the terminal, while the gateway runs." {
			t.Fatal("the message was mirrored into the session that sent it")
		}
	}
	if strings.Contains(logs.String(), cliTGToken) {
		t.Fatal("the token reached the log")
	}
}
