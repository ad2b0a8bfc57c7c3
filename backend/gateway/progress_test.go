package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"atrium/backend/gateway"
	"atrium/backend/gateway/gatewaytest"
	"atrium/backend/llm"
	"atrium/backend/tools"
	"atrium/backend/turns"
)

// plannedModel asks for the calls of its plan, one round each, for the
// chat's messages, then answers "done"; a subagent's turn (its goal) gets
// the offline model.
type plannedModel struct {
	llm.OfflineProvider
	plan  []llm.ToolCall
	delay time.Duration // each answer takes this long
}

func (p plannedModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	asked, last := 0, len(req.Messages)-1
	for ; last >= 0 && req.Messages[last].Role != "user"; last-- {
		if req.Messages[last].Role == "tool" {
			asked++
		}
	}
	if len(req.Tools) == 0 || last < 0 || strings.HasPrefix(req.Messages[last].Content, "use tool") || req.Messages[last].Content == "answer plainly" {
		return p.OfflineProvider.Complete(ctx, req)
	}
	time.Sleep(p.delay)
	if asked < len(p.plan) {
		c := p.plan[asked]
		c.ID = fmt.Sprintf("call_%d", asked)
		return llm.Response{ToolCalls: []llm.ToolCall{c}}, nil
	}
	return llm.Response{Content: "done"}, nil
}

func call(name string, args map[string]any) llm.ToolCall {
	b, _ := json.Marshal(args)
	return llm.ToolCall{Name: name, Arguments: string(b)}
}

// plannedEnv is a gateway env (not started) whose model follows plan,
// taking delay to answer, in a folder holding notes.txt, with the
// gateway's progress settings p.
func plannedEnv(t *testing.T, p gateway.Progress, delay time.Duration, plan ...llm.ToolCall) *env {
	t.Helper()
	e := newEnv(t, 8192, 0.9)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("a note\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.useLoop(t, turns.Options{Provider: plannedModel{OfflineProvider: llm.OfflineProvider{Window: 8192}, plan: plan, delay: delay},
		Machine: func() tools.Settings { return tools.Settings{Cwd: dir} }})
	e.progress = func(string) gateway.Progress { return p }
	return e
}

// progressEnv is a Telegram chat whose model follows plan, in a folder
// holding notes.txt, with the gateway's progress settings p.
func progressEnv(t *testing.T, p gateway.Progress, plan ...llm.ToolCall) (*env, *gatewaytest.Telegram) {
	return progressEnvSlow(t, p, 0, plan...)
}

// progressEnvSlow is progressEnv with a model that takes delay to answer.
func progressEnvSlow(t *testing.T, p gateway.Progress, delay time.Duration, plan ...llm.ToolCall) (*env, *gatewaytest.Telegram) {
	t.Helper()
	e := plannedEnv(t, p, delay, plan...)
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "5"))
	return e, f
}

// shown is what the chat shows after the reply: each message's text as
// last edited.
func shown(t *testing.T, f *gatewaytest.Telegram, reply string) []string {
	t.Helper()
	waitFor(t, "the reply", func() bool {
		got := f.SentTexts()
		return len(got) > 0 && got[len(got)-1] == reply
	})
	var out []string
	ids := map[string]int{}
	for i, text := range f.SentTexts() {
		out = append(out, text)
		ids[fmt.Sprint(5001+i)] = i
	}
	for _, e := range f.Edits() {
		if i, ok := ids[fmt.Sprint(e["message_id"])]; ok {
			out[i] = fmt.Sprint(e["text"])
		}
	}
	return out
}

var workPlan = []llm.ToolCall{
	call("terminal", map[string]any{"command": "echo one"}),
	call("terminal", map[string]any{"command": "echo one"}),
	call("read_file", map[string]any{"path": "notes.txt"}),
	call("terminal", map[string]any{"command": "printf '%s\\n' 'a rather long command that is cut short'"}),
	call("todo", map[string]any{}),
}

// The chat is shown a turn's tool calls as the familiar gateway shows them
// (display.tool_progress: all): a line for each, its main argument cut at
// 40 characters, the same line again counted, in one message edited as
// tools run, sent before the reply.
func TestTheChatSeesTheTurnsToolCalls(t *testing.T) {
	t.Parallel()
	_, f := progressEnv(t, gateway.Progress{Mode: gateway.ProgressAll}, workPlan...)
	f.Push(5, "Cy", 5, "private", "tidy up")
	got := shown(t, f, "done")
	want := []string{"💻 terminal: \"echo one\" (×2)\n📖 read_file: \"notes.txt\"\n" +
		"💻 terminal: \"printf '%s\\n' 'a rather long command ...\"\n📝 todo...", "done"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("the chat shows\n%q\nnot\n%q", got, want)
	}
}

// new shows a line when the tool changes; verbose shows each call's
// arguments; off and log show nothing, log writing each call instead.
func TestToolProgressModes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		mode string
		want []string
	}{
		{gateway.ProgressNew, []string{"💻 terminal: \"echo one\"\n📖 read_file: \"notes.txt\"\n💻 terminal: \"printf '%s\\n' 'a rather long command ...\"\n📝 todo...", "done"}},
		{gateway.ProgressVerbose, []string{"💻 terminal(command)\n{\"command\":\"echo one\"} (×2)\n📖 read_file(path)\n{\"path\":\"notes.txt\"}\n" +
			"💻 terminal(command)\n{\"command\":\"printf '%s\\\\n' 'a rather long command that is cut short'\"}\n📝 todo...", "done"}},
		{gateway.ProgressOff, []string{"done"}},
		{gateway.ProgressLog, []string{"done"}},
	} {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var logged []string
			p := gateway.Progress{Mode: c.mode, Log: func(platform, sid string, ev turns.ToolStart) {
				mu.Lock()
				defer mu.Unlock()
				logged = append(logged, platform+" "+ev.Name)
			}}
			_, f := progressEnv(t, p, workPlan...)
			f.Push(5, "Cy", 5, "private", "tidy up")
			if got := shown(t, f, "done"); strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Fatalf("the chat shows\n%q\nnot\n%q", got, c.want)
			}
			mu.Lock()
			defer mu.Unlock()
			if want := ""; c.mode == gateway.ProgressLog {
				want = "[telegram terminal telegram terminal telegram read_file telegram terminal telegram todo]"
				if fmt.Sprint(logged) != want {
					t.Fatalf("logged %q", logged)
				}
			} else if len(logged) != 0 {
				t.Fatalf("%s logged %q", c.mode, logged)
			}
		})
	}
}

// Where an edit is refused (flood control), the turn's later lines come
// as messages of their own; separate grouping sends each line alone from
// the start. A slash command shows no progress.
func TestToolProgressWithoutEdits(t *testing.T) {
	t.Parallel()
	plan := []llm.ToolCall{call("read_file", map[string]any{"path": "notes.txt"}), call("terminal", map[string]any{"command": "echo two"}),
		call("search_files", map[string]any{"pattern": "note"})}
	// The model takes its time: the first line is sent alone, the next
	// ones come within an edit's interval.
	_, f := progressEnvSlow(t, gateway.Progress{Mode: gateway.ProgressAll}, 400*time.Millisecond, plan...)
	f.Set(func(f *gatewaytest.Telegram) { f.FloodEdits = 100 })
	f.Push(5, "Cy", 5, "private", "look")
	got := shown(t, f, "done")
	refused := 0
	f.Set(func(f *gatewaytest.Telegram) { refused = 100 - f.FloodEdits })
	if len(got) != 3 || refused != 1 || len(f.Edits()) != 0 || got[0] != "📖 read_file: \"notes.txt\"" ||
		got[1] != "💻 terminal: \"echo two\"\n🔎 search_files: \"note\"" {
		t.Fatalf("after a refused edit (%d refused): %q", refused, got)
	}

	_, g := progressEnv(t, gateway.Progress{Mode: gateway.ProgressAll, Separate: true}, plan...)
	g.Push(5, "Cy", 5, "private", "/whoami")
	waitFor(t, "the /whoami reply", func() bool { return len(g.SentTexts()) == 1 })
	g.Push(5, "Cy", 5, "private", "look")
	got = shown(t, g, "done")
	want := []string{"📖 read_file: \"notes.txt\"", "💻 terminal: \"echo two\"", "🔎 search_files: \"note\"", "done"}
	if strings.Join(got[1:], "|") != strings.Join(want, "|") || len(g.Edits()) != 0 {
		t.Fatalf("separate: %q, %d edits", got, len(g.Edits()))
	}
}

// A delegation's subagents are shown as they work: the tools of each
// step, then each one's end.
func TestTheChatSeesSubagentsWork(t *testing.T) {
	t.Parallel()
	goal := `use tool terminal: {"command": "echo from the subagent"}`
	_, f := progressEnv(t, gateway.Progress{Mode: gateway.ProgressAll},
		call("delegate_task", map[string]any{"tasks": []any{map[string]any{"goal": goal}, map[string]any{"goal": "answer plainly"}}}))
	f.Push(5, "Cy", 5, "private", "hand it over")
	got := shown(t, f, "done")
	if len(got) != 2 || !strings.HasPrefix(got[0], "🔀 delegate_task...\n") ||
		!strings.Contains(got[0], "\n🔀 [1] terminal\n") || !strings.Contains(got[0], "✅ [1/2] use tool terminal: {\"command\": \"echo ... (") ||
		!strings.Contains(got[0], "✅ [2/2] answer plainly (") {
		t.Fatalf("the chat shows %q", got)
	}
}

// On Slack, in a thread, the progress message goes in the thread, and the
// thread's "is thinking…" status it takes down is set again at once; the
// status is taken down before the reply.
func TestSlackProgressInAThread(t *testing.T) {
	t.Parallel()
	e := plannedEnv(t, gateway.Progress{Mode: gateway.ProgressAll}, 0, call("terminal", map[string]any{"command": "echo one"}))
	api := gatewaytest.NewSlackAPI(t, slackToken)
	events := e.startSlack(t, api)
	const thread = "1700000000.000400"
	msg := gatewaytest.SlackMessage("U1", "C1", "channel", "do it")
	msg["event"].(map[string]any)["thread_ts"] = thread
	gatewaytest.SlackEvent(t, events, slackSecret, msg, false)
	waitFor(t, "the reply", func() bool { return len(api.Posted()) == 2 })
	thinking, post := "setStatus C1 "+thread+" "+gateway.SlackThinking, "postMessage C1 "+thread
	calls := api.Calls()
	first := slices.Index(calls, post) // the progress message
	n := len(calls)
	if first < 0 || !slices.Contains(calls[first+1:], thinking) || n < 2 || calls[n-2] != "setStatus C1 "+thread+" " || calls[n-1] != post ||
		slices.Index(calls[first+1:], post) != n-first-2 {
		t.Fatalf("the calls: %q", calls)
	}
	if got := api.Texts(); got[0] != `💻 terminal: "echo one"` || got[1] != "done" {
		t.Fatalf("the thread shows %q", got)
	}
}

// With cleanup_progress, the turn's progress message is deleted once its
// reply is delivered, as the familiar gateway's; without it, it stays.
func TestProgressIsCleanedUpAfterTheReply(t *testing.T) {
	t.Parallel()
	_, f := progressEnv(t, gateway.Progress{Mode: gateway.ProgressAll, Cleanup: true}, workPlan[2])
	f.Push(5, "Cy", 5, "private", "read it")
	got := shown(t, f, "done")
	if len(got) != 2 || got[0] != `📖 read_file: "notes.txt"` {
		t.Fatalf("the chat shows %q", got)
	}
	waitFor(t, "the progress message deleted", func() bool { return len(f.Deletes()) == 1 })
	if d := f.Deletes()[0]; fmt.Sprint(d["message_id"]) != "5001" || fmt.Sprint(d["chat_id"]) != "5" {
		t.Fatalf("deleted %v", d)
	}

	_, g := progressEnv(t, gateway.Progress{Mode: gateway.ProgressAll}, workPlan[2])
	g.Push(5, "Cy", 5, "private", "read it")
	shown(t, g, "done")
	g.Push(5, "Cy", 5, "private", "/whoami") // a later delivery: the first one's would have run by then
	waitFor(t, "the /whoami reply", func() bool { return len(g.SentTexts()) == 3 })
	if n := len(g.Deletes()); n != 0 {
		t.Fatalf("%d progress messages deleted without cleanup_progress", n)
	}
}

// A webhook, under any name, gets the reply alone: each progress line
// would be a reply its bridge posts on.
func TestAWebhookGetsNoProgress(t *testing.T) {
	t.Parallel()
	e := plannedEnv(t, gateway.Progress{Mode: gateway.ProgressAll}, 0, workPlan[2])
	recv := newReplyReceiver(t, "hook-secret", 0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wh := gateway.NewWebhook(gateway.WebhookOptions{Name: "bridge", Secret: "hook-secret", Listener: ln, ReplyURL: recv.URL})
	e.start(t, gateway.Configured{Adapter: wh, Access: gateway.Access{Chats: []string{"room-1"}}})
	postSigned(t, wh, "hook-secret", map[string]any{"id": "m1", "user_id": "u1", "chat_id": "room-1", "text": "read it"}, http.StatusAccepted)
	waitFor(t, "the reply", func() bool { return len(recv.replies()) >= 1 })
	postSigned(t, wh, "hook-secret", map[string]any{"id": "m2", "user_id": "u1", "chat_id": "room-1", "text": "/whoami"}, http.StatusAccepted)
	waitFor(t, "the /whoami reply", func() bool { return len(recv.replies()) >= 2 })
	if got := recv.replies(); got[0].Text != "done" || !strings.Contains(got[1].Text, "on bridge") {
		t.Fatalf("the bridge got %+v", got)
	}
}

// rateLimited refuses its first fails calls as a rate limit asking for no
// wait (Retry-After: 0), then answers as its model does.
type rateLimited struct {
	plannedModel
	fails *int32
	mu    *sync.Mutex
}

func (r rateLimited) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	r.mu.Lock()
	refuse := *r.fails > 0
	*r.fails--
	r.mu.Unlock()
	if refuse {
		return llm.Response{}, fmt.Errorf("openai: %w", &llm.APIError{StatusCode: http.StatusTooManyRequests, HasRetryAfter: true})
	}
	return r.plannedModel.Complete(ctx, req)
}

// A turn that waits on its model shows the chat why, as a line of its
// progress, before its tool calls go on.
func TestTheChatSeesTheModelWaitedOn(t *testing.T) {
	t.Parallel()
	e := plannedEnv(t, gateway.Progress{Mode: gateway.ProgressAll}, 0)
	fails := int32(1)
	dir := t.TempDir()
	e.useLoop(t, turns.Options{Provider: rateLimited{plannedModel: plannedModel{OfflineProvider: llm.OfflineProvider{Window: 8192},
		plan: workPlan[:1]}, fails: &fails, mu: &sync.Mutex{}}, MaxRetries: func() int { return 3 },
		Machine: func() tools.Settings { return tools.Settings{Cwd: dir} }})
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "5"))
	f.Push(5, "Cy", 5, "private", "tidy up")
	got := shown(t, f, "done")
	want := []string{"⏱️ Rate limited. Waiting 0.0s (attempt 1/3)...\n💻 terminal: \"echo one\"", "done"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("the chat shows\n%q\nnot\n%q", got, want)
	}
}
