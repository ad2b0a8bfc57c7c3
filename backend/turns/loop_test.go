package turns_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/compaction"
	"atrium/backend/hooks"
	"atrium/backend/hooks/hookstest"
	"atrium/backend/llm"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
	"atrium/backend/turns"
)

var ctx = context.Background()

type env struct {
	*sessionstest.Env
	eng  *compaction.Engine
	loop *turns.Loop
}

func newEnv(t *testing.T, window int, cfg func(*compaction.Config), register ...func(*hooks.Bus)) env {
	t.Helper()
	e := sessionstest.NewWith(t, hooks.Options{Timeout: 2 * time.Second}, register...)
	c := compaction.DefaultConfig()
	c.Threshold, c.SoftThreshold = 100, 100 // off unless a test sets them
	if cfg != nil {
		cfg(&c)
	}
	eng := compaction.NewEngine(e.DB, e.Sessions, e.Bus, llm.OfflineSummarizer{}, c)
	if err := eng.RegisterCommands(e.Bus.Commands()); err != nil {
		t.Fatal(err)
	}
	loop, err := turns.New(e.DB, e.Sessions, eng, e.Bus, turns.Options{Provider: llm.OfflineProvider{Window: window}})
	if err != nil {
		t.Fatal(err)
	}
	return env{e, eng, loop}
}

func (e env) send(t *testing.T, id, text string) turns.Turn {
	t.Helper()
	turn, err := e.loop.Send(ctx, id, text, hooks.LocalContext("cli", id))
	if err != nil {
		t.Fatalf("send %q: %v", text, err)
	}
	return turn
}

func (e env) posts(t *testing.T) []hooks.PostCompactionPayload {
	t.Helper()
	return decodeAll[hooks.PostCompactionPayload](t, e, hooks.PostCompaction)
}

// decodeAll is every payload of hook recorded, once the bus delivered
// what it holds.
func decodeAll[T any](t *testing.T, e env, hook string) []T {
	t.Helper()
	if err := e.Bus.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var out []T
	for _, ev := range e.Rec.Events(hook) {
		var p T
		if err := ev.Decode(&p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// memoryPlugin is the motivating plugin: it flags a session in
// post_compaction and re-injects its rules at the next pre_llm_call.
type memoryPlugin struct {
	mu       sync.Mutex
	flagged  map[string]bool
	injected []string
}

const rules = "RULES: tabs for indentation; the API lives at /v2/users"

func (m *memoryPlugin) register(bus *hooks.Bus) {
	m.flagged = map[string]bool{}
	ctx := bus.Plugin("memory")
	if err := ctx.RegisterHook(hooks.PostCompaction, func(_ context.Context, ev hooks.Event) error {
		var p hooks.PostCompactionPayload
		if err := ev.Decode(&p); err != nil {
			return err
		}
		if p.Kind == "summarize" || p.Kind == "micro_summarize" {
			m.mu.Lock()
			m.flagged[p.SessionID] = true
			m.mu.Unlock()
		}
		return nil
	}); err != nil {
		panic(err)
	}
	if err := ctx.RegisterSync(hooks.PreLLMCall, func(_ context.Context, raw json.RawMessage) (any, error) {
		var p hooks.LLMCall
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if !m.flagged[p.SessionID] {
			return nil, nil
		}
		delete(m.flagged, p.SessionID)
		m.injected = append(m.injected, p.SessionID)
		return map[string]any{"context": rules}, nil
	}); err != nil {
		panic(err)
	}
}

func TestReinjectionAfterCompactionEndToEnd(t *testing.T) {
	t.Parallel()
	mem := &memoryPlugin{}
	e := newEnv(t, 100000, nil, mem.register)
	s := e.MustCreate(t, sessions.CreateParams{Title: "memory"})
	for i := 0; i < 5; i++ {
		turn := e.send(t, s.ID, fmt.Sprintf("step %d: we decided the port is %d; %s", i, 9000+i, strings.Repeat("the reviewers asked for more detail on the rollout plan. ", 4)))
		if strings.Contains(turn.Reply, llm.ContextSeenMarker) {
			t.Fatal("no context before any compaction")
		}
	}
	turn := e.send(t, s.ID, "/compress")
	if !turn.Rotated || turn.SessionID == s.ID || !strings.Contains(turn.Output, "Compacted the conversation") || strings.Contains(turn.Output, turn.SessionID) {
		t.Fatalf("/compress: %+v", turn)
	}
	cont := turn.SessionID
	turn = e.send(t, cont, "what is the port?")
	if !strings.Contains(turn.Reply, llm.ContextSeenMarker) || !strings.Contains(turn.SentText, rules) {
		t.Fatalf("the rules did not reach the provider: %+v", turn)
	}
	// The stored clean content is what was typed; the sent text is beside it.
	ms, _ := e.Sessions.Messages(ctx, cont, false)
	var user sessions.Message
	for _, m := range ms {
		if m.Role == "user" && m.Content == "what is the port?" {
			user = m
		}
	}
	if user.SentContent == nil || !strings.Contains(*user.SentContent, rules) || strings.Contains(user.Content, "RULES") {
		t.Fatalf("stored user message = %+v", user)
	}
	// Exactly once per compaction.
	e.send(t, cont, "and the owner?")
	if fmt.Sprint(mem.injected) != fmt.Sprint([]string{cont}) {
		t.Fatalf("injected = %v", mem.injected)
	}
	if _, err := e.loop.Send(ctx, cont, "/compress", hooks.LocalContext("cli", cont)); err != nil {
		t.Fatal(err)
	}
	tip, _ := e.loop.Continuation(ctx, cont)
	e.send(t, tip, "again?")
	if len(mem.injected) != 2 || mem.injected[1] != tip {
		t.Fatalf("second compaction: injected = %v", mem.injected)
	}
}

func TestOverflowCompactsAndRetriesOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 900, nil)
	s := e.MustCreate(t, sessions.CreateParams{Title: "overflow"})
	var last turns.Turn
	for i := 0; i < 12; i++ {
		last = e.send(t, s.ID, fmt.Sprintf("message %d %s", i, strings.Repeat("filler words about the plan ", 8)))
		if len(last.Compactions) > 0 {
			break
		}
	}
	if len(last.Compactions) != 1 || last.Compactions[0].Reason != "overflow" || last.Reply == "" {
		t.Fatalf("turn %+v", last)
	}
	p := e.posts(t)
	if len(p) != 1 || p[0].Reason != "overflow" || p[0].Kind != "summarize" {
		t.Fatalf("posts %+v", p)
	}
}

func TestThresholdReasons(t *testing.T) {
	t.Parallel()
	scenarios := []struct {
		name   string
		window int
		cfg    func(*compaction.Config)
		text   string
		reason string
	}{
		{"pre_api", 2000, func(c *compaction.Config) { c.Threshold = 0.3 }, "plain question", "pre_api"},
		{"between_turns", 2000, func(c *compaction.Config) { c.SoftThreshold = 0.3 }, "plain question", "between_turns"},
		{"post_tool", 9000, func(c *compaction.Config) { c.Threshold = 0.5 }, "use tool big_output: build", "post_tool"},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, sc.window, sc.cfg)
			s := e.MustCreate(t, sessions.CreateParams{Title: sc.name})
			// Some history, below every threshold.
			for i := 0; i < 6; i++ {
				if _, err := e.Sessions.AppendMessage(ctx, s.ID, sessions.NewMessage{Role: "user", Content: strings.Repeat("earlier context ", 30)}); err != nil {
					t.Fatal(err)
				}
			}
			if sc.reason == "post_tool" {
				e.send(t, s.ID, "warm up")
			}
			e.Rec.Reset()
			turn := e.send(t, s.ID, sc.text)
			found := false
			for _, c := range turn.Compactions {
				found = found || c.Reason == sc.reason
			}
			if !found {
				t.Fatalf("no %s compaction in %+v", sc.reason, turn.Compactions)
			}
			posts := e.posts(t)
			if len(posts) != len(turn.Compactions) || posts[0].Reason != sc.reason {
				t.Fatalf("posts %+v", posts)
			}
		})
	}
}

func TestToolsProactivePruneAndLifecycleHooks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100000, nil)
	s := e.MustCreate(t, sessions.CreateParams{Title: "tools"})
	turn := e.send(t, s.ID, "please use tool echo: hello tools")
	if fmt.Sprint(turn.ToolCalls) != "[echo]" || !strings.Contains(turn.Reply, "hello tools") {
		t.Fatalf("echo turn %+v", turn)
	}
	e.send(t, s.ID, "use tool big_output: link")
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionStart: 1, hooks.OnSessionEnd: 2, hooks.PostLLMCall: 2,
		hooks.PostToolCall: 2, "*": 0})
	var post hooks.ToolResultPayload
	e.Rec.Events(hooks.PostToolCall)[0].Decode(&post)
	if post.ToolName != "echo" || post.Result != "hello tools" || post.SessionID != s.ID || post.ToolCallID == "" {
		t.Fatalf("post_tool_call %+v", post)
	}
	// Two more turns push the big output out of the protected turns: it is pruned.
	e.Rec.Reset()
	e.send(t, s.ID, "thanks")
	turn = e.send(t, s.ID, "and now?")
	all := e.posts(t)
	if len(all) != 1 || all[0].Kind != "prune_tool_results" || all[0].Reason != "proactive_prune" {
		t.Fatalf("posts %+v (turn %+v)", all, turn.Compactions)
	}
}

func TestNewExitAndHelpCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100000, nil)
	s := e.MustCreate(t, sessions.CreateParams{Title: "cmds"})
	e.send(t, s.ID, "hello")
	e.Rec.Reset()
	turn := e.send(t, s.ID, "/NEW")
	if turn.SessionID == s.ID || turn.Command != "new" {
		t.Fatalf("/new %+v", turn)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionFinalize: 1, hooks.OnSessionReset: 1, "*": 0})
	var reset hooks.SessionReset
	e.Rec.Events(hooks.OnSessionReset)[0].Decode(&reset)
	if reset.OldSessionID != s.ID || reset.SessionID != turn.SessionID || reset.Platform != "cli" {
		t.Fatalf("reset %+v", reset)
	}
	fresh := turn.SessionID
	e.Rec.Reset()
	e.send(t, fresh, "/exit")
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionFinalize: 1, "*": 0})
	if _, err := e.loop.Send(ctx, fresh, "hello?", hooks.LocalContext("cli", fresh)); apperr.CodeOf(err) != apperr.Rejected {
		t.Fatalf("send to an ended session: %v", err)
	}
	other := e.MustCreate(t, sessions.CreateParams{Title: "bye"})
	e.send(t, other.ID, "one message")
	e.Rec.Reset()
	e.send(t, other.ID, "/exit --delete")
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, "*": 0})
	if d := e.Rec.Deletes(t)[0]; d.Reason != "delete" || d.SessionID != other.ID {
		t.Fatalf("exit --delete payload %+v", d)
	}
	help := e.send(t, s.ID, "/help")
	for _, c := range []string{"/compress", "/new", "/exit", "/help"} {
		if !strings.Contains(help.Output, c) {
			t.Fatalf("/help lacks %s: %q", c, help.Output)
		}
	}
	if _, err := e.loop.Send(ctx, s.ID, "/nosuch", hooks.LocalContext("cli", s.ID)); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("unknown command: %v", err)
	}
	// An empty /compress fires nothing.
	e.Rec.Reset()
	empty := e.MustCreate(t, sessions.CreateParams{Title: "empty"})
	out := e.send(t, empty.ID, "/compress")
	if out.Output != "Nothing to compact yet: fewer than two messages before the last two turns" || out.SessionID != empty.ID {
		t.Fatalf("empty /compress %+v", out)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})
}

func TestGatewayHygieneAndProviderNative(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2000, func(c *compaction.Config) { c.SoftThreshold = 0.3 })
	s := e.MustCreate(t, sessions.CreateParams{Title: "gw"})
	if turn, err := e.loop.Hygiene(ctx, s.ID); err != nil || len(turn.Compactions) != 0 {
		t.Fatalf("hygiene on a small session: %+v %v", turn, err)
	}
	for i := 0; i < 8; i++ {
		if _, err := e.Sessions.AppendMessage(ctx, s.ID, sessions.NewMessage{Role: "user", Content: strings.Repeat("gateway chatter about the order 77 ", 12)}); err != nil {
			t.Fatal(err)
		}
	}
	turn, err := e.loop.Hygiene(ctx, s.ID)
	if err != nil || len(turn.Compactions) != 1 || turn.Compactions[0].Reason != "gateway_hygiene" {
		t.Fatalf("hygiene: %+v %v", turn, err)
	}
	for i := 0; i < 4; i++ {
		if _, err := e.Sessions.AppendMessage(ctx, turn.SessionID, sessions.NewMessage{Role: "assistant", Content: strings.Repeat("noted, order 77 ships Monday ", 10)}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := e.loop.CompactNative(ctx, turn.SessionID)
	if err != nil || !res.Changed || res.Kind != "provider_native" || res.Reason != "provider" {
		t.Fatalf("native: %+v %v", res, err)
	}
	posts := e.posts(t)
	if len(posts) != 2 || posts[0].Reason != "gateway_hygiene" || posts[1].Reason != "provider" {
		t.Fatalf("posts %+v", posts)
	}
}

// The OpenAI-compatible provider's context-length error takes the overflow
// path of the loop: compact, then retry the call once.
func TestOpenAIContextLengthErrorTakesTheOverflowPath(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []map[string]any `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if len(body.Messages) > 6 {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"message":"This model's maximum context length is 4096 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"choices":[{"message":{"role":"assistant","content":"fits now"}}],"usage":{"prompt_tokens":10,"completion_tokens":2}}`))
	}))
	defer srv.Close()
	e := sessionstest.NewWith(t, hooks.Options{Timeout: 2 * time.Second})
	c := compaction.DefaultConfig()
	c.Threshold, c.SoftThreshold = 100, 100
	eng := compaction.NewEngine(e.DB, e.Sessions, e.Bus, llm.OfflineSummarizer{}, c)
	p, err := llm.NewOpenAIProvider(llm.OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "test-model"})
	if err != nil {
		t.Fatal(err)
	}
	loop, err := turns.New(e.DB, e.Sessions, eng, e.Bus, turns.Options{Provider: p})
	if err != nil {
		t.Fatal(err)
	}
	s := e.MustCreate(t, sessions.CreateParams{Title: "remote"})
	for i := 0; i < 6; i++ {
		if _, err := e.Sessions.AppendMessage(ctx, s.ID, sessions.NewMessage{Role: "user", Content: fmt.Sprintf("we decided item %d costs %d euros, approved by Bob after the review. %s", i, 100+i, strings.Repeat("The discussion went over the details of shipping and packaging again. ", 5))}); err != nil {
			t.Fatal(err)
		}
	}
	turn, err := loop.Send(ctx, s.ID, "so what is the total?", hooks.LocalContext("cli", s.ID))
	if err != nil || turn.Reply != "fits now" || len(turn.Compactions) != 1 || turn.Compactions[0].Reason != "overflow" || !turn.Rotated {
		t.Fatalf("turn %+v %v", turn, err)
	}
	if calls.Load() != 2 {
		t.Fatalf("provider calls = %d, want the failed one and one retry", calls.Load())
	}
}

// With model.native_compaction, the provider compacts instead of the local
// summary: before a call over its threshold, the loop lets it, and the
// compaction is recorded as provider_native, reason provider (once).
func TestNativeCompactionIsAutomatic(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2000, nil)
	loop, err := turns.New(e.DB, e.Sessions, e.eng, e.Bus, turns.Options{Provider: llm.OfflineProvider{Window: 2000},
		NativeCompaction: true, NativeThreshold: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	s := e.MustCreate(t, sessions.CreateParams{Title: "native"})
	for i := 0; i < 6; i++ {
		if _, err := e.Sessions.AppendMessage(ctx, s.ID, sessions.NewMessage{Role: "user", Content: strings.Repeat("earlier context ", 30)}); err != nil {
			t.Fatal(err)
		}
	}
	e.Rec.Reset()
	turn, err := loop.Send(ctx, s.ID, "plain question", hooks.LocalContext("cli", s.ID))
	if err != nil {
		t.Fatal(err)
	}
	if len(turn.Compactions) != 1 || turn.Compactions[0].Kind != "provider_native" || turn.Compactions[0].Reason != "provider" {
		t.Fatalf("compactions %+v", turn.Compactions)
	}
	posts := e.posts(t)
	if len(posts) != 1 || posts[0].Kind != "provider_native" || posts[0].Reason != "provider" || posts[0].Platform == nil || *posts[0].Platform != "cli" {
		t.Fatalf("posts %+v", posts)
	}
	ms, _ := e.Sessions.Messages(ctx, turn.SessionID, false)
	if !strings.HasPrefix(ms[0].Content, "[native compaction]") {
		t.Fatalf("transcript starts %q", ms[0].Content)
	}
	// Below the threshold now: the next turn compacts nothing.
	if turn, err = loop.Send(ctx, turn.SessionID, "and then?", hooks.LocalContext("cli", turn.SessionID)); err != nil || len(turn.Compactions) != 0 {
		t.Fatalf("second turn %+v %v", turn.Compactions, err)
	}
}

// A pre_llm_call answer that blocks the prompt (a Claude Code
// UserPromptSubmit hook's block) stops the turn before anything is stored
// or fired; the next prompt goes through.
func TestABlockedPromptIsNeitherStoredNorSent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100000, nil, func(bus *hooks.Bus) {
		if err := bus.Plugin("guard").RegisterSync(hooks.PreLLMCall, func(_ context.Context, raw json.RawMessage) (any, error) {
			var p hooks.LLMCall
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, err
			}
			if strings.Contains(p.UserMessage, "sk-live-") {
				return hooks.BlockPrompt("that looks like an API key"), nil
			}
			return map[string]any{"context": "guarded"}, nil
		}); err != nil {
			panic(err)
		}
	})
	s := e.MustCreate(t, sessions.CreateParams{Title: "guarded"})
	_, err := e.loop.Send(ctx, s.ID, "deploy with sk-live-123", hooks.LocalContext("cli", s.ID))
	if apperr.CodeOf(err) != apperr.Rejected || !strings.Contains(err.Error(), "a hook blocked the message, which was neither sent nor kept: that looks like an API key") {
		t.Fatalf("blocked send: %v", err)
	}
	if ms, _ := e.Sessions.Messages(ctx, s.ID, true); len(ms) != 0 {
		t.Fatalf("a blocked prompt stored %d messages", len(ms))
	}
	e.Rec.Expect(t, e.Bus, map[string]int{})
	turn := e.send(t, s.ID, "deploy with the key from the vault")
	if !strings.Contains(turn.SentText, "guarded") {
		t.Fatalf("the next turn: %+v", turn)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionStart: 1, hooks.PostLLMCall: 1, hooks.OnSessionEnd: 1})
}

// A pre_turn_end hook (a Claude Code Stop hook, a plugin) keeps a turn
// going until it lets it end: each reply is stored with its post_llm_call,
// each instruction it gave as a user message, and on_session_end fires
// once, after the last reply. A stop answer wins over a continue; a hook
// that fails lets the turn end; MaxContinues in a row end it.
func TestAHookKeepsTheTurnGoingUntilItLetsItEnd(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []hooks.TurnEndPayload
	e := newEnv(t, 100000, nil, func(bus *hooks.Bus) {
		reg := func(plugin string, fn func(p hooks.TurnEndPayload) (any, error)) {
			if err := bus.Plugin(plugin).RegisterSync(hooks.PreTurnEnd, func(_ context.Context, raw json.RawMessage) (any, error) {
				var p hooks.TurnEndPayload
				if err := json.Unmarshal(raw, &p); err != nil {
					return nil, err
				}
				if plugin == "checker" {
					mu.Lock()
					seen = append(seen, p)
					mu.Unlock()
				}
				return fn(p)
			}); err != nil {
				panic(err)
			}
		}
		reg("checker", func(p hooks.TurnEndPayload) (any, error) {
			switch {
			case strings.Contains(p.UserMessage, "twice") && p.Continues < 2:
				return map[string]any{"action": "continue", "message": fmt.Sprintf("twice: tests fail (%d)", p.Continues+1)}, nil
			case strings.Contains(p.UserMessage, "forever"), strings.HasPrefix(p.UserMessage, "again"):
				return map[string]any{"action": "continue", "message": "again"}, nil
			}
			return nil, nil
		})
		reg("brake", func(p hooks.TurnEndPayload) (any, error) {
			if strings.Contains(p.UserMessage, "brake") {
				return map[string]any{"action": "stop", "message": "budget spent"}, nil
			}
			if strings.Contains(p.UserMessage, "broken") {
				return nil, fmt.Errorf("the hook broke")
			}
			return nil, nil
		})
	})
	s := e.MustCreate(t, sessions.CreateParams{Title: "kept going"})
	turn := e.send(t, s.ID, "fix it, twice")
	if len(turn.Continued) != 2 || turn.Continued[0].Feedback != "twice: tests fail (1)" || turn.Continued[1].Feedback != "twice: tests fail (2)" ||
		turn.Reply == "" || turn.Continued[0].Reply == "" {
		t.Fatalf("turn: %+v", turn)
	}
	ms, err := e.Sessions.Messages(ctx, s.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range ms {
		roles = append(roles, m.Role+":"+clipTo(m.Content, 22))
	}
	want := []string{"user:fix it, twice", "assistant:" + clipTo(turn.Continued[0].Reply, 22), "user:twice: tests fail (1)",
		"assistant:" + clipTo(turn.Continued[1].Reply, 22), "user:twice: tests fail (2)", "assistant:" + clipTo(turn.Reply, 22)}
	if fmt.Sprint(roles) != fmt.Sprint(want) {
		t.Fatalf("stored:\n%q\nwant\n%q", roles, want)
	}
	mu.Lock()
	if len(seen) != 3 || seen[0].Continues != 0 || seen[1].Continues != 1 || seen[2].Continues != 2 ||
		seen[1].UserMessage != "twice: tests fail (1)" || seen[2].AssistantResponse != turn.Reply || seen[0].AgentContext != "primary" {
		t.Fatalf("pre_turn_end payloads: %+v", seen)
	}
	mu.Unlock()
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionStart: 1, hooks.PostLLMCall: 3, hooks.OnSessionEnd: 1})
	var order []string
	var firsts []bool
	for _, ev := range e.Rec.Events("") {
		order = append(order, ev.Hook)
		if ev.Hook == hooks.PostLLMCall {
			var p hooks.PostLLMCallPayload
			if err := ev.Decode(&p); err != nil {
				t.Fatal(err)
			}
			firsts = append(firsts, p.IsFirstTurn)
		}
	}
	if fmt.Sprint(order) != "[on_session_start post_llm_call post_llm_call post_llm_call on_session_end]" || fmt.Sprint(firsts) != "[true false false]" {
		t.Fatalf("events %v, is_first_turn %v", order, firsts)
	}

	// A stop answer ends the turn whatever the others said, and says why.
	e.Rec.Reset()
	turn = e.send(t, s.ID, "go on forever, brake")
	if len(turn.Continued) != 0 || fmt.Sprint(turn.Notes) != "[budget spent]" {
		t.Fatalf("stop: %+v", turn)
	}
	// A hook that fails decides nothing; the checker's continue stands
	// until the cap.
	turn = e.send(t, s.ID, "broken, forever")
	if len(turn.Continued) != turns.DefaultMaxContinues || len(turn.Notes) != 1 || !strings.Contains(turn.Notes[0], "8 continuations in a row") {
		t.Fatalf("cap: %d continued, notes %q", len(turn.Continued), turn.Notes)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.PostLLMCall: 1 + 1 + turns.DefaultMaxContinues, hooks.OnSessionEnd: 2})
}

func clipTo(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// pre_llm_call's session_start says why a turn begins the session's
// context anew: startup at the first turn, compact at the first turn after
// a summary (rotated or in place; a prune of tool output is not one), clear
// at the first turn of a session /new started; "" at every other turn.
func TestSessionStartSaysWhereTheContextBeginsAnew(t *testing.T) {
	t.Parallel()
	for _, rotate := range []bool{true, false} {
		var mu sync.Mutex
		var starts []string
		e := newEnv(t, 100000, func(c *compaction.Config) { c.Rotate = rotate }, func(bus *hooks.Bus) {
			if err := bus.Plugin("starts").RegisterSync(hooks.PreLLMCall, func(_ context.Context, raw json.RawMessage) (any, error) {
				var p hooks.LLMCall
				if err := json.Unmarshal(raw, &p); err != nil {
					return nil, err
				}
				mu.Lock()
				starts = append(starts, p.SessionStart)
				mu.Unlock()
				return nil, nil
			}); err != nil {
				panic(err)
			}
		})
		s := e.MustCreate(t, sessions.CreateParams{Title: "starts"})
		id := s.ID
		for _, text := range []string{"one", "two", "three", "four"} {
			id = e.send(t, id, text+": "+strings.Repeat("the plan and its owners. ", 4)).SessionID
		}
		res, err := e.eng.Compact(ctx, compaction.Request{SessionID: id, Kind: compaction.KindSummarize, Reason: "manual"})
		if err != nil || !res.Changed {
			t.Fatalf("compact: %+v %v", res, err)
		}
		id = res.SessionID
		e.send(t, id, "five")
		e.send(t, id, "six")
		res, err = e.eng.Compact(ctx, compaction.Request{SessionID: id, Kind: compaction.KindPruneToolResults, Reason: "proactive_prune"})
		if err != nil {
			t.Fatal(err)
		}
		e.send(t, id, "seven")
		fresh := e.send(t, id, "/new").SessionID
		e.send(t, fresh, "eight")
		e.send(t, fresh, "nine")
		mu.Lock()
		if got := fmt.Sprintf("%q", starts); got != `["startup" "" "" "" "compact" "" "" "clear" ""]` {
			t.Errorf("rotate %v: session_start of the turns: %s", rotate, got)
		}
		mu.Unlock()
	}
}

// A tool call a plugin wants approved fires pre_approval_request before the
// person is asked and post_approval_response with the answer (once, deny,
// or deny with the error), in the familiar API's shape; where nobody can
// be asked, the call is blocked and neither fires.
func TestApprovalsFireTheirHooks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100000, nil, func(bus *hooks.Bus) {
		if err := hookstest.WantApproval(bus, "guard", "echo", "echo repeats what it is given"); err != nil {
			panic(err)
		}
	})
	var mu sync.Mutex
	var asked []int // pre_approval_request events committed when each ask began
	answers := []struct {
		answer turns.Answer
		err    error
	}{{turns.AnswerOnce, nil}, {turns.AnswerDeny, nil}, {turns.AnswerDeny, fmt.Errorf("the window was closed")},
		{turns.AnswerDeny, turns.ErrNoAnswer}, {turns.AnswerSession, nil}, {turns.AnswerOnce, nil}}
	calls := 0
	loop, err := turns.New(e.DB, e.Sessions, e.eng, e.Bus, turns.Options{Provider: llm.OfflineProvider{Window: 100000},
		Approve: func(_ context.Context, a turns.Approval) (turns.Answer, error) {
			mu.Lock()
			defer mu.Unlock()
			if err := e.Bus.Flush(ctx); err != nil {
				return turns.AnswerDeny, err
			}
			asked = append(asked, len(e.Rec.Events(hooks.PreApprovalRequest)))
			calls++
			return answers[calls-1].answer, answers[calls-1].err
		}})
	if err != nil {
		t.Fatal(err)
	}
	s := e.MustCreate(t, sessions.CreateParams{Title: "approvals"})
	var replies []string
	// The fifth answer is "session": the sixth call in this conversation
	// runs without asking (and without approval hooks).
	for _, text := range []string{"hello", "again", "once more", "anyone?", "for the session", "not asked"} {
		last, err := loop.Send(ctx, s.ID, `use tool echo: {"text": "`+text+`"}`, hooks.LocalContext("desktop", s.ID))
		if err != nil {
			t.Fatal(err)
		}
		replies = append(replies, last.Reply)
	}
	if !strings.Contains(replies[3], "BLOCKED: plugin approval required for echo (no answer in time)") ||
		!strings.Contains(replies[4], "returned: for the session") || !strings.Contains(replies[5], "returned: not asked") {
		t.Fatalf("replies: %q", replies)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.PreApprovalRequest: 5, hooks.PostApprovalResp: 5, hooks.PreToolCall: 0,
		hooks.OnSessionStart: 1, hooks.PostToolCall: 6, hooks.PostLLMCall: 6, hooks.OnSessionEnd: 6})
	if fmt.Sprint(asked) != "[1 2 3 4 5]" {
		t.Fatalf("pre_approval_request events committed when each person was asked: %v", asked)
	}
	var pre, post []hooks.ApprovalPayload
	for _, ev := range e.Rec.Events("") {
		var p hooks.ApprovalPayload
		switch ev.Hook {
		case hooks.PreApprovalRequest, hooks.PostApprovalResp:
			if err := ev.Decode(&p); err != nil {
				t.Fatal(err)
			}
			if ev.Hook == hooks.PreApprovalRequest {
				pre = append(pre, p)
			} else {
				post = append(post, p)
			}
		}
	}
	if p := pre[0]; p.Command != `echo {"text":"hello"}` || p.Description != "echo repeats what it is given" || p.PatternKey != "plugin_rule:echo" ||
		fmt.Sprint(p.PatternKeys) != "[plugin_rule:echo]" || p.Surface != "desktop" || p.Choice != "" || p.Approved != nil || p.SessionID != s.ID ||
		p.ToolName != "echo" || p.ToolCallID == "" || p.RequestID == "" || p.SessionKey != "desktop:"+s.ID {
		t.Fatalf("pre_approval_request: %+v", p)
	}
	var got []string
	for i, p := range post {
		if p.RequestID != pre[i].RequestID || p.Approved == nil {
			t.Fatalf("post_approval_response %d: %+v", i, p)
		}
		got = append(got, fmt.Sprintf("%s/%v/%s", p.Choice, *p.Approved, p.Error))
	}
	if fmt.Sprint(got) != "[once/true/ deny/false/ deny/false/the window was closed timeout/false/ session/true/]" {
		t.Fatalf("answers: %v", got)
	}
	// Another conversation is asked again.
	e.Rec.Reset()
	other := e.MustCreate(t, sessions.CreateParams{Title: "other"})
	if _, err := loop.Send(ctx, other.ID, `use tool echo: {"text": "elsewhere"}`, hooks.LocalContext("desktop", other.ID)); err != nil || calls != 6 {
		t.Fatalf("another conversation: %v, %d asks", err, calls)
	}
	// Nobody to ask (a piped terminal): blocked, and no approval hook.
	e.Rec.Reset()
	turn := e.send(t, s.ID, `use tool echo: {"text": "nobody"}`)
	if len(turn.Blocked) != 1 {
		t.Fatalf("turn: %+v", turn)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.PreApprovalRequest: 0, hooks.PostApprovalResp: 0, hooks.PostToolCall: 1,
		hooks.PostLLMCall: 1, hooks.OnSessionEnd: 1})
}

// api_request_error carries the familiar API's classification of a failed
// model call (reason), the HTTP status, the provider's base_url, and
// retry_count/max_retries (0: without Options.MaxRetries a call is made
// once; retry_test.go has the retries).
func TestAPIRequestErrorSaysWhy(t *testing.T) {
	t.Parallel()
	status := map[string]int{"/auth/v1": 401, "/pay/v1": 402, "/slow/v1": 429, "/busy/v1": 503, "/boom/v1": 500,
		"/bad/v1": 400, "/gone/v1": 404}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code := status[strings.TrimSuffix(r.URL.Path, "/chat/completions")]
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = fmt.Fprintf(w, `{"error":{"message":"failed with %d"}}`, code)
	}))
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // a port nothing answers on
	cases := []struct {
		base, reason string
		status       int
		retryable    bool
	}{
		{srv.URL + "/auth/v1", "auth", 401, false}, {srv.URL + "/pay/v1", "billing", 402, false},
		{srv.URL + "/slow/v1", "rate_limit", 429, true}, {srv.URL + "/busy/v1", "overloaded", 503, true},
		{srv.URL + "/boom/v1", "server_error", 500, true}, {srv.URL + "/bad/v1", "format_error", 400, false},
		{srv.URL + "/gone/v1", "model_not_found", 404, false}, {closed.URL + "/v1", "timeout", 0, true},
	}
	for _, c := range cases {
		var mu sync.Mutex
		var seen []hooks.APIRequest
		e := sessionstest.NewWith(t, hooks.Options{Timeout: 2 * time.Second}, func(bus *hooks.Bus) {
			if err := bus.Plugin("watch").RegisterSync(hooks.APIRequestError, func(_ context.Context, raw json.RawMessage) (any, error) {
				var p hooks.APIRequest
				if err := json.Unmarshal(raw, &p); err != nil {
					return nil, err
				}
				mu.Lock()
				seen = append(seen, p)
				mu.Unlock()
				return nil, nil
			}); err != nil {
				panic(err)
			}
		})
		eng := compaction.NewEngine(e.DB, e.Sessions, e.Bus, llm.OfflineSummarizer{}, compaction.DefaultConfig())
		p, err := llm.NewOpenAIProvider(llm.OpenAIConfig{BaseURL: c.base, Model: "test-model"})
		if err != nil {
			t.Fatal(err)
		}
		loop, err := turns.New(e.DB, e.Sessions, eng, e.Bus, turns.Options{Provider: p})
		if err != nil {
			t.Fatal(err)
		}
		s := e.MustCreate(t, sessions.CreateParams{Title: "failing"})
		if _, err := loop.Send(ctx, s.ID, "hello", hooks.LocalContext("cli", s.ID)); err == nil {
			t.Fatalf("%s: the turn did not fail", c.base)
		}
		mu.Lock()
		if len(seen) != 1 {
			t.Fatalf("%s: %d api_request_error calls", c.base, len(seen))
		}
		got := seen[0]
		mu.Unlock()
		code := 0
		if got.StatusCode != nil {
			code = *got.StatusCode
		}
		if got.Reason != c.reason || code != c.status || got.BaseURL != c.base || got.RetryCount != 0 || got.MaxRetries != 0 ||
			got.Retryable == nil || *got.Retryable != c.retryable || got.Error["message"] == "" {
			t.Errorf("%s: reason %q status %d base %q retryable %v, want %q %d %v", c.base, got.Reason, code, got.BaseURL,
				got.Retryable, c.reason, c.status, c.retryable)
		}
	}
}

// twoCalls asks for two echo calls in one answer when the person says "use
// echo twice: TEXT"; otherwise it is the offline provider.
type twoCalls struct{ llm.OfflineProvider }

func (p twoCalls) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	if text, ok := strings.CutPrefix(last.Content, "use echo twice: "); ok && last.Role == "user" {
		args := `{"text":"` + text + `"}`
		return llm.Response{ToolCalls: []llm.ToolCall{{ID: "call_a", Name: "echo", Arguments: args}, {ID: "call_b", Name: "echo", Arguments: args}}}, nil
	}
	return p.OfflineProvider.Complete(ctx, req)
}

// A pre_approval_decision hook (Claude Code's PermissionRequest) answers in
// the place of the person who would be asked: allow (with rewritten
// arguments or not) runs the call, deny blocks it with its message for the
// model, and then nobody is asked and neither approval observer fires; any
// deny wins over an allow; no answer, or a failing hook, asks the person. A
// deny with interrupt stops the turn: the answer's other calls are not run
// and the model is not called again. Where nobody can be asked it is not
// called.
func TestADecisionHookAnswersInThePersonsPlace(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var decided []string // the text of each call the hook was asked about
	e := newEnv(t, 100000, nil, func(bus *hooks.Bus) {
		if err := hookstest.WantApproval(bus, "guard", "echo", "echo needs a yes"); err != nil {
			panic(err)
		}
		answer := func(text string) (any, error) {
			switch text {
			case "allow":
				return map[string]any{"action": "allow"}, nil
			case "rewrite":
				return map[string]any{"action": "allow", "args": map[string]any{"text": "rewritten"}}, nil
			case "deny":
				return map[string]any{"action": "deny", "message": "not today"}, nil
			case "stop":
				return map[string]any{"action": "deny", "message": "stop right there", "interrupt": true}, nil
			case "boom":
				return nil, fmt.Errorf("policy file unreadable")
			case "session":
				return map[string]any{"action": "allow", "scope": "session"}, nil
			case "other tools":
				return map[string]any{"action": "allow", "scope": "session", "tools": []any{"big_output"}}, nil
			}
			return nil, nil
		}
		if _, err := bus.RegisterSync("policy", hooks.PreApprovalDecide, func(_ context.Context, raw json.RawMessage) (any, error) {
			var p hooks.ApprovalPayload
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, err
			}
			text, _ := p.Args["text"].(string)
			mu.Lock()
			decided = append(decided, text)
			mu.Unlock()
			if p.ToolName != "echo" || p.PatternKey != "plugin_rule:echo" || p.Description != "echo needs a yes" || p.Surface != "desktop" || p.SessionID == "" {
				return nil, fmt.Errorf("payload %+v", p)
			}
			return answer(text)
		}); err != nil {
			panic(err)
		}
		// A second hook allows what the first denies: the deny wins.
		if _, err := bus.RegisterSync("lenient", hooks.PreApprovalDecide, func(_ context.Context, raw json.RawMessage) (any, error) {
			if strings.Contains(string(raw), `"text":"deny"`) {
				return map[string]any{"action": "allow"}, nil
			}
			return nil, nil
		}); err != nil {
			panic(err)
		}
	})
	var asked []string
	loop, err := turns.New(e.DB, e.Sessions, e.eng, e.Bus, turns.Options{Provider: twoCalls{llm.OfflineProvider{Window: 100000}},
		Approve: func(_ context.Context, a turns.Approval) (turns.Answer, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, fmt.Sprint(a.Args["text"]))
			return turns.AnswerDeny, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	s := e.MustCreate(t, sessions.CreateParams{Title: "decided"})
	lastTool := func() string {
		msgs, err := e.Sessions.Messages(ctx, s.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].Role == "tool" {
				return msgs[i].Content
			}
		}
		return ""
	}
	for _, c := range []struct {
		text, result string
		blocked      bool
		asks         int
	}{
		{"allow", "allow", false, 0}, {"rewrite", "rewritten", false, 0}, {"deny", `{"error":"not today"}`, true, 0},
		{"nothing", `{"error":"BLOCKED: plugin approval required for echo"}`, true, 1},
		{"boom", `{"error":"BLOCKED: plugin approval required for echo"}`, true, 1},
	} {
		e.Rec.Reset()
		turn, err := loop.Send(ctx, s.ID, `use tool echo: `+c.text, hooks.LocalContext("desktop", s.ID))
		if err != nil {
			t.Fatal(err)
		}
		if got := lastTool(); got != c.result || (len(turn.Blocked) == 1) != c.blocked {
			t.Fatalf("%s: tool result %q, blocked %v", c.text, got, turn.Blocked)
		}
		e.Rec.Expect(t, e.Bus, map[string]int{hooks.PreApprovalRequest: c.asks, hooks.PostApprovalResp: c.asks,
			hooks.PostToolCall: 1, hooks.PostLLMCall: 1, hooks.OnSessionEnd: 1, hooks.OnSessionStart: map[bool]int{true: 1}[c.text == "allow"]})
	}
	if fmt.Sprint(asked) != "[nothing boom]" {
		t.Fatalf("the person was asked about %v", asked)
	}

	// interrupt: the second call of the answer is not run, and the turn
	// stops without another model call.
	e.Rec.Reset()
	mu.Lock()
	decided = nil
	mu.Unlock()
	turn, err := loop.Send(ctx, s.ID, "use echo twice: stop", hooks.LocalContext("desktop", s.ID))
	if err == nil || !strings.Contains(err.Error(), "a hook stopped the turn: stop right there") || fmt.Sprint(turn.Blocked) != "[echo echo]" {
		t.Fatalf("interrupted turn: %+v, %v", turn, err)
	}
	msgs, err := e.Sessions.Messages(ctx, s.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	var tail []string
	for _, m := range msgs[len(msgs)-5:] {
		tail = append(tail, m.Role+"|"+m.ToolCallID+"|"+m.Content)
	}
	want := []string{"user||use echo twice: stop", `assistant|call_a|{"text":"stop"}`, `tool|call_a|{"error":"stop right there"}`,
		`assistant|call_b|{"text":"stop"}`, `tool|call_b|{"error":"not run: the turn was stopped (stop right there)"}`}
	if fmt.Sprint(tail) != fmt.Sprint(want) {
		t.Fatalf("transcript tail:\n%s\nwant\n%s", strings.Join(tail, "\n"), strings.Join(want, "\n"))
	}
	if fmt.Sprint(decided) != "[stop]" {
		t.Fatalf("the hook was asked about %v", decided)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.PostToolCall: 2, hooks.OnSessionEnd: 1})
	if ends := e.Rec.Events(hooks.OnSessionEnd); len(ends) == 1 {
		var p hooks.SessionEnd
		if err := ends[0].Decode(&p); err != nil || p.Completed || !p.Failed {
			t.Fatalf("on_session_end: %+v %v", p, err)
		}
	}

	// Nobody to ask (a piped terminal): blocked as before, the hook not called.
	mu.Lock()
	decided = nil
	mu.Unlock()
	if turn := e.send(t, s.ID, `use tool echo: allow`); len(turn.Blocked) != 1 || len(decided) != 0 {
		t.Fatalf("with nobody to ask: %+v, hook asked about %v", turn, decided)
	}

	// An allow for the session (Claude Code's updatedPermissions): the
	// plugin's later asks about echo in that conversation run, asking
	// neither the hook nor the person; one naming other tools grants echo
	// nothing.
	for _, c := range []struct {
		first, then, result string
		decided             string
	}{
		{"session", "deny", "deny", "[session]"},
		{"other tools", "deny", `{"error":"not today"}`, "[other tools deny]"},
	} {
		mu.Lock()
		decided = nil
		mu.Unlock()
		conv := e.MustCreate(t, sessions.CreateParams{Title: c.first})
		for _, text := range []string{c.first, c.then} {
			if _, err := loop.Send(ctx, conv.ID, `use tool echo: `+text, hooks.LocalContext("desktop", conv.ID)); err != nil {
				t.Fatal(err)
			}
		}
		msgs, err := e.Sessions.Messages(ctx, conv.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := msgs[len(msgs)-2].Content; got != c.result || fmt.Sprint(decided) != c.decided {
			t.Fatalf("%s then %s: %q, the hook was asked about %v", c.first, c.then, got, decided)
		}
	}
	if fmt.Sprint(asked) != "[nothing boom]" {
		t.Fatalf("the person was asked about %v", asked)
	}
}

// tool_execution middleware chains across plugins in load order: each
// plugin's start answers next (with the arguments it hands on) or a result,
// and resume hands it what the rest of the chain gave. A plugin that cannot
// answer is passed over; one that fails after the call ran leaves the
// call's outcome as it was.
func TestToolExecutionMiddlewareChainsAcrossPlugins(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	mw := func(plugin string, handle func(method string, p map[string]any) (any, error)) func(*hooks.Bus) {
		return func(bus *hooks.Bus) {
			if _, err := bus.RegisterCapability(hooks.Capability{Plugin: plugin, Kind: hooks.CapMiddleware, Name: "tool_execution"},
				func(_ context.Context, method string, raw json.RawMessage) (json.RawMessage, error) {
					var p map[string]any
					if err := json.Unmarshal(raw, &p); err != nil {
						return nil, err
					}
					mu.Lock()
					seen = append(seen, plugin+":"+method)
					mu.Unlock()
					v, err := handle(method, p)
					if err != nil {
						return nil, err
					}
					return json.Marshal(v)
				}); err != nil {
				panic(err)
			}
		}
	}
	e := newEnv(t, 100000, nil,
		mw("a-gone", func(string, map[string]any) (any, error) { return nil, fmt.Errorf("the plugin process exited") }),
		mw("b-stamp", func(method string, p map[string]any) (any, error) {
			if method == "start" {
				payload := p["payload"].(map[string]any)
				args := payload["args"].(map[string]any)
				if payload["tool_name"] != "echo" || payload["session_id"] == "" || payload["tool_call_id"] == "" {
					return nil, fmt.Errorf("payload %v", payload)
				}
				return map[string]any{"next": map[string]any{"text": "X-" + args["text"].(string)}, "token": "t1"}, nil
			}
			if p["token"] != "t1" {
				return nil, fmt.Errorf("resumed with %v", p)
			}
			return map[string]any{"result": p["result"].(string) + " [stamped]"}, nil
		}),
		mw("c-flaky", func(method string, p map[string]any) (any, error) {
			if method == "start" {
				payload := p["payload"].(map[string]any)
				return map[string]any{"next": payload["args"], "token": "t2"}, nil
			}
			return nil, fmt.Errorf("crashed after the call")
		}))
	s := e.MustCreate(t, sessions.CreateParams{Title: "chained"})
	turn := e.send(t, s.ID, "use tool echo: hello")
	msgs, err := e.Sessions.Messages(ctx, s.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	var tool string
	for _, m := range msgs {
		if m.Role == "tool" {
			tool = m.Content
		}
	}
	if tool != "X-hello [stamped]" || len(turn.Blocked) != 0 {
		t.Fatalf("tool result %q, turn %+v", tool, turn)
	}
	if fmt.Sprint(seen) != "[a-gone:start b-stamp:start c-flaky:start c-flaky:resume b-stamp:resume]" {
		t.Fatalf("calls: %v", seen)
	}
}

// A turn whose context ends under it (a person stopped it, its time ran
// out) still records how it ended, though that context is done:
// on_session_end (interrupted) and agent_loop_stopped with why; what the
// turn stored before stays. A turn that fails otherwise fires no
// agent_loop_stopped.
func TestAStoppedTurnSaysSo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100000, nil)
	slow, err := turns.New(e.DB, e.Sessions, e.eng, e.Bus, turns.Options{Provider: llm.OfflineProvider{Window: 100000, Delay: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	s := e.MustCreate(t, sessions.CreateParams{Title: "stopped"})
	for _, c := range []struct {
		name   string
		cancel func(context.CancelCauseFunc)
		reason string
	}{
		{"a person", func(stop context.CancelCauseFunc) { stop(turns.StopByPerson) }, "user_stop/session_interrupt"},
		{"its time", nil, "timeout/turn_deadline"},
		{"the process", func(stop context.CancelCauseFunc) { stop(nil) }, "interrupted/caller_gone"},
	} {
		e.Rec.Reset()
		base, stop := context.WithCancelCause(ctx)
		tctx, cancel := context.WithTimeout(base, time.Minute)
		if c.cancel == nil {
			tctx, cancel = context.WithTimeout(base, 200*time.Millisecond)
		} else {
			go func() { time.Sleep(200 * time.Millisecond); c.cancel(stop) }()
		}
		_, err := slow.Send(tctx, s.ID, "take your time", hooks.LocalContext("desktop", s.ID))
		cancel()
		stop(nil)
		if err == nil {
			t.Fatalf("%s: the turn did not fail", c.name)
		}
		e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionStart: map[bool]int{true: 1}[c.name == "a person"],
			hooks.OnSessionEnd: 1, hooks.AgentLoopStopped: 1})
		var end hooks.SessionEnd
		if err := e.Rec.Events(hooks.OnSessionEnd)[0].Decode(&end); err != nil || end.Completed || !end.Interrupted || end.Failed {
			t.Fatalf("%s: on_session_end %+v %v", c.name, end, err)
		}
		var st hooks.LoopStopped
		if err := e.Rec.Events(hooks.AgentLoopStopped)[0].Decode(&st); err != nil || st.Reason+"/"+st.InvalidationReason != c.reason ||
			st.SessionKey != "desktop:"+s.ID || st.Platform != "desktop" || st.SessionID != s.ID || st.TurnID == "" {
			t.Fatalf("%s: agent_loop_stopped %+v %v", c.name, st, err)
		}
	}
	msgs, err := e.Sessions.Messages(ctx, s.ID, false)
	if err != nil || len(msgs) != 3 || msgs[0].Content != "take your time" {
		t.Fatalf("stored: %+v %v", msgs, err)
	}
	// A turn that fails for another reason is not a stop.
	e.Rec.Reset()
	failing, err := turns.New(e.DB, e.Sessions, e.eng, e.Bus, turns.Options{Provider: llm.OfflineProvider{FailWith: fmt.Errorf("boom")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := failing.Send(ctx, s.ID, "fail", hooks.LocalContext("desktop", s.ID)); err == nil {
		t.Fatal("the failing turn did not fail")
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionEnd: 1})
}

// seenModels is the offline provider, noting the model each request names.
type seenModels struct {
	llm.OfflineProvider
	mu   *sync.Mutex
	seen *[]string
}

func (p seenModels) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	p.mu.Lock()
	*p.seen = append(*p.seen, req.Model)
	p.mu.Unlock()
	return p.OfflineProvider.Complete(ctx, req)
}

// With Options.Resolve the model is the one it gives as each turn starts: a
// model changed while the loop lives is the next turn's, in the request
// and in every hook's payload; one that cannot be resolved fails that turn
// before anything is stored or any hook fires, and slash commands go on.
func TestTheModelIsResolvedAsEachTurnStarts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100000, nil)
	var (
		mu, mu2 sync.Mutex
		seen    []string
		now     turns.Model
		nowEr   error = apperr.New(apperr.Invalid, "the API key variable $ATRIUM_T_KEY is not set")
		calls   int
	)
	set := func(name string, err error) {
		mu.Lock()
		defer mu.Unlock()
		now, nowEr = turns.Model{Provider: seenModels{OfflineProvider: llm.OfflineProvider{Window: 100000}, mu: &mu2, seen: &seen}, Name: name}, err
	}
	loop, err := turns.New(e.DB, e.Sessions, e.eng, e.Bus, turns.Options{Resolve: func() (turns.Model, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		return now, nowEr
	}})
	if err != nil {
		t.Fatal(err)
	}
	s := e.MustCreate(t, sessions.CreateParams{Title: "switching"})
	cc := hooks.LocalContext("cli", s.ID)
	if _, err := loop.Send(ctx, s.ID, "hello", cc); apperr.CodeOf(err) != apperr.Invalid || !strings.Contains(err.Error(), "$ATRIUM_T_KEY is not set") {
		t.Fatalf("a turn without a model: %v", err)
	}
	if ms, _ := e.Sessions.Messages(ctx, s.ID, true); len(ms) != 0 {
		t.Fatalf("a turn without a model stored %d messages", len(ms))
	}
	e.Rec.Expect(t, e.Bus, map[string]int{})
	if turn, err := loop.Send(ctx, s.ID, "/help", cc); err != nil || turn.Output == "" {
		t.Fatalf("/help without a model: %+v %v", turn, err)
	}
	if _, err := loop.HygieneFor(ctx, s.ID, cc); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("hygiene without a model: %v", err)
	}
	set("model-a", nil)
	if turn, err := loop.Send(ctx, s.ID, "one", cc); err != nil || turn.Reply == "" {
		t.Fatalf("the turn with model-a: %+v %v", turn, err)
	}
	set("model-b", nil)
	if turn, err := loop.Send(ctx, s.ID, "two", cc); err != nil || turn.Reply == "" {
		t.Fatalf("the turn with model-b: %+v %v", turn, err)
	}
	mu2.Lock()
	if strings.Join(seen, ",") != "model-a,model-b" {
		t.Fatalf("the requests named %v", seen)
	}
	mu2.Unlock()
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionStart: 1, hooks.PostLLMCall: 2, hooks.OnSessionEnd: 2})
	models := func(hook string) []string {
		var out []string
		for _, ev := range e.Rec.Events(hook) {
			var p struct {
				Model string `json:"model"`
			}
			if err := ev.Decode(&p); err != nil {
				t.Fatal(err)
			}
			out = append(out, p.Model)
		}
		return out
	}
	if got := models(hooks.OnSessionStart); strings.Join(got, ",") != "model-a" {
		t.Fatalf("on_session_start's model: %v", got)
	}
	if got := models(hooks.PostLLMCall); strings.Join(got, ",") != "model-a,model-b" {
		t.Fatalf("post_llm_call's models: %v", got)
	}
	if got := models(hooks.OnSessionEnd); strings.Join(got, ",") != "model-a,model-b" {
		t.Fatalf("on_session_end's models: %v", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls < 4 {
		t.Fatalf("Resolve was called %d times for 3 turns and a hygiene", calls)
	}
}
