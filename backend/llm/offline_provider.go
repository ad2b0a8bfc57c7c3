package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// DefaultContextWindow is the context window, in estimated tokens, of an
// OfflineProvider without Window and of an OpenAIProvider without
// ContextWindow. It is deliberately small: set the real size of your model.
const DefaultContextWindow = 8192

// ContextSeenMarker is what OfflineProvider adds to a text answer when the
// prompt carried injected context: a system or user message with a line
// starting "RULES:" or containing "[[context]]".
const ContextSeenMarker = "(context seen)"

// ErrNothingToCompact is returned (wrapped) by CompactNative when the
// transcript is too short to compact.
var ErrNothingToCompact = errors.New("nothing to compact")

// OfflineProvider is a deterministic Provider and NativeCompactor that needs
// no network, for the embedded default and the tests. Every path of a turn
// loop can be driven with it:
//
//   - a prompt larger than Window fails with a ContextLengthError;
//   - a last user message "use tool NAME" or "use tool NAME: ARGS", where
//     NAME is one of the request's tools, yields a ToolCall with ID
//     "call_<number of messages>" and Arguments {"text":"ARGS"} (ARGS runs
//     to the end of its line), or ARGS itself when it is a JSON object;
//   - a last message that is a tool result yields
//     "The tool NAME returned: <first 200 characters>";
//   - anything else yields "offline reply to: <first 200 characters of the
//     last user message>";
//   - text answers end with ContextSeenMarker when injected context (a line
//     starting "RULES:" or the text "[[context]]" in a system or user
//     message) reached the prompt.
//
// The zero value is ready to use and it is safe for concurrent use.
type OfflineProvider struct {
	// Window is the context window in estimated tokens; <= 0 means
	// DefaultContextWindow.
	Window int
	// Model is informational: the name the provider answers to.
	Model string
	// FailWith, when set, is returned by every Complete.
	FailWith error
	// Delay makes every Complete (and CompactNative) wait this long first,
	// returning early with the context's error if it ends.
	Delay time.Duration
}

// Name implements Provider.
func (p OfflineProvider) Name() string { return "offline" }

// ContextWindow implements Provider.
func (p OfflineProvider) ContextWindow() int {
	if p.Window <= 0 {
		return DefaultContextWindow
	}
	return p.Window
}

// useToolRE finds "use tool NAME" with an optional ": ARGS" on the same line.
var useToolRE = regexp.MustCompile(`(?i)\buse tool[ \t]+([A-Za-z0-9_.\-]+)(?:[ \t]*:[ \t]*([^\n]*))?`)

// Complete implements Provider.
func (p OfflineProvider) Complete(ctx context.Context, req Request) (Response, error) {
	if err := p.wait(ctx); err != nil {
		return Response{}, fmt.Errorf("offline provider: %w", err)
	}
	if p.FailWith != nil {
		return Response{}, p.FailWith
	}
	prompt := EstimateMessages(req.Messages)
	if w := p.ContextWindow(); prompt > w {
		return Response{}, fmt.Errorf("offline provider: %w", &ContextLengthError{
			Message: fmt.Sprintf("prompt is %d tokens, the context window is %d", prompt, w),
		})
	}
	resp := Response{PromptTokens: prompt}

	// The last message that is not a system message decides the answer, so
	// that context injected as a trailing system message changes nothing.
	last := -1
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role != "system" {
			last = i
			break
		}
	}
	var answer string
	switch {
	case last >= 0 && req.Messages[last].Role == "user":
		m := req.Messages[last]
		if call, ok := toolCallFor(m.Content, req.Tools, len(req.Messages)); ok {
			resp.ToolCalls = []ToolCall{call}
			resp.CompletionTokens = EstimateTokens(call.Name) + EstimateTokens(call.Arguments)
			return resp, nil
		}
		answer = "offline reply to: " + clipRunes(collapseSpace(m.Content), 200)
	case last >= 0 && req.Messages[last].Role == "tool":
		m := req.Messages[last]
		name := m.ToolName
		if name == "" {
			name = toolNameOf(req.Messages[:last], m.ToolCallID)
		}
		result := clipRunes(collapseSpace(m.Content), 200)
		if name != "" {
			answer = fmt.Sprintf("The tool %s returned: %s", name, result)
		} else {
			answer = "The tool returned: " + result
		}
	default:
		answer = "offline reply."
	}
	if contextSeen(req.Messages) {
		answer += " " + ContextSeenMarker
	}
	resp.Content = answer
	resp.CompletionTokens = EstimateTokens(answer)
	return resp, nil
}

// CompactNative implements NativeCompactor: it keeps the system messages,
// replaces everything else but the last two messages with one assistant
// message "[native compaction] <OfflineSummarizer summary>", and keeps the
// last two messages as they are. The model argument is ignored. It fails,
// wrapping ErrNothingToCompact, on fewer than four messages or when only
// system messages precede the last two.
func (p OfflineProvider) CompactNative(ctx context.Context, model string, msgs []Message) ([]Message, error) {
	if err := p.wait(ctx); err != nil {
		return nil, fmt.Errorf("offline native compaction: %w", err)
	}
	if len(msgs) < 4 {
		return nil, fmt.Errorf("offline native compaction: %w: %d messages", ErrNothingToCompact, len(msgs))
	}
	head, tail := msgs[:len(msgs)-2], msgs[len(msgs)-2:]
	var system, rest []Message
	for _, m := range head {
		if m.Role == "system" {
			system = append(system, copyMessage(m))
		} else {
			rest = append(rest, m)
		}
	}
	// A summary no larger than a quarter of the window, so that the
	// compacted transcript fits again even with a small window.
	limit := min(DefaultSummaryChars, p.ContextWindow())
	summary, err := OfflineSummarizer{MaxChars: limit}.Summarize(ctx, rest, "")
	if err != nil {
		if errors.Is(err, ErrNothingToSummarize) {
			return nil, fmt.Errorf("offline native compaction: %w: only system messages before the last two", ErrNothingToCompact)
		}
		return nil, fmt.Errorf("offline native compaction: %w", err)
	}
	out := make([]Message, 0, len(system)+3)
	out = append(out, system...)
	out = append(out, Message{Role: "assistant", Content: "[native compaction] " + summary})
	for _, m := range tail {
		out = append(out, copyMessage(m))
	}
	return out, nil
}

// wait sleeps for Delay, or until ctx ends.
func (p OfflineProvider) wait(ctx context.Context) error {
	if p.Delay > 0 {
		t := time.NewTimer(p.Delay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return ctx.Err()
}

// toolCallFor builds the tool call a "use tool NAME[: ARGS]" message asks
// for, when NAME is offered.
func toolCallFor(content string, tools []ToolSpec, n int) (ToolCall, bool) {
	m := useToolRE.FindStringSubmatch(content)
	if m == nil {
		return ToolCall{}, false
	}
	name := strings.TrimRight(m[1], ".-")
	offered := false
	for _, t := range tools {
		if t.Name == name {
			offered = true
			break
		}
	}
	if !offered {
		return ToolCall{}, false
	}
	text := strings.TrimSpace(m[2])
	var obj map[string]any
	if strings.HasPrefix(text, "{") && json.Unmarshal([]byte(text), &obj) == nil {
		// ARGS that are a JSON object are the arguments as they are.
		return ToolCall{ID: "call_" + strconv.Itoa(n), Name: name, Arguments: text}, true
	}
	args, err := json.Marshal(struct {
		Text string `json:"text"`
	}{text})
	if err != nil { // cannot happen for a string
		return ToolCall{}, false
	}
	return ToolCall{ID: "call_" + strconv.Itoa(n), Name: name, Arguments: string(args)}, true
}

// toolNameOf finds the name of the tool call id among earlier assistant
// messages.
func toolNameOf(msgs []Message, id string) string {
	if id == "" {
		return ""
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, tc := range msgs[i].ToolCalls {
			if tc.ID == id {
				return tc.Name
			}
		}
	}
	return ""
}

// contextSeen reports whether a system or user message carries injected
// context: a line starting "RULES:" or the text "[[context]]".
func contextSeen(msgs []Message) bool {
	for _, m := range msgs {
		if m.Role != "system" && m.Role != "user" {
			continue
		}
		if strings.Contains(m.Content, "[[context]]") {
			return true
		}
		for _, line := range strings.Split(m.Content, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "RULES:") {
				return true
			}
		}
	}
	return false
}

// copyMessage copies m, tool calls included, so callers never share slices.
func copyMessage(m Message) Message {
	if m.ToolCalls != nil {
		m.ToolCalls = append([]ToolCall(nil), m.ToolCalls...)
	}
	return m
}
