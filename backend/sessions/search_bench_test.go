package sessions_test

import (
	"strings"
	"testing"

	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

// A search walks the matches newest first until it has one per
// conversation. Here the newest 300 matches are 64 kB tool outputs of one
// conversation, before 20 conversations with a short match: the walk
// passes over the long ones, and only the hits' texts are worth reading.
func BenchmarkSearchPastLongMessages(b *testing.B) {
	e := sessionstest.New(b)
	for i := 0; i < 20; i++ {
		s := e.MustCreate(b, sessions.CreateParams{Title: "short"})
		if _, err := e.Sessions.AppendMessage(ctx, s.ID, sessions.NewMessage{Role: "user", Content: "the word roufeazoupo once"}); err != nil {
			b.Fatal(err)
		}
	}
	big := e.MustCreate(b, sessions.CreateParams{Title: "build logs"})
	out := "roufeazoupo " + strings.Repeat("line of tool output 0123456789 ", 2100)
	for i := 0; i < 300; i++ {
		if _, err := e.Sessions.AppendMessage(ctx, big.ID, sessions.NewMessage{Role: "tool", Content: out, ToolName: "shell"}); err != nil {
			b.Fatal(err)
		}
	}
	if err := e.Sessions.FlushIndex(ctx); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		hits, err := e.Sessions.Search(ctx, "roufeazoupo", sessions.SearchOptions{})
		if err != nil || len(hits) != 20 {
			b.Fatalf("%d hits, %v", len(hits), err)
		}
	}
}
