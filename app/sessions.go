package app

import (
	"context"
	"time"

	"github.com/samber/lo"

	"atrium/backend/apperr"
	"atrium/backend/hooks"
	"atrium/backend/limits"
	"atrium/backend/receipts"
	"atrium/backend/sessions"
	"atrium/backend/stack"
	"atrium/backend/tools"
	"atrium/backend/turns"
)

// Sessions lists, reads, deletes, archives and talks to sessions.
type Sessions struct {
	base
	st        *stack.Stack
	loop      *turns.Loop
	platform  string
	emit      Emitter
	saver     Saver
	approvals *Approvals
	clarify   *Clarifications
	untold    tools.Untold // ends of background processes waiting to be told (notices.go)
}

// NewSessions binds st. loop runs Send; platform is told to plugins; bulk
// requests report progress on emit.
func NewSessions(ctx context.Context, st *stack.Stack, loop *turns.Loop, platform string, emit Emitter) *Sessions {
	if emit == nil {
		emit = nopEmitter{}
	}
	s := &Sessions{base: base{ctx: ctx}, st: st, loop: loop, platform: platform, emit: emit, approvals: NewApprovals(0)}
	return s.tellEnds()
}

// List returns one page of sessions, newest activity first.
func (s *Sessions) List(f ListFilter) (PageDTO, error) {
	ctx, cancel := s.with(readTimeout)
	defer cancel()
	bf, err := f.backend()
	if err != nil {
		return PageDTO{}, err
	}
	p, err := s.st.Sessions.List(ctx, bf)
	if err != nil {
		return PageDTO{}, err
	}
	out := toSessions(p.Sessions, s.st.Sessions.TrashDays())
	if run := s.running(); run != nil {
		for i := range out {
			out[i].RunningIn = run[out[i].ID]
		}
	}
	return PageDTO{Sessions: out, Next: p.Next}, nil
}

// running is runningIn(s.st).
func (s *Sessions) running() map[string]string { return runningIn(s.st) }

// runningIn maps each session with a turn under way, in any process of the
// profile, to where its newest turn runs (nil when none runs): the
// sessions' RunningIn and the live runs event.
func runningIn(st *stack.Stack) map[string]string {
	runs := newestRuns(st)
	if len(runs) == 0 {
		return nil
	}
	m := make(map[string]string, len(runs))
	for id, r := range runs {
		m[id] = r.Platform
	}
	return m
}

// newestRuns maps each session with a turn under way, in any process of
// the profile, to its newest turn (nil when none runs).
func newestRuns(st *stack.Stack) map[string]turns.RunInfo {
	runs, err := st.Runs.Running("")
	if err != nil || len(runs) == 0 {
		return nil
	}
	m := make(map[string]turns.RunInfo, len(runs))
	for _, r := range runs { // oldest first: the newest wins
		m[r.SessionID] = r
	}
	return m
}

// Count is how many sessions the filter matches (limit and cursor ignored).
func (s *Sessions) Count(f ListFilter) (CountDTO, error) {
	ctx, cancel := s.with(readTimeout)
	defer cancel()
	bf, err := f.backend()
	if err != nil {
		return CountDTO{}, err
	}
	n, err := s.st.Sessions.Count(ctx, bf)
	return CountDTO{Count: n}, err
}

// IDs returns every session id the filter matches, in list order: "select
// all" in the current filter.
func (s *Sessions) IDs(f ListFilter) ([]string, error) {
	ctx, cancel := s.with(readTimeout)
	defer cancel()
	bf, err := f.backend()
	if err != nil {
		return nil, err
	}
	return s.st.Sessions.IDs(ctx, bf)
}

// Facets returns the sources and profiles the list can be filtered by.
func (s *Sessions) Facets() (FacetsDTO, error) {
	ctx, cancel := s.with(readTimeout)
	defer cancel()
	f, err := s.st.Sessions.Facets(ctx)
	return FacetsDTO(f), err
}

// Search finds sessions whose title or messages contain every word of query,
// archived ones only when archived is true (active ones otherwise).
func (s *Sessions) Search(query string, limit int, archived bool) ([]HitDTO, error) {
	ctx, cancel := s.with(readTimeout)
	defer cancel()
	hits, err := s.st.Sessions.Search(ctx, query, sessions.SearchOptions{Limit: limit, Archived: &archived})
	if err != nil {
		return nil, err
	}
	days := s.st.Sessions.TrashDays()
	return lo.Map(hits, func(h sessions.Hit, _ int) HitDTO { return toHit(h, days) }), nil
}

// Find searches in a scope (active, archived, trash, or all: active and
// archived).
func (s *Sessions) Find(in SearchRequest) ([]HitDTO, error) {
	ctx, cancel := s.with(readTimeout)
	defer cancel()
	sc := in.Scope
	if sc == "" {
		sc = sessions.ScopeAll
	}
	hits, err := s.st.Sessions.Search(ctx, in.Q, sessions.SearchOptions{Limit: in.Limit, Scope: sc})
	if err != nil {
		return nil, err
	}
	days := s.st.Sessions.TrashDays()
	return lo.Map(hits, func(h sessions.Hit, _ int) HitDTO { return toHit(h, days) }), nil
}

// Get returns one session.
func (s *Sessions) Get(id string) (SessionDTO, error) {
	ctx, cancel := s.with(readTimeout)
	defer cancel()
	out, err := s.st.Sessions.Get(ctx, id)
	if err != nil {
		return SessionDTO{}, err
	}
	dto := toSession(out, s.st.Sessions.TrashDays())
	dto.RunningIn = s.running()[id]
	return dto, nil
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
	return toSessions(rows, s.st.Sessions.TrashDays()), nil
}

// Compactions returns the compactions recorded for a session (as the new
// or the old session of a rotation), oldest first, from the event log.
func (s *Sessions) Compactions(id string) ([]CompactionDTO, error) {
	ctx, cancel := s.with(readTimeout)
	defer cancel()
	if _, err := s.st.Sessions.Get(ctx, id); err != nil {
		return nil, err
	}
	evs, err := hooks.ListEvents(ctx, s.st.DB, hooks.LogFilter{Hook: hooks.PostCompaction, Session: id, Limit: 10_000})
	if err != nil {
		return nil, err
	}
	return toCompactions(evs), nil
}

// Preview says how many rows deleting ids would remove, cascades included.
func (s *Sessions) Preview(ids []string) (PreviewDTO, error) {
	return s.PreviewBulk(PreviewRequest{IDs: ids})
}

// PreviewBulk says exactly what an operation on ids or on a filter would
// change now (the dry run of Bulk): nothing is changed, nothing fires.
func (s *Sessions) PreviewBulk(in PreviewRequest) (PreviewDTO, error) {
	ctx, cancel := s.with(readTimeout)
	defer cancel()
	op := in.Op
	if op == "" {
		op = receipts.OpDelete
	}
	req, _ := BulkRequest{IDs: in.IDs, Filter: in.Filter}.request(op)
	res, err := s.st.Receipts.Preview(ctx, req)
	if err != nil {
		return PreviewDTO{}, err
	}
	return toPreview(res), nil
}

// Bulk runs op (delete, archive, unarchive, restore, purge) on the ids or on
// the sessions the filter matches, in one transaction, through a receipt:
// one event, undoable as a whole (Undo).
func (s *Sessions) Bulk(op string, in BulkRequest) (ReceiptDTO, error) {
	req, err := in.request(op)
	if err != nil {
		return ReceiptDTO{}, err
	}
	return s.run(req)
}

// Undo undoes a request as a whole (a delete restored from the trash, an
// archive unarchived, ...). A retried undo replays.
func (s *Sessions) Undo(requestID string) (ReceiptDTO, error) {
	return s.run(receipts.Request{RequestID: receipts.UndoPrefix + requestID, Op: receipts.OpUndo, Target: requestID})
}

// Requests are the remembered requests, newest first, with whether each can
// still be undone (the activity panel).
func (s *Sessions) Requests(limit int) ([]ReceiptDTO, error) {
	ctx, cancel := s.with(readTimeout)
	defer cancel()
	rs, err := s.st.Receipts.Recent(ctx, limit)
	if err != nil {
		return nil, err
	}
	return lo.Map(rs, func(r receipts.Receipt, _ int) ReceiptDTO { return toReceipt(r) }), nil
}

// Delete moves sessions to the trash (or deletes them at once with
// sessions.trash_days 0) through a receipt; a retry with the same request id
// replays the first result.
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

// Restore brings sessions back from the trash, through a receipt.
func (s *Sessions) Restore(requestID string, ids []string) (ReceiptDTO, error) {
	return s.apply(receipts.OpRestore, requestID, ids)
}

// Purge deletes sessions for good now (from the trash, or "delete now"),
// through a receipt.
func (s *Sessions) Purge(requestID string, ids []string) (ReceiptDTO, error) {
	return s.apply(receipts.OpPurge, requestID, ids)
}

// EmptyTrash purges the trash (or what has been there longer than
// OlderThan), through a receipt.
func (s *Sessions) EmptyTrash(in EmptyTrashRequest) (ReceiptDTO, error) {
	return s.run(receipts.Request{RequestID: in.RequestID, Op: receipts.OpEmptyTrash, OlderThan: in.OlderThan})
}

// Trash says what the trash holds and when it next purges.
func (s *Sessions) Trash() (TrashDTO, error) {
	ctx, cancel := s.with(readTimeout)
	defer cancel()
	t, err := s.st.Sessions.Trash(ctx)
	return toTrash(t), err
}

func (s *Sessions) apply(op, requestID string, ids []string) (ReceiptDTO, error) {
	return s.run(receipts.Request{RequestID: requestID, Op: op, SessionIDs: ids})
}

func (s *Sessions) run(req receipts.Request) (ReceiptDTO, error) {
	ctx, cancel := s.with(writeTimeout)
	defer cancel()
	op, requestID, ids := req.Op, req.RequestID, req.SessionIDs
	pr := s.progress(op, requestID, len(ids))
	pr(0, len(ids))
	r, err := s.st.Receipts.Apply(ctx, req, pr)
	if err == nil {
		pr(len(r.Result.AffectedIDs), len(r.Result.AffectedIDs)) // the end, whatever the cascade added
	}
	if err != nil {
		return ReceiptDTO{}, err
	}
	return toReceipt(r), nil
}

// Commands lists the slash commands (built-in, the plugins', then the
// skills' offered here), with the hint for their arguments, for the
// composer.
func (s *Sessions) Commands() ([]CommandDTO, error) {
	out := lo.Map(s.st.Bus.Commands().List(), func(c hooks.Command, _ int) CommandDTO {
		return CommandDTO{Name: c.Name, ArgsHint: c.ArgsHint, Description: c.Description, Plugin: c.Plugin}
	})
	for _, sc := range s.st.SkillCommands(s.platform) {
		out = append(out, CommandDTO{Name: sc[0], ArgsHint: "[instruction]", Description: sc[1], Skill: true})
	}
	return out, nil
}

// Send runs one user turn (or a /command) in a session; StopTurn stops it
// (the answer then says stopped). The turn has turnTimeout for the model
// and the tools: the time an approval or a question waits for the person
// stands the clock still. A message while a turn already runs in the
// session (another page's, a chat platform's, a scheduled run's, a
// background process's end being told) is refused, not run beside it:
// two turns would write one transcript at once.
func (s *Sessions) Send(sessionID, text string) (TurnDTO, error) {
	if err := s.st.Runs.Busy(sessionID, text); err != nil {
		return TurnDTO{}, err
	}
	ctx, cancel := turns.WithBudget(s.ctx, turnTimeout) // waiting for the person not counted
	defer cancel()
	t, err := s.loop.Send(ctx, sessionID, text, hooks.LocalContext(s.platform, sessionID))
	if err != nil {
		if turns.StopOf(ctx, err) != nil { // what the person asked for, not a failure
			out := toTurn(t)
			out.Stopped = true
			if out.SessionID == "" {
				out.SessionID = sessionID
			}
			return out, nil
		}
		return TurnDTO{}, err
	}
	return toTurn(t), nil
}

// StopTurn stops the turns running in a session (the Stop button), in this
// process or another of the profile (a scheduled run, a chat platform's
// turn, a terminal's): the model call or tool under way is abandoned,
// agent_loop_stopped fires (reason "user_stop"), and what the turn stored
// before stays. No turn running is not found.
func (s *Sessions) StopTurn(sessionID string) error {
	if err := sessions.ValidateID(sessionID); err != nil {
		return err
	}
	n, err := s.st.Runs.Stop(sessionID, turns.StopByPerson)
	if err != nil {
		return err
	}
	if n == 0 {
		return apperr.New(apperr.NotFound, "no turn is running in session %s", sessionID)
	}
	return nil
}

// PendingApprovals lists the tool calls waiting for the person's approval
// (a page that opens later shows their dialogs too), oldest first.
func (s *Sessions) PendingApprovals() ([]ApprovalDTO, error) { return s.approvals.list(), nil }

// AnswerApproval approves (or denies) a tool call a plugin wants approved;
// it returns what still waits. scope, when it approves: "once" (or ""),
// "session" (later asks of the same rule in this conversation run without
// asking, while this process runs) or "always" (and from now on, in every
// conversation of the profile: config.yaml's command_allowlist). An id that waits no more
// (answered on another surface, or out of time) is not found.
func (s *Sessions) AnswerApproval(id string, approve bool, scope string) ([]ApprovalDTO, error) {
	answer := turns.AnswerDeny
	if approve {
		switch scope {
		case "", string(turns.AnswerOnce):
			answer = turns.AnswerOnce
		case string(turns.AnswerSession):
			answer = turns.AnswerSession
		case string(turns.AnswerAlways):
			answer = turns.AnswerAlways
		default:
			return nil, apperr.New(apperr.Invalid, "invalid approval scope %s: use once, session or always", limits.Echo(scope))
		}
	}
	if err := s.approvals.answer(id, answer); err != nil {
		return nil, err
	}
	return s.approvals.list(), nil
}

// progressEvery throttles progress events of one request.
const progressEvery = 100 * time.Millisecond

// progress emits the progress of one bulk request, at most every
// progressEvery and always for the first and the last step.
func (s *Sessions) progress(op, requestID string, total int) sessions.Progress {
	var last time.Time
	return func(done, n int) {
		if n > 0 {
			total = n
		}
		if now := time.Now(); done == 0 || done >= total || now.Sub(last) >= progressEvery {
			last = now
			s.emit.Emit(EventProgress, ProgressDTO{RequestID: requestID, Op: op, Done: done, Total: total})
		}
	}
}
