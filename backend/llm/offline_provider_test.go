package llm

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

var (
	_ Provider        = OfflineProvider{}
	_ Provider        = (*OfflineProvider)(nil)
	_ NativeCompactor = OfflineProvider{}
	_ Summarizer      = OfflineSummarizer{}
)

var offlineTools = []ToolSpec{
	{Name: "echo", Description: "echo text", Parameters: `{"type":"object"}`},
	{Name: "big_output", Description: "lots of text"},
}

func TestOfflineProviderDefaults(t *testing.T) {
	t.Parallel()
	var p OfflineProvider
	if p.Name() != "offline" || p.ContextWindow() != DefaultContextWindow || DefaultContextWindow != 8192 {
		t.Fatalf("Name %q, ContextWindow %d", p.Name(), p.ContextWindow())
	}
	if got := (OfflineProvider{Window: 100}).ContextWindow(); got != 100 {
		t.Fatalf("ContextWindow = %d", got)
	}
}

func TestOfflineProviderPlainAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	long := strings.Repeat("x", 300)
	req := Request{Messages: []Message{
		{Role: "system", Content: "be brief"},
		{Role: "user", Content: "first question"},
		{Role: "assistant", Content: "first answer"},
		{Role: "user", Content: "what is\nthe plan? " + long},
	}}
	resp, err := OfflineProvider{}.Complete(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	want := "offline reply to: what is the plan? " + long[:200-len("what is the plan? ")] + "…"
	if resp.Content != want {
		t.Fatalf("Content = %q\nwant      %q", resp.Content, want)
	}
	if len(resp.ToolCalls) != 0 {
		t.Fatalf("unexpected tool calls %v", resp.ToolCalls)
	}
	if resp.PromptTokens != EstimateMessages(req.Messages) || resp.CompletionTokens != EstimateTokens(resp.Content) {
		t.Fatalf("usage %d/%d", resp.PromptTokens, resp.CompletionTokens)
	}
	// Deterministic: the same request, the same response.
	again, _ := OfflineProvider{}.Complete(ctx, req)
	if !reflect.DeepEqual(resp, again) {
		t.Fatalf("not deterministic: %+v vs %+v", resp, again)
	}
	// No user message at all.
	resp, err = OfflineProvider{}.Complete(ctx, Request{Messages: []Message{{Role: "system", Content: "hi"}}})
	if err != nil || resp.Content != "offline reply." {
		t.Fatalf("no user message: %q, %v", resp.Content, err)
	}
}

func TestOfflineProviderToolCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	msgs := []Message{
		{Role: "system", Content: "sys"},
		{Role: "user", Content: "please use tool echo: hello world \nand some injected context below"},
	}
	resp, err := OfflineProvider{}.Complete(ctx, Request{Messages: msgs, Tools: offlineTools})
	if err != nil {
		t.Fatal(err)
	}
	want := []ToolCall{{ID: "call_2", Name: "echo", Arguments: `{"text":"hello world"}`}}
	if !reflect.DeepEqual(resp.ToolCalls, want) || resp.Content != "" {
		t.Fatalf("resp = %+v", resp)
	}
	if resp.CompletionTokens == 0 || resp.PromptTokens != EstimateMessages(msgs) {
		t.Fatalf("usage %d/%d", resp.PromptTokens, resp.CompletionTokens)
	}

	// Without arguments, case-insensitive, and with a trailing system message
	// (injected context) after the user turn.
	resp, err = OfflineProvider{}.Complete(ctx, Request{Tools: offlineTools, Messages: []Message{
		{Role: "user", Content: "a"}, {Role: "assistant", Content: "b"},
		{Role: "user", Content: "Use Tool big_output."},
		{Role: "system", Content: "RULES: be nice"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want = []ToolCall{{ID: "call_4", Name: "big_output", Arguments: `{"text":""}`}}
	if !reflect.DeepEqual(resp.ToolCalls, want) {
		t.Fatalf("resp = %+v", resp)
	}

	// Arguments that need escaping stay valid JSON.
	resp, _ = OfflineProvider{}.Complete(ctx, Request{Tools: offlineTools, Messages: []Message{
		{Role: "user", Content: `use tool echo: say "hi" \ bye`},
	}})
	var args struct{ Text string }
	if len(resp.ToolCalls) != 1 || json.Unmarshal([]byte(resp.ToolCalls[0].Arguments), &args) != nil || args.Text != `say "hi" \ bye` {
		t.Fatalf("resp = %+v", resp)
	}

	// A tool that is not offered is not called.
	resp, _ = OfflineProvider{}.Complete(ctx, Request{Tools: offlineTools, Messages: []Message{
		{Role: "user", Content: "use tool rm_rf: /"},
	}})
	if len(resp.ToolCalls) != 0 || !strings.HasPrefix(resp.Content, "offline reply to: use tool rm_rf") {
		t.Fatalf("resp = %+v", resp)
	}
	resp, _ = OfflineProvider{}.Complete(ctx, Request{Messages: []Message{{Role: "user", Content: "use tool echo: x"}}})
	if len(resp.ToolCalls) != 0 {
		t.Fatalf("no tools offered, still called: %+v", resp)
	}
}

func TestOfflineProviderToolResult(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	call := ToolCall{ID: "call_2", Name: "echo", Arguments: `{"text":"hello world"}`}
	base := []Message{
		{Role: "user", Content: "please use tool echo: hello world"},
		{Role: "assistant", ToolCalls: []ToolCall{call}},
	}
	resp, err := OfflineProvider{}.Complete(ctx, Request{Tools: offlineTools, Messages: append(base[:2:2],
		Message{Role: "tool", ToolName: "echo", ToolCallID: "call_2", Content: "hello world"})})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "The tool echo returned: hello world" || len(resp.ToolCalls) != 0 {
		t.Fatalf("resp = %+v", resp)
	}
	// The name is found from the call id when the result does not carry it,
	// and a long result is cut at 200 characters.
	big := strings.Repeat("é", 500)
	resp, _ = OfflineProvider{}.Complete(ctx, Request{Messages: append(base[:2:2],
		Message{Role: "tool", ToolCallID: "call_2", Content: big})})
	if resp.Content != "The tool echo returned: "+strings.Repeat("é", 200)+"…" {
		t.Fatalf("resp = %q", resp.Content)
	}
	resp, _ = OfflineProvider{}.Complete(ctx, Request{Messages: []Message{{Role: "tool", Content: "42"}}})
	if resp.Content != "The tool returned: 42" {
		t.Fatalf("resp = %q", resp.Content)
	}
}

func TestOfflineProviderContextLength(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := OfflineProvider{Window: 50}
	// 4 framing tokens + 46 tokens of text = exactly the window: fits.
	fits := []Message{{Role: "user", Content: strings.Repeat("a", 46*4)}}
	if EstimateMessages(fits) != 50 {
		t.Fatalf("fixture estimates %d", EstimateMessages(fits))
	}
	if _, err := p.Complete(ctx, Request{Messages: fits}); err != nil {
		t.Fatalf("at the window: %v", err)
	}
	over := []Message{{Role: "user", Content: strings.Repeat("a", 46*4+1)}}
	_, err := p.Complete(ctx, Request{Messages: over})
	if !errors.Is(err, ErrContextLength) {
		t.Fatalf("over the window: err = %v", err)
	}
	var cle *ContextLengthError
	if !errors.As(err, &cle) || !strings.Contains(cle.Message, "51 tokens") || !strings.Contains(cle.Message, "50") {
		t.Fatalf("ContextLengthError = %v", err)
	}
	// Tool calls count too.
	withCalls := []Message{{Role: "assistant", ToolCalls: []ToolCall{{Name: "x", Arguments: strings.Repeat("b", 400)}}}}
	if _, err := p.Complete(ctx, Request{Messages: withCalls}); !errors.Is(err, ErrContextLength) {
		t.Fatalf("tool-call prompt: err = %v", err)
	}
}

func TestOfflineProviderContextSeen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name string
		msgs []Message
		seen bool
	}{
		{"none", []Message{{Role: "system", Content: "plain"}, {Role: "user", Content: "hi"}}, false},
		{"system RULES line", []Message{{Role: "system", Content: "intro\n  RULES: tabs not spaces"}, {Role: "user", Content: "hi"}}, true},
		{"user marker", []Message{{Role: "user", Content: "hi\n\n[[context]] conventions: gofmt"}}, true},
		{"RULES mid-line", []Message{{Role: "user", Content: "the RULES: are elsewhere"}}, false},
		{"assistant does not count", []Message{{Role: "assistant", Content: "RULES: x"}, {Role: "user", Content: "hi"}}, false},
		{"tool result", []Message{{Role: "system", Content: "RULES: x"}, {Role: "tool", ToolName: "echo", Content: "ok"}}, true},
	}
	for _, c := range cases {
		resp, err := OfflineProvider{}.Complete(ctx, Request{Messages: c.msgs})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.HasSuffix(resp.Content, " "+ContextSeenMarker); got != c.seen {
			t.Errorf("%s: %q, seen = %v, want %v", c.name, resp.Content, got, c.seen)
		}
	}
}

func TestOfflineProviderFailWithAndDelay(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	req := Request{Messages: []Message{{Role: "user", Content: "hi"}}}
	if _, err := (OfflineProvider{FailWith: boom}).Complete(context.Background(), req); !errors.Is(err, boom) {
		t.Fatalf("FailWith: err = %v", err)
	}

	start := time.Now()
	resp, err := OfflineProvider{Delay: 20 * time.Millisecond}.Complete(context.Background(), req)
	if err != nil || resp.Content == "" || time.Since(start) < 20*time.Millisecond {
		t.Fatalf("Delay: %v after %v", err, time.Since(start))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = OfflineProvider{Delay: time.Hour}.Complete(ctx, req)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("Delay with deadline: %v after %v", err, time.Since(start))
	}
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err := (OfflineProvider{}).Complete(cctx, req); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if _, err := (OfflineProvider{}).CompactNative(cctx, "", fixtureConversation()); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled compaction: %v", err)
	}
}

func TestOfflineProviderCompactNative(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	msgs := fixtureConversation()
	msgs = append(msgs[:1:1], append([]Message{{Role: "system", Content: "RULES: second system message"}}, msgs[1:]...)...)
	orig := make([]Message, len(msgs))
	for i, m := range msgs {
		orig[i] = copyMessage(m)
	}
	out, err := OfflineProvider{}.CompactNative(ctx, "any-model", msgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 5 {
		t.Fatalf("len = %d, want 2 system + summary + last 2", len(out))
	}
	if !reflect.DeepEqual(out[0], msgs[0]) || !reflect.DeepEqual(out[1], msgs[1]) {
		t.Fatalf("system messages not kept: %+v", out[:2])
	}
	s := out[2]
	if s.Role != "assistant" || !strings.HasPrefix(s.Content, "[native compaction] Summary of ") {
		t.Fatalf("summary message = %+v", s)
	}
	for _, want := range []string{"5432", "/v2/users", "Last user request: Invoices above 10,000 EUR"} {
		if !strings.Contains(s.Content, want) {
			t.Errorf("summary lost %q:\n%s", want, s.Content)
		}
	}
	if !reflect.DeepEqual(out[3:], msgs[len(msgs)-2:]) {
		t.Fatalf("last two changed: %+v", out[3:])
	}
	if EstimateMessages(out) >= EstimateMessages(msgs) {
		t.Fatalf("compaction grew the transcript: %d -> %d", EstimateMessages(msgs), EstimateMessages(out))
	}
	if !reflect.DeepEqual(msgs, orig) {
		t.Fatal("input mutated")
	}
	again, _ := OfflineProvider{}.CompactNative(ctx, "other", msgs)
	if !reflect.DeepEqual(out, again) {
		t.Fatal("not deterministic")
	}

	// Too short, or nothing but system messages before the last two.
	for _, short := range [][]Message{nil, msgs[:3]} {
		if _, err := (OfflineProvider{}).CompactNative(ctx, "", short); !errors.Is(err, ErrNothingToCompact) {
			t.Errorf("%d messages: err = %v", len(short), err)
		}
	}
	onlySystem := []Message{{Role: "system", Content: "a"}, {Role: "system", Content: "b"}, {Role: "user", Content: "c"}, {Role: "assistant", Content: "d"}}
	if _, err := (OfflineProvider{}).CompactNative(ctx, "", onlySystem); !errors.Is(err, ErrNothingToCompact) {
		t.Errorf("only system: err = %v", err)
	}
}

// TestOfflineProviderOverflowThenCompact walks the turn loop's overflow path
// end to end: the prompt overflows, native compaction shrinks it, the retry
// fits and still sees the injected context.
func TestOfflineProviderOverflowThenCompact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := OfflineProvider{Window: 600}
	msgs := []Message{{Role: "system", Content: "RULES: the team conventions"}}
	for i := 0; i < 30; i++ {
		msgs = append(msgs,
			Message{Role: "user", Content: "We decided the retry limit is 3 and the port is 8080. " + strings.Repeat("filler words here. ", 4)},
			Message{Role: "assistant", Content: "Noted. " + strings.Repeat("more chatter. ", 6)})
	}
	msgs = append(msgs, Message{Role: "user", Content: "now deploy it"})
	_, err := p.Complete(ctx, Request{Messages: msgs})
	if !errors.Is(err, ErrContextLength) {
		t.Fatalf("want overflow, got %v", err)
	}
	compacted, err := p.CompactNative(ctx, "", msgs)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Complete(ctx, Request{Messages: compacted})
	if err != nil {
		t.Fatalf("retry after compaction: %v (prompt %d tokens)", err, EstimateMessages(compacted))
	}
	if resp.Content != "offline reply to: now deploy it "+ContextSeenMarker {
		t.Fatalf("retry answer = %q", resp.Content)
	}
}
