package turns

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/hooks"
	"atrium/backend/llm"
)

// Execution middleware (the familiar API's tool_execution and
// llm_execution): a plugin's callback(..., next_call) wraps the call itself.
// The plugin runs in the profile's plugin host, the call here, so each
// plugin's part is a conversation of capability calls: "start" runs its
// callbacks until the last one calls next_call ({"next": value, "token"}),
// the rest of the chain runs here (later plugins, then the call), "resume"
// hands the outcome back, and the plugin ends with {"result": value},
// {"downstream_error": message} or {"blocked": reason}.

// Execution middleware kinds.
const (
	mwToolExecution = "tool_execution"
	mwLLMExecution  = "llm_execution"
)

// resumeAfterStop bounds the resume that tells a plugin's callbacks their
// call was stopped.
const resumeAfterStop = 5 * time.Second

// execStep is one answer of a plugin's execution middleware.
type execStep struct {
	Next            json.RawMessage `json:"next"`
	Token           string          `json:"token"`
	Result          json.RawMessage `json:"result"`
	DownstreamError *string         `json:"downstream_error"`
	Blocked         *string         `json:"blocked"`
}

// middlewareOf lists the plugins with kind's middleware, in load order.
func middlewareOf(tc *turnCtx, kind string) []hooks.Capability {
	var out []hooks.Capability
	for _, c := range tc.middleware {
		if c.Name == kind {
			out = append(out, c)
		}
	}
	return out
}

// execChain runs input through the execution middleware of caps, in order,
// around terminal. fields are the callbacks' other arguments; key names the
// input among them ("args" or "request"). A plugin that cannot be reached,
// or whose callbacks all raised before calling next_call, is passed over; a
// plugin that failed after the call ran leaves the call's outcome as it was.
func (l *Loop) execChain(ctx context.Context, kind, key string, caps []hooks.Capability, fields map[string]any, input any,
	terminal func(context.Context, any) (any, error)) (any, error) {
	if len(caps) == 0 {
		return terminal(ctx, input)
	}
	c, rest := caps[0], caps[1:]
	payload := make(map[string]any, len(fields)+1)
	for k, v := range fields {
		payload[k] = v
	}
	payload[key] = input
	raw, err := l.bus.CallCapability(ctx, c.Plugin, hooks.CapMiddleware, kind, "start", map[string]any{"payload": payload})
	var (
		ran     bool
		below   any
		belowEr error
	)
	for {
		var step execStep
		if err == nil {
			err = json.Unmarshal(raw, &step)
		}
		if err != nil {
			slog.Warn(kind+" middleware failed", "plugin", c.Plugin, "error", err)
			if ran {
				return below, belowEr
			}
			return l.execChain(ctx, kind, key, rest, fields, input, terminal)
		}
		switch {
		case step.Token != "":
			if ran {
				err = fmt.Errorf("asked for the call a second time")
				continue
			}
			ran = true
			var next any
			if err := json.Unmarshal(step.Next, &next); err != nil || next == nil {
				next = input
			}
			below, belowEr = l.execChain(ctx, kind, key, rest, fields, next, terminal)
			resume := map[string]any{"token": step.Token, "result": below}
			if belowEr != nil {
				resume = map[string]any{"token": step.Token, "error": belowEr.Error()}
			}
			rctx, cancel := ctx, context.CancelFunc(func() {})
			if ctx.Err() != nil {
				// The turn was stopped under the call: the plugin's callbacks
				// still hear how it ended (their next_call raises), so that
				// they unwind instead of waiting for ever in the plugin.
				resume = map[string]any{"token": step.Token, "error": "the turn was stopped: " + stopOf(ctx).Reason}
				rctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), resumeAfterStop)
			}
			raw, err = l.bus.CallCapability(rctx, c.Plugin, hooks.CapMiddleware, kind, "resume", resume)
			cancel()
			if ctx.Err() != nil {
				return below, belowEr
			}
		case step.Blocked != nil:
			return nil, apperr.New(apperr.Rejected, "plugin %s blocked the call: %s", c.Plugin, *step.Blocked)
		case step.DownstreamError != nil:
			if belowEr != nil {
				return below, belowEr
			}
			return nil, apperr.New(apperr.Rejected, "plugin %s: %s middleware: %s", c.Plugin, kind, *step.DownstreamError)
		default:
			var out any
			if err := json.Unmarshal(step.Result, &out); err != nil {
				out = nil
			}
			return out, nil
		}
	}
}

// runToolCall runs a tool call through tool_execution middleware (straight
// to the tool when there is none). A tool that fails is a result, as
// without middleware; a callback that answers without calling next_call
// answers for the tool, which then does not run.
func (l *Loop) runToolCall(ctx context.Context, tc *turnCtx, sessionID string, call llm.ToolCall, args map[string]any) (result, errType, errMsg string) {
	caps := middlewareOf(tc, mwToolExecution)
	if len(caps) == 0 {
		return l.execTool(ctx, tc, sessionID, call, args)
	}
	fields := map[string]any{"tool_name": call.Name, "original_args": args, "task_id": tc.taskID, "session_id": sessionID,
		"tool_call_id": call.ID, "turn_id": tc.turnID, "platform": tc.platform, "session_key": tc.sessionKey,
		"telemetry_schema_version": hooks.TelemetrySchemaVersion, "middleware_schema_version": "hermes.middleware.v1"}
	out, err := l.execChain(ctx, mwToolExecution, "args", caps, fields, args, func(ctx context.Context, in any) (any, error) {
		a, ok := in.(map[string]any)
		if !ok {
			a = args
		}
		result, errType, errMsg = l.execTool(ctx, tc, sessionID, call, a)
		return result, nil
	})
	if err != nil {
		msg := err.Error()
		b, _ := json.Marshal(map[string]string{"error": msg})
		return string(b), "blocked", msg
	}
	switch v := out.(type) {
	case string:
		return v, errType, errMsg
	case nil:
		return "", errType, errMsg
	default:
		b, _ := json.Marshal(v)
		return string(b), errType, errMsg
	}
}

// provide makes the model call through llm_execution middleware (straight
// to the provider when there is none). A callback may change the request it
// hands on, answer in the model's place, or stop the call
// (LLMExecutionBlocked: the turn fails with its reason).
func (l *Loop) provide(ctx context.Context, tc *turnCtx, sessionID string, req llm.Request) (llm.Response, error) {
	caps := middlewareOf(tc, mwLLMExecution)
	if len(caps) == 0 {
		return tc.model.Provider.Complete(ctx, req)
	}
	original := requestMap(req)
	fields := map[string]any{"original_request": original, "session_id": sessionID, "task_id": tc.taskID, "turn_id": tc.turnID,
		"model": req.Model, "platform": tc.platform, "api_call_count": tc.apiCalls, "session_key": tc.sessionKey,
		"telemetry_schema_version": hooks.TelemetrySchemaVersion, "middleware_schema_version": "hermes.middleware.v1"}
	var got llm.Response
	out, err := l.execChain(ctx, mwLLMExecution, "request", caps, fields, original, func(ctx context.Context, in any) (any, error) {
		r := req
		if m, ok := in.(map[string]any); ok {
			r = requestFromMap(m, req)
		}
		resp, err := tc.model.Provider.Complete(ctx, r)
		if err != nil {
			return nil, err
		}
		got = resp
		return executionResponse(resp, r.Model), nil
	})
	if err != nil {
		return llm.Response{}, err
	}
	return responseFrom(out, got), nil
}

// executionResponse is a model's answer as llm_execution callbacks see it:
// the provider's chat completion (choices[0].message, usage), with content
// and tool_calls also at the top.
func executionResponse(r llm.Response, model string) map[string]any {
	m := responseMap(r)
	finish := "stop"
	if len(r.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	m["model"], m["object"] = model, "chat.completion"
	m["choices"] = []any{map[string]any{"index": 0, "finish_reason": finish,
		"message": map[string]any{"role": "assistant", "content": r.Content, "tool_calls": m["tool_calls"]}}}
	m["usage"] = usageOf(r)
	return m
}

// responseFrom reads a callback's answer back: a chat completion (its first
// choice's message), a {"content", "tool_calls"} object, or a text; the
// usage is kept from the call when the answer has none.
func responseFrom(v any, from llm.Response) llm.Response {
	switch x := v.(type) {
	case string:
		return llm.Response{Content: x}
	case map[string]any:
		msg := x
		if choices, ok := x["choices"].([]any); ok && len(choices) > 0 {
			if c, ok := choices[0].(map[string]any); ok {
				if m, ok := c["message"].(map[string]any); ok {
					msg = m
				}
			}
		}
		out := llm.Response{PromptTokens: from.PromptTokens, CompletionTokens: from.CompletionTokens}
		out.Content, _ = msg["content"].(string)
		out.ToolCalls = toolCallsOf(msg["tool_calls"])
		if u, ok := x["usage"].(map[string]any); ok {
			if n, ok := u["prompt_tokens"].(float64); ok {
				out.PromptTokens = int(n)
			}
			if n, ok := u["completion_tokens"].(float64); ok {
				out.CompletionTokens = int(n)
			}
		}
		return out
	}
	return from
}
