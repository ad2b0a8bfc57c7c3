package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"atrium/backend/apperr"
)

// DefaultOpenAITimeout bounds one request of an OpenAIProvider without
// Timeout.
const DefaultOpenAITimeout = 60 * time.Second

// maxResponseBytes caps what is read of one HTTP answer.
const maxResponseBytes = 16 << 20

// maxErrorChars caps how much of a provider's error message is quoted.
const maxErrorChars = 300

// ErrAuth is wrapped by the error of a request whose credentials the
// provider refused (HTTP 401 or 403).
var ErrAuth = errors.New("authentication failed")

// APIError is an unsuccessful HTTP answer of a provider, wrapped in the
// errors Complete returns (next to ErrAuth on 401/403); find it with
// errors.As. A prompt that did not fit is reported as a ContextLengthError
// instead.
type APIError struct {
	StatusCode int
	Code       string // the provider's error code ("rate_limit_exceeded"), when given
	Message    string // the provider's message, truncated, API key redacted
	// RetryAfter is the wait the answer's Retry-After header asked for
	// (seconds or an HTTP date; a past date is 0), capped at
	// MaxRetryAfter; HasRetryAfter tells whether it had one that parsed.
	RetryAfter    time.Duration
	HasRetryAfter bool
}

// MaxRetryAfter caps the wait a provider's Retry-After asks for: a longer
// one (a day) is a refusal, not a wait anybody is kept in.
const MaxRetryAfter = 10 * time.Minute

// ParseRetryAfter reads a Retry-After header's value at now: a number of
// seconds, or an HTTP date (RFC 9110). ok is false when it is neither.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(secs) || math.IsInf(secs, 0) {
			return 0, false
		}
		d = time.Duration(math.Min(math.Max(secs, 0), MaxRetryAfter.Seconds()) * float64(time.Second))
		return d, true
	}
	when, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(when.Sub(now), 0), MaxRetryAfter), true
}

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	if e.Code != "" {
		return fmt.Sprintf("HTTP %d (%s): %s", e.StatusCode, e.Code, msg)
	}
	return fmt.Sprintf("HTTP %d: %s", e.StatusCode, msg)
}

// Temporary reports whether retrying later may succeed: rate limits (429)
// and server errors (5xx).
func (e *APIError) Temporary() bool {
	return e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500
}

// OpenAIConfig configures an OpenAI-compatible chat-completions endpoint.
type OpenAIConfig struct {
	// BaseURL is the API root, such as https://api.openai.com/v1 or
	// http://127.0.0.1:8080/v1; "/chat/completions" is appended. A trailing
	// slash and a query string (api-version=...) are kept as they should be.
	BaseURL string
	// Model is sent when a Request names none.
	Model string
	// APIKeyEnv names the environment variable that holds the API key, read
	// once by the constructor. Empty means no Authorization header (local
	// servers).
	APIKeyEnv string
	// Timeout bounds each request; <= 0 means DefaultOpenAITimeout.
	Timeout time.Duration
	// ContextWindow is the model's context size in estimated tokens; <= 0
	// means DefaultContextWindow.
	ContextWindow int
	// HTTPClient is used for the requests; nil means a fresh client with
	// the default transport.
	HTTPClient *http.Client
}

// OpenAIProvider is a Provider that talks to an OpenAI-compatible
// chat-completions API. It is safe for concurrent use.
type OpenAIProvider struct {
	cfg      OpenAIConfig
	endpoint string
	hostname string
	apiKey   string
	client   *http.Client
}

// NewOpenAIProvider checks cfg and reads the API key from the environment.
// A BaseURL that is not an http(s) URL, an empty Model, or an APIKeyEnv
// whose variable is unset or empty is an invalid-configuration error
// (apperr.Invalid).
func NewOpenAIProvider(cfg OpenAIConfig) (*OpenAIProvider, error) {
	base := strings.TrimSpace(cfg.BaseURL)
	if base == "" {
		return nil, apperr.New(apperr.Invalid, "openai provider: base URL is empty")
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, apperr.New(apperr.Invalid, "openai provider: base URL %q is not an http(s) URL", cfg.BaseURL)
	}
	if u.User != nil {
		return nil, apperr.New(apperr.Invalid, "openai provider: base URL must not carry credentials; use APIKeyEnv")
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/chat/completions"
	u.RawPath = ""
	u.Fragment = ""
	cfg.Model = strings.TrimSpace(cfg.Model)
	if cfg.Model == "" {
		return nil, apperr.New(apperr.Invalid, "openai provider: model is empty")
	}
	p := &OpenAIProvider{cfg: cfg, endpoint: u.String(), hostname: u.Host, client: cfg.HTTPClient}
	if cfg.APIKeyEnv != "" {
		key, ok := os.LookupEnv(cfg.APIKeyEnv)
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, apperr.New(apperr.Invalid, "the model's API key $%s is not set (or empty); export it or keep it in the profile's .env (the window's Settings, Model; or `atrium config set %s ...`)", cfg.APIKeyEnv, cfg.APIKeyEnv)
		}
		p.apiKey = key
	}
	if p.client == nil {
		p.client = &http.Client{}
	}
	if p.cfg.Timeout <= 0 {
		p.cfg.Timeout = DefaultOpenAITimeout
	}
	if p.cfg.ContextWindow <= 0 {
		p.cfg.ContextWindow = DefaultContextWindow
	}
	return p, nil
}

// Name implements Provider.
func (p *OpenAIProvider) Name() string { return "openai" }

// BaseURL is the API root the provider was configured with.
func (p *OpenAIProvider) BaseURL() string { return strings.TrimSpace(p.cfg.BaseURL) }

// Model is the model sent when a Request names none.
func (p *OpenAIProvider) Model() string { return p.cfg.Model }

// ContextWindow implements Provider.
func (p *OpenAIProvider) ContextWindow() int { return p.cfg.ContextWindow }

// Wire format of chat completions.
type (
	oaRequest struct {
		Model       string      `json:"model"`
		Messages    []oaMessage `json:"messages"`
		Tools       []oaTool    `json:"tools,omitempty"`
		Temperature *float64    `json:"temperature,omitempty"`
		MaxTokens   int         `json:"max_tokens,omitempty"`
	}
	oaMessage struct {
		Role string `json:"role"`
		// Content is the text, or []oaPart for a message with images.
		Content    any          `json:"content"`
		ToolCallID string       `json:"tool_call_id,omitempty"`
		Name       string       `json:"name,omitempty"`
		ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
	}
	// oaPart is one part of a message's content: text, or an image
	// (image_url with a data: URL).
	oaPart struct {
		Type     string      `json:"type"`
		Text     string      `json:"text,omitempty"`
		ImageURL *oaImageURL `json:"image_url,omitempty"`
	}
	oaImageURL struct {
		URL string `json:"url"`
	}
	oaToolCall struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	oaTool struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	oaResponse struct {
		Choices []struct {
			Message struct {
				Content   json.RawMessage `json:"content"`
				ToolCalls []oaToolCall    `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
		Error json.RawMessage `json:"error"`
	}
	oaErrorBody struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
)

// Complete implements Provider: one POST to {BaseURL}/chat/completions,
// bounded by the configured Timeout. Errors wrap ErrContextLength (via
// ContextLengthError) when the prompt did not fit, ErrAuth on 401/403,
// an *APIError for any other unsuccessful status, and
// context.DeadlineExceeded or context.Canceled when the request ran out of
// time or was cancelled.
func (p *OpenAIProvider) Complete(ctx context.Context, req Request) (Response, error) {
	body, err := p.encode(req)
	if err != nil {
		return Response{}, err
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint, bytes.NewReader(body))
	if err != nil {
		return Response{}, fmt.Errorf("openai: build request: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if p.apiKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+p.apiKey)
	}
	hresp, err := p.client.Do(hreq)
	if err != nil {
		return Response{}, p.transportError(parent, ctx, "request", err)
	}
	defer hresp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(hresp.Body, maxResponseBytes))
	if err != nil {
		return Response{}, p.transportError(parent, ctx, "read response", err)
	}
	if hresp.StatusCode < 200 || hresp.StatusCode > 299 {
		err := p.statusError(hresp.StatusCode, raw)
		var apiErr *APIError
		if errors.As(err, &apiErr) {
			apiErr.RetryAfter, apiErr.HasRetryAfter = ParseRetryAfter(hresp.Header.Get("Retry-After"), time.Now())
		}
		return Response{}, err
	}
	return p.decode(hresp.StatusCode, raw)
}

func (p *OpenAIProvider) encode(req Request) ([]byte, error) {
	model := req.Model
	if model == "" {
		model = p.cfg.Model
	}
	out := oaRequest{Model: model, Messages: make([]oaMessage, 0, len(req.Messages)), Temperature: req.Temperature, MaxTokens: req.MaxTokens}
	for _, m := range req.Messages {
		om := oaMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		if len(m.Images) > 0 {
			parts := []oaPart{{Type: "text", Text: m.Content}}
			for _, u := range m.Images {
				parts = append(parts, oaPart{Type: "image_url", ImageURL: &oaImageURL{URL: u}})
			}
			om.Content = parts
		}
		if m.Role == "tool" {
			om.Name = m.ToolName
		}
		for _, tc := range m.ToolCalls {
			var w oaToolCall
			w.ID, w.Type = tc.ID, "function"
			w.Function.Name, w.Function.Arguments = tc.Name, tc.Arguments
			if strings.TrimSpace(w.Function.Arguments) == "" {
				w.Function.Arguments = "{}"
			}
			om.ToolCalls = append(om.ToolCalls, w)
		}
		out.Messages = append(out.Messages, om)
	}
	for _, t := range req.Tools {
		var w oaTool
		w.Type = "function"
		w.Function.Name, w.Function.Description = t.Name, t.Description
		params := strings.TrimSpace(t.Parameters)
		if params == "" {
			params = `{"type":"object","properties":{}}`
		}
		if !json.Valid([]byte(params)) {
			return nil, apperr.New(apperr.Invalid, "openai: tool %q: parameters are not valid JSON", t.Name)
		}
		w.Function.Parameters = json.RawMessage(params)
		out.Tools = append(out.Tools, w)
	}
	body, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("openai: encode request: %w", err)
	}
	return body, nil
}

func (p *OpenAIProvider) decode(status int, raw []byte) (Response, error) {
	var r oaResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return Response{}, fmt.Errorf("openai: malformed response (HTTP %d): %v; body starts %q", status, err, p.redact(clipRunes(string(raw), 120)))
	}
	if len(r.Error) > 0 && string(r.Error) != "null" {
		// Some compatible servers answer 200 with an error object.
		return Response{}, p.statusError(status, raw)
	}
	if len(r.Choices) == 0 {
		return Response{}, fmt.Errorf("openai: response has no choices")
	}
	msg := r.Choices[0].Message
	content, err := decodeContent(msg.Content)
	if err != nil {
		return Response{}, fmt.Errorf("openai: malformed response: message content: %v", err)
	}
	resp := Response{Content: content}
	for _, tc := range msg.ToolCalls {
		resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	if r.Usage != nil {
		resp.PromptTokens, resp.CompletionTokens = r.Usage.PromptTokens, r.Usage.CompletionTokens
	}
	return resp, nil
}

// decodeContent accepts a string, null, or an array of content parts
// ({"type":"text","text":...}), which some servers send.
func decodeContent(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, part := range parts {
		if part.Type == "" || part.Type == "text" || part.Type == "output_text" {
			b.WriteString(part.Text)
		}
	}
	return b.String(), nil
}

// statusError turns an unsuccessful answer into the error Complete returns.
func (p *OpenAIProvider) statusError(status int, raw []byte) error {
	msg, typ, code := parseErrorBody(raw)
	msg = p.redact(collapseSpace(msg))
	apiErr := &APIError{StatusCode: status, Code: code, Message: clipRunes(msg, maxErrorChars)}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		hint := "the server wants an API key: name the environment variable that holds it (APIKeyEnv)"
		if p.cfg.APIKeyEnv != "" {
			hint = fmt.Sprintf("check the API key in $%s", p.cfg.APIKeyEnv)
		}
		return fmt.Errorf("openai: %w (%s): %w", ErrAuth, hint, apiErr)
	case isContextLength(status, typ, code, msg):
		return fmt.Errorf("openai (HTTP %d): %w", status, &ContextLengthError{Message: apiErr.Message})
	default:
		return fmt.Errorf("openai: %w", apiErr)
	}
}

// isContextLength recognises the ways OpenAI and compatible servers (vLLM,
// llama.cpp, LM Studio...) say that the prompt did not fit.
func isContextLength(status int, typ, code, msg string) bool {
	if status != http.StatusBadRequest && status != http.StatusRequestEntityTooLarge &&
		status != http.StatusUnprocessableEntity && status != http.StatusOK {
		return false
	}
	if code == "context_length_exceeded" || typ == "exceed_context_size_error" {
		return true
	}
	m := strings.ToLower(msg)
	for _, s := range []string{"context length", "context_length", "maximum context", "context window", "context size"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// parseErrorBody reads {"error":{"message","type","code"}}, {"error":"..."},
// {"message":"..."} or {"detail":"..."}; anything else is quoted as text.
func parseErrorBody(raw []byte) (msg, typ, code string) {
	var env struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return string(raw), "", ""
	}
	if len(env.Error) > 0 && string(env.Error) != "null" {
		var e oaErrorBody
		if err := json.Unmarshal(env.Error, &e); err == nil {
			return e.Message, e.Type, rawScalar(e.Code)
		}
		var s string
		if err := json.Unmarshal(env.Error, &s); err == nil {
			return s, "", ""
		}
	}
	if env.Message != "" {
		return env.Message, "", ""
	}
	if len(env.Detail) > 0 {
		var s string
		if err := json.Unmarshal(env.Detail, &s); err == nil {
			return s, "", ""
		}
		return string(env.Detail), "", ""
	}
	return string(raw), "", ""
}

// rawScalar renders a JSON string or number as text; null as "".
func rawScalar(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	return string(raw)
}

// transportError explains a failure to send or read, keeping the context's
// error in the chain when the request ran out of time or was cancelled.
// parent is the caller's context, ctx the one bounded by Timeout.
func (p *OpenAIProvider) transportError(parent, ctx context.Context, what string, err error) error {
	if ctxErr := parent.Err(); ctxErr != nil {
		return fmt.Errorf("openai: %s to %s: %w", what, p.host(), ctxErr)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("openai: %s to %s: no answer within %s: %w", what, p.host(), p.cfg.Timeout, ctxErr)
	}
	var nerr net.Error
	if errors.As(err, &nerr) && nerr.Timeout() {
		// The HTTP client's own timeout, not ours.
		return fmt.Errorf("openai: %s to %s: timed out (%s): %w", what, p.host(), p.redact(err.Error()), context.DeadlineExceeded)
	}
	return &TransportError{Msg: fmt.Sprintf("openai: %s to %s: %s", what, p.host(), p.redact(err.Error()))}
}

// TransportError is a request that got no HTTP answer: the connection was
// refused, reset or broken (its text has the API key redacted).
type TransportError struct{ Msg string }

func (e *TransportError) Error() string { return e.Msg }

// host is the endpoint's host, for messages.
func (p *OpenAIProvider) host() string { return p.hostname }

// redact removes the API key from text that is about to be shown.
func (p *OpenAIProvider) redact(s string) string {
	if p.apiKey == "" {
		return s
	}
	return strings.ReplaceAll(s, p.apiKey, "[redacted]")
}
