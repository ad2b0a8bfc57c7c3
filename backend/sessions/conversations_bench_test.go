package sessions_test

import (
	"sync"
	"testing"

	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

// The conversation list, its count and scoped search on a store of 100,000
// sessions (2 messages each, 1 in 50 continued by a compression child and 1
// in 50 with a subagent), each beside the flat query it replaces in the
// same run: go test -tags sqlite_fts5 -run '^$' -bench Conversations100k -count 5 ./backend/sessions/
var (
	big     *sessionstest.Env
	bigOnce sync.Once
)

func bigStore(b *testing.B) *sessionstest.Env {
	bigOnce.Do(func() {
		e := sessionstest.New(b)
		ids, err := e.Sessions.Seed(ctx, sessions.SeedParams{Count: 100_000, Messages: 2}, nil)
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < len(ids); i += 50 {
			e.MustChild(b, ids[i], sessions.RelationCompression)
			e.MustChild(b, ids[i+1], sessions.RelationDelegate)
		}
		big = e
	})
	return big
}

func BenchmarkConversations100k(b *testing.B) {
	e := bigStore(b)
	rule := func(f map[string]string) sessions.Rule {
		r, err := sessions.ParseRule(f)
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
	b.Run("list-page-flat", func(b *testing.B) {
		for b.Loop() {
			if p, err := e.Sessions.List(ctx, sessions.Filter{Limit: 80}); err != nil || len(p.Sessions) != 80 {
				b.Fatal(err)
			}
		}
	})
	b.Run("list-page-conversations", func(b *testing.B) {
		for b.Loop() {
			if p, err := e.Sessions.Conversations(ctx, sessions.ConversationFilter{Limit: 80}); err != nil || len(p.Rows) != 80 {
				b.Fatal(err)
			}
		}
	})
	b.Run("count-flat", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.Sessions.Count(ctx, sessions.Filter{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("count-conversations", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.Sessions.CountConversations(ctx, sessions.ConversationFilter{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("count-conversations-filtered", func(b *testing.B) {
		f := sessions.ConversationFilter{Rule: rule(map[string]string{"source": "cron", "messages": "<3"})}
		for b.Loop() {
			if _, err := e.Sessions.CountConversations(ctx, f); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("search-active", func(b *testing.B) {
		for b.Loop() {
			if hits, err := e.Sessions.Search(ctx, "billing", sessions.SearchOptions{Scope: sessions.ScopeActive}); err != nil || len(hits) == 0 {
				b.Fatal(err)
			}
		}
	})
	b.Run("search-all", func(b *testing.B) {
		for b.Loop() {
			if hits, err := e.Sessions.Search(ctx, "billing", sessions.SearchOptions{Scope: sessions.ScopeAll}); err != nil || len(hits) == 0 {
				b.Fatal(err)
			}
		}
	})
	b.Run("search-trash", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.Sessions.Search(ctx, "billing", sessions.SearchOptions{Scope: sessions.ScopeTrash}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
