package compaction_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/compaction"
	"atrium/backend/hooks"
	"atrium/backend/llm"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

var ctx = context.Background()

// scripted is a summarizer whose behaviour a test sets.
type scripted struct {
	text    string
	err     error
	entered chan struct{} // closed when Summarize starts (if set)
	release chan struct{} // Summarize waits for it (if set)
	calls   int
	mu      sync.Mutex
}

func (s *scripted) Summarize(_ context.Context, msgs []llm.Message, focus string) (string, error) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	if s.entered != nil {
		close(s.entered)
	}
	if s.release != nil {
		<-s.release
	}
	if s.err != nil {
		return "", s.err
	}
	if s.text != "" {
		return s.text, nil
	}
	return fmt.Sprintf("%d messages; focus=%q", len(msgs), focus), nil
}

type env struct {
	*sessionstest.Env
	eng *compaction.Engine
}

func newEnv(t *testing.T, sum llm.Summarizer, mutate func(*compaction.Config)) env {
	e := sessionstest.New(t)
	cfg := compaction.DefaultConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	return env{e, compaction.NewEngine(e.DB, e.Sessions, e.Bus, sum, cfg)}
}

// conversation makes a session with a system prompt and n user/assistant turns.
func (e env) conversation(t *testing.T, n int) sessions.Session {
	s := e.MustCreate(t, sessions.CreateParams{Title: "conv"})
	add := func(role, text string) {
		if _, err := e.Sessions.AppendMessage(ctx, s.ID, sessions.NewMessage{Role: role, Content: text}); err != nil {
			t.Fatal(err)
		}
	}
	add("system", "You are a careful assistant.")
	for i := 0; i < n; i++ {
		add("user", fmt.Sprintf("question %d: we decided the service listens on port %d and the owner is Alice; please keep that in mind for the rest of the work", i, 8000+i))
		add("assistant", fmt.Sprintf("answer %d: noted, port %d, owner Alice, and I will follow the conventions you described earlier in detail", i, 8000+i))
	}
	e.Rec.Reset()
	return s
}

func (e env) active(t *testing.T, id string) []sessions.Message {
	ms, err := e.Sessions.Messages(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func (e env) onePost(t *testing.T) hooks.PostCompactionPayload {
	t.Helper()
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.PostCompaction: 1, "*": 0})
	var p hooks.PostCompactionPayload
	if err := e.Rec.Events(hooks.PostCompaction)[0].Decode(&p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSummarizeRotatesToAContinuation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &scripted{}, nil)
	s := e.conversation(t, 10)
	res, err := e.eng.Compact(ctx, compaction.Request{SessionID: s.ID, Kind: "summarize", Reason: "manual"})
	if err != nil || !res.Changed {
		t.Fatalf("%+v %v", res, err)
	}
	p := e.onePost(t)
	if p.SessionID == s.ID || p.OldSessionID != s.ID || p.Kind != "summarize" || p.Reason != "manual" ||
		p.MessagesRemoved == nil || *p.MessagesRemoved != 16 || *p.BeforeTokens <= *p.AfterTokens {
		t.Fatalf("payload = %+v", p)
	}
	next, err := e.Sessions.Get(ctx, p.SessionID)
	if err != nil || next.ParentSessionID == nil || *next.ParentSessionID != s.ID || next.Relation != "compression" || next.Ended() {
		t.Fatalf("continuation = %+v %v", next, err)
	}
	old, _ := e.Sessions.Get(ctx, s.ID)
	if !old.Ended() || old.EndReason != "compression" || old.MessageCount != 21 {
		t.Fatalf("old = %+v (it keeps its transcript for audit)", old)
	}
	ms := e.active(t, next.ID)
	if len(ms) != 6 || ms[0].Role != "system" || !strings.HasPrefix(ms[1].Content, compaction.SummaryPrefix) ||
		!strings.HasPrefix(ms[2].Content, "question 8") || next.MessageCount != 6 {
		t.Fatalf("continuation transcript: %d messages, %+v", len(ms), ms[:2])
	}
	if int(next.TokenCount) != *p.AfterTokens {
		t.Fatalf("after_tokens %d, continuation holds %d", *p.AfterTokens, next.TokenCount)
	}
}

func TestSummarizeInPlaceKeepsOrderAndAudit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &scripted{}, func(c *compaction.Config) { c.Rotate = false })
	s := e.conversation(t, 10)
	res, err := e.eng.Compact(ctx, compaction.Request{SessionID: s.ID, Kind: "summarize", Reason: "pre_api"})
	if err != nil || !res.Changed || res.SessionID != s.ID {
		t.Fatalf("%+v %v", res, err)
	}
	p := e.onePost(t)
	if p.OldSessionID != "" || p.SessionID != s.ID || p.Reason != "pre_api" {
		t.Fatalf("payload %+v", p)
	}
	ms := e.active(t, s.ID)
	if len(ms) != 6 || ms[0].Role != "system" || !strings.HasPrefix(ms[1].Content, compaction.SummaryPrefix) || !strings.HasPrefix(ms[2].Content, "question 8") {
		t.Fatalf("in place transcript wrong: %v", ms)
	}
	all, _ := e.Sessions.Messages(ctx, s.ID, true)
	if len(all) != 22 {
		t.Fatalf("audit rows = %d, want 21 old + 1 summary", len(all))
	}
	got, _ := e.Sessions.Get(ctx, s.ID)
	if got.MessageCount != 6 || got.Ended() {
		t.Fatalf("session %+v", got)
	}
}

func TestMicroSummarizeFoldsAMiddleSlice(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &scripted{}, func(c *compaction.Config) { c.MicroSlice = 6 })
	s := e.conversation(t, 10)
	before := e.active(t, s.ID)
	if _, err := e.eng.Compact(ctx, compaction.Request{SessionID: s.ID, Kind: "micro_summarize", Reason: "between_turns"}); err != nil {
		t.Fatal(err)
	}
	p := e.onePost(t)
	if p.Kind != "micro_summarize" || p.OldSessionID != "" || *p.MessagesRemoved != 6 {
		t.Fatalf("payload %+v", p)
	}
	after := e.active(t, s.ID)
	if len(after) != len(before)-5 {
		t.Fatalf("%d → %d messages", len(before), len(after))
	}
	// The beginning and the end are untouched, the summary sits in the middle.
	if after[1].ID != before[1].ID || after[len(after)-1].ID != before[len(before)-1].ID {
		t.Fatal("micro summary touched the ends")
	}
	idx := -1
	for i, m := range after {
		if strings.HasPrefix(m.Content, compaction.SummaryPrefix) {
			idx = i
		}
	}
	if idx <= 2 || idx >= len(after)-4 {
		t.Fatalf("summary at %d of %d", idx, len(after))
	}
}

func TestPruneToolResultsStubsStaleOutput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &scripted{}, nil)
	s := e.conversation(t, 1)
	big := strings.Repeat("log line with numbers 12345\n", 100)
	for i := 0; i < 3; i++ {
		for _, m := range []sessions.NewMessage{
			{Role: "assistant", Content: `{"text":"x"}`, ToolName: "big_output", ToolCallID: fmt.Sprint("c", i)},
			{Role: "tool", Content: big, ToolName: "big_output", ToolCallID: fmt.Sprint("c", i)},
			{Role: "user", Content: "next"},
			{Role: "assistant", Content: "ok"},
		} {
			if _, err := e.Sessions.AppendMessage(ctx, s.ID, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.Rec.Reset()
	res, err := e.eng.Compact(ctx, compaction.Request{SessionID: s.ID, Kind: "prune_tool_results", Reason: "proactive_prune"})
	if err != nil || !res.Changed {
		t.Fatalf("%+v %v", res, err)
	}
	p := e.onePost(t)
	// The last two turns are spared: of three outputs, the first two go.
	if p.MessagesRemoved == nil || *p.MessagesRemoved != 0 || p.MessagesReplaced == nil || *p.MessagesReplaced != 2 {
		t.Fatalf("payload %+v", p)
	}
	stubs := 0
	for _, m := range e.active(t, s.ID) {
		if m.Role == "tool" && strings.HasPrefix(m.Content, compaction.StubPrefix) {
			stubs++
			if !strings.Contains(m.Content, fmt.Sprint(len(big))) || m.ToolCallID == "" {
				t.Fatalf("stub does not say what was removed: %q", m.Content)
			}
		}
	}
	if stubs != 2 {
		t.Fatalf("stubs = %d", stubs)
	}
	// Again: nothing left to prune, nothing fires.
	e.Rec.Reset()
	res, err = e.eng.Compact(ctx, compaction.Request{SessionID: s.ID, Kind: "prune_tool_results", Reason: "proactive_prune"})
	if err != nil || res.Changed || res.Skipped != compaction.SkipNothing {
		t.Fatalf("second prune %+v %v", res, err)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})
}

type native struct{ err error }

func (n native) CompactNative(_ context.Context, _ string, msgs []llm.Message) ([]llm.Message, error) {
	if n.err != nil {
		return nil, n.err
	}
	return []llm.Message{{Role: "system", Content: "[native] the gist"}, msgs[len(msgs)-1]}, nil
}

func TestProviderNativeAdoptsTheProvidersTranscript(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &scripted{}, nil)
	s := e.conversation(t, 4)
	res, err := e.eng.Compact(ctx, compaction.Request{SessionID: s.ID, Kind: "provider_native", Reason: "provider", Native: native{}})
	if err != nil || !res.Changed {
		t.Fatalf("%+v %v", res, err)
	}
	p := e.onePost(t)
	if p.Kind != "provider_native" || p.Reason != "provider" || *p.MessagesRemoved != 7 {
		t.Fatalf("payload %+v", p)
	}
	ms := e.active(t, s.ID)
	if len(ms) != 2 || ms[0].Content != "[native] the gist" || !strings.HasPrefix(ms[1].Content, "answer 3") {
		t.Fatalf("transcript %+v", ms)
	}
	e.Rec.Reset()
	res, err = e.eng.Compact(ctx, compaction.Request{SessionID: s.ID, Kind: "provider_native", Reason: "provider", Native: native{err: errors.New("no")}})
	if err != nil || res.Changed || res.Skipped != compaction.SkipAborted {
		t.Fatalf("failing native %+v %v", res, err)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})
	if _, err := e.eng.Compact(ctx, compaction.Request{SessionID: s.ID, Kind: "provider_native", Reason: "provider"}); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("native without a provider: %v", err)
	}
}

func TestEveryReasonFiresOnceWithItsName(t *testing.T) {
	t.Parallel()
	for _, reason := range compaction.Reasons {
		t.Run(reason, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, &scripted{}, nil)
			s := e.conversation(t, 4)
			if _, err := e.eng.Compact(ctx, compaction.Request{SessionID: s.ID, Kind: "summarize", Reason: reason}); err != nil {
				t.Fatal(err)
			}
			if p := e.onePost(t); p.Reason != reason || p.Kind != "summarize" {
				t.Fatalf("payload %+v", p)
			}
		})
	}
}

func snapshot(t *testing.T, e env, id string) string {
	var n, active int64
	e.DB.Read.Raw(`SELECT COUNT(*) FROM messages`).Scan(&n)
	e.DB.Read.Raw(`SELECT COUNT(*) FROM messages WHERE active = 1`).Scan(&active)
	var sess int64
	e.DB.Read.Raw(`SELECT COUNT(*) FROM sessions`).Scan(&sess)
	s, _ := e.Sessions.Get(ctx, id)
	return fmt.Sprint(n, active, sess, s.Ended(), s.MessageCount)
}

func TestNoOpsChangeNothingAndFireNothing(t *testing.T) {
	t.Parallel()
	scenarios := []struct {
		name   string
		sum    *scripted
		turns  int
		kind   string
		reason string
		skip   string
	}{
		{"nothing to compact", &scripted{}, 1, "summarize", "manual", compaction.SkipNothing},
		{"empty micro", &scripted{}, 1, "micro_summarize", "between_turns", compaction.SkipNothing},
		{"summary failed", &scripted{err: errors.New("model down")}, 6, "summarize", "pre_api", compaction.SkipAborted},
		{"summary empty", &scripted{text: "   "}, 6, "summarize", "manual", compaction.SkipAborted},
		{"would grow", &scripted{text: strings.Repeat("very long summary ", 2000)}, 6, "summarize", "between_turns", compaction.SkipWouldGrow},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, sc.sum, nil)
			s := e.conversation(t, sc.turns)
			before := snapshot(t, e, s.ID)
			res, err := e.eng.Compact(ctx, compaction.Request{SessionID: s.ID, Kind: sc.kind, Reason: sc.reason})
			if err != nil || res.Changed || res.Skipped != sc.skip || res.SessionID != s.ID {
				t.Fatalf("%+v %v", res, err)
			}
			if after := snapshot(t, e, s.ID); after != before {
				t.Fatalf("rows changed: %s → %s", before, after)
			}
			e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})
		})
	}
}

func TestCooldownBlocksAutomaticAttemptsNotManualOnes(t *testing.T) {
	t.Parallel()
	sum := &scripted{err: errors.New("flaky")}
	e := newEnv(t, sum, func(c *compaction.Config) { c.Cooldown = time.Minute })
	s := e.conversation(t, 6)
	if res, _ := e.eng.Compact(ctx, compaction.Request{SessionID: s.ID, Kind: "summarize", Reason: "pre_api"}); res.Skipped != compaction.SkipAborted {
		t.Fatalf("first: %+v", res)
	}
	sum.err = nil
	res, err := e.eng.Compact(ctx, compaction.Request{SessionID: s.ID, Kind: "summarize", Reason: "between_turns"})
	if err != nil || res.Skipped != compaction.SkipCooldown || sum.calls != 1 {
		t.Fatalf("automatic during cooldown: %+v %v (calls %d)", res, err, sum.calls)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})
	res, err = e.eng.Compact(ctx, compaction.Request{SessionID: s.ID, Kind: "summarize", Reason: "manual"})
	if err != nil || !res.Changed {
		t.Fatalf("manual is not blocked by the cooldown: %+v %v", res, err)
	}
	e.onePost(t)
	// After the cooldown, automatic attempts run again.
	s2 := e.conversation(t, 6)
	sum.err = errors.New("flaky")
	e.eng.Compact(ctx, compaction.Request{SessionID: s2.ID, Kind: "summarize", Reason: "pre_api"})
	sum.err = nil
	e.Clock.Advance(61 * time.Second)
	if res, _ := e.eng.Compact(ctx, compaction.Request{SessionID: s2.ID, Kind: "summarize", Reason: "pre_api"}); !res.Changed {
		t.Fatalf("after the cooldown: %+v", res)
	}
}

func TestConcurrentCompactionIsBusyAndAppendsSurvive(t *testing.T) {
	t.Parallel()
	sum := &scripted{entered: make(chan struct{}), release: make(chan struct{})}
	e := newEnv(t, sum, nil)
	s := e.conversation(t, 6)
	done := make(chan compaction.Result, 1)
	go func() {
		res, err := e.eng.Compact(ctx, compaction.Request{SessionID: s.ID, Kind: "summarize", Reason: "manual"})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-sum.entered
	if _, err := e.eng.Compact(ctx, compaction.Request{SessionID: s.ID, Kind: "summarize", Reason: "manual"}); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("second compaction at once: %v", err)
	}
	// A message arrives while the summary is being made.
	if _, err := e.Sessions.AppendMessage(ctx, s.ID, sessions.NewMessage{Role: "user", Content: "late arrival: the budget is 42 k"}); err != nil {
		t.Fatal(err)
	}
	close(sum.release)
	res := <-done
	if !res.Changed || res.OldSessionID != s.ID {
		t.Fatalf("%+v", res)
	}
	e.onePost(t)
	ms := e.active(t, res.SessionID)
	if last := ms[len(ms)-1]; last.Content != "late arrival: the budget is 42 k" {
		t.Fatalf("the late message was not carried over: %+v", last)
	}
}

func TestTranscriptChangedUnderneathWritesNothing(t *testing.T) {
	t.Parallel()
	sum := &scripted{entered: make(chan struct{}), release: make(chan struct{})}
	e := newEnv(t, sum, func(c *compaction.Config) { c.Rotate = false })
	s := e.conversation(t, 6)
	errc := make(chan error, 1)
	go func() {
		_, err := e.eng.Compact(ctx, compaction.Request{SessionID: s.ID, Kind: "summarize", Reason: "manual"})
		errc <- err
	}()
	<-sum.entered
	// Another process compacted part of it meanwhile.
	ms := e.active(t, s.ID)
	if err := e.DB.Write.Exec(`UPDATE messages SET active = 0 WHERE id = ?`, ms[2].ID).Error; err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, e, s.ID)
	close(sum.release)
	if err := <-errc; apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("err = %v", err)
	}
	if after := snapshot(t, e, s.ID); after != before {
		t.Fatalf("a refused commit changed rows: %s → %s", before, after)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &scripted{}, nil)
	s := e.conversation(t, 4)
	e.MustEnd(t, s.ID)
	e.Rec.Reset()
	for _, sc := range []struct {
		req  compaction.Request
		code apperr.Code
	}{
		{compaction.Request{SessionID: s.ID, Kind: "summarize", Reason: "manual"}, apperr.Rejected},
		{compaction.Request{SessionID: "nope", Kind: "summarize", Reason: "manual"}, apperr.NotFound},
		{compaction.Request{SessionID: "../x", Kind: "summarize"}, apperr.Invalid},
		{compaction.Request{SessionID: s.ID, Kind: "shrink"}, apperr.Invalid},
		{compaction.Request{SessionID: s.ID, Kind: "summarize", Reason: "boredom"}, apperr.Invalid},
	} {
		if _, err := e.eng.Compact(ctx, sc.req); apperr.CodeOf(err) != sc.code {
			t.Errorf("%+v: %v, want %s", sc.req, err, sc.code)
		}
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})
}

// pre_compaction is called in line once for each compaction about to be
// written, with the transcript still whole; attempts that change nothing
// (nothing to compact, a summary that would not be shorter, an aborted
// one) call nothing.
func TestPreCompactionBeforeEachWrittenCompaction(t *testing.T) {
	t.Parallel()
	sum := &scripted{}
	e := newEnv(t, sum, func(c *compaction.Config) { c.Rotate = false })
	var mu sync.Mutex
	var calls []hooks.PreCompactionPayload
	var seenMessages []int
	if err := e.Bus.Plugin("watcher").RegisterSync(hooks.PreCompaction, func(_ context.Context, raw json.RawMessage) (any, error) {
		var p hooks.PreCompactionPayload
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		ms, err := e.Sessions.Messages(ctx, p.SessionID, false)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		calls = append(calls, p)
		seenMessages = append(seenMessages, len(ms))
		mu.Unlock()
		return map[string]any{"action": "block"}, nil // ignored
	}); err != nil {
		t.Fatal(err)
	}
	s := e.conversation(t, 10)
	if res, err := e.eng.Compact(ctx, compaction.Request{SessionID: s.ID, Kind: "summarize", Reason: "manual", Platform: "cli", Focus: "the port"}); err != nil || !res.Changed {
		t.Fatalf("%+v %v", res, err)
	}
	if len(calls) != 1 || calls[0].SessionID != s.ID || calls[0].Kind != "summarize" || calls[0].Reason != "manual" || calls[0].Focus != "the port" ||
		calls[0].Messages != 21 || seenMessages[0] != 21 || calls[0].BeforeTokens <= 0 || calls[0].Platform == nil || *calls[0].Platform != "cli" {
		t.Fatalf("calls %+v, messages seen %v", calls, seenMessages)
	}
	e.onePost(t)
	// Nothing to prune, a summary that would grow, an aborted summary.
	small := e.conversation(t, 1)
	if res, _ := e.eng.Compact(ctx, compaction.Request{SessionID: small.ID, Kind: "summarize", Reason: "manual"}); res.Changed {
		t.Fatal("a two-message conversation was compacted")
	}
	if res, _ := e.eng.Compact(ctx, compaction.Request{SessionID: s.ID, Kind: "prune_tool_results", Reason: "proactive_prune"}); res.Changed {
		t.Fatal("pruned without tool outputs")
	}
	sum.text = strings.Repeat("a summary longer than what it replaces ", 400)
	if res, _ := e.eng.Compact(ctx, compaction.Request{SessionID: s.ID, Kind: "summarize", Reason: "manual"}); res.Changed {
		t.Fatal("a longer summary was written")
	}
	sum.text, sum.err = "", errors.New("model down")
	if res, _ := e.eng.Compact(ctx, compaction.Request{SessionID: s.ID, Kind: "summarize", Reason: "manual"}); res.Changed {
		t.Fatal("an aborted summary was written")
	}
	if len(calls) != 1 {
		t.Fatalf("%d pre_compaction calls, want 1: %+v", len(calls), calls)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})
}
