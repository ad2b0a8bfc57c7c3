package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"atrium/backend/apperr"
)

var (
	_ Provider   = (*OpenAIProvider)(nil)
	_ Summarizer = (*ModelSummarizer)(nil)
)

// seenRequest is what the test server received.
type seenRequest struct {
	Method, Path, Query, Auth, ContentType string
	Body                                   []byte
}

// openAIServer is a real HTTP server on loopback that records each request
// and answers with reply.
func openAIServer(t *testing.T, reply func(w http.ResponseWriter, r *http.Request, body []byte)) (*httptest.Server, <-chan seenRequest) {
	t.Helper()
	seen := make(chan seenRequest, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		seen <- seenRequest{
			Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
			Auth: r.Header.Get("Authorization"), ContentType: r.Header.Get("Content-Type"), Body: body,
		}
		reply(w, r, body)
	}))
	t.Cleanup(srv.Close)
	return srv, seen
}

func jsonReply(status int, body string) func(http.ResponseWriter, *http.Request, []byte) {
	return func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

const textReply = `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello from the model."},"finish_reason":"stop"}],"usage":{"prompt_tokens":42,"completion_tokens":7,"total_tokens":49}}`

func newTestProvider(t *testing.T, srv *httptest.Server, mod func(*OpenAIConfig)) *OpenAIProvider {
	t.Helper()
	cfg := OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "test-model", Timeout: 5 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	p, err := NewOpenAIProvider(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func userReq(text string) Request {
	return Request{Messages: []Message{{Role: "user", Content: text}}}
}

func TestOpenAISendsRequestAndParsesText(t *testing.T) {
	t.Setenv("ATRIUM_TEST_OPENAI_KEY", "sk-test-123")
	srv, seen := openAIServer(t, jsonReply(200, textReply))
	p := newTestProvider(t, srv, func(c *OpenAIConfig) {
		c.APIKeyEnv = "ATRIUM_TEST_OPENAI_KEY"
		c.BaseURL += "/" // a trailing slash is tolerated
	})
	req := Request{
		Messages: []Message{
			{Role: "system", Content: "be brief"},
			{Role: "user", Content: "use tool echo: hi"},
			{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_1", Name: "echo", Arguments: `{"text":"hi"}`}, {ID: "call_2", Name: "noargs"}}},
			{Role: "tool", ToolName: "echo", ToolCallID: "call_1", Content: "hi"},
		},
		Tools: []ToolSpec{
			{Name: "echo", Description: "Echo text back", Parameters: `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`},
			{Name: "noargs"},
		},
	}
	resp, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "Hello from the model." || len(resp.ToolCalls) != 0 || resp.PromptTokens != 42 || resp.CompletionTokens != 7 {
		t.Fatalf("resp = %+v", resp)
	}

	got := <-seen
	if got.Method != http.MethodPost || got.Path != "/v1/chat/completions" {
		t.Fatalf("%s %s", got.Method, got.Path)
	}
	if got.Auth != "Bearer sk-test-123" || got.ContentType != "application/json" {
		t.Fatalf("Authorization %q, Content-Type %q", got.Auth, got.ContentType)
	}
	var body map[string]any
	if err := json.Unmarshal(got.Body, &body); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, got.Body)
	}
	want := `{
	  "model": "test-model",
	  "messages": [
	    {"role": "system", "content": "be brief"},
	    {"role": "user", "content": "use tool echo: hi"},
	    {"role": "assistant", "content": "", "tool_calls": [
	      {"id": "call_1", "type": "function", "function": {"name": "echo", "arguments": "{\"text\":\"hi\"}"}},
	      {"id": "call_2", "type": "function", "function": {"name": "noargs", "arguments": "{}"}}
	    ]},
	    {"role": "tool", "content": "hi", "tool_call_id": "call_1", "name": "echo"}
	  ],
	  "tools": [
	    {"type": "function", "function": {"name": "echo", "description": "Echo text back",
	      "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}},
	    {"type": "function", "function": {"name": "noargs", "parameters": {"type": "object", "properties": {}}}}
	  ]
	}`
	var wantBody map[string]any
	if err := json.Unmarshal([]byte(want), &wantBody); err != nil {
		t.Fatal(err)
	}
	if gotJSON, wantJSON := mustJSON(t, body), mustJSON(t, wantBody); gotJSON != wantJSON {
		t.Fatalf("request body\n got %s\nwant %s", gotJSON, wantJSON)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v) // map keys are sorted: a canonical form
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestOpenAIParsesToolCalls(t *testing.T) {
	t.Parallel()
	srv, _ := openAIServer(t, jsonReply(200, `{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[
		{"id":"call_a","type":"function","function":{"name":"echo","arguments":"{\"text\":\"hello\"}"}},
		{"id":"call_b","type":"function","function":{"name":"big_output","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`))
	resp, err := newTestProvider(t, srv, nil).Complete(context.Background(), userReq("go"))
	if err != nil {
		t.Fatal(err)
	}
	want := []ToolCall{{ID: "call_a", Name: "echo", Arguments: `{"text":"hello"}`}, {ID: "call_b", Name: "big_output", Arguments: "{}"}}
	if resp.Content != "" || fmt.Sprint(resp.ToolCalls) != fmt.Sprint(want) {
		t.Fatalf("resp = %+v", resp)
	}
	if resp.PromptTokens != 0 || resp.CompletionTokens != 0 {
		t.Fatalf("usage without a usage object: %+v", resp)
	}
}

func TestOpenAIRequestDetails(t *testing.T) {
	t.Parallel()
	srv, seen := openAIServer(t, jsonReply(200, `{"choices":[{"message":{"content":[{"type":"text","text":"part one, "},{"type":"text","text":"part two"}]}}]}`))
	p := newTestProvider(t, srv, func(c *OpenAIConfig) { c.BaseURL += "?api-version=2024-06-01" })
	resp, err := p.Complete(context.Background(), Request{Model: "override", Messages: []Message{{Role: "user", Content: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "part one, part two" {
		t.Fatalf("content parts: %q", resp.Content)
	}
	got := <-seen
	if got.Auth != "" {
		t.Fatalf("no APIKeyEnv, yet Authorization %q", got.Auth)
	}
	if got.Path != "/v1/chat/completions" || got.Query != "api-version=2024-06-01" {
		t.Fatalf("path %q query %q", got.Path, got.Query)
	}
	var body struct {
		Model string
		Tools []any
	}
	if err := json.Unmarshal(got.Body, &body); err != nil || body.Model != "override" {
		t.Fatalf("model %q, %v", body.Model, err)
	}
	for _, key := range []string{`"tools"`, `"temperature"`, `"max_tokens"`} {
		if strings.Contains(string(got.Body), key) {
			t.Fatalf("%s sent unasked: %s", key, got.Body)
		}
	}
	// A judgement's temperature 0 is sent, as is its bound on tokens.
	zero := 0.0
	if _, err := p.Complete(context.Background(), Request{Messages: []Message{{Role: "user", Content: "x"}}, Temperature: &zero, MaxTokens: 16}); err != nil {
		t.Fatal(err)
	}
	if got := <-seen; !strings.Contains(string(got.Body), `"temperature":0,"max_tokens":16`) {
		t.Fatalf("temperature and max_tokens: %s", got.Body)
	}
	if p.Name() != "openai" || p.Model() != "test-model" || p.ContextWindow() != DefaultContextWindow {
		t.Fatalf("Name %q Model %q Window %d", p.Name(), p.Model(), p.ContextWindow())
	}
	if w := newTestProvider(t, srv, func(c *OpenAIConfig) { c.ContextWindow = 128000 }).ContextWindow(); w != 128000 {
		t.Fatalf("ContextWindow = %d", w)
	}
}

func TestOpenAIContextLength(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"openai code":  `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
		"vllm message": `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","code":400}`,
		"llama.cpp":    `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}`,
		"plain text":   `prompt is longer than the context length of the model`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, _ := openAIServer(t, jsonReply(400, body))
			_, err := newTestProvider(t, srv, nil).Complete(context.Background(), userReq("x"))
			if !errors.Is(err, ErrContextLength) {
				t.Fatalf("err = %v", err)
			}
			var cle *ContextLengthError
			if !errors.As(err, &cle) || cle.Message == "" {
				t.Fatalf("no provider message: %v", err)
			}
		})
	}
	// A 400 about something else is not a context-length error.
	srv, _ := openAIServer(t, jsonReply(400, `{"error":{"message":"Invalid value for 'role'","type":"invalid_request_error","code":null}}`))
	_, err := newTestProvider(t, srv, nil).Complete(context.Background(), userReq("x"))
	var apiErr *APIError
	if errors.Is(err, ErrContextLength) || !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(err.Error(), "Invalid value for 'role'") {
		t.Fatalf("err = %v", err)
	}
}

func TestOpenAIAuthErrors(t *testing.T) {
	const key = "sk-secret-should-never-show"
	t.Setenv("ATRIUM_TEST_OPENAI_KEY", key)
	for _, status := range []int{401, 403} {
		// The server echoes the key, as some do: it must not reach the error.
		srv, _ := openAIServer(t, jsonReply(status, `{"error":{"message":"Incorrect API key provided: `+key+`","type":"invalid_request_error","code":"invalid_api_key"}}`))
		p := newTestProvider(t, srv, func(c *OpenAIConfig) { c.APIKeyEnv = "ATRIUM_TEST_OPENAI_KEY" })
		_, err := p.Complete(context.Background(), userReq("x"))
		if !errors.Is(err, ErrAuth) {
			t.Fatalf("%d: err = %v", status, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, "$ATRIUM_TEST_OPENAI_KEY") || !strings.Contains(msg, fmt.Sprint(status)) {
			t.Errorf("%d: error does not name the variable and status: %s", status, msg)
		}
		if strings.Contains(msg, key) || !strings.Contains(msg, "[redacted]") {
			t.Errorf("%d: key leaked or not redacted: %s", status, msg)
		}
	}
	// Without APIKeyEnv, the hint says how to configure one.
	srv, _ := openAIServer(t, jsonReply(401, `{"error":{"message":"missing key"}}`))
	_, err := newTestProvider(t, srv, nil).Complete(context.Background(), userReq("x"))
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "APIKeyEnv") {
		t.Fatalf("err = %v", err)
	}
}

func TestOpenAIServerErrors(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("overloaded ", 200)
	cases := []struct {
		status    int
		body      string
		contains  []string
		temporary bool
	}{
		{429, `{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`, []string{"429", "rate_limit_exceeded", "Rate limit reached"}, true},
		{500, `<html>Internal Server Error</html>`, []string{"500", "Internal Server Error"}, true},
		{503, `{"error":{"message":"` + long + `"}}`, []string{"503", "overloaded"}, true},
		{502, ``, []string{"502", "Bad Gateway"}, true},
		{404, `{"detail":"Not Found"}`, []string{"404", "Not Found"}, false},
	}
	for _, c := range cases {
		srv, _ := openAIServer(t, jsonReply(c.status, c.body))
		_, err := newTestProvider(t, srv, nil).Complete(context.Background(), userReq("x"))
		var apiErr *APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != c.status || apiErr.Temporary() != c.temporary {
			t.Fatalf("%d: err = %#v", c.status, err)
		}
		if errors.Is(err, ErrContextLength) || errors.Is(err, ErrAuth) {
			t.Fatalf("%d: misclassified: %v", c.status, err)
		}
		for _, s := range c.contains {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%d: %q missing from %v", c.status, s, err)
			}
		}
		if len(err.Error()) > maxErrorChars+200 {
			t.Errorf("%d: provider message not truncated (%d chars)", c.status, len(err.Error()))
		}
	}
}

func TestOpenAIMalformedResponses(t *testing.T) {
	t.Parallel()
	cases := map[string]struct{ body, want string }{
		"not json":       {`{"choices": [`, "malformed response"},
		"html":           {`<html>proxy login</html>`, "malformed response"},
		"no choices":     {`{"choices":[]}`, "no choices"},
		"bad content":    {`{"choices":[{"message":{"content":42}}]}`, "malformed response"},
		"error with 200": {`{"error":{"message":"upstream failed"}}`, "upstream failed"},
	}
	for name, c := range cases {
		srv, _ := openAIServer(t, jsonReply(200, c.body))
		_, err := newTestProvider(t, srv, nil).Complete(context.Background(), userReq("x"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", name, err, c.want)
		}
	}
}

func TestOpenAITimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv, _ := openAIServer(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		select { // far longer than the timeout, but let the server close
		case <-r.Context().Done():
		case <-release:
		case <-time.After(10 * time.Second):
		}
	})
	defer close(release)
	p := newTestProvider(t, srv, func(c *OpenAIConfig) { c.Timeout = 150 * time.Millisecond })
	start := time.Now()
	_, err := p.Complete(context.Background(), userReq("x"))
	elapsed := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if elapsed < 150*time.Millisecond || elapsed > 3*time.Second {
		t.Fatalf("returned after %v", elapsed)
	}
	if !strings.Contains(err.Error(), "150ms") {
		t.Errorf("error does not say the bound: %v", err)
	}

	// The caller's deadline applies too, and cancellation is reported as such.
	p = newTestProvider(t, srv, nil) // 5 s timeout
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := p.Complete(ctx, userReq("x")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("caller deadline: err = %v", err)
	}
	cctx, ccancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, ccancel)
	if _, err := p.Complete(cctx, userReq("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancel: err = %v", err)
	}
}

func TestOpenAIHTTPClientTimeoutWrapsDeadline(t *testing.T) {
	t.Parallel()
	srv, _ := openAIServer(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	p := newTestProvider(t, srv, func(c *OpenAIConfig) { c.HTTPClient = &http.Client{Timeout: 100 * time.Millisecond} })
	if _, err := p.Complete(context.Background(), userReq("x")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestOpenAIUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	p, err := NewOpenAIProvider(OpenAIConfig{BaseURL: url + "/v1", Model: "m", Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(context.Background(), userReq("x"))
	if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(url, "http://")) {
		t.Fatalf("err = %v", err)
	}
}

func TestOpenAIConfigValidation(t *testing.T) {
	t.Setenv("ATRIUM_TEST_EMPTY_KEY", "  ")
	cases := []struct {
		name string
		cfg  OpenAIConfig
		want string
	}{
		{"empty url", OpenAIConfig{Model: "m"}, "base URL is empty"},
		{"ftp", OpenAIConfig{BaseURL: "ftp://host/v1", Model: "m"}, "not an http(s) URL"},
		{"no scheme", OpenAIConfig{BaseURL: "localhost:8080/v1", Model: "m"}, "not an http(s) URL"},
		{"no host", OpenAIConfig{BaseURL: "http:///v1", Model: "m"}, "not an http(s) URL"},
		{"garbage", OpenAIConfig{BaseURL: "http://[::1", Model: "m"}, "not an http(s) URL"},
		{"credentials", OpenAIConfig{BaseURL: "https://u:p@host/v1", Model: "m"}, "credentials"},
		{"no model", OpenAIConfig{BaseURL: "http://127.0.0.1:1/v1", Model: " "}, "model is empty"},
		{"missing key env", OpenAIConfig{BaseURL: "http://127.0.0.1:1/v1", Model: "m", APIKeyEnv: "ATRIUM_TEST_NO_SUCH_VAR"}, "$ATRIUM_TEST_NO_SUCH_VAR is not set"},
		{"empty key env", OpenAIConfig{BaseURL: "http://127.0.0.1:1/v1", Model: "m", APIKeyEnv: "ATRIUM_TEST_EMPTY_KEY"}, "$ATRIUM_TEST_EMPTY_KEY is not set"},
	}
	for _, c := range cases {
		_, err := NewOpenAIProvider(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) || !apperr.Is(err, apperr.Invalid) {
			t.Errorf("%s: err = %v, want an invalid-config error mentioning %q", c.name, err, c.want)
		}
	}
	if _, err := NewOpenAISummarizer(OpenAIConfig{Model: "m"}); err == nil {
		t.Error("summarizer accepted an empty base URL")
	}
	if _, err := NewOpenAIProvider(OpenAIConfig{BaseURL: "https://api.example.com/v1", Model: "m"}); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

func TestOpenAIRejectsInvalidToolSchemaBeforeSending(t *testing.T) {
	t.Parallel()
	srv, seen := openAIServer(t, jsonReply(200, textReply))
	_, err := newTestProvider(t, srv, nil).Complete(context.Background(), Request{
		Messages: []Message{{Role: "user", Content: "x"}},
		Tools:    []ToolSpec{{Name: "broken", Parameters: `{"type":`}},
	})
	if err == nil || !strings.Contains(err.Error(), `"broken"`) || !apperr.Is(err, apperr.Invalid) {
		t.Fatalf("err = %v", err)
	}
	select {
	case r := <-seen:
		t.Fatalf("a request was sent: %s", r.Body)
	default:
	}
}

func TestOpenAIConcurrentUse(t *testing.T) {
	t.Parallel()
	srv, _ := openAIServer(t, func(w http.ResponseWriter, _ *http.Request, body []byte) {
		var req struct {
			Messages []struct{ Content string }
		}
		_ = json.Unmarshal(body, &req)
		fmt.Fprintf(w, `{"choices":[{"message":{"content":%q}}]}`, "echo "+req.Messages[0].Content)
	})
	p := newTestProvider(t, srv, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			resp, err := p.Complete(context.Background(), userReq(fmt.Sprint(i)))
			if err == nil && resp.Content != fmt.Sprintf("echo %d", i) {
				err = fmt.Errorf("request %d got %q", i, resp.Content)
			}
			errs <- err
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"7", 7 * time.Second, true},
		{" 1.5 ", 1500 * time.Millisecond, true},
		{"0", 0, true},
		{"-3", 0, true},
		{"86400", MaxRetryAfter, true},
		{"Mon, 07 Dec 2026 10:00:30 GMT", 30 * time.Second, true},
		{"Mon, 07 Dec 2026 09:00:00 GMT", 0, true},
		{"Tue, 08 Dec 2026 10:00:00 GMT", MaxRetryAfter, true},
		{"", 0, false},
		{"soon", 0, false},
		{"NaN", 0, false},
		{"Inf", 0, false},
	} {
		got, ok := ParseRetryAfter(c.in, now)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestOpenAIRetryAfter(t *testing.T) {
	for _, c := range []struct {
		header string
		want   time.Duration
		has    bool
	}{{"12", 12 * time.Second, true}, {"", 0, false}, {"later", 0, false}} {
		srv, _ := openAIServer(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
			if c.header != "" {
				w.Header().Set("Retry-After", c.header)
			}
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":{"message":"slow down","code":"rate_limit_exceeded"}}`)
		})
		_, err := newTestProvider(t, srv, nil).Complete(context.Background(), userReq("x"))
		var apiErr *APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.RetryAfter != c.want || apiErr.HasRetryAfter != c.has {
			t.Fatalf("Retry-After %q: err = %#v", c.header, err)
		}
	}
}

// A message with images is sent as the familiar vision call sends one: its
// text, then each image as an image_url part; a message without images
// keeps a plain string.
func TestOpenAISendsImages(t *testing.T) {
	t.Parallel()
	srv, seen := openAIServer(t, jsonReply(200, textReply))
	p := newTestProvider(t, srv, nil)
	req := Request{Messages: []Message{{Role: "system", Content: "be brief"},
		{Role: "user", Content: "What is in it?", Images: []string{"data:image/png;base64,iVBORw0KGgo=", "data:image/jpeg;base64,/9j/4AAQ"}}}}
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got := <-seen
	want := `"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"What is in it?"},` +
		`{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4AAQ"}}]}]`
	if !strings.Contains(string(got.Body), want) {
		t.Fatalf("body:\n%s\nwant it to hold:\n%s", got.Body, want)
	}
}
