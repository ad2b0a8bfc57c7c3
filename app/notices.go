package app

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"atrium/backend/hooks"
	"atrium/backend/tools"
	"atrium/backend/turns"
)

// idleEvery is how often a told end looks again whether its session's
// turn has finished.
const idleEvery = 250 * time.Millisecond

// tellEnds tells this surface's conversations of the ends of the
// background processes they started with notify_on_complete, and of the
// lines watch_patterns matched: a turn in the session, once no turn runs
// there (in any process), whose message is the familiar agent's
// notification; notices that wait at once are told in one turn. The window and the dashboard show that turn as they show any
// turn that runs in an open session.
func (s *Sessions) tellEnds() *Sessions {
	if s.loop == nil || s.st == nil || s.st.Processes == nil {
		return s
	}
	prefix := s.platform + ":"
	stop := s.st.TellEnds(func(owner string) func(tools.Completion) {
		if !strings.HasPrefix(owner, prefix) {
			return nil
		}
		return func(c tools.Completion) {
			id := strings.TrimPrefix(c.Owner, prefix) // where the conversation is now
			if s.untold.Add(id, c) {
				go s.tell(id)
			}
		}
	})
	context.AfterFunc(s.ctx, stop)
	return s
}

// tell runs the turns that tell session id of its processes' ends.
func (s *Sessions) tell(id string) {
	for {
		for s.turnRuns(id) {
			select {
			case <-s.ctx.Done():
				return
			case <-time.After(idleEvery):
			}
		}
		cs := s.untold.Next(id)
		if cs == nil {
			return
		}
		// A conversation closed since (/new, /exit, deleted) is not told,
		// as the familiar agent drops what it would be told.
		if sess, err := s.st.Sessions.Get(s.ctx, id); err != nil || sess.Ended() || sess.Trashed() {
			slog.Info("a background process's notice came after its conversation was closed; not told", "session_id", id, "notices", len(cs))
			continue
		}
		ctx, cancel := turns.WithBudget(s.ctx, turnTimeout)
		_, err := s.loop.Send(ctx, id, tools.CompletionsText(cs), hooks.LocalContext(s.platform, id))
		cancel()
		if err != nil {
			slog.Warn("the end of a background process could not be told to its conversation", "session_id", id, "error", err)
		}
	}
}

// turnRuns says whether a turn runs in session id, in any process of the
// profile.
func (s *Sessions) turnRuns(id string) bool {
	if s.st.Runs == nil {
		return false
	}
	running, err := s.st.Runs.Running(id)
	return err == nil && len(running) > 0
}
