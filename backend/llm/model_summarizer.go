package llm

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrEmptySummary is returned (wrapped) by ModelSummarizer when the model
// answered without text. Compaction treats it as an aborted attempt.
var ErrEmptySummary = errors.New("model returned an empty summary")

// maxRenderedMessageChars caps one message of the transcript sent to a
// summarizing model, so that a huge tool output cannot take the whole
// prompt.
const maxRenderedMessageChars = 4000

// minSummaryInputChars is the smallest transcript slice ModelSummarizer
// sends in one call.
const minSummaryInputChars = 2000

// summarizePrompt is the system prompt of ModelSummarizer; %d is the target
// length.
const summarizePrompt = `Summarize the conversation below for continuity: the summary replaces the messages it covers, so whoever continues must not need to ask again.
Keep every decision, rule and convention; names (people, files, paths, URLs, API endpoints, identifiers); numbers (ports, versions, amounts, limits); open questions and unfinished work; and the last user request, on its own line starting "Last user request:".
Write short bullet points, at most about %d characters in all. Do not invent anything that is not in the conversation, and do not answer the request.`

// ModelSummarizer is a Summarizer that asks a chat model for the summary:
// a system prompt (keep decisions, names, numbers, the last user request)
// and the transcript rendered as text. A transcript too large for the
// model's context window is summarized in slices, each call carrying the
// summary so far.
type ModelSummarizer struct {
	// Provider is the model asked for summaries.
	Provider Provider
	// Model is passed as Request.Model; "" lets the provider choose.
	Model string
	// MaxChars is the target length named in the prompt; <= 0 means
	// DefaultSummaryChars. The model is trusted to keep to it.
	MaxChars int
}

// NewOpenAISummarizer is a ModelSummarizer over NewOpenAIProvider(cfg).
func NewOpenAISummarizer(cfg OpenAIConfig) (*ModelSummarizer, error) {
	p, err := NewOpenAIProvider(cfg)
	if err != nil {
		return nil, err
	}
	return &ModelSummarizer{Provider: p, Model: p.Model()}, nil
}

// Summarize implements Summarizer. No messages, or messages without text,
// wrap ErrNothingToSummarize; an empty answer wraps ErrEmptySummary; a
// provider error is returned wrapped.
func (s *ModelSummarizer) Summarize(ctx context.Context, msgs []Message, focus string) (string, error) {
	if s.Provider == nil {
		return "", errors.New("model summarizer: no provider")
	}
	blocks := renderTranscript(msgs)
	if len(blocks) == 0 {
		return "", fmt.Errorf("model summarizer: %w: %d messages carry no text", ErrNothingToSummarize, len(msgs))
	}
	target := s.MaxChars
	if target <= 0 {
		target = DefaultSummaryChars
	}
	system := fmt.Sprintf(summarizePrompt, target)
	if f := collapseSpace(focus); f != "" {
		system += "\nPay particular attention to: " + f
	}
	// Room for the transcript: three quarters of the window, less the system
	// prompt and room for a summary so far, in characters (4 per token).
	budget := (s.Provider.ContextWindow()*3/4-EstimateTokens(system))*4 - 2*target
	budget = max(budget, minSummaryInputChars)

	for attempt := 0; ; attempt++ {
		summary, err := s.summarizeIn(ctx, blocks, system, budget)
		if err == nil || !errors.Is(err, ErrContextLength) || attempt == 2 || budget <= minSummaryInputChars {
			return summary, err
		}
		budget = max(budget/2, minSummaryInputChars) // the estimate was too kind: smaller slices
	}
}

// summarizeIn summarizes blocks in slices of at most budget characters.
func (s *ModelSummarizer) summarizeIn(ctx context.Context, blocks []string, system string, budget int) (string, error) {
	summary := ""
	for _, chunk := range chunkBlocks(blocks, budget) {
		var user strings.Builder
		if summary != "" {
			user.WriteString("Summary of the earlier part of the conversation:\n")
			user.WriteString(summary)
			user.WriteString("\n\nThe conversation continues:\n")
		} else {
			user.WriteString("Conversation:\n")
		}
		user.WriteString(chunk)
		resp, err := s.Provider.Complete(ctx, Request{
			Model: s.Model,
			Messages: []Message{
				{Role: "system", Content: system},
				{Role: "user", Content: user.String()},
			},
		})
		if err != nil {
			return "", fmt.Errorf("model summarizer: %w", err)
		}
		summary = strings.TrimSpace(resp.Content)
		if summary == "" {
			return "", fmt.Errorf("model summarizer (%s): %w", s.Provider.Name(), ErrEmptySummary)
		}
	}
	return summary, nil
}

// renderTranscript writes each message as text ("[3] user: ..."), tool calls
// included; messages without text are left out.
func renderTranscript(msgs []Message) []string {
	var out []string
	for i, m := range msgs {
		var b strings.Builder
		if text := strings.TrimSpace(m.Content); text != "" {
			fmt.Fprintf(&b, "[%d] %s: %s", i+1, roleLabel(m), clipBytes(text, maxRenderedMessageChars))
		}
		for _, tc := range m.ToolCalls {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			fmt.Fprintf(&b, "[%d] %s called tool %s", i+1, roleLabel(m), tc.Name)
			if args := collapseSpace(tc.Arguments); args != "" && args != "{}" {
				b.WriteString(" with " + clipBytes(args, 500))
			}
		}
		if b.Len() > 0 {
			out = append(out, b.String())
		}
	}
	return out
}

// chunkBlocks groups blocks, in order, into texts of at most budget bytes;
// a block larger than the budget is clipped.
func chunkBlocks(blocks []string, budget int) []string {
	var out []string
	var cur strings.Builder
	for _, b := range blocks {
		b = clipBytes(b, budget)
		if cur.Len() > 0 && cur.Len()+2+len(b) > budget {
			out = append(out, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteString("\n\n")
		}
		cur.WriteString(b)
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}
