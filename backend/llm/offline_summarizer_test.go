package llm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// fixtureConversation is a realistic working session: chatter, decisions,
// endpoints, numbers, a bulky tool output, and a final user request.
func fixtureConversation() []Message {
	logLines := make([]string, 0, 40)
	for i := 0; i < 40; i++ {
		logLines = append(logLines, fmt.Sprintf("ok   test case %02d passed in 0.0%ds", i, i%10))
	}
	return []Message{
		{Role: "system", Content: "You are a helpful coding assistant."},
		{Role: "user", Content: "Hi there! Can you help me with the billing service today?"},
		{Role: "assistant", Content: "Of course. What would you like to work on first?"},
		{Role: "user", Content: "We need a database for the billing service. I was thinking about it over the weekend and I'm not really sure what is best, honestly."},
		{Role: "assistant", Content: "There are a few options to weigh. SQLite is simple and embedded. Postgres gives us concurrency and proper migrations. Let me know what matters most to you."},
		{Role: "user", Content: "Concurrency matters a lot. OK, we decided to use Postgres 16 on port 5432 for the billing service."},
		{Role: "assistant", Content: "Great, Postgres 16 it is. I will write the connection settings into config/billing.yaml."},
		{Role: "user", Content: "Thanks, sounds good."},
		{Role: "user", Content: "The public API must be versioned. Endpoints are GET /v2/users, POST /v2/invoices and DELETE /v2/invoices/{id}."},
		{Role: "assistant", Content: "Understood. I will keep all three under the /v2 prefix and document them in docs/api.md."},
		{Role: "user", Content: "Convention: error responses always use the problem+json format, and we never return stack traces to clients."},
		{Role: "assistant", Content: "Noted, that seems sensible to me and I like it a lot."},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_1", Name: "run_tests", Arguments: `{"pkg":"./billing/..."}`}}},
		{Role: "tool", ToolName: "run_tests", ToolCallID: "call_1", Content: strings.Join(logLines, "\n")},
		{Role: "assistant", Content: "All forty tests pass. Everything looks fine and nothing seems to be broken right now."},
		{Role: "user", Content: "Invoices above 10,000 EUR need a second approval, that is a hard rule from finance."},
		{Role: "assistant", Content: "I will add the approval check to invoice_service.go with the limit in a constant."},
		{Role: "user", Content: "Let me think about it for a moment and get back to you in a little while."},
		{Role: "user", Content: "Please bump the client library to v1.4.2 and then write the migration for the invoices table."},
	}
}

func transcriptChars(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
		for _, tc := range m.ToolCalls {
			n += len(tc.Name) + len(tc.Arguments)
		}
	}
	return n
}

func TestOfflineSummarizerKeepsDecisionsNamesNumbersAndRequest(t *testing.T) {
	t.Parallel()
	msgs := fixtureConversation()
	got, err := OfflineSummarizer{}.Summarize(context.Background(), msgs, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("summary (%d chars):\n%s", len(got), got)
	if !strings.HasPrefix(got, fmt.Sprintf("Summary of %d earlier messages:\n", len(msgs))) {
		t.Fatalf("missing header:\n%s", got)
	}
	for _, want := range []string{
		"we decided to use Postgres 16 on port 5432",
		"/v2/users", "/v2/invoices", "DELETE /v2/invoices/{id}",
		"problem+json", "never return stack traces",
		"10,000 EUR", "second approval",
		"config/billing.yaml", "invoice_service.go", "docs/api.md",
		"Last user request: Please bump the client library to v1.4.2 and then write the migration for the invoices table.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lost %q", want)
		}
	}
	for _, chatter := range []string{"Thanks, sounds good", "Of course", "get back to you"} {
		if strings.Contains(got, chatter) {
			t.Errorf("summary kept chatter %q", chatter)
		}
	}
	if !strings.HasSuffix(got, "invoices table.") {
		t.Errorf("the last user request should close the summary:\n%s", got)
	}
	if in := transcriptChars(msgs); len(got) >= in {
		t.Errorf("summary is %d chars, the input %d", len(got), in)
	}
	if len(got) > DefaultSummaryChars {
		t.Errorf("summary is %d chars, over the default bound %d", len(got), DefaultSummaryChars)
	}
	for _, line := range strings.Split(got, "\n")[1:] {
		if !strings.HasPrefix(line, "- ") && !strings.HasPrefix(line, "Last user request: ") {
			t.Errorf("line is neither a bullet nor the request: %q", line)
		}
	}
}

func TestOfflineSummarizerIsDeterministic(t *testing.T) {
	t.Parallel()
	msgs := fixtureConversation()
	want, err := OfflineSummarizer{MaxChars: 700}.Summarize(context.Background(), msgs, "invoices")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]string, 16)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cp := append([]Message(nil), msgs...) // a copy must summarize the same
			results[i], _ = OfflineSummarizer{MaxChars: 700}.Summarize(context.Background(), cp, "invoices")
		}(i)
	}
	wg.Wait()
	for i, got := range results {
		if got != want {
			t.Fatalf("run %d differs:\n%s\n---\n%s", i, got, want)
		}
	}
}

func TestOfflineSummarizerStaysWithinBoundAndKeepsRequest(t *testing.T) {
	t.Parallel()
	msgs := fixtureConversation()
	prev := 0
	for _, max := range []int{160, 250, 400, 700, 1200, 5000} {
		got, err := OfflineSummarizer{MaxChars: max}.Summarize(context.Background(), msgs, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > max {
			t.Errorf("MaxChars %d: summary is %d chars", max, len(got))
		}
		if !strings.Contains(got, "Last user request: Please bump the client library") {
			t.Errorf("MaxChars %d: the last user request was dropped:\n%s", max, got)
		}
		if len(got) < prev {
			t.Errorf("MaxChars %d: summary shrank (%d < %d) with a larger bound", max, len(got), prev)
		}
		prev = len(got)
	}
	// With a tight bound, the decisions outrank tool output and chatter.
	got, _ := OfflineSummarizer{MaxChars: 400}.Summarize(context.Background(), msgs, "")
	if !strings.Contains(got, "5432") {
		t.Errorf("tight bound lost the top decision:\n%s", got)
	}
	if strings.Contains(got, "test case") {
		t.Errorf("tight bound kept tool output over decisions:\n%s", got)
	}
	// Below the floor the bound is raised, not ignored.
	got, _ = OfflineSummarizer{MaxChars: 10}.Summarize(context.Background(), msgs, "")
	if len(got) > minSummaryChars || !strings.Contains(got, "Last user request:") {
		t.Errorf("MaxChars 10: %d chars:\n%s", len(got), got)
	}
}

func TestOfflineSummarizerShortensOnlyAHugeRequest(t *testing.T) {
	t.Parallel()
	huge := "Please " + strings.Repeat("réécris le module ", 400) + "END"
	msgs := []Message{
		{Role: "user", Content: "We decided on port 8080."},
		{Role: "user", Content: huge},
	}
	got, err := OfflineSummarizer{MaxChars: 500}.Summarize(context.Background(), msgs, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > 500 {
		t.Fatalf("summary is %d chars", len(got))
	}
	if !strings.Contains(got, "Last user request: Please réécris") || !strings.HasSuffix(got, "…") {
		t.Fatalf("request not kept (clipped):\n%s", got)
	}
	if !strings.ContainsRune(got, 'é') || strings.ContainsRune(got, '\uFFFD') {
		t.Fatalf("clipped inside a rune:\n%s", got)
	}
}

func TestOfflineSummarizerFocusRanksFirst(t *testing.T) {
	t.Parallel()
	msgs := fixtureConversation()
	got, err := OfflineSummarizer{MaxChars: 600}.Summarize(context.Background(), msgs, "the approval limit")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(got, "\n")
	if !strings.Contains(lines[0], "(focus: the approval limit)") {
		t.Errorf("header does not name the focus: %q", lines[0])
	}
	if len(lines) < 3 || !strings.Contains(lines[1], "approval") {
		t.Fatalf("first bullet is not about the focus:\n%s", got)
	}
	// Without the focus the same bound starts with the chronologically first
	// salient line instead.
	plain, _ := OfflineSummarizer{MaxChars: 600}.Summarize(context.Background(), msgs, "")
	if strings.Contains(strings.Split(plain, "\n")[1], "approval") {
		t.Fatalf("without focus the approval line should not lead:\n%s", plain)
	}
}

func TestOfflineSummarizerRejectsEmptyInput(t *testing.T) {
	t.Parallel()
	for name, msgs := range map[string][]Message{
		"nil":        nil,
		"empty":      {},
		"blank text": {{Role: "user", Content: "   \n\t"}, {Role: "assistant", Content: ""}},
	} {
		_, err := OfflineSummarizer{}.Summarize(context.Background(), msgs, "focus")
		if !errors.Is(err, ErrNothingToSummarize) {
			t.Errorf("%s: err = %v, want ErrNothingToSummarize", name, err)
		}
	}
}

func TestOfflineSummarizerEdgeCases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// No user message: bullets only.
	got, err := OfflineSummarizer{}.Summarize(ctx, []Message{
		{Role: "assistant", Content: "I set MAX_RETRIES to 3 in retry.go."},
	}, "")
	if err != nil || !strings.Contains(got, "MAX_RETRIES") || strings.Contains(got, "Last user request") {
		t.Fatalf("got %q, %v", got, err)
	}
	if !strings.HasPrefix(got, "Summary of 1 earlier message:") {
		t.Fatalf("singular header: %q", got)
	}

	// Nothing salient and no request: a plain extract rather than nothing.
	got, err = OfflineSummarizer{}.Summarize(ctx, []Message{
		{Role: "assistant", Content: "hello there, how are you"},
	}, "")
	if err != nil || !strings.Contains(got, "hello there") {
		t.Fatalf("got %q, %v", got, err)
	}

	// Only a tool call: the tool's name survives.
	got, err = OfflineSummarizer{}.Summarize(ctx, []Message{
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"main.go"}`}}},
	}, "")
	if err != nil || !strings.Contains(got, "called tool read_file") {
		t.Fatalf("got %q, %v", got, err)
	}

	// Of a bulky tool output, the telling line survives, the noise does not.
	out := []string{}
	for i := 0; i < 30; i++ {
		out = append(out, fmt.Sprintf("ok   case %d", i))
	}
	out = append(out, "--- FAIL: billing/invoice_test.go:42: expected total 120, got 100")
	got, _ = OfflineSummarizer{}.Summarize(ctx, []Message{
		{Role: "tool", ToolName: "run_tests", Content: strings.Join(out, "\n")},
		{Role: "user", Content: "fix it"},
	}, "")
	if !strings.Contains(got, "invoice_test.go:42") || strings.Contains(got, "ok case") {
		t.Fatalf("tool output:\n%s", got)
	}

	// Repeated lines appear once.
	got, _ = OfflineSummarizer{}.Summarize(ctx, []Message{
		{Role: "user", Content: "Always run gofmt."},
		{Role: "assistant", Content: "always run gofmt."},
		{Role: "user", Content: "next"},
	}, "")
	if strings.Count(strings.ToLower(got), "always run gofmt") != 1 {
		t.Fatalf("duplicate kept:\n%s", got)
	}

	// A cancelled context is an error.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := (OfflineSummarizer{}).Summarize(cctx, fixtureConversation(), ""); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: err = %v", err)
	}
}

func TestClassifyToken(t *testing.T) {
	t.Parallel()
	cases := []struct {
		tok                  string
		first                bool
		strong, name, number bool
	}{
		{"/v2/users", false, true, false, true},
		{"https://example.com/x", false, true, false, false},
		{"config.yaml,", false, true, false, false},
		{"max_tokens", false, true, false, false},
		{"`make`", false, true, false, false},
		{"v1.4.2.", false, false, false, true},
		{"0.05s", false, false, false, true},
		{"api.example.com", false, true, false, false},
		{"llm.Complete", false, true, false, false},
		{"5432", false, false, false, true},
		{"Postgres", false, false, true, false},
		{"The", true, false, false, false},
		{"PostgreSQL", true, false, true, false},
		{"API", true, false, true, false},
		{"I", false, false, false, false},
		{"e.g.", false, false, false, false},
		{"and/or", false, false, false, false},
		{"getUser", false, false, true, false},
	}
	for _, c := range cases {
		s, n, d := classifyToken(c.tok, c.first)
		if s != c.strong || n != c.name || d != c.number {
			t.Errorf("classifyToken(%q, %v) = %v %v %v, want %v %v %v", c.tok, c.first, s, n, d, c.strong, c.name, c.number)
		}
	}
}

func TestClip(t *testing.T) {
	t.Parallel()
	if got := clipBytes("hello world", 8); got != "hello…" || len(got) > 8 {
		t.Errorf("clipBytes = %q", got)
	}
	if got := clipBytes("héllo", 4); got != "h…" {
		t.Errorf("clipBytes on a rune = %q", got)
	}
	if got := clipBytes("abc", 2); got != "" {
		t.Errorf("clipBytes below the ellipsis = %q", got)
	}
	if got := clipRunes("ééééé", 3); got != "ééé…" {
		t.Errorf("clipRunes = %q", got)
	}
	if got := clipRunes("abc", 3); got != "abc" {
		t.Errorf("clipRunes unchanged = %q", got)
	}
}
