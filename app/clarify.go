package app

import (
	"context"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"atrium/backend/apperr"
	"atrium/backend/turns"
)

// Events of the clarify tool's questions asked in the window and the
// dashboard.
const (
	// EventClarifyPending (ClarifyDTO): the model asks the person a
	// question; the turn waits for the answer (Sessions.AnswerClarify).
	EventClarifyPending = "clarify:pending"
	// EventClarifyDone (ClarifyDoneDTO): it was answered, on this page or
	// another of the same process, or it ran out of time: its dialog goes.
	EventClarifyDone = "clarify:done"
)

// ClarifyDTO is a question the model asks the person (the clarify tool).
type ClarifyDTO struct {
	ID        string `json:"id"`
	SessionID string `json:"session_id"`
	Question  string `json:"question"`
	// Choices are the choices as shown, the first the model's pick (marked
	// "(Recommended)"); none: an open question. The person may always
	// answer in their own words instead.
	Choices     []string `json:"choices"`
	MultiSelect bool     `json:"multi_select"`
	// Title, Index and Of: the call asks Of questions one after the other
	// under Title; this is number Index (from 1). A single question has Of
	// 1.
	Title string `json:"title"`
	Index int    `json:"index"`
	Of    int    `json:"of"`
	// ExpiresAt is when the model stops waiting and decides itself (null:
	// it waits until the turn ends).
	ExpiresAt *time.Time `json:"expires_at"`
}

// ClarifyDoneDTO says how a question ended: answered, skipped, timeout or
// cancelled (the turn ended first).
type ClarifyDoneDTO struct {
	ID      string `json:"id"`
	Outcome string `json:"outcome"`
}

// AnswerClarifyRequest is the body of POST /api/clarify/{id}: the
// person's words (a choice as shown, or their own), or for a multi-select
// question the choices they picked (their own words among them when they
// gave some). Both empty skips the question.
type AnswerClarifyRequest struct {
	Response string   `json:"response"`
	Choices  []string `json:"choices"`
}

// Bounds of an answer.
const (
	maxClarifyAnswer = 16 << 10 // bytes of the words
	maxClarifyPicks  = 8        // choices picked (four, "Other", and room)
)

// Clarifications asks the person at the window or the dashboard the
// clarify tool's questions: Ask (the loop's Clarify) shows a dialog
// through the emitter (the window, or every open page of the dashboard)
// and waits for the answer; no answer within the question's time is
// turns.ErrNoAnswer (the model decides itself), the turn ending ends the
// question. Build it before the loop (NewClarifications), hand it to
// app.New.
type Clarifications struct {
	asking[ClarifyDTO, turns.Reply]
}

// NewClarifications builds the questions of one process.
func NewClarifications() *Clarifications {
	return &Clarifications{asking: newAsking[ClarifyDTO, turns.Reply](EventClarifyPending, EventClarifyDone,
		func(id, outcome string) any { return ClarifyDoneDTO{ID: id, Outcome: outcome} })}
}

// Ask implements turns.Options.Clarify.
func (c *Clarifications) Ask(ctx context.Context, q turns.Question) (turns.Reply, error) {
	id := uuid.Must(uuid.NewV7()).String()
	w := &asked[ClarifyDTO, turns.Reply]{id: id, dto: ClarifyDTO{ID: id, SessionID: q.SessionID, Question: q.Question,
		Choices: nonNil(q.Choices), MultiSelect: q.MultiSelect, Title: q.Title, Index: q.Index, Of: q.Of}}
	if q.Timeout > 0 {
		at := time.Now().Add(q.Timeout).UTC()
		w.dto.ExpiresAt = &at
	}
	return c.ask(ctx, w, q.Timeout, func(r turns.Reply) string {
		if r.Text == "" && len(r.Picked) == 0 {
			return "skipped"
		}
		return "answered"
	})
}

// answer gives the person's answer to question id; the first answer is
// the one.
func (c *Clarifications) answer(id string, in AnswerClarifyRequest) error {
	if len(in.Response) > maxClarifyAnswer || !utf8.ValidString(in.Response) {
		return apperr.New(apperr.Invalid, "the answer is not text of at most %d KiB", maxClarifyAnswer>>10)
	}
	if len(in.Choices) > maxClarifyPicks {
		return apperr.New(apperr.Invalid, "at most %d choices can be picked", maxClarifyPicks)
	}
	for _, p := range in.Choices {
		if len(p) > maxClarifyAnswer || !utf8.ValidString(p) {
			return apperr.New(apperr.Invalid, "a choice is not text of at most %d KiB", maxClarifyAnswer>>10)
		}
	}
	return c.take(id, "question", func(w *asked[ClarifyDTO, turns.Reply]) (turns.Reply, error) {
		if len(in.Choices) == 0 {
			return turns.Reply{Text: in.Response}, nil
		}
		if !w.dto.MultiSelect {
			return turns.Reply{}, apperr.New(apperr.Invalid, "this question takes one answer (response), not a list of choices; it still waits")
		}
		r := turns.Reply{Picked: append([]string(nil), in.Choices...)}
		if in.Response != "" {
			r.Picked = append(r.Picked, in.Response) // their own words beside the choices
		}
		return r, nil
	})
}

func (s *Sessions) withClarifications(c *Clarifications) *Sessions {
	s.clarify = c
	return s
}

// PendingClarify lists the questions the model waits on the person's
// answer for (a page that opens later shows their dialogs too), oldest
// first.
func (s *Sessions) PendingClarify() ([]ClarifyDTO, error) { return s.clarify.list(), nil }

// AnswerClarify answers a question the model asked (the clarify tool); it
// returns what still waits. An id that waits no more (answered on another
// page, or out of time) is not found.
func (s *Sessions) AnswerClarify(id string, in AnswerClarifyRequest) ([]ClarifyDTO, error) {
	if err := s.clarify.answer(id, in); err != nil {
		return nil, err
	}
	return s.clarify.list(), nil
}
