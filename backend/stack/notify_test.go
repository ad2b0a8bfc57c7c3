package stack_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"atrium/backend/hooks"
	"atrium/backend/sessions"
	"atrium/backend/stack"
	"atrium/backend/tools"
)

// TellEnds hands a surface the ends of its conversations' processes that
// display.background_process_notifications lets through: with "error",
// only those that failed.
func TestTellEndsFollowsTheDisplaySetting(t *testing.T) {
	ctx := context.Background()
	home, write := newHome(t)
	write("display:\n  background_process_notifications: error\n")
	st, err := stack.Open(ctx, home, stack.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	ends := make(chan tools.Completion, 4)
	stop := st.TellEnds(func(owner string) func(tools.Completion) {
		if !strings.HasPrefix(owner, "cli:") {
			return nil
		}
		return func(c tools.Completion) { ends <- c }
	})
	defer stop()
	loop, err := st.Loop(stack.ModelFlags{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := st.Sessions.Create(ctx, sessions.CreateParams{Title: "builds"})
	if err != nil {
		t.Fatal(err)
	}
	for _, command := range []string{"echo fine", "echo broken; exit 1"} {
		turn, err := loop.Send(ctx, s.ID, `use tool terminal: {"command": "`+command+`", "background": true, "notify_on_complete": true}`, hooks.LocalContext("cli", s.ID))
		if err != nil || !strings.Contains(turn.Reply, "notify_on_complete") {
			t.Fatalf("%s: %q %v", command, turn.Reply, err)
		}
	}
	select {
	case c := <-ends:
		if c.ExitCode != 1 || c.Output != "broken" || c.Owner != "cli:"+s.ID {
			t.Fatalf("told %+v", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the failed end was not told")
	}
}
