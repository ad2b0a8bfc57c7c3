// Package turns is the turn loop: it sends a user turn to the model with
// the context plugins add (pre_llm_call, the memory provider's prefetch, the
// system prompt sections), runs the tools the model asks for (built-in and
// plugin tools, around pre_tool_call, transform_tool_result and
// post_tool_call), stores everything, and triggers compaction where the
// transcript grows too large. It also owns the session lifecycle commands
// (/new, /exit, /help). It reaches plugins only through the hook bus.
package turns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"atrium/backend/apperr"
	"atrium/backend/compaction"
	"atrium/backend/db"
	"atrium/backend/hooks"
	"atrium/backend/llm"
	"atrium/backend/sessions"
	"atrium/backend/tools"
)

// Model is what a turn asks: the provider and the model name it sends.
type Model struct {
	Provider llm.Provider
	Name     string
}

// Options configure a Loop.
type Options struct {
	// Provider and Model are the model every turn asks, unless Resolve is
	// set.
	Provider llm.Provider
	Model    string
	// Resolve, when set, says which model to ask now (config.yaml as it is
	// at that moment): it is called at the start of every turn and of every
	// compaction outside one, so a model or key changed while the process
	// runs is the next turn's. A model it cannot resolve (no key yet) fails
	// that turn before anything of it is stored, and nothing else: slash
	// commands, listing and reading go on.
	Resolve func() (Model, error)
	Tools   map[string]Tool // default BuiltinTools()
	// Machine, when set, offers the machine's own tools (the terminal and
	// the file tools, backend/tools) as config.yaml has them at the start
	// of each turn: toolsets, platform_toolsets, terminal.*. A terminal
	// command that could destroy data asks a person as a plugin's
	// {"action": "approve"} does, under its rule's key; one nobody can
	// undo never runs.
	Machine func() tools.Settings
	// Processes keeps the background processes the terminal starts
	// (background: true) and the process tool manages; nil: none can be
	// started. Its owner closes it.
	Processes *tools.Processes
	// MaxToolRounds bounds the rounds of tool calls in one turn (default
	// 90, as the familiar agent's agent.max_turns); MaxRounds, when set,
	// says it as config.yaml has it at each turn's start (0: the default).
	// A turn that reaches it asks the model once more, without tools, for
	// its answer so far.
	MaxToolRounds int
	MaxRounds     func() int
	// MaxContinues bounds how many times in a row pre_turn_end hooks may
	// keep one turn going (default 8, as Claude Code caps its Stop hooks).
	MaxContinues int
	// MemoryProvider is memory.provider: the name of the plugin memory
	// provider the loop drives ("" for none).
	MemoryProvider string
	// Approve asks a person whether a tool call a plugin flagged with
	// {"action": "approve"} may run (the terminal asks on a tty). nil, an
	// error or a no blocks the call: pre_tool_call fails closed. An asker
	// whose question went unanswered in time returns ErrNoAnswer.
	// AnswerSession lets later asks of the same rule (Approval.PatternKey)
	// in the same conversation run without asking, while this Loop lives;
	// AnswerAlways also keeps the rule in Standing.
	Approve func(ctx context.Context, a Approval) (Answer, error)
	// Clarify asks a person the clarify tool's question, on the surface
	// the conversation is on; nil: the tool is not offered (nobody to
	// ask). A question unanswered within its Timeout returns ErrNoAnswer.
	Clarify func(ctx context.Context, q Question) (Reply, error)
	// AskSecret asks the person at the surface, unseen, for a variable a
	// skill being loaded needs, and keeps it (a terminal chat); nil where
	// nobody can be asked so (the skill then says how to set it).
	AskSecret tools.SecretAsker
	// ClarifyTimeout is agent.clarify_timeout as config.yaml has it at the
	// ask (nil: DefaultClarifyTimeout); 0 is no limit.
	ClarifyTimeout func() time.Duration
	// Standing is the profile's standing approvals (config.yaml's
	// command_allowlist): a rule it allows runs without asking, on every
	// surface, scheduled runs included; and its approvals block, read at
	// every ask (approvals.mode: off runs every call a plugin asks about
	// without asking anyone, each one logged). nil: none, and "always"
	// lasts the conversation.
	Standing Standing
	// NoBetweenTurns leaves the soft-threshold compaction after a turn to
	// the caller: the gateway compacts between messages instead, with
	// reason gateway_hygiene (Hygiene).
	NoBetweenTurns bool
	// NativeCompaction (model.native_compaction) lets a provider that
	// compacts natively do every automatic compaction instead of the local
	// summary: kind provider_native, reason provider. NativeThreshold is
	// the fraction of the window at which the provider compacts before a
	// call (default: the compaction threshold).
	NativeCompaction bool
	NativeThreshold  float64
	// Runs, when set, writes down each turn while it runs, so that a
	// person can stop it from another process of the profile (the window
	// a scheduled run, a terminal a gateway turn).
	Runs *Runs
	// Delegation is config.yaml's delegation block as it is at each
	// delegate_task call (nil: DefaultDelegation).
	Delegation func() Delegation
	// Guardian is approvals.mode: smart's reviewer as config.yaml has it
	// at each flagged terminal command; false (or nil) in another mode.
	Guardian func() (Guardian, bool)
	// MaxRetries is agent.api_max_retries at each model call: how many
	// more times a call that failed for a reason that may pass is tried
	// (nil: none).
	MaxRetries func() int
	// Fallbacks is the chain of models a turn turns to, in order, when its
	// own fails (nil: none); read when a turn first needs it.
	Fallbacks func() []Fallback
	// Wait waits before a retry, or until ctx ends (nil: a timer); tests
	// set it.
	Wait func(ctx context.Context, d time.Duration) error
}

// DefaultMaxToolRounds is Options.MaxToolRounds when unset.
const DefaultMaxToolRounds = 90

// ExitMaxRounds is on_session_end's turn_exit_reason of a turn that used
// every round of tool calls it may.
const ExitMaxRounds = "max_iterations_reached"

// DefaultMaxContinues is Options.MaxContinues when unset.
const DefaultMaxContinues = 8

// DefaultApprovalTimeout is how long a surface that asks a person (the
// window, the dashboard, a chat platform) waits for the answer before the
// call is refused, unless it is configured otherwise.
const DefaultApprovalTimeout = 5 * time.Minute

// Stop is the cause a surface cancels a turn's context with when a person
// stops the turn: agent_loop_stopped's reason and invalidation_reason, in
// the familiar API's words.
type Stop struct{ Reason, Invalidation string }

func (s *Stop) Error() string { return "stopped: " + s.Reason }

// The ways a person stops a turn.
var (
	StopByCommand = &Stop{Reason: "Stop requested", Invalidation: "stop_command"}         // a chat's /stop
	StopByReset   = &Stop{Reason: "Session reset requested", Invalidation: "new_command"} // a chat's /new while a turn runs
	StopByPerson  = &Stop{Reason: "user_stop", Invalidation: "session_interrupt"}         // Stop in the window or the dashboard, Ctrl+C in a terminal chat
)

// Why else a turn's context ends under it.
var (
	stopByDeadline = &Stop{Reason: "timeout", Invalidation: "turn_deadline"}   // the turn ran out of time
	stopByCaller   = &Stop{Reason: "interrupted", Invalidation: "caller_gone"} // its caller went away (the process is stopping)
)

// Stopped says whether a person stopped the turn whose context is ctx.
func Stopped(ctx context.Context) bool { return StoppedBy(ctx) != nil }

// StopOf is how a person stopped the turn Send answered err for under ctx
// (nil when nobody did): by cancelling ctx, or from anywhere through Runs.
func StopOf(ctx context.Context, err error) *Stop {
	if s := StoppedBy(ctx); s != nil {
		return s
	}
	var s *Stop
	if errors.As(err, &s) {
		return s
	}
	return nil
}

// stoppedError is Send's error for a turn a person stopped through Runs:
// the turn's error, and the Stop (errors.As finds it; StopOf reads it).
type stoppedError struct {
	stop *Stop
	err  error
}

func (e *stoppedError) Error() string   { return e.err.Error() }
func (e *stoppedError) Unwrap() []error { return []error{e.err, e.stop} }

// StoppedBy is how a person stopped the turn whose context is ctx (nil
// when nobody did).
func StoppedBy(ctx context.Context) *Stop {
	var s *Stop
	if errors.As(context.Cause(ctx), &s) {
		return s
	}
	return nil
}

// stopOf says why ctx, a turn's context, ended.
func stopOf(ctx context.Context) *Stop {
	var s *Stop
	switch cause := context.Cause(ctx); {
	case errors.As(cause, &s):
		return s
	case errors.Is(cause, context.DeadlineExceeded):
		return stopByDeadline
	}
	return stopByCaller
}

// ErrNoAnswer is what an Approve returns when nobody answered in time: the
// call is not run, and post_approval_response says "timeout".
var ErrNoAnswer = errors.New("no answer in time")

// Answer is a person's answer to an approval, in the familiar API's words
// (post_approval_response's choice).
type Answer string

// The answers. Anything else is a no.
const (
	AnswerDeny    Answer = "deny"
	AnswerOnce    Answer = "once"    // this call
	AnswerSession Answer = "session" // this call, and later asks of the same rule in this conversation
	AnswerAlways  Answer = "always"  // this call, and later asks of the same rule anywhere in the profile
)

// Allows says whether the answer lets the call run.
func (a Answer) Allows() bool { return a == AnswerOnce || a == AnswerSession || a == AnswerAlways }

// Approval is a tool call a plugin, or a terminal command that could
// destroy data, wants a person to approve.
type Approval struct {
	SessionID string
	ToolName  string
	Args      map[string]any
	Plugin    string // "" for a terminal command Atrium itself asks about
	Message   string
	// PatternKey is the rule a "session" or "always" answer covers
	// (plugin_rule:<rule_key or tool>, or a terminal command's rule as
	// the familiar agent names it: "recursive delete").
	PatternKey string
	// KeepAlways is nil when "always" cannot be kept (it then lasts the
	// conversation, and is not offered); else it keeps the rule in the
	// standing list, and says why when it cannot (the list unreadable, the
	// file not writable): a surface calls it before it takes "always" and,
	// on an error, tells the person why and asks again.
	KeepAlways func() error
	// Timeout is how long the person has to answer (approvals.timeout as
	// config.yaml has it at the ask); 0 is the surface's own default.
	Timeout time.Duration
}

// Asker says who asks, as a surface words it: "the plugin NAME", or "the
// terminal" for a command Atrium itself asks about.
func (a Approval) Asker() string {
	if a.Plugin == "" {
		return "the " + a.ToolName
	}
	return "the plugin " + a.Plugin
}

// Standing is a profile's standing approvals: the rules (pattern keys) a
// person allowed from now on.
type Standing interface {
	Allows(key string) (bool, error)
	Allow(key string) error
	// Check says why a key cannot be kept (nil when it can).
	Check(key string) error
	// ApprovalPolicy is the profile's approvals block as it is now
	// (approvals.mode: off, approvals.timeout; 0: the surface's default).
	ApprovalPolicy() (approveAll bool, timeout time.Duration)
}

// grants are the approvals a person gave for the rest of a conversation
// ("session"): its session key and the rule.
type grants struct {
	mu  sync.Mutex
	set map[[2]string]bool
}

func (g *grants) has(sessionKey, key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.set[[2]string{sessionKey, key}]
}

func (g *grants) add(sessionKey, key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.set == nil {
		g.set = map[[2]string]bool{}
	}
	g.set[[2]string{sessionKey, key}] = true
}

// Loop runs turns.
type Loop struct {
	db       *db.DB
	sessions *sessions.Service
	engine   *compaction.Engine
	bus      *hooks.Bus
	opts     Options
	grants   grants
	dirs     tools.Dirs   // each conversation's working directory, for the machine's tools
	skillEnv tools.Grants // the variables each conversation's loaded skills declared, for its commands
}

// New builds a loop and registers the lifecycle commands it owns.
func New(d *db.DB, s *sessions.Service, eng *compaction.Engine, bus *hooks.Bus, opts Options) (*Loop, error) {
	if opts.Provider == nil && opts.Resolve == nil {
		return nil, apperr.New(apperr.Invalid, "the turn loop needs a provider")
	}
	if opts.Tools == nil {
		opts.Tools = BuiltinTools()
	}
	if opts.MaxToolRounds <= 0 {
		opts.MaxToolRounds = DefaultMaxToolRounds
	}
	if opts.MaxContinues <= 0 {
		opts.MaxContinues = DefaultMaxContinues
	}
	if opts.Resolve == nil {
		fixed := Model{Provider: opts.Provider, Name: opts.Model}
		opts.Resolve = func() (Model, error) { return fixed, nil }
	}
	l := &Loop{db: d, sessions: s, engine: eng, bus: bus, opts: opts}
	if err := RegisterCommands(bus, s, CommandOptions{MemoryProvider: opts.MemoryProvider}); err != nil {
		return nil, err
	}
	return l, nil
}

// Turn is the outcome of one Send.
type Turn struct {
	SessionID   string              `json:"session_id"` // the session that holds the conversation now
	Rotated     bool                `json:"rotated"`    // a compaction moved it to a continuation
	Command     string              `json:"command,omitempty"`
	Output      string              `json:"output,omitempty"` // a slash command's answer
	Reply       string              `json:"reply,omitempty"`
	SentText    string              `json:"sent_text,omitempty"` // the user turn as the model got it
	ToolCalls   []string            `json:"tool_calls,omitempty"`
	Blocked     []string            `json:"blocked,omitempty"` // tool calls pre_tool_call blocked
	Compactions []compaction.Result `json:"compactions,omitempty"`
	// Continued lists, in order, each reply after which a pre_turn_end
	// hook kept the turn going, with the feedback it gave the model
	// (stored as a user message); Reply is the last one.
	Continued []Continuation `json:"continued,omitempty"`
	// Notes are what hooks asked to show the person about the turn.
	Notes []string `json:"notes,omitempty"`
}

// Continuation is one reply that did not end its turn.
type Continuation struct {
	Reply    string `json:"reply"`
	Feedback string `json:"feedback"`
}

// turnCtx is what every hook of one turn is told about it.
type turnCtx struct {
	sessionID  string
	taskID     string // the conversation: the session the turn started in
	turnID     string
	platform   string
	sessionKey string
	userID     string // the gateway sender, "" on local surfaces
	userName   string
	source     *hooks.Source // the gateway message's sender and chat, nil on local surfaces
	agentCtx   string        // primary, subagent in a delegate child's session, or cron for a scheduled run
	parentID   string        // the parent session of a delegate child ("" otherwise)
	sub        *subagent     // the task, tools and limits of a subagent's turn delegate_task runs (nil otherwise)
	apiCalls   int
	tokensIn   int // the prompt and completion tokens the provider reported, this turn
	tokensOut  int
	mem        *memory           // the active memory provider, nil for none
	engine     *hooks.Capability // the context engine, nil for none
	tools      *toolTable
	middleware []hooks.Capability // the plugins' middleware, listed once per round of model calls
	interrupt  string             // why a hook stopped the turn (a deny with interrupt), "" while it goes on
	model      Model              // the model the turn asks, resolved at its start (a fallback, once it turned to one)
	fallbacks  []Fallback         // the fallbacks not turned to yet this turn (nil: not read yet)
	fellBack   bool               // the turn turned to a fallback: model is another provider's
	// fallbackNotes tell the person of the fallbacks the turn turned to
	// or passed over (Turn.Notes).
	fallbackNotes []string
	changed       []string // the files the machine's tools wrote, moved or deleted this turn (pre_verify's changed_paths)
	memFailures   int      // the memory tool's failed attempts to make room this turn
	// machine is config.yaml's keys for the machine's tools as the turn
	// started, and offered the tools its toolsets offer on its platform
	// (both empty without Options.Machine): read once, for the system
	// prompt, the turn's context and every round's tools alike.
	machine tools.Settings
	offered map[string]bool
}

type sessionKey struct{}

// SessionOf is the session whose turn ctx runs (the one Send was given),
// "" outside a turn: a tool that writes to other sessions leaves it alone.
func SessionOf(ctx context.Context) string {
	id, _ := ctx.Value(sessionKey{}).(string)
	return id
}

// Send runs one user turn, or a slash command when text starts with "/".
func (l *Loop) Send(ctx context.Context, sessionID, text string, cc hooks.CommandContext) (Turn, error) {
	if cc.Platform == "" {
		cc.Platform = "cli"
	}
	ctx = context.WithValue(ctx, sessionKey{}, sessionID)
	if l.opts.Runs == nil {
		return l.send(ctx, sessionID, text, cc, nil)
	}
	tctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	end, status := l.opts.Runs.begin(sessionID, cc.Platform, stop)
	defer end()
	tctx = context.WithValue(tctx, runStatusKey{}, status)
	t, err := l.send(tctx, sessionID, text, cc, nil)
	if s := StoppedBy(tctx); err != nil && s != nil && StoppedBy(ctx) == nil {
		err = &stoppedError{stop: s, err: err}
	}
	return t, err
}

// send runs a turn; sub is set when delegate_task runs it in a subagent's
// session.
func (l *Loop) send(ctx context.Context, sessionID, text string, cc hooks.CommandContext, sub *subagent) (Turn, error) {
	cc.SessionID = sessionID
	if cc.SessionKey == "" {
		cc.SessionKey = cc.Platform + ":" + sessionID
	}
	toModel := "" // what the model reads of text, when not text itself
	if name, args, ok := hooks.ParseCommand(text); ok {
		switch msg, skill := l.skillCommand(ctx, name, args, cc); {
		case skill:
			toModel = msg // a skill's command: its SKILL.md, in the person's place
		case name != "retry":
			return l.command(ctx, name, args, cc)
		default:
			again, err := l.retry(ctx, args, cc)
			if err != nil {
				return Turn{SessionID: sessionID, Command: name}, err
			}
			text = again // the person's last message, its answer taken back, sent again
		}
	}
	if strings.TrimSpace(text) == "" {
		return Turn{}, apperr.New(apperr.Invalid, "empty message")
	}
	t := Turn{SessionID: sessionID}
	sess, err := l.sessions.Get(ctx, sessionID)
	if err != nil {
		return Turn{}, err
	}
	if sess.Ended() {
		return Turn{}, apperr.New(apperr.Rejected, "session %s has ended (%s)", sess.ID, sess.EndReason)
	}
	// The model as it is now; one that cannot be asked fails the turn
	// here, before its message is stored or any hook hears of it.
	model, err := l.Resolve()
	if err != nil {
		return Turn{}, err
	}
	if sub != nil && sub.model != "" {
		model.Name = sub.model // delegation.model, asked of the same provider
	}
	history, err := l.sessions.Messages(ctx, sessionID, false)
	if err != nil {
		return Turn{}, err
	}
	first := !slices.ContainsFunc(history, func(m sessions.Message) bool { return m.Role == "user" })
	spoken := false // a first exchange taken back (/undo, /retry): the session has started already
	if first {
		if spoken, err = l.sessions.Spoken(ctx, sessionID); err != nil {
			return Turn{}, err
		}
	}
	start, err := l.sessions.StartSource(ctx, sessionID)
	if err != nil {
		return Turn{}, err
	}
	if first && start == "" {
		start = sessions.StartStartup
	}
	tc := &turnCtx{sessionID: sessionID, taskID: sessionID, turnID: uuid.Must(uuid.NewV7()).String(),
		platform: cc.Platform, sessionKey: cc.SessionKey, agentCtx: AgentContextOf(cc), model: model}
	if cc.Source != nil {
		tc.userID, tc.userName = cc.Source.UserID, cc.Source.UserName
		src := *cc.Source
		tc.source = &src
	}
	if sess.Relation == sessions.RelationDelegate && sess.ParentSessionID != nil && (tc.agentCtx == "primary" || sub != nil) {
		// A delegate child's turn is a subagent's: a memory provider is
		// initialized with agent_context "subagent" and the parent.
		tc.agentCtx, tc.parentID = "subagent", *sess.ParentSessionID
	}
	l.readMachine(tc)
	if sub != nil {
		tc.sub, sub.tc = sub, tc
		tc.offered = sub.offered
	}
	tc.mem = l.activeMemory(ctx, tc)
	if c, ok := l.bus.ContextEngine(); ok {
		tc.engine = &c
	}

	// The system prompt (the memory files, the memory provider's block,
	// plugin sections) is assembled once, at the first turn, and stored:
	// frozen per session.
	var system string
	if first && !hasLeadingSystem(history) {
		system = l.systemPrompt(ctx, tc, sess)
		if sub != nil {
			system = strings.TrimSpace(tools.SubagentPrompt(sub.task.Goal, sub.task.Context) + "\n\n" + system)
		}
	}
	// pre_llm_call and the memory provider's prefetch: every string or
	// {"context": ...} answer is added to this turn as sent to the model.
	if toModel == "" {
		toModel = text
	}
	extra, err := l.turnContext(ctx, tc, sess, toModel, history, first, start)
	if err != nil {
		return Turn{}, err
	}
	sent := toModel
	if len(extra) > 0 {
		sent = toModel + "\n\n" + strings.Join(extra, "\n\n")
	}
	t.SentText = sent
	err = l.db.InTx(ctx, func(tx *db.Tx) error {
		if system != "" {
			if _, err := l.sessions.AppendMessageTx(ctx, tx, sessionID, sessions.NewMessage{Role: "system", Content: system}); err != nil {
				return err
			}
		}
		m := sessions.NewMessage{Role: "user", Content: text}
		if sent != text {
			m.SentContent = &sent
		}
		if _, err := l.sessions.AppendMessageTx(ctx, tx, sessionID, m); err != nil {
			return err
		}
		if start != "" && start != sessions.StartStartup {
			if err := l.sessions.ClearStartTx(ctx, tx, sessionID); err != nil {
				return err
			}
		}
		if first && !spoken {
			_, err := l.bus.EnqueueTx(ctx, tx, hooks.OnSessionStart, hooks.SessionStart{SessionID: sessionID,
				Model: hooks.Str(tc.model.Name), Platform: cc.Platform, SessionKey: cc.SessionKey})
			return err
		}
		return nil
	})
	if err != nil {
		return Turn{}, err
	}
	reply, exit, err := l.respond(ctx, &t, tc)
	if err != nil {
		err = tc.failedOver(err)
		l.failTurn(ctx, &t, tc, err)
		return t, err
	}
	// Each reply is stored with its post_llm_call. With pre_turn_end hooks
	// (a Claude Code Stop hook among them) the turn ends only when they let
	// it: on_session_end then follows in a transaction of its own.
	gate := l.bus.HasSync(hooks.PreTurnEnd) || l.bus.HasSync(hooks.PreVerify)
	asked := toModel
	for {
		if out, ok := l.transformReply(ctx, tc, t.SessionID, reply); ok {
			reply = out
		}
		if err := l.storeReply(ctx, &t, tc, cc, asked, reply, first && len(t.Continued) == 0, exit, !gate); err != nil {
			return t, err
		}
		if !gate {
			break
		}
		feedback := l.turnEndFeedback(ctx, &t, tc, asked, reply)
		if feedback == "" {
			if err := l.endTurn(ctx, &t, tc, true, exit); err != nil {
				return t, err
			}
			break
		}
		t.Continued = append(t.Continued, Continuation{Reply: reply, Feedback: feedback})
		if _, err := l.sessions.AppendMessage(ctx, t.SessionID, sessions.NewMessage{Role: "user", Content: feedback}); err != nil {
			return t, err
		}
		asked = feedback
		if reply, exit, err = l.respond(ctx, &t, tc); err != nil {
			err = tc.failedOver(err)
			l.failTurn(ctx, &t, tc, err)
			return t, err
		}
	}
	t.Reply = reply
	t.Notes = append(t.Notes, tc.fallbackNotes...)
	if sub != nil {
		sub.exit = exit
	}
	l.afterTurn(ctx, tc, &t, toModel, reply)
	// Between turns: prune stale tool output first, then the soft threshold.
	// prune_tool_results' own plan decides whether there is anything to prune.
	if _, err := l.compact(ctx, &t, tc, compaction.KindPruneToolResults, compaction.ReasonProactivePrune); err != nil {
		return t, err
	}
	if l.opts.NoBetweenTurns {
		return t, nil
	}
	if err := l.maybeCompact(ctx, &t, tc, compaction.KindSummarize, compaction.ReasonBetweenTurns, l.engine.Config().SoftThreshold); err != nil {
		return t, err
	}
	return t, nil
}

// storeReply stores a reply of the turn with its post_llm_call, and with
// on_session_end when it ends the turn.
func (l *Loop) storeReply(ctx context.Context, t *Turn, tc *turnCtx, cc hooks.CommandContext, asked, reply string, first bool, exit string, last bool) error {
	return l.db.InTx(ctx, func(tx *db.Tx) error {
		if _, err := l.sessions.AppendMessageTx(ctx, tx, t.SessionID, sessions.NewMessage{Role: "assistant", Content: reply}); err != nil {
			return err
		}
		hist, err := l.sessions.MessagesTx(ctx, tx, t.SessionID)
		if err != nil {
			return err
		}
		if _, err := l.bus.EnqueueTx(ctx, tx, hooks.PostLLMCall, hooks.PostLLMCallPayload{SessionID: t.SessionID, TaskID: tc.taskID,
			TurnID: tc.turnID, UserMessage: asked, AssistantResponse: reply, AssistantMessage: reply,
			ConversationHistory: historyPayload(hist), IsFirstTurn: first, Model: tc.model.Name, Platform: cc.Platform,
			SessionKey: cc.SessionKey}); err != nil {
			return err
		}
		if !last {
			return nil
		}
		_, err = l.bus.EnqueueTx(ctx, tx, hooks.OnSessionEnd, l.sessionEnd(tc, t.SessionID, true, exit))
		return err
	})
}

// turnEndFeedback asks pre_turn_end whether the turn may end after reply:
// "" when it may, else the instruction to go on with. A stop answer, a
// hook that failed and the cap (MaxContinues in a row) end it.
//
// pre_verify, as the familiar agent fires it, is asked too, with the same
// payload and answers, only when the turn's tools changed files.
func (l *Loop) turnEndFeedback(ctx context.Context, t *Turn, tc *turnCtx, asked, reply string) string {
	payload := hooks.TurnEndPayload{SessionID: t.SessionID, TaskID: tc.taskID,
		TurnID: tc.turnID, UserMessage: asked, AssistantResponse: reply, Continues: len(t.Continued), Model: tc.model.Name,
		Platform: tc.platform, SessionKey: tc.sessionKey, AgentContext: tc.agentCtx,
		Attempt: len(t.Continued), FinalResponse: reply, Coding: len(tc.changed) > 0, ChangedPaths: append([]string{}, tc.changed...)}
	var results []hooks.SyncResult
	for _, hook := range []string{hooks.PreTurnEnd, hooks.PreVerify} {
		if !l.bus.HasSync(hook) || hook == hooks.PreVerify && !payload.Coding {
			continue
		}
		r, err := l.bus.CallSync(ctx, hook, payload)
		if err != nil {
			slog.Warn(hook+" failed; it lets the turn end", "session", t.SessionID, "error", err)
			continue
		}
		results = append(results, r...)
	}
	d := hooks.DecideTurnEnd(results)
	t.Notes = append(t.Notes, d.Notes...)
	if d.Stop || len(d.Continue) == 0 {
		return ""
	}
	if len(t.Continued) >= l.opts.MaxContinues {
		t.Notes = append(t.Notes, fmt.Sprintf("the turn ended after %d continuations in a row that hooks asked for (the most a turn takes)", len(t.Continued)))
		return ""
	}
	return strings.Join(d.Continue, "\n\n")
}

// respond compacts before the call when needed, then runs the model rounds.
func (l *Loop) respond(ctx context.Context, t *Turn, tc *turnCtx) (string, string, error) {
	// pre_api: compact before the call when the prompt is over the threshold
	// (the provider's own threshold when it compacts natively).
	threshold := l.engine.Config().Threshold
	if l.nativeOn(tc) && l.opts.NativeThreshold > 0 {
		threshold = l.opts.NativeThreshold
	}
	if err := l.maybeCompact(ctx, t, tc, compaction.KindSummarize, compaction.ReasonPreAPI, threshold); err != nil {
		return "", "", err
	}
	return l.modelRounds(ctx, t, tc)
}

// failTurn records how a turn that did not finish ended: on_session_end,
// and agent_loop_stopped when its context ended under it (a person stopped
// it, its time ran out, its caller went away). They are written though that
// context is done; the turn's own error is what the caller reports.
func (l *Loop) failTurn(ctx context.Context, t *Turn, tc *turnCtx, err error) {
	rec := context.WithoutCancel(ctx)
	if e := l.endTurn(rec, t, tc, false, "error: "+err.Error()); e != nil {
		slog.Warn("on_session_end not recorded", "session", t.SessionID, "error", e)
	}
	if ctx.Err() == nil {
		return
	}
	why := stopOf(ctx)
	l.observe(ctx, hooks.AgentLoopStopped, hooks.LoopStopped{SessionKey: tc.sessionKey, Platform: tc.platform, Reason: why.Reason,
		InvalidationReason: why.Invalidation, SessionID: t.SessionID, TaskID: tc.taskID, TurnID: tc.turnID})
}

// endTurn fires on_session_end in a transaction of its own: for a turn
// that did not finish, or one whose last reply pre_turn_end had to see.
func (l *Loop) endTurn(ctx context.Context, t *Turn, tc *turnCtx, completed bool, reason string) error {
	return l.enqueue(ctx, hooks.OnSessionEnd, l.sessionEnd(tc, t.SessionID, completed, reason))
}

// enqueue commits one observer event in a transaction of its own.
func (l *Loop) enqueue(ctx context.Context, hook string, payload any) error {
	return l.db.InTx(ctx, func(tx *db.Tx) error {
		_, err := l.bus.EnqueueTx(ctx, tx, hook, payload)
		return err
	})
}

func (l *Loop) sessionEnd(tc *turnCtx, sessionID string, completed bool, reason string) hooks.SessionEnd {
	interrupted := strings.Contains(reason, context.Canceled.Error()) || strings.Contains(reason, context.DeadlineExceeded.Error())
	return hooks.SessionEnd{SessionID: sessionID, TaskID: tc.taskID, TurnID: tc.turnID, Completed: completed,
		Failed: !completed && !interrupted, Interrupted: interrupted, TurnExitReason: reason,
		Model: hooks.Str(tc.model.Name), Platform: tc.platform, SessionKey: tc.sessionKey}
}

// StepFunc is told of each round of a turn's tool-calling loop: its number
// (from 1) and the tools the model asked for in it. It must not block.
type StepFunc func(iteration int, toolNames []string)

type stepKey struct{}

// WithSteps is ctx for a Send whose tool-calling rounds step is told of
// (the gateway's agent:step).
func WithSteps(ctx context.Context, step StepFunc) context.Context {
	return context.WithValue(ctx, stepKey{}, step)
}

// ToolStart is a tool call of a turn as it starts: what a surface that
// shows a turn's progress (a chat platform's progress message) is told.
type ToolStart struct {
	Name string
	Args map[string]any
}

type toolProgressKey struct{}

// WithToolProgress is ctx for a Send whose tool calls progress is told of
// as each starts, before any hook decides on it (the calls of its
// subagents are told through WithSubagentProgress). progress is called
// on the turn's goroutine; it must not block.
func WithToolProgress(ctx context.Context, progress func(ToolStart)) context.Context {
	return context.WithValue(ctx, toolProgressKey{}, progress)
}

// toldStart tells the progress of ctx that call starts (args as parsed).
func toldStart(ctx context.Context, call llm.ToolCall, args map[string]any) {
	if progress, ok := ctx.Value(toolProgressKey{}).(func(ToolStart)); ok && progress != nil {
		progress(ToolStart{Name: call.Name, Args: args})
	}
}

// modelRounds calls the model, running requested tools, until it answers
// with text. A context-length error compacts (overflow) and retries once.
// It returns the reply and why the turn ended.
func (l *Loop) modelRounds(ctx context.Context, t *Turn, tc *turnCtx) (string, string, error) {
	retried := false
	tc.tools = l.toolTable(ctx, tc)
	tc.middleware = l.bus.Capabilities(hooks.CapMiddleware)
	rounds := l.opts.MaxToolRounds
	if l.opts.MaxRounds != nil {
		if n := l.opts.MaxRounds(); n > 0 {
			rounds = n
		}
	}
	if tc.sub != nil {
		rounds = tc.sub.rounds // max_iterations, or delegation.max_iterations
	}
	for round := 0; round < rounds; round++ {
		msgs, err := l.sessions.Messages(ctx, t.SessionID, false)
		if err != nil {
			return "", "", err
		}
		resp, err := l.complete(ctx, tc, t.SessionID, llm.Request{Model: tc.model.Name, Messages: compaction.ToLLM(msgs), Tools: tc.tools.specs()})
		if errors.Is(err, llm.ErrContextLength) && !retried {
			retried = true
			res, cerr := l.compact(ctx, t, tc, compaction.KindSummarize, compaction.ReasonOverflow)
			if cerr != nil {
				return "", "", cerr
			}
			if !res.Changed {
				return "", "", apperr.Wrap(apperr.Rejected, err, "the prompt is over the model's context and compaction could not shrink it (%s)", res.Skipped)
			}
			round--
			continue
		}
		if err != nil {
			return "", "", fmt.Errorf("model call: %w", err)
		}
		if len(resp.ToolCalls) == 0 {
			return resp.Content, "text_response", nil
		}
		if step, ok := ctx.Value(stepKey{}).(StepFunc); ok {
			names := make([]string, len(resp.ToolCalls))
			for i, c := range resp.ToolCalls {
				names[i] = c.Name
			}
			step(round+1, names)
		}
		for _, call := range resp.ToolCalls {
			if err := l.runTool(ctx, t, tc, call); err != nil {
				return "", "", err
			}
		}
		if tc.interrupt != "" {
			return "", "", apperr.New(apperr.Rejected, "a hook stopped the turn: %s", tc.interrupt)
		}
		if err := l.maybeCompact(ctx, t, tc, compaction.KindSummarize, compaction.ReasonPostTool, l.engine.Config().Threshold); err != nil {
			return "", "", err
		}
	}
	return l.lastWord(ctx, t, tc, rounds)
}

// lastWord asks the model for its answer, tools withheld, once the turn
// has used every round of tool calls it may.
func (l *Loop) lastWord(ctx context.Context, t *Turn, tc *turnCtx, rounds int) (string, string, error) {
	msgs, err := l.sessions.Messages(ctx, t.SessionID, false)
	if err != nil {
		return "", "", err
	}
	req := compaction.ToLLM(msgs)
	limit := "agent.max_turns"
	if tc.sub != nil {
		limit = "max_iterations"
	}
	req = append(req, llm.Message{Role: "user", Content: fmt.Sprintf("[This turn has used the %d rounds of tool calls it may "+
		"(%s). Do not call any more tools: answer now with what you found and did so far, and what is left to do.]", rounds, limit)})
	resp, err := l.complete(ctx, tc, t.SessionID, llm.Request{Model: tc.model.Name, Messages: req})
	if err != nil {
		return "", "", fmt.Errorf("model call: %w", err)
	}
	reply := strings.TrimSpace(resp.Content)
	if reply == "" {
		reply = fmt.Sprintf("(The turn stopped after %d rounds of tool calls, the most %s allows.)", rounds, limit)
	}
	return reply, ExitMaxRounds, nil
}

// maybeCompact compacts when the active transcript's estimate is over
// fraction of the model's window; with a context engine, when its
// should_compress(prompt_tokens) says so, as the familiar API asks it (a
// fraction of 0 still turns that automatic compaction off).
func (l *Loop) maybeCompact(ctx context.Context, t *Turn, tc *turnCtx, kind, reason string, fraction float64) error {
	if fraction <= 0 {
		return nil
	}
	s, err := l.sessions.Get(ctx, t.SessionID)
	if err != nil {
		return err
	}
	if eng, ok := l.bus.ContextEngine(); ok && kind == compaction.KindSummarize && !l.nativeOn(tc) {
		if !l.engineWantsCompaction(ctx, tc, eng, t.SessionID, s.TokenCount) {
			return nil
		}
	} else if float64(s.TokenCount) <= fraction*float64(tc.model.Provider.ContextWindow()) {
		return nil
	}
	_, err = l.compact(ctx, t, tc, kind, reason)
	return err
}

func (l *Loop) compact(ctx context.Context, t *Turn, tc *turnCtx, kind, reason string) (compaction.Result, error) {
	req := compaction.Request{SessionID: t.SessionID, Kind: kind, Reason: reason, Model: tc.model.Name, Platform: platformOf(tc),
		Provider: tc.model.Provider.Name(), ContextLength: tc.model.Provider.ContextWindow()}
	if tc != nil {
		req.SessionKey = tc.sessionKey
	}
	if kind == compaction.KindSummarize && l.nativeOn(tc) {
		// The provider compacts natively: it does what the local summary
		// would have done, and says so.
		req.Kind, req.Reason, req.Native = compaction.KindProviderNative, compaction.ReasonProvider, tc.model.Native()
	}
	res, err := l.engine.Compact(ctx, req)
	if apperr.CodeOf(err) == apperr.Conflict {
		return res, nil // someone else is compacting it: go on with the turn
	}
	if err != nil {
		return res, err
	}
	if res.Changed {
		t.Compactions = append(t.Compactions, res)
		if res.OldSessionID != "" {
			t.SessionID, t.Rotated = res.SessionID, true
			if tc != nil {
				tc.sessionID = res.SessionID
				l.carryOn(tc.platform, tc.sessionKey, res.OldSessionID, res.SessionID)
			}
		}
	}
	return res, nil
}

// carryOn moves what the machine's tools keep of a conversation (the
// folder it stands in, its skills' variables, its background processes) to the session it goes
// on in, when its key names its session (a local surface's
// platform:session; a chat platform's key names the chat and stays).
func (l *Loop) carryOn(platform, key, oldID, newID string) {
	if old := platform + ":" + oldID; key == old && newID != oldID {
		next := platform + ":" + newID
		l.dirs.Move(old, next)
		l.skillEnv.Move(old, next)
		l.opts.Processes.Reown(old, next)
	}
}

func platformOf(tc *turnCtx) string {
	if tc == nil {
		return ""
	}
	return tc.platform
}

// Hygiene is the gateway's between-messages call: it compacts a session
// above the soft threshold (reason gateway_hygiene).
func (l *Loop) Hygiene(ctx context.Context, sessionID string) (Turn, error) {
	return l.HygieneFor(ctx, sessionID, hooks.CommandContext{})
}

// HygieneFor is Hygiene for a conversation of a platform: the compaction
// tells plugins (post_compaction's platform) and the memory provider which.
func (l *Loop) HygieneFor(ctx context.Context, sessionID string, cc hooks.CommandContext) (Turn, error) {
	t := Turn{SessionID: sessionID}
	model, err := l.Resolve()
	if err != nil {
		return t, err
	}
	tc := &turnCtx{sessionID: sessionID, model: model}
	if cc.Platform != "" {
		tc.platform, tc.sessionKey, tc.agentCtx = cc.Platform, cc.SessionKey, AgentContextOf(cc)
	}
	err = l.maybeCompact(ctx, &t, tc, compaction.KindSummarize, compaction.ReasonGatewayHygiene, l.engine.Config().SoftThreshold)
	return t, err
}

// CompactNative asks the provider to compact the transcript itself.
func (l *Loop) CompactNative(ctx context.Context, sessionID string) (compaction.Result, error) {
	m, err := l.Resolve()
	if err != nil {
		return compaction.Result{}, err
	}
	n := m.Native()
	if n == nil {
		return compaction.Result{}, apperr.New(apperr.Invalid, "provider %s cannot compact natively", m.Provider.Name())
	}
	return l.engine.Compact(ctx, compaction.Request{SessionID: sessionID, Kind: compaction.KindProviderNative,
		Reason: compaction.ReasonProvider, Native: n, Model: m.Name})
}

// nativeOn reports whether the turn's automatic compactions are its
// provider's.
func (l *Loop) nativeOn(tc *turnCtx) bool { return l.opts.NativeCompaction && tc.model.Native() != nil }

// AgentContextOf is the memory provider's agent_context for a call: "cron"
// for a scheduled run, else "primary".
func AgentContextOf(cc hooks.CommandContext) string {
	if cc.Platform == PlatformCron {
		return "cron"
	}
	return "primary"
}

// PlatformCron is the platform of scheduled runs.
const PlatformCron = "cron"

// Native returns m's provider as a native compactor, if it is one.
func (m Model) Native() llm.NativeCompactor {
	n, _ := m.Provider.(llm.NativeCompactor)
	return n
}

// Resolve is the model the loop asks now (ctx.llm uses it too): the fixed
// one, or what Options.Resolve says at this moment; without a name, the
// provider's.
func (l *Loop) Resolve() (Model, error) {
	m, err := l.opts.Resolve()
	if err != nil {
		return Model{}, err
	}
	if m.Provider == nil {
		return Model{}, apperr.New(apperr.Invalid, "the turn loop needs a provider")
	}
	if m.Name == "" {
		m.Name = m.Provider.Name()
	}
	return m, nil
}

// historyPayload is the conversation as the model sees it, for the hooks'
// conversation_history ([] for an empty one, never null).
func historyPayload(ms []sessions.Message) []map[string]any {
	return messageMaps(compaction.ToLLM(ms))
}

// storedPayload is the conversation as it is stored, without the context
// plugins added to turns as sent (compaction.ToStored): what a memory
// provider and a context engine are given, so a recall does not come back
// to them, or into what they keep, as if the user had written it.
func storedPayload(ms []sessions.Message) []map[string]any {
	return messageMaps(compaction.ToStored(ms))
}

func messageMaps(ms []llm.Message) []map[string]any {
	out := make([]map[string]any, 0, len(ms))
	for _, m := range ms {
		out = append(out, messageMap(m))
	}
	return out
}

// messageMap is one message in the OpenAI shape plugins expect.
func messageMap(m llm.Message) map[string]any { return compaction.OpenAIMessage(m) }

func hasLeadingSystem(ms []sessions.Message) bool {
	return len(ms) > 0 && ms[0].Role == "system"
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
