package app

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"atrium/backend/apperr"
	"atrium/backend/turns"
)

// Events of the approvals asked in the window and the dashboard.
const (
	// EventApprovalPending (ApprovalDTO): a tool call a plugin wants
	// approved waits for the person's answer (Sessions.AnswerApproval).
	EventApprovalPending = "approval:pending"
	// EventApprovalDone (ApprovalDoneDTO): it was answered, on this page
	// or another of the same process, or it ran out of time: its dialog
	// goes.
	EventApprovalDone = "approval:done"
)

// ApprovalDTO is a tool call a plugin wants a person to approve.
type ApprovalDTO struct {
	ID        string    `json:"id"`
	SessionID string    `json:"session_id"`
	Plugin    string    `json:"plugin"`
	Tool      string    `json:"tool"`
	Args      string    `json:"args"` // the arguments, as JSON
	Message   string    `json:"message"`
	ExpiresAt time.Time `json:"expires_at"`
	// PatternKey is the rule a "session" or "always" answer covers
	// (plugin_rule:<rule_key or tool>); CanAlways whether "always" can be
	// kept in the profile.
	PatternKey string `json:"pattern_key"`
	CanAlways  bool   `json:"can_always"`
}

// ApprovalDoneDTO says how an approval ended: approved, denied, or
// timeout (or cancelled: the turn ended first).
type ApprovalDoneDTO struct {
	ID      string `json:"id"`
	Outcome string `json:"outcome"`
}

// AnswerApprovalRequest is the body of POST /api/approvals/{id}. Scope,
// with approve: "once" (the default), "session" (also later asks of the
// same rule in this conversation run without asking) or "always" (and in
// every conversation of the profile from now on, until revoked).
type AnswerApprovalRequest struct {
	Approve bool   `json:"approve"`
	Scope   string `json:"scope"`
}

// Approvals asks the person at the window or the dashboard about the tool
// calls a plugin's pre_tool_call flags with {"action": "approve"}: Ask (the
// loop's Approve) shows a dialog through the emitter (the window, or every
// open page of the dashboard) and waits for an answer; no answer within
// the timeout, or the turn ending, is a no. Build it before the loop
// (NewApprovals), hand it to app.New.
type Approvals struct {
	timeout time.Duration
	asking[ApprovalDTO, turns.Answer]
}

// NewApprovals builds the approvals of one process; timeout, used when an
// approval names none (turns.Approval.Timeout), <= 0 is
// turns.DefaultApprovalTimeout.
func NewApprovals(timeout time.Duration) *Approvals {
	if timeout <= 0 {
		timeout = turns.DefaultApprovalTimeout
	}
	return &Approvals{timeout: timeout, asking: newAsking[ApprovalDTO, turns.Answer](EventApprovalPending, EventApprovalDone,
		func(id, outcome string) any { return ApprovalDoneDTO{ID: id, Outcome: outcome} })}
}

// Ask implements turns.Options.Approve.
func (a *Approvals) Ask(ctx context.Context, ap turns.Approval) (turns.Answer, error) {
	args, _ := json.Marshal(ap.Args)
	timeout := a.timeout
	if ap.Timeout > 0 {
		timeout = ap.Timeout // approvals.timeout as config.yaml has it now
	}
	id := uuid.Must(uuid.NewV7()).String()
	q := &asked[ApprovalDTO, turns.Answer]{id: id, keep: ap.KeepAlways, dto: ApprovalDTO{ID: id, SessionID: ap.SessionID,
		Plugin: ap.Plugin, Tool: ap.ToolName, Args: string(args), Message: ap.Message, ExpiresAt: time.Now().Add(timeout).UTC(),
		PatternKey: ap.PatternKey, CanAlways: ap.KeepAlways != nil}}
	answer, err := a.ask(ctx, q, timeout, func(answer turns.Answer) string {
		if answer.Allows() {
			return "approved"
		}
		return "denied"
	})
	if err != nil {
		return turns.AnswerDeny, err
	}
	return answer, nil
}

func (s *Sessions) withApprovals(a *Approvals) *Sessions {
	s.approvals = a
	return s
}

// answer gives the person's answer to approval id; the first answer is
// the one (it stops waiting at once).
//
// An "always" that cannot be kept is refused before it is taken: the
// approval still waits, for another answer.
func (a *Approvals) answer(id string, answer turns.Answer) error {
	return a.take(id, "approval", func(q *asked[ApprovalDTO, turns.Answer]) (turns.Answer, error) {
		if answer == turns.AnswerAlways {
			if q.keep == nil {
				return "", apperr.New(apperr.Invalid, "this approval cannot be kept for always; it still waits: allow it once or for the session")
			}
			if err := q.keep(); err != nil {
				return "", apperr.Wrap(apperr.Invalid, err, "always cannot be kept now; the approval still waits: allow it once or for the session")
			}
		}
		return answer, nil
	})
}
