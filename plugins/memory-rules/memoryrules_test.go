package memoryrules_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"atrium/backend/compaction"
	"atrium/backend/hooks"
	"atrium/backend/llm"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
	"atrium/backend/turns"
	memoryrules "atrium/plugins/memory-rules"
)

func TestRulesAtFirstTurnAndOnceAfterEachCompaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := sessionstest.NewWith(t, hooks.Options{Timeout: 2 * time.Second}, func(bus *hooks.Bus) {
		if _, err := memoryrules.Register(bus.Plugin(memoryrules.Name), map[string]any{"rules": "RULES: answer in French"}); err != nil {
			t.Fatal(err)
		}
	})
	cfg := compaction.DefaultConfig()
	cfg.Threshold, cfg.SoftThreshold = 100, 100
	eng := compaction.NewEngine(e.DB, e.Sessions, e.Bus, llm.OfflineSummarizer{}, cfg)
	eng.RegisterCommands(e.Bus.Commands())
	loop, err := turns.New(e.DB, e.Sessions, eng, e.Bus, turns.Options{Provider: llm.OfflineProvider{Window: 100000}})
	if err != nil {
		t.Fatal(err)
	}
	s := e.MustCreate(t, sessions.CreateParams{Title: "rules"})
	id := s.ID
	var sent []bool
	say := func(text string) {
		turn, err := loop.Send(ctx, id, text, hooks.LocalContext("cli", id))
		if err != nil {
			t.Fatal(err)
		}
		id = turn.SessionID
		if turn.Command == "" {
			sent = append(sent, strings.Contains(turn.SentText, "RULES: answer in French"))
		}
	}
	for i := 0; i < 4; i++ {
		say(fmt.Sprintf("turn %d: %s", i, strings.Repeat("we reviewed the migration plan and agreed on the steps. ", 3)))
	}
	say("/compress")
	say("after the compaction")
	say("and later")
	// A provider's own compaction rewrites the transcript too: the rules
	// come back at the next turn.
	for i := 0; i < 3; i++ {
		say(fmt.Sprintf("more %d: %s", i, strings.Repeat("the rollout went fine and we moved on. ", 3)))
	}
	res, err := loop.CompactNative(ctx, id)
	if err != nil || !res.Changed {
		t.Fatalf("native compaction: %+v %v", res, err)
	}
	say("after the native compaction")
	if fmt.Sprint(sent) != fmt.Sprint([]bool{true, false, false, false, true, false, false, false, false, true}) {
		t.Fatalf("rules sent per turn = %v", sent)
	}
}
