package sessions

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"atrium/backend/apperr"
	"atrium/backend/db"
	"atrium/backend/llm"
)

// SeedParams describe a synthetic store for demos, end-to-end tests and
// benchmarks: Count sessions with Messages messages each, last active over
// the Span before now, spread over the sources.
type SeedParams struct {
	Count    int
	Messages int
	Span     time.Duration // default 90 days
	Prefix   string        // title prefix, default "Seeded session"
}

// seedWords vary the titles and message text so search has something to find.
var seedWords = []string{"refactor", "billing", "deploy", "kernel", "migration", "parser", "invoice",
	"frontend", "latency", "cache", "webhook", "schema", "release", "onboarding", "sqlite", "plugin"}

// Seed inserts p.Count sessions (no hooks fire: nothing is deleted or
// compacted) in transactions of 1,000 and returns their ids, newest first.
func (s *Service) Seed(ctx context.Context, p SeedParams, progress Progress) ([]string, error) {
	if p.Count <= 0 || p.Count > 10_000_000 || p.Messages < 0 || p.Messages > 10_000 {
		return nil, apperr.New(apperr.Invalid, "seed needs 1..10000000 sessions and 0..10000 messages each (got %d, %d)", p.Count, p.Messages)
	}
	if p.Span <= 0 {
		p.Span = 90 * 24 * time.Hour
	}
	if p.Prefix == "" {
		p.Prefix = "Seeded session"
	}
	ids := make([]string, 0, p.Count)
	const batch = 1000
	for start := 0; start < p.Count; start += batch {
		end := min(start+batch, p.Count)
		err := s.db.InTx(ctx, func(tx *db.Tx) error {
			rows := make([]Session, 0, end-start)
			var msgs []Message
			for i := start; i < end; i++ {
				at := tx.Now.Add(-time.Duration(int64(p.Span) / int64(p.Count) * int64(i)))
				id := uuid.Must(uuid.NewV7()).String()
				w := seedWords[i%len(seedWords)]
				rows = append(rows, Session{ID: id, Source: Sources[i%len(Sources)], Profile: s.profile,
					Title: fmt.Sprintf("%s %d: %s", p.Prefix, i+1, w), StartedAt: db.At(at.Add(-time.Hour)),
					LastActivityAt: db.At(at), MessageCount: int64(p.Messages)})
				for j := 0; j < p.Messages; j++ {
					role := "user"
					if j%2 == 1 {
						role = "assistant"
					}
					text := fmt.Sprintf("Message %d of session %d about the %s %s.", j+1, i+1, w, seedWords[(i+j)%len(seedWords)])
					msgs = append(msgs, Message{SessionID: id, Role: role, Content: text, TokenCount: int64(llm.EstimateTokens(text)),
						CreatedAt: db.At(at.Add(-time.Duration(p.Messages-j) * time.Second)), Active: true})
				}
				ids = append(ids, id)
			}
			g := tx.G.WithContext(ctx)
			if err := g.CreateInBatches(&rows, 200).Error; err != nil {
				return err
			}
			if len(msgs) > 0 {
				if err := g.CreateInBatches(&msgs, 200).Error; err != nil {
					return err
				}
				return g.Exec(`UPDATE sessions SET token_count = (SELECT COALESCE(SUM(token_count), 0) FROM messages
					WHERE session_id = sessions.id AND active = 1) WHERE pk >= ?`, rows[0].PK).Error
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("seed sessions: %w", err)
		}
		if progress != nil {
			progress(end, p.Count)
		}
	}
	return ids, nil
}
