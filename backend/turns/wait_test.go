package turns_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"atrium/backend/hooks"
	"atrium/backend/hooks/hookstest"
	"atrium/backend/llm"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
	"atrium/backend/tools"
	"atrium/backend/turns"
)

// A turn's time limit (WithBudget, as the window, the dashboard and a chat
// platform run turns) does not count the time a person takes to answer: an
// approval and a question answered three budgets later still reach the
// model, and the turn ends normally. The question waits its full
// agent.clarify_timeout, not a turn's remainder. The same answers after a
// fixed deadline of the same length find the turn gone.
func TestAPersonsTimeIsNotTheTurns(t *testing.T) {
	t.Parallel()
	const budget = 300 * time.Millisecond
	e := newEnv(t, 100000, nil, func(bus *hooks.Bus) {
		if err := hookstest.WantApproval(bus, "guard", "echo", "echo repeats what it is given"); err != nil {
			panic(err)
		}
	})
	// slow answers once a fixed deadline of the turn's length, started
	// with the turn, would have ended it.
	var witness context.Context
	slow := func(ctx context.Context) error {
		select {
		case <-witness.Done():
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var asked []turns.Question
	dir := t.TempDir()
	loop, err := turns.New(e.DB, e.Sessions, e.eng, e.Bus, turns.Options{Provider: llm.OfflineProvider{Window: 100000},
		Machine:        func() tools.Settings { return tools.Settings{Cwd: dir, Toolsets: []string{"clarify"}} },
		ClarifyTimeout: func() time.Duration { return time.Hour },
		Approve: func(ctx context.Context, _ turns.Approval) (turns.Answer, error) {
			return turns.AnswerOnce, slow(ctx)
		},
		Clarify: func(ctx context.Context, q turns.Question) (turns.Reply, error) {
			asked = append(asked, q)
			return turns.Reply{Text: "prod"}, slow(ctx)
		}})
	if err != nil {
		t.Fatal(err)
	}
	s := e.MustCreate(t, sessions.CreateParams{Title: "slow person"})
	send := func(limit func(context.Context) (context.Context, context.CancelFunc), text string) (turns.Turn, error) {
		tctx, cancel := limit(ctx)
		defer cancel()
		var wcancel context.CancelFunc
		witness, wcancel = context.WithTimeout(ctx, 3*budget)
		defer wcancel()
		return loop.Send(tctx, s.ID, text, hooks.LocalContext("desktop", s.ID))
	}
	budgeted := func(c context.Context) (context.Context, context.CancelFunc) { return turns.WithBudget(c, budget) }
	fixed := func(c context.Context) (context.Context, context.CancelFunc) { return context.WithTimeout(c, budget) }

	turn, err := send(budgeted, `use tool echo: {"text": "approved late"}`)
	if err != nil || !strings.Contains(turn.Reply, "returned: approved late") {
		t.Fatalf("an approval answered late: %q, %v", turn.Reply, err)
	}
	turn, err = send(budgeted, `use tool clarify: {"question": "Which target?", "choices": ["staging", "prod"]}`)
	if err != nil || turn.Reply == "" {
		t.Fatalf("a question answered late: %q, %v", turn.Reply, err)
	}
	if got, _ := sessionstest.LastToolResult(t, e.Sessions, s.ID); got != `{"question":"Which target?","choices_offered":["staging","prod"],"user_response":"prod"}` {
		t.Fatalf("the model read %s", got)
	}
	if asked[0].Timeout != time.Hour {
		t.Fatalf("the question waits %v, not agent.clarify_timeout", asked[0].Timeout)
	}

	if _, err := send(fixed, `use tool echo: {"text": "too late"}`); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a fixed deadline let an approval three times its length through: %v", err)
	}
	// Only the turn with the fixed deadline stopped; the late answers'
	// turns each ended with the model's reply.
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.PreApprovalRequest: 2, hooks.PostApprovalResp: 2, hooks.AgentLoopStopped: 1,
		hooks.OnSessionStart: 1, hooks.OnSessionEnd: 3, hooks.PostLLMCall: 2, hooks.PostToolCall: 3})
}
