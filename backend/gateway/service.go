package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/db"
	"atrium/backend/hooks"
	"atrium/backend/sessions"
	"atrium/backend/turns"
)

// Configured is an adapter with who may talk to it.
type Configured struct {
	Adapter Adapter
	Access  Access
	// ChannelPrompts are instructions added to every turn in a chat (by
	// the thread's id, else the chat's, else the parent channel's): the
	// familiar channel_prompts.
	ChannelPrompts map[string]string
	// UnknownDM is what a person not let in who writes in a DM is
	// answered (the familiar unauthorized_dm_behavior): PairDM a pairing
	// code, IgnoreDM nothing, RefuseDM one refusal that tells them their
	// id. "": PairDM when Access lets nobody in, else RefuseDM.
	UnknownDM string
}

// What a person not let in who writes in a DM is answered.
const (
	PairDM   = "pair"
	IgnoreDM = "ignore"
	RefuseDM = "refuse"
)

// unknownDM is c's answer to a DM from someone not let in.
func (c Configured) unknownDM() string {
	if c.UnknownDM != "" {
		return c.UnknownDM
	}
	if len(c.Access.Users)+len(c.Access.Chats)+len(c.Access.Roles) == 0 {
		return PairDM
	}
	return RefuseDM
}

// channelPrompt is the prompt of m's thread, else its chat, else the
// channel its thread is in.
func channelPrompt(prompts map[string]string, m Inbound) string {
	for _, id := range []string{m.ThreadID, m.ChatID, m.Parent} {
		if p, ok := prompts[id]; ok && id != "" {
			return p
		}
	}
	return ""
}

// admits reports whether the sender of m may talk on c: listed, or let in
// by pairing.
func (s *Service) admits(c Configured, m Inbound) bool {
	if c.Access.Admits(m) {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	paired, err := s.store.IsPaired(ctx, c.Adapter.Platform(), m.UserID)
	if err != nil {
		s.log.Warn("gateway: cannot read who pairing let in", "error", err)
	}
	return paired
}

// Gatekeeper is an adapter that decides something by who may talk before
// the service sees a message (Discord opens a thread only for them): the
// service gives it its own decision.
type Gatekeeper interface {
	SetAdmits(admits func(Inbound) bool)
}

// Options configure a Service.
type Options struct {
	// SkillCommands are the skills' commands offered on a platform (name,
	// description; none a registered command's name): listed in its
	// command menu after the others (nil: none). Typed, they run whether
	// listed or not.
	SkillCommands func(platform string) [][2]string
	DB            *db.DB
	Sessions      *sessions.Service
	Bus           *hooks.Bus
	// Loop runs the turns; build it with turns.Options.NoBetweenTurns: the
	// gateway compacts between messages itself (gateway_hygiene).
	Loop     *turns.Loop
	Adapters []Configured
	Profile  string
	Process  string // who runs the gateway, for the Gateway page ("atrium gateway run", "the desktop window")
	Logger   *slog.Logger
	// Deadline is how long a reply is retried (default DefaultDeadline).
	Deadline time.Duration
	// RetryBase and RetryMax shape the delivery backoff (default 2 s
	// doubling up to 5 min); Poll is how often an idle delivery worker
	// looks at the outbox for messages other processes queued (default 2 s).
	RetryBase, RetryMax, Poll time.Duration
	// Parallel bounds the conversations answered at once (default 4); the
	// messages of one conversation are always answered in order.
	Parallel int
	// TurnTimeout bounds one message's turn (default 10 min), not
	// counting the time it waits for the sender's answer to a question or
	// an approval (turns.WithBudget).
	TurnTimeout time.Duration
	// ApprovalTimeout is how long a tool call a plugin wants approved
	// waits for the sender's /approve or /deny (default
	// turns.DefaultApprovalTimeout); see Approve.
	ApprovalTimeout time.Duration
	// Progress is config.yaml's display.tool_progress keys for a platform
	// as they are at each turn's start: how the chat is shown the turn's
	// tool calls. nil: it is shown none.
	Progress func(platform string) Progress
	// GroupSessionsPerUser gives each sender their own conversation in a
	// shared chat that is not a thread, ThreadSessionsPerUser in a thread
	// (the familiar group_sessions_per_user, on there by default, and
	// thread_sessions_per_user, off): the session key ends in their id.
	GroupSessionsPerUser, ThreadSessionsPerUser bool
	// Hooks are the familiar agent's gateway event hooks
	// (gatewayhooks.Hooks): started and stopped with the gateway, told of
	// its lifecycle points off the conversation's path. nil: none.
	Hooks EventHooks
	// Media is which local files a reply's MEDIA: tags may send.
	Media MediaPolicy
	// MediaDir is where files people send are saved (each platform in a
	// folder of its own), for the agent to read; "": they are not saved,
	// and the agent is told so. MaxInboundFile bounds one file (default
	// DefaultMaxInboundFile).
	MediaDir       string
	MaxInboundFile int64
	// SeeImage describes a photo or a sticker a person sent (the vision
	// model, asked prompt), for the agent to know what it shows before it
	// answers. nil, or ErrCannotSee: the agent is told where the photo is
	// saved.
	SeeImage func(ctx context.Context, path, prompt string) (string, error)
	// StickerCache is where the descriptions of stickers are kept (the
	// familiar sticker_cache.json), so a sticker is looked at once; "":
	// each time.
	StickerCache string
	// Transcribe turns a voice message saved at path into the text
	// spoken, for the agent to read (bounded by TranscribeTimeout); nil
	// (stt.enabled: false): the agent is told where the file is.
	// EchoTranscripts sends the chat what was heard before the answer
	// (the familiar stt_echo_transcripts).
	Transcribe      func(ctx context.Context, path string) (string, error)
	EchoTranscripts bool
}

// ErrCannotSee is SeeImage's error when no model can look at an image.
var ErrCannotSee = errors.New("no model can look at images here")

// EventHooks hear of the gateway's lifecycle points, in the familiar
// agent's names and context keys: gateway:startup, session:start,
// session:end, session:reset, session:compress, agent:start, agent:step,
// agent:end, command:<name>. Emit must not block.
type EventHooks interface {
	Start(ctx context.Context) error
	Emit(event string, context map[string]any)
	Stop(ctx context.Context) error
}

// emit tells the event hooks of event (nothing without them).
func (s *Service) emit(event string, kv map[string]any) {
	if s.o.Hooks != nil {
		s.o.Hooks.Emit(event, kv)
	}
}

// Service is a running gateway: start it in the process that hosts the
// profile, stop it when that process ends.
type Service struct {
	o     Options
	store *Store
	log   *slog.Logger
	sem   chan struct{}
	// stickers are the descriptions of stickers people sent.
	stickers *stickerCache

	mu     sync.Mutex
	convos map[string]*convo
	asks   map[string]*pendingAsk // by conversation key: an approval waiting for its answer
	// questions, by conversation key: a clarify question waiting for its
	// answer.
	questions map[string]*pendingQuestion
	running   map[string]context.CancelCauseFunc // by conversation key: the message being answered, to /stop
	wake      map[string]chan struct{}
	state     map[string]string
	started   bool

	// afterSent, by delivery: what follows its delivery (enqueueThen);
	// afterMu is held from the enqueue to the entry, so that a delivery
	// done at once still finds it.
	afterMu   sync.Mutex
	afterSent map[int64]func()

	stop       context.CancelFunc // adapters, workers
	turnCancel context.CancelFunc // turns in flight
	turnCtx    context.Context
	wg         sync.WaitGroup // adapters, workers
	turns      sync.WaitGroup // conversation drains
}

type convo struct {
	pending []job
	current job // the message being answered
}

type job struct {
	c   Configured
	msg Inbound
	// next, for a turn the agent starts itself (Follow), gives its
	// message; false: none is left.
	next func() (string, bool)
}

// New builds a gateway (Start runs it).
func New(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if o.Deadline <= 0 {
		o.Deadline = DefaultDeadline
	}
	if o.RetryBase <= 0 {
		o.RetryBase = 2 * time.Second
	}
	if o.RetryMax <= 0 {
		o.RetryMax = 5 * time.Minute
	}
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	if o.Parallel <= 0 {
		o.Parallel = 4
	}
	if o.TurnTimeout <= 0 {
		o.TurnTimeout = 10 * time.Minute
	}
	if o.ApprovalTimeout <= 0 {
		o.ApprovalTimeout = turns.DefaultApprovalTimeout
	}
	if o.Profile == "" {
		o.Profile = "default"
	}
	s := &Service{o: o, store: NewStore(o.DB), log: o.Logger, sem: make(chan struct{}, o.Parallel),
		stickers: &stickerCache{path: o.StickerCache},
		convos:   map[string]*convo{}, asks: map[string]*pendingAsk{}, questions: map[string]*pendingQuestion{}, running: map[string]context.CancelCauseFunc{}, wake: map[string]chan struct{}{}, state: map[string]string{}}
	for _, c := range o.Adapters {
		s.wake[c.Adapter.Platform()] = make(chan struct{}, 1)
	}
	return s
}

// Store is the gateway's store.
func (s *Service) Store() *Store { return s.store }

// Platforms are the adapters' names, sorted.
func (s *Service) Platforms() []string {
	out := make([]string, 0, len(s.o.Adapters))
	for _, c := range s.o.Adapters {
		out = append(out, c.Adapter.Platform())
	}
	sort.Strings(out)
	return out
}

// Start runs every adapter and its delivery worker in the background.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return apperr.New(apperr.Conflict, "the gateway is already running")
	}
	s.started = true
	run, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = cancel
	s.turnCtx, s.turnCancel = context.WithCancel(context.WithoutCancel(ctx))
	s.mu.Unlock()
	if s.o.Hooks != nil {
		if err := s.o.Hooks.Start(ctx); err != nil {
			s.log.Warn("gateway: event hooks not started", "error", err)
		}
		s.emit("gateway:startup", map[string]any{"platforms": s.Platforms()})
	}
	for _, c := range s.o.Adapters {
		c := c
		p := c.Adapter.Platform()
		if cm, ok := c.Adapter.(CommandMenu); ok {
			cm.SetCommands(func() []hooks.Command { return s.menuFor(p) })
		}
		if g, ok := c.Adapter.(Gatekeeper); ok {
			g.SetAdmits(func(m Inbound) bool { return s.admits(c, m) })
		}
		s.report(p, Starting, "", nil)
		s.wg.Add(2)
		go func() {
			defer s.wg.Done()
			err := c.Adapter.Run(run, func(m Inbound) { s.accept(c, m) }, func(state, detail string, err error) { s.report(p, state, detail, err) })
			switch {
			case err != nil && run.Err() == nil:
				s.report(p, Errored, "not running", err)
			default:
				s.report(p, Stopped, "", nil)
			}
		}()
		go func() {
			defer s.wg.Done()
			s.deliver(run, c.Adapter)
		}()
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.housekeeping(run)
	}()
	return nil
}

// gatewayCommands are the commands the gateway answers itself, listed
// in a platform's own menu of commands (CommandMenu) with the registry's.
var gatewayCommands = []hooks.Command{
	{Name: "approve", Description: "Approve the tool call waiting for you: once, or for the session, or always", ArgsHint: "[session|always]"},
	{Name: "deny", Description: "Refuse the tool call waiting for you"},
	{Name: "stop", Description: "Stop the turn under way (what it stored stays)"},
	{Name: "verbose", Description: "Cycle how tool calls are shown here: off, new, all, verbose"},
	{Name: "sethome", Description: "Make this chat the home channel: where scheduled jobs delivering to this platform post"},
}

// HomeSetText is what /sethome answers.
const HomeSetText = "📬 This chat is now the home channel on %s: scheduled jobs that deliver to %s post here."

// skillMenu marks a skill's command in a menu: listed after every other
// command, when the platform's menu must be cut.
const skillMenu = "\x00skill"

// menuFor is the registry's commands with the gateway's own, then the
// skills' offered on platform (a name taken is the command's). A skill's
// hyphens are underscores where the platform's names take no hyphen
// (Telegram): typed so, the command runs the skill all the same.
func (s *Service) menuFor(platform string) []hooks.Command {
	list := s.o.Bus.Commands().List()
	for _, c := range gatewayCommands {
		if !slices.ContainsFunc(list, func(r hooks.Command) bool { return r.Name == c.Name }) {
			list = append(list, c)
		}
	}
	if s.o.SkillCommands == nil {
		return list
	}
	for _, sc := range s.o.SkillCommands(platform) {
		name := sc[0]
		if platform == "telegram" {
			name = strings.ReplaceAll(name, "-", "_")
		}
		if !slices.ContainsFunc(list, func(r hooks.Command) bool { return r.Name == name || r.Name == sc[0] }) {
			list = append(list, hooks.Command{Name: name, Description: sc[1], ArgsHint: "[instruction]", Plugin: skillMenu})
		}
	}
	return list
}

// Stop stops receiving, lets the turns in flight finish (bounded by ctx),
// then stops delivering. Replies not yet sent stay in the outbox for the
// next host.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	if !s.started {
		s.mu.Unlock()
		return nil
	}
	s.started = false
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.turns.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.turnCancel()
		<-done
	}
	s.stop()
	s.turnCancel()
	s.wg.Wait()
	if s.o.Hooks != nil {
		return s.o.Hooks.Stop(ctx) // what they were told reaches them first, bounded by ctx
	}
	return nil
}

// Wake tells platform's delivery worker that the outbox changed.
func (s *Service) Wake(platform string) {
	if ch, ok := s.wake[platform]; ok {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// report records an adapter's state (in the store, for every surface).
func (s *Service) report(platform, state, detail string, err error) {
	s.mu.Lock()
	key := state + "\x00" + detail
	if err == nil && s.state[platform] == key {
		s.mu.Unlock()
		return
	}
	s.state[platform] = key
	s.mu.Unlock()
	st := Status{Platform: platform, State: state, Detail: detail, PID: os.Getpid(), Process: s.o.Process}
	if err != nil {
		st.LastError = err.Error()
		s.log.Warn("gateway adapter", "platform", platform, "state", state, "detail", detail, "error", err)
	} else {
		s.log.Info("gateway adapter", "platform", platform, "state", state, "detail", detail)
	}
	if werr := s.store.SetStatus(context.Background(), st); werr != nil {
		s.log.Warn("gateway: cannot record the adapter's state", "platform", platform, "error", werr)
	}
}

// source is who sent m, and where: in a shared chat, the sender's own
// conversation when the options say so.
func (s *Service) source(m Inbound) hooks.Source {
	src := hooks.Source{UserID: m.UserID, ChatID: m.ChatID, ThreadID: m.ThreadID, ChatType: m.ChatType, UserName: m.UserName}
	if m.ChatType != "" && m.ChatType != "dm" {
		src.PerUser = m.ThreadID == "" && s.o.GroupSessionsPerUser || m.ThreadID != "" && s.o.ThreadSessionsPerUser
	}
	return src
}

// SessionKey is the conversation's key:
// <platform>:<chat_type>:<chat_id>[:<thread_id>][:<user_id>].
func SessionKey(platform string, src hooks.Source) string {
	return hooks.GatewayContext(platform, "", src).SessionKey
}

// accept queues a message behind the earlier ones of its conversation.
func (s *Service) accept(c Configured, m Inbound) {
	if m.Reaction != nil {
		s.reacted(c, m)
		return
	}
	if m.Tap != nil {
		s.tapped(c, m)
		return
	}
	src := s.source(m)
	key := SessionKey(c.Adapter.Platform(), src)
	if s.answerApproval(c, key, m) || s.answerQuestion(c, key, m) || s.stopTurn(c, key, m) {
		return
	}
	s.queue(key, job{c: c, msg: m})
}

func (s *Service) drain(key string) {
	defer s.turns.Done()
	for {
		s.mu.Lock()
		cv := s.convos[key]
		if len(cv.pending) == 0 {
			delete(s.convos, key)
			s.mu.Unlock()
			return
		}
		j := cv.pending[0]
		cv.pending = cv.pending[1:]
		if j.next == nil {
			cv.current = j
		}
		s.mu.Unlock()
		s.sem <- struct{}{}
		timed, cancel := turns.WithBudget(s.turnCtx, s.o.TurnTimeout) // the sender's time to answer not counted
		ctx, stop := context.WithCancelCause(timed)
		s.mu.Lock()
		s.running[key] = stop
		s.mu.Unlock()
		if j.next != nil {
			err := s.follow(ctx, key, j)
			if err != nil {
				s.log.Warn("gateway: a turn the agent started itself failed", "platform", j.c.Adapter.Platform(), "error", err)
			}
		} else if err := s.handle(ctx, j.c, j.msg); err != nil {
			s.log.Warn("gateway: a message was not answered", "platform", j.c.Adapter.Platform(), "error", err)
		}
		s.mu.Lock()
		delete(s.running, key)
		s.mu.Unlock()
		stop(nil)
		cancel()
		<-s.sem
	}
}

// awaitIdle waits, its turn's clock standing still, while a turn of
// another surface runs in the conversation's session (the window's, a
// terminal's): two turns would write one transcript at once. The chat's
// own turns run one after another anyway.
func (s *Service) awaitIdle(ctx context.Context, sid, text string) error {
	if s.o.Loop.Busy(sid, text) == nil {
		return nil
	}
	release := turns.Hold(ctx)
	defer release()
	for s.o.Loop.Busy(sid, text) != nil {
		if !sleep(ctx, 250*time.Millisecond) {
			return ctx.Err()
		}
	}
	return nil
}

// What a person not let in is told in a DM when they are offered pairing,
// in the familiar gateway's words (its command Atrium's).
const (
	PairingText     = "Hi~ I don't recognize you yet!\n\nHere's your pairing code: `%s`\n\nAsk the bot owner to run:\n`atrium pairing approve %s %s`"
	PairingBusyText = "Too many pairing requests right now~ Please try again later!"
)

// offerPairing answers a DM from a person not let in with a pairing code
// (not when they asked within the last 10 minutes; later when the platform
// has too many waiting). The code is never logged.
func (s *Service) offerPairing(ctx context.Context, platform string, m Inbound, out Outbound) error {
	code, outcome, err := s.store.AskPairing(ctx, platform, m.UserID, m.UserName, m.ChatID)
	if err != nil {
		return err
	}
	switch outcome {
	case PairingIssued:
		s.log.Info("gateway: offered pairing to a sender who is not allowed", "platform", platform, "user_id", m.UserID)
		out.Text = fmt.Sprintf(PairingText, code, platform, code)
	case PairingBusy:
		s.log.Info("gateway: a pairing request was refused: too many waiting, or approvals locked", "platform", platform, "user_id", m.UserID)
		out.Text = PairingBusyText
	default:
		return nil
	}
	out.Origin = "pairing"
	return s.enqueue(ctx, out)
}

// RefusalText is what an unknown sender is told, once.
const RefusalText = "Sorry, this assistant only answers the people its owner allowed. Your %s id is %s; the owner can add it to gateway.%s.allowed_users."

// handle answers one message: access, pre_gateway_dispatch, route,
// hygiene, the turn, then the reply into the outbox.
func (s *Service) handle(ctx context.Context, c Configured, m Inbound) error {
	platform := c.Adapter.Platform()
	taken, err := s.store.Take(ctx, platform, m.EventID)
	if err != nil || !taken {
		return err
	}
	_ = s.store.count(ctx, platform, "received")
	src := s.source(m)
	key := SessionKey(platform, src)
	out := Outbound{Platform: platform, ChatID: m.ChatID, ThreadID: m.ThreadID, ReplyTo: m.ReplyTo}
	if !s.admits(c, m) {
		// Deny by default: nothing reaches the model or the plugins. In a
		// DM the sender is given a pairing code, or nothing, or (as in a
		// group) told once.
		answer := RefuseDM // in a group
		if m.ChatType == "dm" {
			answer = c.unknownDM()
		}
		if answer == PairDM {
			return s.offerPairing(ctx, platform, m, out)
		}
		first, err := s.store.Refuse(ctx, platform, m.UserID, m.UserName, m.ChatID)
		if answer == IgnoreDM {
			s.log.Info("gateway: ignored a DM from a sender who is not allowed", "platform", platform, "user_id", m.UserID)
			return err
		}
		s.log.Info("gateway: refused a sender who is not allowed", "platform", platform, "user_id", m.UserID, "first", first)
		if err != nil || !first {
			return err
		}
		out.Text, out.Origin = fmt.Sprintf(RefusalText, platform, m.UserID, platform), "refusal"
		return s.enqueue(ctx, out)
	}
	text := stripBotName(m.Text)
	sid, err := s.current(ctx, key)
	if err != nil {
		return err
	}
	if s.o.Bus.HasSync(hooks.PreGatewayDispatch) {
		d, err := s.dispatch(ctx, platform, key, sid, text, m, src)
		if err != nil {
			return err
		}
		if d.Action == "skip" {
			s.log.Info("gateway: pre_gateway_dispatch skipped a message", "platform", platform, "plugin", d.Plugin, "reason", d.Reason)
			return nil
		}
		text = d.Text
	}
	if strings.TrimSpace(text) == "" && len(m.Files) == 0 {
		return nil
	}
	if name, _, ok := hooks.ParseCommand(text); ok && name == "start" {
		// a plugin's /start (here, or on the profile's plugin host) answers itself
		if !slices.ContainsFunc(s.o.Bus.Commands().List(), func(c hooks.Command) bool { return c.Name == "start" }) {
			out.Text, out.Origin = "Hello! Write a message to talk to the agent; /help lists the commands.", "reply"
			return s.enqueue(ctx, out)
		}
	}
	if s.nothingToApprove(text) {
		out.Text, out.Origin = "Nothing is waiting for your approval.", "reply"
		return s.enqueue(ctx, out)
	}
	if s.builtin(text, "stop") {
		out.Text, out.Origin = NothingToStopText, "reply"
		return s.enqueue(ctx, out)
	}
	if s.builtin(text, "sethome") {
		who := m.UserName
		if who == "" {
			who = m.UserID
		}
		if err := s.store.SetHome(ctx, platform, m.ChatID, m.ThreadID, who); err != nil {
			return err
		}
		out.Text, out.Origin = fmt.Sprintf(HomeSetText, platform, platform), "reply"
		return s.enqueue(ctx, out)
	}
	if s.builtin(text, "verbose") {
		out.Text, out.Origin = s.verbose(platform), "reply"
		return s.enqueue(ctx, out)
	}
	if sid == "" {
		sess, err := s.o.Sessions.Create(ctx, sessions.CreateParams{Title: title(platform, m), Source: "gateway", Platform: platform,
			SenderID: m.UserID, SenderName: clipRunes(m.UserName, 256)})
		if err != nil {
			return err
		}
		sid = sess.ID
		if err := s.store.SetRoute(ctx, key, platform, sid); err != nil {
			return err
		}
		s.emit("session:start", map[string]any{"platform": platform, "user_id": m.UserID, "session_id": sid, "session_key": key})
	} else if _, isCmd := commandName(text); !isCmd {
		// Between messages: a conversation above the soft threshold is
		// compacted before the next turn (gateway_hygiene).
		h, err := s.o.Loop.HygieneFor(ctx, sid, hooks.GatewayContext(platform, sid, src))
		if err != nil {
			s.log.Warn("gateway: hygiene failed; the turn goes on", "session", sid, "error", err)
		} else {
			s.compactedIn(platform, h)
			if h.SessionID != sid {
				sid = h.SessionID
				if err := s.store.SetRoute(ctx, key, platform, sid); err != nil {
					return err
				}
			}
		}
	}
	w := &turnInfo{c: c, m: m, key: key}
	ctx = context.WithValue(ctx, turnKey{}, w)
	if len(m.Files) > 0 {
		// Saved only now: for a sender let in, a message the plugins let
		// through, and not a command the gateway answered itself.
		text = strings.TrimSpace(s.receiveFiles(ctx, platform, m.Files) + "\n\n" + text)
	}
	cmd, isCmd := commandName(text)
	agent := map[string]any{"platform": platform, "user_id": m.UserID, "chat_id": m.ChatID, "thread_id": m.ThreadID,
		"chat_type": m.ChatType, "session_id": sid, "message": clipRunes(text, 500)}
	if !isCmd {
		s.emit("agent:start", agent)
		ctx = turns.WithSteps(ctx, func(iteration int, tools []string) {
			s.emit("agent:step", map[string]any{"platform": platform, "user_id": m.UserID, "session_id": sid,
				"iteration": iteration, "tool_names": tools})
		})
	}
	if err := s.awaitIdle(ctx, sid, text); err != nil {
		return err
	}
	stopTyping := s.typing(ctx, w)
	acked := s.acknowledge(ctx, w)
	var progress *progressMsg
	if !isCmd {
		ctx, progress = s.progressContext(ctx, w, sid)
	}
	if p := channelPrompt(c.ChannelPrompts, m); p != "" {
		ctx = turns.WithChannelPrompt(ctx, p)
	}
	t, err := s.o.Loop.Send(ctx, sid, text, hooks.GatewayContext(platform, sid, src))
	progress.finish() // its last lines before the reply
	stopTyping()
	s.compactedIn(platform, t)
	// The answer is written though the turn's context ended (/stop, the
	// turn's time ran out): the sender is told either way.
	var stopped *turns.Stop
	if err != nil {
		stopped = turns.StopOf(ctx, err) // /stop here, or Stop in the window
	}
	ctx = context.WithoutCancel(ctx)
	if t.SessionID != "" && t.SessionID != sid {
		if rerr := s.store.SetRoute(ctx, key, platform, t.SessionID); rerr != nil {
			return rerr
		}
	}
	out.SessionID, out.Origin = t.SessionID, "reply"
	acked(err == nil)
	switch {
	case stopped == turns.StopByReset:
		// The /new that stopped it answers next; the hooks hear this one
		// ended (agent:end without a response).
		s.told(platform, key, sid, text, cmd, isCmd, agent, t, "", nil)
		return nil
	case stopped != nil:
		out.Text, err = StoppedText, nil
	case err != nil:
		out.Text = "Sorry, that did not work: " + PlainError(err)
	default:
		out.Text = Answer(t)
		out.Markdown = t.Command == "" // the model's answer, not a command's output
	}
	s.told(platform, key, sid, text, cmd, isCmd, agent, t, out.Text, err)
	if out.Text == "" {
		return err
	}
	var after func()
	if err == nil && stopped == nil {
		after = progress.afterReply() // a failed or stopped turn keeps its lines
	}
	if eerr := s.enqueueReply(ctx, out, after); eerr != nil {
		return eerr
	}
	return nil
}

// told tells the event hooks how a message ended: command:<name> for a
// slash command (with session:compress after a /compress that compacted,
// session:end and session:reset after a /new that started a new session),
// agent:end for a message the agent answered.
func (s *Service) told(platform, key, sid, text, cmd string, isCmd bool, agent map[string]any, t turns.Turn, reply string, err error) {
	if s.o.Hooks == nil {
		return
	}
	if !isCmd {
		end := maps.Clone(agent)
		end["response"] = clipRunes(reply, 500)
		s.emit("agent:end", end)
		return
	}
	_, args, _ := hooks.ParseCommand(text)
	s.emit("command:"+cmd, map[string]any{"platform": platform, "user_id": agent["user_id"], "command": cmd, "args": args})
	if cmd == "compress" && err == nil && t.SessionID != "" && t.SessionID != sid {
		s.compressed(platform, t.SessionID, sid)
	}
	if (cmd == "new" || cmd == "reset") && err == nil && t.SessionID != "" && t.SessionID != sid {
		who := map[string]any{"platform": platform, "user_id": agent["user_id"], "session_key": key}
		s.emit("session:end", who)
		s.emit("session:reset", maps.Clone(who))
	}
}

// reacted tells the event hooks of an emoji reaction (reaction:added,
// reaction:removed), once however often the platform delivers it; from a
// sender who may not talk to the agent, nothing (deny by default).
func (s *Service) reacted(c Configured, m Inbound) {
	if s.o.Hooks == nil || !s.admits(c, m) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	platform := c.Adapter.Platform()
	if taken, err := s.store.Take(ctx, platform, m.EventID); err != nil || !taken {
		return
	}
	r := m.Reaction
	name := "reaction:removed"
	if r.Added {
		name = "reaction:added"
	}
	var raw any
	_ = json.Unmarshal(r.Raw, &raw)
	s.emit(name, map[string]any{"platform": platform, "reaction": r.Name, "user_id": m.UserID, "item_user_id": r.ItemUser,
		"item_type": r.ItemType, "channel_id": m.ChatID, "message_ts": r.MessageTS, "team_id": r.TeamID, "event_ts": r.EventTS,
		"raw_event": raw})
}

// compressed tells the event hooks that a compaction changed a
// conversation (session:compress): rotated from oldID to sessionID, or in
// place (oldID "" or sessionID). compression_count is how many times the
// conversation was compressed into a new part up to this one (its parts
// before it).
func (s *Service) compressed(platform, sessionID, oldID string) {
	if s.o.Hooks == nil {
		return
	}
	inPlace := oldID == "" || oldID == sessionID
	if inPlace {
		oldID = ""
	}
	count := 0
	if parts, err := s.o.Sessions.Lineage(context.Background(), sessionID); err == nil {
		count = max(slices.IndexFunc(parts, func(p sessions.Session) bool { return p.ID == sessionID }), 0)
	}
	s.emit("session:compress", map[string]any{"platform": platform, "session_id": sessionID, "old_session_id": oldID,
		"in_place": inPlace, "compression_count": count})
}

// compactedIn tells the event hooks of each compaction of t.
func (s *Service) compactedIn(platform string, t turns.Turn) {
	for _, r := range t.Compactions {
		if r.Changed {
			s.compressed(platform, r.SessionID, r.OldSessionID)
		}
	}
}

// current is the live session of a conversation: its route, followed along
// compression rotations to the tip; "" when it has none, or when its
// session ended (/exit), was deleted or is in the trash.
func (s *Service) current(ctx context.Context, key string) (string, error) {
	sid, err := s.store.Route(ctx, key)
	if err != nil || sid == "" {
		return "", err
	}
	tip, err := s.o.Loop.Continuation(ctx, sid)
	if apperr.CodeOf(err) == apperr.NotFound {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	sess, err := s.o.Sessions.Get(ctx, tip)
	if apperr.CodeOf(err) == apperr.NotFound {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if sess.Ended() || sess.Trashed() {
		return "", nil
	}
	return tip, nil
}

// dispatch asks pre_gateway_dispatch what to do with a message.
func (s *Service) dispatch(ctx context.Context, platform, key, sid, text string, m Inbound, src hooks.Source) (hooks.DispatchDecision, error) {
	ev := hooks.GatewayEvent{Text: text, MessageType: "text", MessageID: m.MessageID, Timestamp: float64(m.At.UnixMilli()) / 1000,
		Platform: platform, UserID: m.UserID, UserName: m.UserName, ChatID: m.ChatID, ChatType: m.ChatType, ThreadID: m.ThreadID,
		Source: src, MediaURLs: []string{}}
	if _, ok := commandName(text); ok {
		ev.MessageType = "command"
	}
	if m.ReplyTo != "" {
		ev.ReplyToMessageID = &m.ReplyTo
	}
	results, err := s.o.Bus.CallSync(ctx, hooks.PreGatewayDispatch, hooks.GatewayDispatchPayload{Event: ev,
		Gateway: hooks.GatewayInfo{Platform: platform, Platforms: s.Platforms(), Profile: s.o.Profile}, Platform: platform,
		SessionKey: key, SessionID: hooks.StrOrNil(sid), UserID: m.UserID, ChatID: m.ChatID, Text: text})
	if err != nil {
		return hooks.DispatchDecision{}, err
	}
	return hooks.DecideDispatch(results, text), nil
}

// acknowledge marks the message a turn answers, where the platform
// does (an Acknowledger), and returns what marks how it ended.
func (s *Service) acknowledge(ctx context.Context, w *turnInfo) func(ok bool) {
	a, ok := w.c.Adapter.(Acknowledger)
	if !ok {
		return func(bool) {}
	}
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	_ = a.Working(c, w.m)
	cancel()
	return func(ok bool) {
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = a.Done(c, w.m, ok)
	}
}

// typing shows "typing…" until the returned func is called, where the
// platform has it, except while the sender is asked for an approval, and
// takes down an indicator that stays (TypingStopper) when the turn ends
// and before it shows again after an approval; failures are ignored.
func (s *Service) typing(ctx context.Context, w *turnInfo) func() {
	t, ok := w.c.Adapter.(Typer)
	if !ok {
		return func() {}
	}
	m := w.m
	stop := func() {
		if st, ok := t.(TypingStopper); ok {
			c, cc := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = st.StopTyping(c, m.ChatID, m.ThreadID)
			cc()
		}
	}
	tctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		paused := false
		for {
			switch {
			case w.waiting.Load():
				paused = true
			default:
				if paused { // the approval's message ended a standing indicator
					stop()
					paused = false
				}
				// Not cut off when the turn ends: a status call cancelled in
				// flight may have landed, and stop() could not know to take
				// it down. The turn's end waits for it (at most 5 s).
				c, cc := context.WithTimeout(context.WithoutCancel(tctx), 5*time.Second)
				_ = t.Typing(c, m.ChatID, m.ThreadID)
				cc()
			}
			if !sleep(tctx, 4*time.Second) {
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
		stop()
	}
}

func (s *Service) enqueue(ctx context.Context, o Outbound) error {
	return s.enqueueThen(ctx, []Outbound{o}, nil)
}

// enqueueReply enqueues the agent's reply: its text, then the files its
// MEDIA: tags name (SplitReply); after as enqueueThen.
func (s *Service) enqueueReply(ctx context.Context, o Outbound, after func()) error {
	return s.enqueueThen(ctx, SplitReply(o, s.o.Media), after)
}

// enqueueThen is enqueue, then after, once this process delivered the
// first of msgs (never when it is given up, or delivered by another
// process).
func (s *Service) enqueueThen(ctx context.Context, msgs []Outbound, after func()) error {
	if len(msgs) == 0 {
		return nil
	}
	if after != nil {
		s.afterMu.Lock()
		defer s.afterMu.Unlock()
	}
	// The reply is stored even if the turn's ctx ran out meanwhile.
	ids, err := s.store.EnqueueAll(context.WithoutCancel(ctx), msgs, s.o.Deadline)
	if err != nil {
		return err
	}
	if after != nil {
		if s.afterSent == nil {
			s.afterSent = map[int64]func(){}
		}
		s.afterSent[ids[0]] = after
	}
	s.Wake(msgs[0].Platform)
	return nil
}

// delivered runs what was to follow delivery id (afterSent), once.
func (s *Service) delivered(id int64, sent bool) {
	s.afterMu.Lock()
	after := s.afterSent[id]
	delete(s.afterSent, id)
	s.afterMu.Unlock()
	if after != nil && sent {
		go after()
	}
}

// deliver sends platform's outbox in order, retrying with backoff; it
// never runs a turn again.
func (s *Service) deliver(ctx context.Context, a Adapter) {
	platform := a.Platform()
	wake := s.wake[platform]
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-wake:
			return true
		case <-t.C:
			return true
		}
	}
	for ctx.Err() == nil {
		d, ok, err := s.store.next(ctx, platform)
		if err != nil {
			if !wait(s.o.Poll) {
				return
			}
			continue
		}
		if !ok {
			if !wait(s.o.Poll) {
				return
			}
			continue
		}
		now := s.o.DB.Now()
		if d.NextAt.After(now) {
			if !wait(min(d.NextAt.Sub(now), s.o.Poll)) {
				return
			}
			continue
		}
		if now.After(d.Deadline) {
			_ = s.store.markFailed(ctx, d.ID, "gave up: "+d.LastError, now, true)
			s.delivered(d.ID, false)
			s.fileFailed(ctx, d, errors.New(d.LastError))
			continue
		}
		final, err := s.store.attempt(ctx, a, d, func(err error) (time.Time, bool) {
			delay := backoff(s.o.RetryBase, s.o.RetryMax, d.Attempts+1)
			if ra, ok := retryDelay(err); ok {
				delay = max(ra, s.o.RetryBase)
			}
			return now.Add(delay), IsPermanent(err) || now.Add(delay).After(d.Deadline)
		})
		if err == nil {
			s.delivered(d.ID, true)
			continue
		}
		if ctx.Err() != nil {
			return
		}
		if final {
			s.delivered(d.ID, false)
			s.fileFailed(ctx, d, err)
		}
		state, detail := s.currentState(platform)
		s.report(platform, state, detail, fmt.Errorf("delivery failed (attempt %d): %w", d.Attempts+1, err))
	}
}

// attempt sends d once with a and records how it went: sent (its
// message's id kept, counted), or failed, to be tried again at the time
// retry gives unless retry says the failure is final. A send ctx cut off
// is not recorded.
func (st *Store) attempt(ctx context.Context, a Adapter, d Delivery, retry func(error) (next time.Time, final bool)) (final bool, err error) {
	mid, err := send(ctx, a, d)
	if err == nil {
		if ok, _ := st.markSent(context.WithoutCancel(ctx), d.ID, mid); ok {
			_ = st.count(context.WithoutCancel(ctx), d.Platform, "sent")
		}
		return false, nil
	}
	if ctx.Err() != nil {
		return false, err
	}
	next, final := retry(err)
	_ = st.markFailed(ctx, d.ID, err.Error(), next, final)
	return final, err
}

// send sends one delivery: its text, or its file (a platform that
// cannot send files is sent a line naming it).
func send(ctx context.Context, a Adapter, d Delivery) (string, error) {
	// A file's upload may take longer than a message's round trip.
	timeout := 30 * time.Second
	if d.File != nil {
		timeout = 5 * time.Minute
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	m := Message{ChatID: d.ChatID, ThreadID: d.ThreadID, ReplyTo: d.ReplyTo, Text: d.Text, Buttons: d.Buttons, File: d.File, Markdown: d.Markdown}
	if d.File == nil {
		return a.Send(sctx, m)
	}
	if fs, ok := a.(FileSender); ok {
		return fs.SendFile(sctx, m)
	}
	m.File, m.Text, m.Markdown = nil, "📎 File: "+d.File.Path, false
	return a.Send(sctx, m)
}

// FileFailedText tells a chat a file of a reply could not be sent.
const FileFailedText = "⚠️ Could not send %s: %s"

// fileFailed tells the chat that a file it was to get was given up (a
// text's failure is on the Gateway page only: it could not be told).
func (s *Service) fileFailed(ctx context.Context, d Delivery, err error) {
	if _, ferr := s.store.tellFileFailed(ctx, d, err, s.o.Deadline); ferr != nil {
		s.log.Warn("gateway: cannot tell a chat a file was not sent", "platform", d.Platform, "error", ferr)
	}
}

// tellFileFailed queues the chat's notice of a file of d given up for err
// and returns its row (nothing when d is no file).
func (st *Store) tellFileFailed(ctx context.Context, d Delivery, err error, deadline time.Duration) (int64, error) {
	if d.File == nil {
		return 0, nil
	}
	// Said once: "Could not send a.png: it is 60 MB, larger than …".
	reason, name := err.Error(), d.File.Name
	if rest, ok := strings.CutPrefix(reason, name+": "); ok {
		reason = rest
	} else if rest, ok := strings.CutPrefix(reason, name+" is "); ok {
		reason = "it is " + rest
	} else if strings.TrimSpace(reason) == "" {
		reason = "it was not sent within the delivery deadline" // no attempt was made (no worker ran)
	}
	o := Outbound{Platform: d.Platform, ChatID: d.ChatID, ThreadID: d.ThreadID, ReplyTo: d.ReplyTo, SessionID: d.SessionID,
		Origin: "file-failed", Text: fmt.Sprintf(FileFailedText, d.File.Name, clipRunes(reason, 300))}
	return st.Enqueue(context.WithoutCancel(ctx), o, deadline)
}

// SendNow sends the outbox rows ids (of a's platform) now, in order, each
// once: for a process that holds the profile's gateway lock but runs no
// gateway (the send_message tool in a terminal). A row sent is marked
// sent; one that fails for good is given up (a file's failure told to the
// chat, sent too); one that fails for now stays queued for the next
// gateway, and so do the rows after it (the outbox of a platform goes out
// in order). It returns the rows as they are after.
func (st *Store) SendNow(ctx context.Context, a Adapter, ids []int64) ([]Delivery, error) {
	rows, err := st.Rows(ctx, ids)
	if err != nil {
		return nil, err
	}
	var extra []int64
	for _, d := range rows {
		if d.State != StatePending || d.Platform != a.Platform() {
			continue
		}
		final, err := st.attempt(ctx, a, d, func(err error) (time.Time, bool) {
			delay := time.Second
			if ra, ok := retryDelay(err); ok {
				delay = ra
			}
			return st.db.Now().Add(delay), IsPermanent(err)
		})
		if err == nil {
			continue
		}
		if !final {
			break
		}
		if id, terr := st.tellFileFailed(ctx, d, err, 0); terr == nil && id != 0 {
			extra = append(extra, id)
		}
	}
	if len(extra) > 0 {
		if _, err := st.SendNow(ctx, a, extra); err != nil {
			return nil, err
		}
	}
	return st.Rows(ctx, ids)
}

// Rows are the outbox rows ids, in the order of ids (one no longer there
// left out).
func (st *Store) Rows(ctx context.Context, ids []int64) ([]Delivery, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var rows []deliveryRow
	if err := st.db.Read.WithContext(ctx).Raw(`SELECT `+deliveryCols+` FROM gateway_outbox WHERE id IN ?`, ids).Scan(&rows).Error; err != nil {
		return nil, err
	}
	byID := map[int64]Delivery{}
	for _, r := range rows {
		byID[r.ID] = r.delivery()
	}
	out := make([]Delivery, 0, len(ids))
	for _, id := range ids {
		if d, ok := byID[id]; ok {
			out = append(out, d)
		}
	}
	return out, nil
}

func (s *Service) currentState(platform string) (string, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, detail, _ := strings.Cut(s.state[platform], "\x00")
	if st == "" {
		return Starting, ""
	}
	return st, detail
}

// housekeeping forgets old inbound ids.
// How long the outbox keeps a delivered reply, and the Gateway page a
// refused sender not seen since.
const (
	DeliveredKept = 30 * 24 * time.Hour
	RefusedKept   = 90 * 24 * time.Hour
)

func (s *Service) housekeeping(ctx context.Context) {
	for {
		now := s.o.DB.Now()
		_ = s.store.PruneInbound(ctx, now.Add(-7*24*time.Hour))
		if sent, refused, err := s.store.PruneDelivered(ctx, now.Add(-DeliveredKept), now.Add(-RefusedKept)); err != nil {
			s.log.Warn("gateway: cannot prune the outbox", "error", err)
		} else if sent+refused > 0 {
			s.log.Info("gateway: pruned delivered replies and old refusals", "replies", sent, "refusals", refused)
		}
		if n, err := pruneMedia(s.o.MediaDir, now.Add(-MediaKept)); err != nil {
			s.log.Warn("gateway: cannot prune the files people sent", "error", err)
		} else if n > 0 {
			s.log.Info("gateway: pruned files people sent", "files", n)
		}
		if !sleep(ctx, time.Hour) {
			return
		}
	}
}

// stripBotName turns Telegram's "/cmd@my_bot args" into "/cmd args".
func stripBotName(text string) string {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "/") {
		return text
	}
	head, rest, _ := strings.Cut(t, " ")
	if i := strings.IndexByte(head, '@'); i > 0 {
		head = head[:i]
	}
	if rest == "" {
		return head
	}
	return head + " " + rest
}

func commandName(text string) (string, bool) {
	n, _, ok := hooks.ParseCommand(text)
	return n, ok
}

func title(platform string, m Inbound) string {
	who := m.UserName
	if who == "" {
		who = m.UserID
	}
	p := strings.ToUpper(platform[:1]) + platform[1:]
	if m.ChatType != "" && m.ChatType != "dm" {
		return clipRunes(fmt.Sprintf("%s %s %s · %s", p, m.ChatType, m.ChatID, who), 200)
	}
	return clipRunes(fmt.Sprintf("%s · %s", p, who), 200)
}

func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

func nonEmpty(xs ...string) []string {
	var out []string
	for _, x := range xs {
		if strings.TrimSpace(x) != "" {
			out = append(out, x)
		}
	}
	return out
}

// Answer is what a turn says back: a command's output and the reply (every
// reply, when a hook kept the turn going), then what hooks asked to show.
func Answer(t turns.Turn) string {
	parts := []string{t.Output}
	for _, c := range t.Continued {
		parts = append(parts, c.Reply)
	}
	parts = append(parts, t.Reply)
	for _, n := range t.Notes {
		parts = append(parts, "("+n+")")
	}
	return strings.TrimSpace(strings.Join(nonEmpty(parts...), "\n\n"))
}

// PlainError is what a chat is told of a failure: the message of a coded
// error, never an internal chain.
func PlainError(err error) string {
	var e *apperr.Error
	if errors.As(err, &e) && e.Code != apperr.Internal {
		return err.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "the answer took too long."
	}
	return "something went wrong on the agent's side (its owner can see the details in the log)."
}
