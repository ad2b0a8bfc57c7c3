// Package llm holds the model-facing interfaces of Atrium: providers (the
// model a turn talks to) and summarizers (what compaction uses), with an
// offline implementation of each for the embedded default and the tests, and
// an OpenAI-compatible implementation of each for real use. It knows no
// domain package.
package llm

import (
	"context"
	"errors"
	"fmt"
)

// Message is one chat message as a model sees it.
type Message struct {
	Role       string     `json:"role"` // system, user, assistant, tool
	Content    string     `json:"content"`
	ToolName   string     `json:"tool_name,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"` // on assistant messages that asked for tools
	// Images are pictures a user message shows the model, each a data: URL
	// (data:image/png;base64,...), after its Content. Only a side call
	// that looks at an image sends them (vision); transcripts hold text.
	Images []string `json:"images,omitempty"`
}

// ToolCall is a model's request to run a tool.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // JSON object text
}

// ToolSpec describes a tool offered to the model.
type ToolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Parameters  string `json:"parameters"` // JSON schema text
}

// Request is one model call.
type Request struct {
	Model    string
	Messages []Message
	Tools    []ToolSpec
	// Temperature, when set, is sent as the request's temperature (a
	// judgement wants 0); nil leaves it to the provider.
	Temperature *float64
	// MaxTokens, when above 0, bounds the answer's tokens (max_tokens).
	MaxTokens int
}

// Response is a model's answer: text, tool calls, or both.
type Response struct {
	Content   string
	ToolCalls []ToolCall
	// PromptTokens and CompletionTokens as reported by the provider; 0 when unknown.
	PromptTokens     int
	CompletionTokens int
}

// Provider is a chat model.
type Provider interface {
	Name() string
	// ContextWindow is the model's context size in tokens (estimated units).
	ContextWindow() int
	Complete(ctx context.Context, req Request) (Response, error)
}

// NativeCompactor is a provider that can compact a transcript itself
// (provider-native compaction). The result replaces the transcript as is.
type NativeCompactor interface {
	CompactNative(ctx context.Context, model string, msgs []Message) ([]Message, error)
}

// Summarizer turns a slice of transcript into one summary text. focus is an
// optional hint from the user ("/compress the database decisions").
type Summarizer interface {
	Summarize(ctx context.Context, msgs []Message, focus string) (string, error)
}

// ErrContextLength is returned (wrapped) by a provider whose prompt did not
// fit the model's context window; the turn loop compacts and retries once.
var ErrContextLength = errors.New("context length exceeded")

// ContextLengthError carries the provider's own message.
type ContextLengthError struct{ Message string }

func (e *ContextLengthError) Error() string {
	return fmt.Sprintf("context length exceeded: %s", e.Message)
}

// Is makes errors.Is(err, ErrContextLength) true.
func (e *ContextLengthError) Is(target error) bool { return target == ErrContextLength }

// EstimateTokens is the one token estimator used everywhere: about four
// bytes of UTF-8 per token. It is within ~25% for English prose and code on
// common BPE tokenizers, and undercounts CJK text by up to 2-3x; it is for
// thresholds, never for billing.
func EstimateTokens(text string) int {
	if text == "" {
		return 0
	}
	return (len(text) + 3) / 4
}

// EstimateMessages estimates a whole prompt: each message's text plus a few
// tokens of framing per message.
func EstimateMessages(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += EstimateTokens(m.Content) + 4
		for _, tc := range m.ToolCalls {
			n += EstimateTokens(tc.Name) + EstimateTokens(tc.Arguments)
		}
	}
	return n
}
