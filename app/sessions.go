package app

import (
	"context"

	"github.com/samber/lo"

	"atrium/backend/hooks"
	"atrium/backend/receipts"
	"atrium/backend/sessions"
	"atrium/backend/stack"
	"atrium/backend/turns"
)

// Sessions lists, reads, deletes, archives and talks to sessions.
type Sessions struct {
	base
	st       *stack.Stack
	loop     *turns.Loop
	platform string
}

// NewSessions binds st. loop runs Send; platform is told to plugins.
func NewSessions(ctx context.Context, st *stack.Stack, loop *turns.Loop, platform string) *Sessions {
	return &Sessions{base: base{ctx: ctx}, st: st, loop: loop, platform: platform}
}

// List returns one page of sessions, newest activity first.
func (s *Sessions) List(f ListFilter) (PageDTO, error) {
	ctx, cancel := s.with(readTimeout)
	defer cancel()
	bf := sessions.Filter{Archived: &f.Archived, Limit: f.Limit, Cursor: f.Cursor}
	if f.Source != "" {
		bf.Source = &f.Source
	}
	if f.Profile != "" {
		bf.Profile = &f.Profile
	}
	p, err := s.st.Sessions.List(ctx, bf)
	if err != nil {
		return PageDTO{}, err
	}
	return PageDTO{Sessions: toSessions(p.Sessions), Next: p.Next}, nil
}

// Search finds sessions whose title or messages contain every word of query.
func (s *Sessions) Search(query string, limit int) ([]HitDTO, error) {
	ctx, cancel := s.with(readTimeout)
	defer cancel()
	hits, err := s.st.Sessions.Search(ctx, query, sessions.SearchOptions{Limit: limit})
	if err != nil {
		return nil, err
	}
	return lo.Map(hits, toHit), nil
}

// Get returns one session.
func (s *Sessions) Get(id string) (SessionDTO, error) {
	ctx, cancel := s.with(readTimeout)
	defer cancel()
	out, err := s.st.Sessions.Get(ctx, id)
	if err != nil {
		return SessionDTO{}, err
	}
	return toSession(out), nil
}

// Transcript returns the active messages of a session, compaction markers
// flagged.
func (s *Sessions) Transcript(id string) ([]MessageDTO, error) {
	ctx, cancel := s.with(readTimeout)
	defer cancel()
	ms, err := s.st.Sessions.Messages(ctx, id, false)
	if err != nil {
		return nil, err
	}
	return lo.Map(ms, toMessage), nil
}

// Lineage returns the compression chain of a session, oldest first.
func (s *Sessions) Lineage(id string) ([]SessionDTO, error) {
	ctx, cancel := s.with(readTimeout)
	defer cancel()
	rows, err := s.st.Sessions.Lineage(ctx, id)
	if err != nil {
		return nil, err
	}
	return toSessions(rows), nil
}

// Preview says how many rows deleting ids would remove, cascades included.
func (s *Sessions) Preview(ids []string) (PreviewDTO, error) {
	ctx, cancel := s.with(readTimeout)
	defer cancel()
	affected, err := s.st.Sessions.DeletePreview(ctx, ids)
	if err != nil {
		return PreviewDTO{}, err
	}
	return toPreview(affected, ids), nil
}

// Delete removes sessions through a receipt; a retry with the same request
// id replays the first result.
func (s *Sessions) Delete(requestID string, ids []string) (ReceiptDTO, error) {
	return s.apply(receipts.OpDelete, requestID, ids)
}

// Archive hides sessions through a receipt.
func (s *Sessions) Archive(requestID string, ids []string) (ReceiptDTO, error) {
	return s.apply(receipts.OpArchive, requestID, ids)
}

// Unarchive shows archived sessions again, through a receipt.
func (s *Sessions) Unarchive(requestID string, ids []string) (ReceiptDTO, error) {
	return s.apply(receipts.OpUnarchive, requestID, ids)
}

func (s *Sessions) apply(op, requestID string, ids []string) (ReceiptDTO, error) {
	ctx, cancel := s.with(writeTimeout)
	defer cancel()
	r, err := s.st.Receipts.Apply(ctx, receipts.Request{RequestID: requestID, Op: op, SessionIDs: ids}, nil)
	if err != nil {
		return ReceiptDTO{}, err
	}
	return toReceipt(r), nil
}

// Send runs one user turn (or a /command) in a session.
func (s *Sessions) Send(sessionID, text string) (TurnDTO, error) {
	ctx, cancel := s.with(turnTimeout)
	defer cancel()
	t, err := s.loop.Send(ctx, sessionID, text, hooks.LocalContext(s.platform, sessionID))
	if err != nil {
		return TurnDTO{}, err
	}
	return toTurn(t), nil
}
