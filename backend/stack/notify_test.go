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

// A watch_patterns match is a notice while the process runs: told with
// display.background_process_notifications all (the default), not with
// result, which tells ends only.
func TestTellEndsTellsAWatchOnlyInAll(t *testing.T) {
	for _, mode := range []string{"all", "result"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			home, write := newHome(t)
			write("display:\n  background_process_notifications: " + mode + "\n")
			st, err := stack.Open(ctx, home, stack.Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close(context.Background()) })
			told := make(chan tools.Completion, 4)
			stop := st.TellEnds(func(owner string) func(tools.Completion) {
				return func(c tools.Completion) { told <- c }
			})
			defer stop()
			loop, err := st.Loop(stack.ModelFlags{})
			if err != nil {
				t.Fatal(err)
			}
			s, err := st.Sessions.Create(ctx, sessions.CreateParams{Title: "server"})
			if err != nil {
				t.Fatal(err)
			}
			for _, call := range []string{`"command": "echo up; sleep 60", "background": true, "watch_patterns": ["up"]`,
				`"command": "sleep 0.2; echo finished", "background": true, "notify_on_complete": true`} {
				if _, err := loop.Send(ctx, s.ID, `use tool terminal: {`+call+`}`, hooks.LocalContext("cli", s.ID)); err != nil {
					t.Fatal(err)
				}
			}
			var kinds []string
			for len(kinds) == 0 || kinds[len(kinds)-1] != tools.NoticeEnd {
				select {
				case c := <-told:
					kinds = append(kinds, c.Kind)
				case <-time.After(10 * time.Second):
					t.Fatalf("told %q, and then nothing", kinds)
				}
			}
			want := []string{tools.NoticeWatchMatch, tools.NoticeEnd}
			if mode == "result" {
				want = want[1:]
			}
			if strings.Join(kinds, ",") != strings.Join(want, ",") {
				t.Fatalf("told %q, want %q", kinds, want)
			}
		})
	}
}
