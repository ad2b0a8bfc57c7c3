package turns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"atrium/backend/hooks"
	"atrium/backend/llm"
)

// complete is one model call: llm_request middleware may rewrite the
// request, pre_api_request and post_api_request (or api_request_error) are
// called around each attempt, and the context engine learns the usage
// (update_from_response) after an answer. A failure that may pass (a rate
// limit, an overloaded or failing server, no answer) is tried again after
// a wait, up to agent.api_max_retries times; then, or at once when the
// provider refused the key, the billing or the model, the turn turns to
// the next fallback model for the rest of the turn, and tries it alike.
func (l *Loop) complete(ctx context.Context, tc *turnCtx, sessionID string, req llm.Request) (llm.Response, error) {
	tc.apiCalls++
	req.Messages = withChannelPrompt(ctx, req.Messages)
	retries := l.maxRetries()
	told := false // a status was told this call: the run's is cleared once the model answers
	for attempt := 0; ; attempt++ {
		resp, err := l.callModel(ctx, tc, sessionID, req, attempt, retries)
		if err == nil {
			if told {
				toldRun(ctx, "")
			}
			tc.tokensIn += resp.PromptTokens
			tc.tokensOut += resp.CompletionTokens
			if tc.engine != nil {
				l.bus.TellEngine(ctx, *tc.engine, "update_from_response", l.engineCall(tc, sessionID, []any{usageOf(resp)}, nil))
			}
			return resp, nil
		}
		if ctx.Err() != nil {
			return resp, err // stopped: nothing more is asked
		}
		reason := failureReason(err, apiErrorOf(err))
		if retryable(reason) && attempt < retries {
			wait := retryWait(err, attempt+1)
			toldStatus(ctx, ModelStatus{Kind: StatusRetry, Reason: reason, Attempt: attempt + 1, Of: retries, Wait: wait})
			told = true
			if l.wait(ctx, wait) != nil {
				return resp, err
			}
			continue
		}
		if fallsOver(reason) {
			next, label, skipped, ok := l.nextFallback(ctx, tc)
			told = told || len(skipped) > 0 || ok
			why := reasonText(reason)
			if attempt > 0 {
				why += ", " + retriesText(attempt)
			}
			note := append([]string{fmt.Sprintf("%s failed (%s)", tc.model.Name, why)}, skipped...)
			if ok {
				toldStatus(ctx, ModelStatus{Kind: StatusFallback, Reason: reason, Model: tc.model.Name, To: label})
				note = append(note, "the turn went on with fallback "+label)
				tc.fallbackNotes = append(tc.fallbackNotes, strings.Join(note, "; "))
				tc.model, tc.fellBack, req.Model, attempt = next, true, next.Name, -1
				continue
			}
			if len(skipped) > 0 {
				tc.fallbackNotes = append(tc.fallbackNotes, strings.Join(skipped, "; "))
			}
		}
		if attempt > 0 {
			err = &retriesSpent{err: err, retries: attempt}
		}
		return resp, err
	}
}

// apiErrorOf is the provider's unsuccessful answer in err, or nil.
func apiErrorOf(err error) *llm.APIError {
	var apiErr *llm.APIError
	if errors.As(err, &apiErr) {
		return apiErr
	}
	return nil
}

// usageOf is a response's usage as the familiar API's dicts have it.
func usageOf(resp llm.Response) map[string]any {
	return map[string]any{"prompt_tokens": resp.PromptTokens, "completion_tokens": resp.CompletionTokens,
		"total_tokens": resp.PromptTokens + resp.CompletionTokens, "input_tokens": resp.PromptTokens,
		"output_tokens": resp.CompletionTokens}
}

// callModel is one attempt of a model call (retry 0 the first; of
// retries), its hooks around it.
func (l *Loop) callModel(ctx context.Context, tc *turnCtx, sessionID string, req llm.Request, retry, retries int) (llm.Response, error) {
	req = l.llmRequestMiddleware(ctx, tc, sessionID, req)
	observe := l.bus.HasSync(hooks.PreAPIRequest) || l.bus.HasSync(hooks.PostAPIRequest) || l.bus.HasSync(hooks.APIRequestError)
	if !observe {
		return l.provide(ctx, tc, sessionID, req)
	}
	start := time.Now()
	p := hooks.APIRequest{SessionID: sessionID, TaskID: tc.taskID, TurnID: tc.turnID, APIRequestID: uuid.Must(uuid.NewV7()).String(),
		APICallCount: tc.apiCalls, Model: req.Model, Provider: tc.model.Provider.Name(), Platform: tc.platform,
		APIMode: "chat_completions", StartedAt: unixSeconds(start), MessageCount: len(req.Messages), ToolCount: len(req.Tools),
		ApproxInputTokens: llm.EstimateMessages(req.Messages), Request: requestMap(req),
		ContextLength: tc.model.Provider.ContextWindow(), SessionKey: tc.sessionKey, RetryCount: retry, MaxRetries: retries}
	if b, ok := tc.model.Provider.(interface{ BaseURL() string }); ok {
		p.BaseURL = b.BaseURL()
	}
	l.inline(ctx, hooks.PreAPIRequest, p)
	resp, err := l.provide(ctx, tc, sessionID, req)
	end := time.Now()
	ended, dur, ms := unixSeconds(end), end.Sub(start).Seconds(), end.Sub(start).Milliseconds()
	p.EndedAt, p.APIDuration, p.DurationMS = &ended, &dur, &ms
	if err != nil {
		apiErr := apiErrorOf(err)
		if apiErr != nil {
			p.StatusCode = &apiErr.StatusCode
		}
		p.Reason = failureReason(err, apiErr)
		again := errors.Is(err, llm.ErrContextLength) || retryable(p.Reason)
		p.Error, p.Retryable = map[string]any{"type": errorType(err), "message": err.Error()}, &again
		l.inline(ctx, hooks.APIRequestError, p)
		return resp, err
	}
	finish := "stop"
	if len(resp.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	chars, calls := len(resp.Content), len(resp.ToolCalls)
	p.FinishReason, p.AssistantContentChars, p.AssistantToolCallCount = &finish, &chars, &calls
	p.Usage = usageOf(resp)
	p.Response = responseMap(resp)
	l.inline(ctx, hooks.PostAPIRequest, p)
	return resp, nil
}

// inline calls an observing synchronous hook; its answers are ignored.
func (l *Loop) inline(ctx context.Context, hook string, payload any) {
	if !l.bus.HasSync(hook) {
		return
	}
	if _, err := l.bus.CallSync(ctx, hook, payload); err != nil {
		slog.Warn("hook failed", "hook", hook, "error", err)
	}
}

// llmRequestMiddleware applies llm_request middleware: each plugin sees the
// request as the previous one left it; {"request": {...}} replaces it.
func (l *Loop) llmRequestMiddleware(ctx context.Context, tc *turnCtx, sessionID string, req llm.Request) llm.Request {
	caps := middlewareOf(tc, "llm_request")
	if len(caps) == 0 {
		return req
	}
	original := requestMap(req)
	current := original
	for _, c := range caps {
		raw, err := l.bus.CallCapability(ctx, c.Plugin, hooks.CapMiddleware, c.Name, "invoke", map[string]any{"payload": map[string]any{
			"request": current, "original_request": original, "session_id": sessionID, "task_id": tc.taskID,
			"turn_id": tc.turnID, "model": req.Model, "platform": tc.platform, "api_call_count": tc.apiCalls,
			"telemetry_schema_version": hooks.TelemetrySchemaVersion, "middleware_schema_version": "hermes.middleware.v1"}})
		if err != nil {
			slog.Warn("llm_request middleware failed", "plugin", c.Plugin, "error", err)
			continue
		}
		var out struct {
			Results []map[string]any `json:"results"`
		}
		_ = json.Unmarshal(raw, &out)
		for _, r := range out.Results {
			if next, ok := r["request"].(map[string]any); ok {
				current = next
			}
		}
	}
	return requestFromMap(current, req)
}

func requestMap(req llm.Request) map[string]any {
	msgs := make([]any, 0, len(req.Messages))
	for _, m := range req.Messages {
		msgs = append(msgs, messageMap(m))
	}
	tools := make([]any, 0, len(req.Tools))
	for _, t := range req.Tools {
		var params any
		_ = json.Unmarshal([]byte(t.Parameters), &params)
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": t.Name,
			"description": t.Description, "parameters": params}})
	}
	return map[string]any{"model": req.Model, "messages": msgs, "tools": tools}
}

// requestFromMap reads a rewritten request back; what does not parse keeps
// the original's value.
func requestFromMap(m map[string]any, orig llm.Request) llm.Request {
	out := orig
	if model, ok := m["model"].(string); ok && model != "" {
		out.Model = model
	}
	if raw, ok := m["messages"].([]any); ok {
		var msgs []llm.Message
		for _, x := range raw {
			mm, ok := x.(map[string]any)
			if !ok {
				continue
			}
			msg := llm.Message{}
			msg.Role, _ = mm["role"].(string)
			msg.Content, _ = mm["content"].(string)
			msg.ToolCallID, _ = mm["tool_call_id"].(string)
			msg.ToolName, _ = mm["name"].(string)
			msg.ToolCalls = toolCallsOf(mm["tool_calls"])
			if msg.Role != "" {
				msgs = append(msgs, msg)
			}
		}
		out.Messages = msgs
	}
	if raw, ok := m["tools"].([]any); ok {
		var tools []llm.ToolSpec
		for _, x := range raw {
			tm, _ := x.(map[string]any)
			fn, ok := tm["function"].(map[string]any)
			if !ok {
				fn = tm
			}
			name, _ := fn["name"].(string)
			if name == "" {
				continue
			}
			desc, _ := fn["description"].(string)
			params, _ := json.Marshal(fn["parameters"])
			tools = append(tools, llm.ToolSpec{Name: name, Description: desc, Parameters: string(params)})
		}
		out.Tools = tools
	}
	return out
}

// toolCallsOf reads tool calls in the OpenAI shape ({"id", "function":
// {"name", "arguments"}}).
func toolCallsOf(v any) []llm.ToolCall {
	calls, _ := v.([]any)
	var out []llm.ToolCall
	for _, c := range calls {
		cm, _ := c.(map[string]any)
		fn, _ := cm["function"].(map[string]any)
		tcall := llm.ToolCall{}
		tcall.ID, _ = cm["id"].(string)
		tcall.Name, _ = fn["name"].(string)
		tcall.Arguments, _ = fn["arguments"].(string)
		out = append(out, tcall)
	}
	return out
}

func responseMap(r llm.Response) map[string]any {
	calls := make([]any, 0, len(r.ToolCalls))
	for _, c := range r.ToolCalls {
		calls = append(calls, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
	}
	return map[string]any{"content": r.Content, "tool_calls": calls}
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// failureReason classifies a failed model call as the familiar API's
// api_request_error reason.
func failureReason(err error, apiErr *llm.APIError) string {
	switch {
	case errors.Is(err, llm.ErrContextLength):
		return "context_overflow"
	case errors.Is(err, llm.ErrAuth):
		return "auth"
	case apiErr != nil:
		switch s := apiErr.StatusCode; {
		case s == http.StatusPaymentRequired:
			return "billing"
		case s == http.StatusTooManyRequests:
			return "rate_limit"
		case s == http.StatusServiceUnavailable || s == 529:
			return "overloaded"
		case s >= 500:
			return "server_error"
		case s == http.StatusRequestEntityTooLarge:
			return "payload_too_large"
		case s == http.StatusNotFound:
			return "model_not_found"
		case s == http.StatusRequestTimeout:
			return "timeout"
		case s == http.StatusBadRequest || s == http.StatusUnprocessableEntity:
			return "format_error"
		}
		return "unknown"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	var transport *llm.TransportError
	if errors.As(err, &transport) {
		return "timeout" // no answer: the familiar classifier's transport case
	}
	return "unknown"
}

func errorType(err error) string {
	if errors.Is(err, llm.ErrContextLength) {
		return "ContextLengthError"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "Timeout"
	}
	return "APIError"
}
