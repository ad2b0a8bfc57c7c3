package turns

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"atrium/backend/llm"
	"atrium/backend/tools"
)

// The clarify tool in a turn: the model asks the person a question and
// the turn waits for the answer, asked by the surface the conversation is
// on (Options.Clarify: the window, the dashboard, a terminal, a chat
// platform). Nobody sits at a scheduled run or a delegated subagent's
// turn, so the tool is not offered there, nor on a surface with no way to
// ask (a command run with its input from a pipe).

var clarifySpec = llm.ToolSpec{Name: tools.ClarifyTool, Description: tools.ClarifyDescription, Parameters: tools.ClarifyParameters}

// Question is one question of the clarify tool, as a surface asks it.
type Question struct {
	SessionID string
	Question  string
	// Choices are the choices as shown, the first the model's pick (marked
	// tools.Recommended); nil: an open question. A surface offers the
	// person's own words besides them.
	Choices []string
	// MultiSelect lets the person pick several choices.
	MultiSelect bool
	// Title is the call's title when it asks several questions, one after
	// the other: this one is Index (from 1) of Of. A single question has
	// Of 1 and no title.
	Title     string
	Index, Of int
	// Timeout is how long the person has (agent.clarify_timeout as
	// config.yaml has it at the ask); 0: no limit.
	Timeout time.Duration
}

// DefaultClarifyTimeout is how long a person has to answer the clarify
// tool's question when config.yaml says nothing, as in the familiar agent.
const DefaultClarifyTimeout = time.Hour

// Reply is a person's answer to a Question: the words they typed, or the
// choice they picked (as shown: the Recommended mark is taken off), or
// for a multi-select question the choices they picked. An empty Reply
// skips the question.
type Reply = tools.ClarifyAnswer

// Read reads a person's answer typed as text (at a terminal, on a chat
// platform): the numbers of choices pick them (several, between commas or
// spaces, for a multi-select question), anything else is their own
// words; nothing skips the question.
func (q Question) Read(text string) Reply {
	text = strings.TrimSpace(text)
	if len(q.Choices) == 0 {
		return Reply{Text: text}
	}
	var picked []string
	for _, f := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ' ' || r == ';' }) {
		n, err := strconv.Atoi(strings.TrimSuffix(f, "."))
		if err != nil || n < 1 || n > len(q.Choices) {
			return Reply{Text: text} // not only numbers of choices: their own words
		}
		picked = append(picked, q.Choices[n-1])
	}
	switch {
	case len(picked) == 0:
		return Reply{Text: text}
	case q.MultiSelect:
		return Reply{Picked: picked}
	case len(picked) == 1:
		return Reply{Text: picked[0]}
	}
	return Reply{Text: text} // several numbers for one choice: as written
}

// Choice is choice n (from 1) as the person picked it: without the
// Recommended mark it was shown with.
func (q Question) Choice(n int) string { return tools.Unrecommended(q.Choices[n-1]) }

// withinTurn is how long a question may wait: timeout (0: no limit). In a
// turn whose limit stands still while a person is waited for (WithBudget:
// the window's, the dashboard's, a chat platform's) that is all. In one
// that must end by a fixed deadline, a minute short of it (half the time
// left, when less is left), so that the model reads "no answer in time"
// and goes on with its own choice instead of the turn ending mid-question.
func withinTurn(ctx context.Context, timeout time.Duration) time.Duration {
	deadline, ok := ctx.Deadline()
	if !ok || pausesForPerson(ctx) {
		return timeout
	}
	left := time.Until(deadline) - time.Minute
	if left < time.Second {
		left = time.Until(deadline) / 2
	}
	left = max(left.Round(time.Second), time.Second)
	if timeout <= 0 || left < timeout {
		return left
	}
	return timeout
}

// asks says whether the turn can ask the person a question.
func (l *Loop) asks(tc *turnCtx) bool {
	return l.opts.Clarify != nil && tc.agentCtx == "primary" && tc.platform != PlatformCron
}

// clarifyTimeout is agent.clarify_timeout as config.yaml has it now.
func (l *Loop) clarifyTimeout() time.Duration {
	if l.opts.ClarifyTimeout == nil {
		return DefaultClarifyTimeout
	}
	return l.opts.ClarifyTimeout()
}

// runClarify asks the call's questions one after the other, as the
// familiar agent asks a batch on a surface that shows one at a time: a
// skipped question goes on to the next, a question left unanswered in
// time ends the asking (the answer says timed_out).
func (l *Loop) runClarify(ctx context.Context, tc *turnCtx, sessionID string, args map[string]any) (result, errType, errMsg string) {
	c, err := tools.ParseClarify(args)
	if err != nil {
		return toolOutcome(tools.Failure(err.Error()))
	}
	if !l.asks(tc) {
		return toolOutcome(tools.Failure("Clarify tool is not available in this execution context."))
	}
	timeout := l.clarifyTimeout()
	answers := make([]Reply, 0, len(c.Questions))
	timedOut := false
	for i, q := range c.Questions {
		ask := Question{SessionID: sessionID, Question: q.Question, Choices: q.Shown(), MultiSelect: q.MultiSelect,
			Index: i + 1, Of: len(c.Questions), Timeout: withinTurn(ctx, timeout)}
		if c.Batch {
			ask.Title = c.Title
		}
		release := waitingForPerson(ctx)
		r, err := l.opts.Clarify(ctx, ask)
		release()
		if errors.Is(err, ErrNoAnswer) {
			timedOut = true
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				return toolOutcome(tools.Failure("not answered: the turn was stopped while the question waited"))
			}
			return toolOutcome(tools.Failure("Failed to get user input: " + err.Error()))
		}
		answers = append(answers, r)
	}
	return c.Result(answers, timedOut), "", ""
}
