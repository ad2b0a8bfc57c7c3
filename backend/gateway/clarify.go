package gateway

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"atrium/backend/hooks"
	"atrium/backend/turns"
)

// The clarify tool on a chat platform: the question goes to the
// conversation as a message, its choices as a numbered list (and, where
// the platform has them, as buttons); the next message of the sender whose
// message started the turn is the answer (a number picks a choice, numbers
// between commas several of a multi-select question, anything else is
// their own words), as is their tap on a choice. A command (/stop, /new,
// ...) is no answer: it goes its usual way.

// pendingQuestion is a clarify question waiting for the answer of user.
type pendingQuestion struct {
	id     string // in its buttons' data: a tap on an older question's is not its answer
	user   string
	q      turns.Question
	answer chan turns.Reply
}

// Clarify asks the sender whose message started the running turn the
// clarify tool's question, in that conversation, and waits for the
// answer: no answer within the question's Timeout is turns.ErrNoAnswer
// (the model decides itself, and the conversation is told so), the turn
// ending ends the question. Outside a gateway turn it refuses.
func (s *Service) Clarify(ctx context.Context, q turns.Question) (turns.Reply, error) {
	w, ok := ctx.Value(turnKey{}).(*turnInfo)
	if !ok {
		return turns.Reply{}, errors.New("gateway: no conversation to ask the question in")
	}
	pq := &pendingQuestion{id: shortID(), user: w.m.UserID, q: q, answer: make(chan turns.Reply, 1)}
	forget := hold(s, s.questions, w.key, pq)
	out := Outbound{Platform: w.c.Adapter.Platform(), ChatID: w.m.ChatID, ThreadID: w.m.ThreadID, ReplyTo: w.m.ReplyTo,
		SessionID: q.SessionID, Origin: "clarify", Text: questionText(q), Buttons: questionButtons(pq)}
	late := fmt.Sprintf("No answer within %s: the agent goes on with its own choice.", q.Timeout)
	return waitForSender(ctx, s, w, out, pq.answer, q.Timeout, late, forget)
}

// questionText is the message that asks a clarify question.
func questionText(q turns.Question) string {
	var b strings.Builder
	if q.Of > 1 {
		if t := strings.TrimSpace(q.Title); t != "" {
			fmt.Fprintf(&b, "%s (question %d of %d)\n", clipRunes(t, 300), q.Index, q.Of)
		} else {
			fmt.Fprintf(&b, "Question %d of %d\n", q.Index, q.Of)
		}
	}
	fmt.Fprintf(&b, "❓ %s", clipRunes(q.Question, 2000))
	for i, c := range q.Choices {
		fmt.Fprintf(&b, "\n%d. %s", i+1, clipRunes(c, 500))
	}
	switch {
	case len(q.Choices) == 0:
		b.WriteString("\nReply with your answer.")
	case q.MultiSelect:
		b.WriteString("\nReply with the numbers of your choices (1, 3), or in your own words.")
	default:
		b.WriteString("\nReply with a number, or in your own words.")
	}
	if q.Timeout > 0 {
		fmt.Fprintf(&b, " Within %s, or the agent decides itself.", q.Timeout)
	}
	return b.String()
}

// questionButtons are a question's choices as buttons, one to a row, then
// "✍️ Other" for the sender's own words, as the familiar gateway offers
// them; each one's data is cl:<number>:<question id> (cl:other:<id>). A
// question with several picks, or none, has none: its words say how.
func questionButtons(pq *pendingQuestion) [][]Button {
	if len(pq.q.Choices) == 0 || pq.q.MultiSelect {
		return nil
	}
	rows := make([][]Button, 0, len(pq.q.Choices)+1)
	for i, c := range pq.q.Choices {
		rows = append(rows, []Button{{clipRunes(c, 60), fmt.Sprintf("cl:%d:%s", i+1, pq.id)}})
	}
	return append(rows, []Button{{"✍️ Other", "cl:other:" + pq.id}})
}

// What a tap on a question's button says.
const (
	tapQuestionExpired = "⌛ This question is no longer waiting for an answer."
	tapNotAsked        = "⛔ The question was asked of someone else."
	tapOwnWords        = "✍️ Reply with your answer in your own words."
)

// tappedQuestion takes a tap on a clarify question's button: a choice is
// the answer, as its number in words is; Other asks for the sender's own
// words, which their next message gives.
func (s *Service) tappedQuestion(t tap) {
	s.mu.Lock()
	pq := s.questions[t.key]
	s.mu.Unlock()
	switch {
	case pq == nil || pq.id != t.id:
		t.notice(tapQuestionExpired, false)
		t.settle(tapQuestionExpired)
		return
	case !t.mine(pq.user):
		t.notice(tapNotAsked, true)
		return
	case t.choice == "other":
		t.notice(tapOwnWords, false)
		return
	}
	n, err := strconv.Atoi(t.choice)
	if err != nil || n < 1 || n > len(pq.q.Choices) {
		t.notice(tapInvalid, false)
		return
	}
	select {
	case pq.answer <- pq.q.Read(t.choice):
	default: // answered already: a second answer changes nothing
	}
	picked := "✅ " + clipRunes(pq.q.Choice(n), 200)
	t.notice(picked, false)
	t.settle(picked)
}

// answerQuestion takes a message from the sender a clarify question waits
// on, in that conversation, as its answer: the message reaches no turn
// (it is recorded as received, so a redelivery is not answered). A
// command is no answer.
func (s *Service) answerQuestion(c Configured, key string, m Inbound) bool {
	if _, _, isCmd := hooks.ParseCommand(strings.TrimSpace(stripBotName(m.Text))); isCmd || strings.TrimSpace(m.Text) == "" {
		return false
	}
	s.mu.Lock()
	pq := s.questions[key]
	s.mu.Unlock()
	if pq == nil || pq.user != m.UserID || !s.admits(c, m) {
		return false
	}
	select {
	case pq.answer <- pq.q.Read(m.Text):
	default: // answered already: a second answer changes nothing
	}
	s.consumed(c, m)
	return true
}
