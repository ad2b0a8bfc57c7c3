package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// chatBody is the part of a chat-completions request the tests look at.
type chatBody struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Tools []any `json:"tools"`
}

func decodeChat(t *testing.T, raw []byte) chatBody {
	t.Helper()
	var b chatBody
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatalf("request is not JSON: %v", err)
	}
	return b
}

func contentReply(content string) func(http.ResponseWriter, *http.Request, []byte) {
	b, _ := json.Marshal(content)
	return jsonReply(200, `{"choices":[{"message":{"role":"assistant","content":`+string(b)+`}}]}`)
}

func newTestSummarizer(t *testing.T, baseURL string, window int) *ModelSummarizer {
	t.Helper()
	s, err := NewOpenAISummarizer(OpenAIConfig{BaseURL: baseURL + "/v1", Model: "sum-model", Timeout: 5 * time.Second, ContextWindow: window})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOpenAISummarizerSendsPromptAndTranscript(t *testing.T) {
	t.Parallel()
	srv, seen := openAIServer(t, contentReply("\n  - Postgres 16 on port 5432\nLast user request: bump to v1.4.2  \n"))
	s := newTestSummarizer(t, srv.URL, 0)
	got, err := s.Summarize(context.Background(), fixtureConversation(), "database decisions")
	if err != nil {
		t.Fatal(err)
	}
	if got != "- Postgres 16 on port 5432\nLast user request: bump to v1.4.2" {
		t.Fatalf("summary = %q", got)
	}
	req := <-seen
	body := decodeChat(t, req.Body)
	if body.Model != "sum-model" || len(body.Tools) != 0 || len(body.Messages) != 2 {
		t.Fatalf("model %q, %d tools, %d messages", body.Model, len(body.Tools), len(body.Messages))
	}
	sys, user := body.Messages[0], body.Messages[1]
	if sys.Role != "system" || user.Role != "user" {
		t.Fatalf("roles %q, %q", sys.Role, user.Role)
	}
	for _, want := range []string{"Summarize the conversation below for continuity", "decision", "names", "numbers", "Last user request:", "2000 characters", "Pay particular attention to: database decisions"} {
		if !strings.Contains(sys.Content, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, sys.Content)
		}
	}
	for _, want := range []string{
		"Conversation:\n[1] system: You are a helpful coding assistant.",
		"[6] user: Concurrency matters a lot. OK, we decided to use Postgres 16 on port 5432",
		`[13] assistant called tool run_tests with {"pkg":"./billing/..."}`,
		"[14] tool run_tests: ok   test case 00",
		"[19] user: Please bump the client library to v1.4.2",
	} {
		if !strings.Contains(user.Content, want) {
			t.Errorf("transcript lacks %q", want)
		}
	}
}

func TestModelSummarizerErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	srv, _ := openAIServer(t, contentReply("   "))
	if _, err := newTestSummarizer(t, srv.URL, 0).Summarize(ctx, fixtureConversation(), ""); !errors.Is(err, ErrEmptySummary) {
		t.Errorf("blank answer: err = %v", err)
	}
	srv, _ = openAIServer(t, jsonReply(200, `{"choices":[{"message":{"content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"x","arguments":"{}"}}]}}]}`))
	if _, err := newTestSummarizer(t, srv.URL, 0).Summarize(ctx, fixtureConversation(), ""); !errors.Is(err, ErrEmptySummary) {
		t.Errorf("tool calls only: err = %v", err)
	}
	srv, _ = openAIServer(t, jsonReply(500, `{"error":{"message":"down"}}`))
	_, err := newTestSummarizer(t, srv.URL, 0).Summarize(ctx, fixtureConversation(), "")
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 {
		t.Errorf("server error: err = %v", err)
	}

	srv, seen := openAIServer(t, contentReply("never asked"))
	for _, msgs := range [][]Message{nil, {{Role: "user", Content: " "}}} {
		if _, err := newTestSummarizer(t, srv.URL, 0).Summarize(ctx, msgs, ""); !errors.Is(err, ErrNothingToSummarize) {
			t.Errorf("empty input: err = %v", err)
		}
	}
	select {
	case <-seen:
		t.Error("empty input still sent a request")
	default:
	}
	if _, err := (&ModelSummarizer{}).Summarize(ctx, fixtureConversation(), ""); err == nil {
		t.Error("no provider: no error")
	}
}

func TestModelSummarizerSlicesALargeTranscript(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	calls := 0
	srv, seen := openAIServer(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		contentReply(fmt.Sprintf("summary #%d", n))(w, r, body)
	})
	var msgs []Message
	for i := 0; i < 40; i++ {
		msgs = append(msgs, Message{Role: "user", Content: fmt.Sprintf("message %02d: %s", i, strings.Repeat("words ", 60))})
	}
	s := newTestSummarizer(t, srv.URL, 1000) // a small window: slices of ~2000 characters
	got, err := s.Summarize(context.Background(), msgs, "")
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	n := calls
	mu.Unlock()
	if n < 3 || got != fmt.Sprintf("summary #%d", n) {
		t.Fatalf("%d calls, summary %q", n, got)
	}
	next := 0 // every message is sent once, in order
	for i := 1; i <= n; i++ {
		user := decodeChat(t, (<-seen).Body).Messages[1].Content
		if i == 1 && !strings.HasPrefix(user, "Conversation:\n") {
			t.Errorf("call 1 starts %q", user[:40])
		}
		if i > 1 && !strings.HasPrefix(user, fmt.Sprintf("Summary of the earlier part of the conversation:\nsummary #%d\n\nThe conversation continues:\n", i-1)) {
			t.Errorf("call %d does not carry the summary so far: %q", i, user[:120])
		}
		for next < len(msgs) && strings.Contains(user, fmt.Sprintf("message %02d:", next)) {
			next++
		}
		if len(user) > minSummaryInputChars+200 {
			t.Errorf("call %d sent %d characters", i, len(user))
		}
	}
	if next != len(msgs) {
		t.Fatalf("only %d of %d messages were sent in order", next, len(msgs))
	}
}

func TestModelSummarizerRetriesSmallerOnContextLength(t *testing.T) {
	t.Parallel()
	srv, _ := openAIServer(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if len(body) > 6000 {
			jsonReply(400, `{"error":{"message":"maximum context length exceeded","code":"context_length_exceeded"}}`)(w, r, body)
			return
		}
		contentReply("short summary")(w, r, body)
	})
	var msgs []Message
	for i := 0; i < 14; i++ {
		msgs = append(msgs, Message{Role: "assistant", Content: strings.Repeat("x", 480)})
	}
	// The estimate says one slice of ~7,500 characters fits; the server
	// disagrees, so the slices shrink.
	got, err := newTestSummarizer(t, srv.URL, 4000).Summarize(context.Background(), msgs, "")
	if err != nil || got != "short summary" {
		t.Fatalf("got %q, %v", got, err)
	}

	// A server that never accepts gives up with the context-length error.
	srv, _ = openAIServer(t, jsonReply(400, `{"error":{"code":"context_length_exceeded","message":"too long"}}`))
	_, err = newTestSummarizer(t, srv.URL, 4000).Summarize(context.Background(), msgs, "")
	if !errors.Is(err, ErrContextLength) {
		t.Fatalf("err = %v", err)
	}
}

func TestModelSummarizerOverOfflineProvider(t *testing.T) {
	t.Parallel()
	s := &ModelSummarizer{Provider: OfflineProvider{}}
	got, err := s.Summarize(context.Background(), fixtureConversation(), "")
	if err != nil || !strings.HasPrefix(got, "offline reply to: Conversation: [1] system:") {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestChunkBlocks(t *testing.T) {
	t.Parallel()
	blocks := []string{"aaaa", "bbbb", strings.Repeat("c", 50), "dd"}
	got := chunkBlocks(blocks, 10)
	want := []string{"aaaa\n\nbbbb", "ccccccc…", "dd"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("chunkBlocks = %q, want %q", got, want)
	}
	for _, c := range got {
		if len(c) > 10 {
			t.Fatalf("chunk %q over budget", c)
		}
	}
	if got := chunkBlocks(nil, 10); len(got) != 0 {
		t.Fatalf("no blocks: %q", got)
	}
}
