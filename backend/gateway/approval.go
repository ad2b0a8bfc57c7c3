package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"atrium/backend/hooks"
	"atrium/backend/turns"
)

// turnInfo is the conversation whose turn is running, carried in the
// turn's context so Approve knows whom to ask and where.
type turnInfo struct {
	c       Configured
	m       Inbound
	key     string
	waiting atomic.Bool // an approval is asked: no "typing…" meanwhile
}

type turnKey struct{}

// pendingAsk is an approval waiting for the answer of user.
type pendingAsk struct {
	id     string // in its buttons' data: a tap on an older question's is not its answer
	user   string
	answer chan turns.Answer
	// keep is turns.Approval.KeepAlways: nil when "always" is not offered.
	keep func() error
}

// alwaysRefused is what the sender is told when "always" cannot be taken
// ("" when it can); the approval still waits.
func (a *pendingAsk) alwaysRefused() string {
	if a.keep == nil {
		return "This one cannot be allowed always. Reply /approve to run it, /approve session, or /deny."
	}
	if err := a.keep(); err != nil {
		return fmt.Sprintf("Always cannot be kept now (%s). Reply /approve to run it, /approve session, or /deny.", clipRunes(err.Error(), 300))
	}
	return ""
}

// Approve asks the sender whose message started the running turn whether
// a tool call a plugin flagged with {"action": "approve"} may run: a
// message in the conversation names the plugin, the tool and its
// arguments; the same sender answers /approve, /approve session (this
// call, and the plugin's later asks about the tool in this conversation)
// or /deny (or yes / no, which Slack users can type: Slack takes a leading
// slash for its own commands). No answer within ApprovalTimeout, or the
// turn ending, is a no. A loop built for the gateway (stack.Gateway) calls
// it for every approval; outside a gateway turn it refuses.
func (s *Service) Approve(ctx context.Context, a turns.Approval) (turns.Answer, error) {
	w, ok := ctx.Value(turnKey{}).(*turnInfo)
	if !ok {
		return turns.AnswerDeny, errors.New("gateway: no conversation to ask for the approval")
	}
	ask := &pendingAsk{id: shortID(), user: w.m.UserID, answer: make(chan turns.Answer, 1), keep: a.KeepAlways}
	forget := hold(s, s.asks, w.key, ask)
	out := Outbound{Platform: w.c.Adapter.Platform(), ChatID: w.m.ChatID, ThreadID: w.m.ThreadID, ReplyTo: w.m.ReplyTo,
		SessionID: a.SessionID, Origin: "approval", Text: approvalText(a, s.o.ApprovalTimeout), Buttons: approvalButtons(ask)}
	late := fmt.Sprintf("No answer within %s: %s was not run.", s.o.ApprovalTimeout, a.ToolName)
	answer, err := waitForSender(ctx, s, w, out, ask.answer, s.o.ApprovalTimeout, late, forget)
	if err != nil {
		return turns.AnswerDeny, err
	}
	return answer, nil
}

// hold makes v what waits in conversation key (m is s.asks or
// s.questions); forget takes it back, unless another took its place.
func hold[T any](s *Service, m map[string]*T, key string, v *T) (forget func()) {
	s.mu.Lock()
	m[key] = v
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		if m[key] == v {
			delete(m, key)
		}
		s.mu.Unlock()
	}
}

// waitForSender puts out, a question, to the running turn's conversation
// and waits for the sender's answer on answer (an approval's, a clarify
// question's). Meanwhile the conversation shows no "typing…" and the
// turn holds none of the Parallel turn slots (the conversation's drain
// holds one while it runs): other conversations go on; the slot is taken
// again to go on. No answer within timeout (0: no limit) tells the
// conversation late and is turns.ErrNoAnswer; an answer given as time ran
// out counts. The turn ending ends the wait. forget takes the question
// back, so that no later message is taken as its answer.
func waitForSender[A any](ctx context.Context, s *Service, w *turnInfo, out Outbound, answer <-chan A, timeout time.Duration,
	late string, forget func()) (A, error) {
	var none A
	w.waiting.Store(true)
	defer w.waiting.Store(false)
	defer forget()
	if err := s.enqueue(ctx, out); err != nil {
		return none, err
	}
	<-s.sem
	defer func() { s.sem <- struct{}{} }()
	var expired <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		expired = timer.C
	}
	select {
	case a := <-answer:
		return a, nil
	case <-expired:
		forget()
		select {
		case a := <-answer: // given as time ran out: it counts (an approval's "always" is kept already)
			return a, nil
		default:
		}
		out.Text = late
		if err := s.enqueue(ctx, out); err != nil {
			return none, err
		}
		return none, turns.ErrNoAnswer
	case <-ctx.Done():
		return none, ctx.Err()
	}
}

// approvalText is the message that asks for an approval.
func approvalText(a turns.Approval, timeout time.Duration) string {
	args, _ := json.Marshal(a.Args)
	var b strings.Builder
	if a.Plugin == "" {
		command, _ := a.Args["command"].(string)
		fmt.Fprintf(&b, "Approval needed: the %s wants to run %s.", a.ToolName, clipRunes(command, 300))
	} else {
		fmt.Fprintf(&b, "Approval needed: the plugin %s wants a person to approve the tool %s with %s.", a.Plugin, a.ToolName, clipRunes(string(args), 300))
	}
	if m := strings.TrimSpace(a.Message); m != "" {
		fmt.Fprintf(&b, " It says: %s", clipRunes(m, 300))
	}
	always := ""
	if a.KeepAlways != nil {
		always = ", /approve always to allow it from now on everywhere (" + a.PatternKey + ")"
	}
	what := a.ToolName + " from " + a.Plugin
	if a.Plugin == "" {
		what = "such commands (" + a.PatternKey + ")"
	}
	fmt.Fprintf(&b, "\nReply /approve to run it, /approve session to allow %s for the rest of this conversation%s, or /deny to refuse (or yes / no), within %s.",
		what, always, timeout)
	return b.String()
}

// shortID names a question in its buttons' data (16 hex digits: a
// Telegram button's data is at most 64 bytes).
func shortID() string { return strings.ReplaceAll(uuid.NewString(), "-", "")[:16] }

// approvalButtons are an approval's buttons, as the familiar gateway lays
// them out on Telegram: Allow Once and Session, then Always (when it can be
// kept) and Deny, two to a row; each one's data is ea:<answer>:<ask id>.
func approvalButtons(a *pendingAsk) [][]Button {
	bs := []Button{{"✅ Allow Once", "ea:once:" + a.id}, {"✅ Session", "ea:session:" + a.id}}
	if a.keep != nil {
		bs = append(bs, Button{"✅ Always", "ea:always:" + a.id})
	}
	bs = append(bs, Button{"❌ Deny", "ea:deny:" + a.id})
	var rows [][]Button
	for i := 0; i < len(bs); i += 2 {
		rows = append(rows, bs[i:min(i+2, len(bs))])
	}
	return rows
}

// What a tap on an approval's button says, as the familiar gateway says it.
var tapOutcome = map[turns.Answer]string{turns.AnswerOnce: "✅ Approved once", turns.AnswerSession: "✅ Approved for session",
	turns.AnswerAlways: "✅ Approved permanently", turns.AnswerDeny: "❌ Denied"}

const (
	tapExpired      = "⌛ Approval expired"
	tapNotYours     = "⛔ You are not authorized to approve commands."
	tapInvalid      = "Invalid approval data."
	tapExpiredShown = tapExpired + " — no command was waiting. It already timed out (and was denied) or was answered elsewhere."
)

// tap is a tap being answered: the notice that acknowledges it, and the
// edit that says under its message how it was answered (the buttons go).
type tap struct {
	s      *Service
	c      Configured
	m      Inbound
	ctx    context.Context
	key    string // the conversation
	choice string // ea:<choice>:<id>, cl:<choice>:<id>
	id     string
}

func (t tap) notice(text string, alert bool) {
	if tapper, ok := t.c.Adapter.(Tapper); ok {
		if err := tapper.AnswerTap(t.ctx, t.m.Tap.ID, text, alert); err != nil {
			t.s.log.Warn("gateway: could not acknowledge a tap", "platform", t.c.Adapter.Platform(), "error", err)
		}
	}
}

func (t tap) settle(label string) {
	if ed, ok := t.c.Adapter.(Editor); ok && t.m.Tap.MessageID != "" {
		if err := ed.Edit(t.ctx, t.m.ChatID, t.m.Tap.MessageID, strings.TrimSpace(t.m.Tap.MessageText+"\n\n"+label)); err != nil {
			t.s.log.Warn("gateway: could not mark a question answered", "platform", t.c.Adapter.Platform(), "error", err)
		}
	}
}

// mine says whether the tapper is the sender the question waits on.
func (t tap) mine(user string) bool {
	return user == t.m.UserID && t.s.admits(t.c, t.m)
}

// tapped takes a tap on a button under a question (an approval's, a
// clarify question's): the answer of the sender it waits on, when it is
// that question's; the tap is acknowledged either way. Another member's
// tap, or one on a question no longer waiting, answers nothing.
func (s *Service) tapped(c Configured, m Inbound) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.consumed(c, m)
	src := s.source(m)
	t := tap{s: s, c: c, m: m, ctx: ctx, key: SessionKey(c.Adapter.Platform(), src)}
	kind, rest, _ := strings.Cut(m.Tap.Data, ":")
	t.choice, t.id, _ = strings.Cut(rest, ":")
	switch {
	case t.id == "":
		t.notice(tapInvalid, false)
	case kind == "ea":
		s.tappedApproval(t)
	case kind == "cl":
		s.tappedQuestion(t)
	default:
		t.notice(tapInvalid, false)
	}
}

// tappedApproval takes a tap on an approval's button.
func (s *Service) tappedApproval(t tap) {
	answer := turns.Answer(t.choice)
	if _, known := tapOutcome[answer]; !known {
		t.notice(tapInvalid, false)
		return
	}
	s.mu.Lock()
	ask := s.asks[t.key]
	s.mu.Unlock()
	switch {
	case ask == nil || ask.id != t.id:
		t.notice(tapExpired, false)
		t.settle(tapExpiredShown)
		return
	case !t.mine(ask.user):
		t.notice(tapNotYours, true)
		return
	case answer == turns.AnswerAlways:
		if why := ask.alwaysRefused(); why != "" {
			t.notice(why, true) // the approval still waits, its buttons with it
			return
		}
	}
	select {
	case ask.answer <- answer:
	default: // answered already: a second answer changes nothing
	}
	t.notice(tapOutcome[answer], false)
	t.settle(tapOutcome[answer])
}

// approvalAnswer reads an answer to an approval: /approve, approve, yes
// or y; /approve session (or approve session); /approve always (or
// approve always); /deny, deny, no or n (any
// case, a bot's @name after a command allowed).
func approvalAnswer(text string) (answer turns.Answer, ok bool) {
	switch strings.Join(strings.Fields(strings.ToLower(stripBotName(text))), " ") {
	case "/approve", "approve", "yes", "y", "/approve once", "approve once":
		return turns.AnswerOnce, true
	case "/approve session", "approve session":
		return turns.AnswerSession, true
	case "/approve always", "approve always":
		return turns.AnswerAlways, true
	case "/deny", "deny", "no", "n":
		return turns.AnswerDeny, true
	}
	return "", false
}

// answerApproval takes a message from the sender an approval waits on, in
// that conversation, as its answer when it is one: the message reaches no
// turn (it is recorded as received, so a redelivery is not answered).
func (s *Service) answerApproval(c Configured, key string, m Inbound) bool {
	answer, ok := approvalAnswer(m.Text)
	if !ok {
		return false
	}
	s.mu.Lock()
	ask := s.asks[key]
	s.mu.Unlock()
	if ask == nil || ask.user != m.UserID || !s.admits(c, m) {
		return false
	}
	if answer == turns.AnswerAlways {
		if why := ask.alwaysRefused(); why != "" {
			s.consumed(c, m)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := s.enqueue(ctx, Outbound{Platform: c.Adapter.Platform(), ChatID: m.ChatID, ThreadID: m.ThreadID,
				ReplyTo: m.ReplyTo, Origin: "reply", Text: why}); err != nil {
				s.log.Warn("gateway: could not say why always was refused", "error", err)
			}
			return true
		}
	}
	select {
	case ask.answer <- answer:
	default: // answered already: a second answer changes nothing
	}
	s.consumed(c, m)
	return true
}

// consumed records a message the gateway took for itself (an answer, a
// /stop) as received, so a redelivery is not answered.
func (s *Service) consumed(c Configured, m Inbound) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	platform := c.Adapter.Platform()
	if taken, err := s.store.Take(ctx, platform, m.EventID); err == nil && taken {
		_ = s.store.count(ctx, platform, "received")
	}
}

// nothingToApprove answers /approve or /deny when no approval waits (a
// late answer, after the timeout), unless a plugin has such a command.
func (s *Service) nothingToApprove(text string) bool {
	return s.builtin(text, "approve") || s.builtin(text, "deny")
}

// builtin says whether text is the gateway's own /name: the command, which
// no plugin (here, or on the profile's plugin host) took.
func (s *Service) builtin(text, name string) bool {
	n, _, ok := hooks.ParseCommand(text)
	if !ok || n != name {
		return false
	}
	return !slices.ContainsFunc(s.o.Bus.Commands().List(), func(c hooks.Command) bool { return c.Name == name })
}

// What /stop answers: the turn stopped (what it stored stays), or nothing
// was running. The familiar gateway's words.
const (
	StoppedText       = "⚡ Stopped. You can continue this session."
	NothingToStopText = "No active task to stop."
)

// stopTurn takes /stop from a sender allowed in the conversation while a
// message of it is being answered: that turn is stopped
// (agent_loop_stopped: "Stop requested", "stop_command") and its answer
// says so. The /stop reaches no turn (it is recorded as received, so a
// redelivery is not answered). With nothing running it goes the usual way.
//
// /new (or /reset) from such a sender while a message is being answered stops that turn
// too ("Session reset requested", "new_command") and then starts the fresh
// session as usual, instead of waiting behind the turn.
func (s *Service) stopTurn(c Configured, key string, m Inbound) bool {
	name, _, isCmd := hooks.ParseCommand(strings.TrimSpace(stripBotName(m.Text)))
	if !isCmd || (name != "stop" && name != "new" && name != "reset") || !s.admits(c, m) {
		return false
	}
	s.mu.Lock()
	stop := s.running[key]
	s.mu.Unlock()
	if stop == nil {
		return false
	}
	if name == "new" || name == "reset" {
		stop(turns.StopByReset)
		return false // queued: it runs once the stopped turn has let go
	}
	stop(turns.StopByCommand)
	s.consumed(c, m)
	return true
}
