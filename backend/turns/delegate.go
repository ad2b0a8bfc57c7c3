package turns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unicode"

	"atrium/backend/hooks"
	"atrium/backend/llm"
	"atrium/backend/sessions"
	"atrium/backend/tools"
)

// delegate_task: the model hands tasks to subagents. Each one is a turn
// of this loop in a delegate child session of the conversation (so the
// store, the hooks and the window know it as a subagent: subagent_start
// when it is created, subagent_stop with its summary when it ends, and a
// memory provider's on_delegation), with its own system prompt, its own
// terminal session, the parent's tools less the blocked ones, and its own
// limits. The parent's model reads only the summaries, in the familiar
// agent's result shape.

var delegateSpec = llm.ToolSpec{Name: tools.DelegateTool, Description: tools.DelegateDescription, Parameters: tools.DelegateParameters}

// Delegation is config.yaml's delegation block, as the familiar agent
// names it.
type Delegation struct {
	// MaxIterations is delegation.max_iterations: a subagent's rounds of
	// tool calls when the call names none (default 50).
	MaxIterations int
	// MaxChildren is delegation.max_concurrent_children: the most tasks
	// one call may hand over, all run at once (default 3).
	MaxChildren int
	// ChildTimeout is delegation.child_timeout_seconds: a subagent's time
	// (default 600 s; 0: no limit). As a turn's, it does not count the
	// time a person takes to answer its approvals; and while subagents
	// run, their parent turn's clock stands still (their own bounds it).
	ChildTimeout time.Duration
	// Model is delegation.model: the model subagents ask, of the same
	// provider ("": the parent's).
	Model string
}

// DefaultDelegation is the familiar agent's defaults.
func DefaultDelegation() Delegation {
	return Delegation{MaxIterations: tools.DefaultDelegateIterations, MaxChildren: tools.DefaultDelegateChildren,
		ChildTimeout: tools.DefaultChildTimeoutSecs * time.Second}
}

func (l *Loop) delegation() Delegation {
	d := DefaultDelegation()
	if l.opts.Delegation != nil {
		d = l.opts.Delegation()
	}
	if d.MaxIterations <= 0 {
		d.MaxIterations = tools.DefaultDelegateIterations
	}
	if d.MaxChildren <= 0 {
		d.MaxChildren = tools.DefaultDelegateChildren
	}
	return d
}

// SubagentEvent is what a subagent of a delegate_task call did: the tools
// one of its rounds calls, or, Done, how it ended.
type SubagentEvent struct {
	Index, Of int    // its task (from 0) of how many
	Goal      string // its task
	Tools     []string
	Done      bool
	Status    string  // completed, failed, interrupted, timeout or error (Done)
	Seconds   float64 // how long it ran (Done)
}

type progressKey struct{}

// WithSubagentProgress is ctx for a Send whose delegate_task calls tell
// progress what their subagents do as they go (a terminal chat shows it,
// as the familiar agent's does). progress is called from the subagents'
// goroutines.
func WithSubagentProgress(ctx context.Context, progress func(SubagentEvent)) context.Context {
	return context.WithValue(ctx, progressKey{}, progress)
}

// subagent is what a subagent's turn is given besides its goal.
type subagent struct {
	task    tools.DelegateTask
	offered map[string]bool // the machine's tools it may use
	rounds  int             // its rounds of tool calls
	model   string          // delegation.model ("" the parent's)
	asks    *sync.Mutex     // subagents of one call ask a person one at a time
	parent  string          // the parent conversation's session key
	tc      *turnCtx        // its turn, once started: what it cost
	exit    string          // why its turn ended, when it did
}

// Subagent statuses, as the familiar agent reports them (timeout is
// Atrium's word for a subagent that ran out of child_timeout_seconds).
const (
	SubagentCompleted   = "completed"
	SubagentFailed      = "failed"
	SubagentInterrupted = "interrupted"
	SubagentTimeout     = "timeout"
	SubagentError       = "error"
)

// subagentResult is one task's entry in delegate_task's result.
type subagentResult struct {
	TaskIndex  int           `json:"task_index"`
	Status     string        `json:"status"`
	Summary    *string       `json:"summary"`
	APICalls   int           `json:"api_calls"`
	Duration   float64       `json:"duration_seconds"`
	Model      *string       `json:"model,omitempty"`
	ExitReason string        `json:"exit_reason,omitempty"`
	Tokens     *tokenCount   `json:"tokens,omitempty"`
	ToolTrace  *[]traceEntry `json:"tool_trace,omitempty"`
	Error      string        `json:"error,omitempty"`
}

type tokenCount struct {
	Input  int `json:"input"`
	Output int `json:"output"`
}

// traceEntry is one tool call of a subagent: its name and sizes, not its
// content.
type traceEntry struct {
	Tool        string `json:"tool"`
	ArgsBytes   int    `json:"args_bytes"`
	ResultBytes *int   `json:"result_bytes,omitempty"`
	Status      string `json:"status,omitempty"`
}

// runDelegate runs delegate_task: every task in a subagent of its own, at
// the same time, and answers with their summaries in the order given.
func (l *Loop) runDelegate(ctx context.Context, tc *turnCtx, sessionID string, args map[string]any) (result, errType, errMsg string) {
	if tc.agentCtx == "subagent" { // never offered there; a model may name it anyway
		return refusal("Delegation depth limit reached (1). Subagents cannot spawn further subagents.")
	}
	d := l.delegation()
	tasks, problem := tools.ParseDelegation(args, d.MaxChildren)
	if problem != "" {
		return refusal(problem)
	}
	// max_iterations as a model sends it (a number, or its text); a
	// fraction, or a count out of range, leaves the default.
	rounds := d.MaxIterations
	if f, number := args["max_iterations"].(float64); !number || f == math.Trunc(f) {
		if n := tools.Int(args, "max_iterations", 0); n >= 1 && n <= maxIterations {
			rounds = n
		}
	}
	parent, err := l.sessions.Get(ctx, sessionID)
	if err != nil {
		return refusal("the conversation could not be read: " + err.Error())
	}
	if d.ChildTimeout > 0 {
		// Each subagent is bounded by its own time; meanwhile the parent
		// turn's clock stands still, as it does while a person answers.
		defer waitingForPerson(ctx)()
	}
	start := time.Now()
	asks := &sync.Mutex{}
	results := make([]subagentResult, len(tasks))
	var wg sync.WaitGroup
	// The subagents' sessions are made in the tasks' order before any
	// starts, so that lists by start (the page's subagents at work, the
	// sessions tree) show them in that order.
	children := make([]*sessions.Session, len(tasks))
	childErrs := make([]error, len(tasks))
	for i, task := range tasks {
		if ctx.Err() != nil { // the parent was stopped: none of the rest starts
			break
		}
		child, err := l.sessions.Create(ctx, sessions.CreateParams{Title: subagentTitle(task.Goal), Goal: task.Goal, Source: parent.Source,
			ParentID: parent.ID, Relation: sessions.RelationDelegate, Platform: parent.Platform, SenderID: parent.SenderID,
			SenderName: parent.SenderName, ParentTurnID: tc.turnID})
		children[i], childErrs[i] = &child, err
	}
	for i, task := range tasks {
		run := func() {
			defer func() {
				// A subagent's failure is its entry's, never the process's.
				if p := recover(); p != nil {
					slog.Error("a subagent failed", "task", i, "panic", p, "stack", string(debug.Stack()))
					results[i] = subagentResult{TaskIndex: i, Status: SubagentError, Error: fmt.Sprint("the subagent failed: ", p)}
				}
			}()
			results[i] = l.runSubagent(ctx, tc, children[i], childErrs[i], i, len(tasks), task, rounds, d, asks)
		}
		if len(tasks) == 1 {
			run()
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			run()
		}()
	}
	wg.Wait()
	return toolOutcome(tools.PlainJSON(struct {
		Results  []subagentResult `json:"results"`
		Duration float64          `json:"total_duration_seconds"`
	}{results, seconds(time.Since(start))}))
}

// runSubagent runs one task in child, its delegate child session (nil:
// the parent was stopped before it was made; cerr: it could not be), and
// ends that session with how it went.
func (l *Loop) runSubagent(ctx context.Context, tc *turnCtx, child *sessions.Session, cerr error, i, of int, task tools.DelegateTask, rounds int,
	d Delegation, asks *sync.Mutex) (r subagentResult) {
	start := time.Now()
	progress, _ := ctx.Value(progressKey{}).(func(SubagentEvent))
	if progress != nil {
		defer func() {
			progress(SubagentEvent{Index: i, Of: of, Goal: task.Goal, Done: true, Status: r.Status, Seconds: r.Duration})
		}()
	}
	failed := func(err error) subagentResult {
		return subagentResult{TaskIndex: i, Status: SubagentError, Error: err.Error(), Duration: seconds(time.Since(start))}
	}
	if child == nil { // the parent was stopped before this one started
		none := ""
		return subagentResult{TaskIndex: i, Status: SubagentInterrupted, ExitReason: SubagentInterrupted, Summary: &none}
	}
	if cerr != nil {
		return failed(fmt.Errorf("the subagent's session could not be created: %w", cerr))
	}
	sub := &subagent{task: task, offered: subagentTools(tc.offered, task.Toolsets), rounds: rounds, model: d.Model, asks: asks,
		parent: tc.conversation()}
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if d.ChildTimeout > 0 {
		cctx, cancel = WithBudget(ctx, d.ChildTimeout)
	}
	// The parent's steps (a chat platform's agent:step) are its own; the
	// subagent's go to the progress the caller asked for.
	var step any // none
	if progress != nil {
		step = StepFunc(func(_ int, names []string) { progress(SubagentEvent{Index: i, Of: of, Goal: task.Goal, Tools: names}) })
	}
	cctx = context.WithValue(cctx, stepKey{}, step)
	cctx = context.WithValue(cctx, toolProgressKey{}, nil) // told as the subagent's steps
	cc := hooks.CommandContext{Platform: tc.platform, Source: tc.source}
	turn, err := l.sendSafely(cctx, child.ID, task.Goal, cc, sub)
	timedOut := errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	cancel()

	r = subagentResult{TaskIndex: i}
	summary := ""
	switch {
	case err == nil && sub.exit == ExitMaxRounds:
		r.Status, r.ExitReason = SubagentFailed, "max_iterations"
		r.Error = fmt.Sprintf("The subagent used its %d rounds of tool calls (max_iterations) before it finished; its summary is what it had by then.", rounds)
		summary = turn.Reply
	case err == nil && strings.TrimSpace(turn.Reply) == "":
		r.Status, r.ExitReason, r.Error = SubagentFailed, SubagentCompleted, "Subagent did not produce a response."
	case err == nil:
		r.Status, r.ExitReason, summary = SubagentCompleted, SubagentCompleted, turn.Reply
	case errors.As(err, new(*subagentCrash)):
		r.Status, r.ExitReason, r.Error = SubagentError, SubagentError, err.Error()
	case timedOut:
		r.Status, r.ExitReason = SubagentTimeout, SubagentTimeout
		r.Error = fmt.Sprintf("Subagent timed out after %.0fs. Increase delegation.child_timeout_seconds in config.yaml if tasks "+
			"consistently need more time.", d.ChildTimeout.Seconds())
	case ctx.Err() != nil:
		r.Status, r.ExitReason = SubagentInterrupted, SubagentInterrupted
	default:
		r.Status, r.ExitReason, r.Error = SubagentFailed, SubagentFailed, err.Error()
	}
	r.Summary = &summary
	model, tokens, trace := d.Model, tokenCount{}, []traceEntry{}
	if sub.tc != nil {
		r.APICalls, model = sub.tc.apiCalls, sub.tc.model.Name
		tokens = tokenCount{Input: sub.tc.tokensIn, Output: sub.tc.tokensOut}
	}
	r.Model, r.Tokens = &model, &tokens
	// Read and ended after the parent's stop too: the subagent's session
	// says how it went.
	rec := context.WithoutCancel(ctx)
	last := child.ID
	if turn.SessionID != "" {
		last = turn.SessionID
	}
	if msgs, err := l.sessions.Messages(rec, last, false); err == nil {
		trace = toolTrace(msgs)
	}
	r.ToolTrace = &trace
	if _, _, err := l.sessions.EndWith(rec, last, r.Status, sessions.EndInfo{Platform: tc.platform, Goal: task.Goal,
		ParentTurnID: tc.turnID}); err != nil && r.Error == "" {
		r.Error = "the subagent's session could not be ended: " + err.Error()
	}
	r.Duration = seconds(time.Since(start))
	return r
}

// conversation is the session key a person's "for this conversation"
// answer covers: a subagent's is its parent's, whose conversation the
// person sees (and whose answers hold for its subagents).
func (tc *turnCtx) conversation() string {
	if tc.sub != nil {
		return tc.sub.parent
	}
	return tc.sessionKey
}

// subagentCrash is a subagent's turn that panicked.
type subagentCrash struct{ p any }

func (c *subagentCrash) Error() string { return fmt.Sprint("the subagent failed: ", c.p) }

// sendSafely is send for a subagent: a panic in its turn (a provider's, a
// tool's) is its error, and its session is still ended; the parent and
// the process go on.
func (l *Loop) sendSafely(ctx context.Context, sessionID, text string, cc hooks.CommandContext, sub *subagent) (t Turn, err error) {
	defer func() {
		if p := recover(); p != nil {
			slog.Error("a subagent's turn failed", "session_id", sessionID, "panic", p, "stack", string(debug.Stack()))
			t, err = Turn{SessionID: sessionID}, &subagentCrash{p}
		}
	}()
	return l.send(ctx, sessionID, text, cc, sub)
}

// subagentTools is the machine's tools a subagent may use: the toolsets it
// was given, among its parent's (all of the parent's when none). The tools
// no subagent has are taken out of its turn's table, whoever offers them.
func subagentTools(parent map[string]bool, toolsets []string) map[string]bool {
	if len(toolsets) == 0 {
		return parent // read only, by every subagent's turn
	}
	named, _ := tools.Listed(toolsets)
	on := map[string]bool{}
	for n := range named {
		if parent[n] {
			on[n] = true
		}
	}
	return on
}

// toolTrace is a subagent's tool calls, in order, each with the size of
// its arguments and of its result, as the familiar agent traces them, and
// whether it failed: its result says an error ({"error": "..."}, or a
// plugin's "error: ..."). (The familiar agent looks for the word in the
// first 80 characters, which takes every terminal result, with its
// "error": null, for a failure.)
func toolTrace(msgs []sessions.Message) []traceEntry {
	out := []traceEntry{}
	byID := map[string]int{}
	for _, m := range msgs {
		switch {
		case m.Role == "assistant" && m.ToolName != "":
			out = append(out, traceEntry{Tool: m.ToolName, ArgsBytes: len(m.Content)})
			if m.ToolCallID != "" {
				byID[m.ToolCallID] = len(out) - 1
			}
		case m.Role == "tool":
			i, ok := byID[m.ToolCallID]
			if !ok {
				if len(out) == 0 {
					continue
				}
				i = len(out) - 1
			}
			size, status := len(m.Content), "ok"
			if _, _, msg := toolOutcome(m.Content); msg != "" || strings.HasPrefix(strings.ToLower(strings.TrimSpace(m.Content)), "error") {
				status = "error"
			}
			out[i].ResultBytes, out[i].Status = &size, status
		}
	}
	return out
}

// subagentTitle is a subagent session's title: the goal's first line,
// clipped.
func subagentTitle(goal string) string {
	line := strings.TrimSpace(goal)
	if i := strings.IndexAny(line, "\r\n"); i >= 0 {
		line = strings.TrimSpace(line[:i])
	}
	line = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, line)
	if r := []rune(line); len(r) > 80 {
		line = strings.TrimSpace(string(r[:79])) + "…"
	}
	return line
}

// refusal is the error the model reads, as the familiar agent words it:
// {"error": "..."}.
func refusal(msg string) (result, errType, errMsg string) { return toolOutcome(tools.Failure(msg)) }

// maxIterations bounds a call's max_iterations, as config.yaml's
// delegation.max_iterations is bounded.
const maxIterations = 10000

// seconds is d in seconds, to the hundredth.
func seconds(d time.Duration) float64 { return math.Round(d.Seconds()*100) / 100 }
