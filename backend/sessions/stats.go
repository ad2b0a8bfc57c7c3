package sessions

import (
	"context"
	"fmt"
	"time"

	"atrium/backend/db"
)

// Bucket is a count of sessions and their messages under one name (a
// source, an age).
type Bucket struct {
	Name     string `json:"name"`
	Sessions int64  `json:"sessions"`
	Messages int64  `json:"messages"`
}

// Stats counts what the store holds outside the trash.
type Stats struct {
	Sessions int64    `json:"sessions"`
	Messages int64    `json:"messages"`
	BySource []Bucket `json:"by_source"`
	ByAge    []Bucket `json:"by_age"` // by last activity
}

// AgeBuckets name the age buckets of Stats, newest first.
var AgeBuckets = []string{"today", "this week", "this month", "1-3 months", "3-12 months", "older"}

// Stats counts sessions and messages per source and per age of last activity.
func (s *Service) Stats(ctx context.Context) (Stats, error) {
	now := s.db.Now()
	ago := func(d time.Duration) int64 { return db.Ms(now.Add(-d)) }
	day := 24 * time.Hour
	out := Stats{BySource: []Bucket{}, ByAge: []Bucket{}}
	g := s.db.Read.WithContext(ctx)
	if err := g.Raw(`SELECT source AS name, count(*) AS sessions, COALESCE(sum(message_count), 0) AS messages
		FROM sessions WHERE trashed_at IS NULL GROUP BY source ORDER BY sessions DESC, source`).Scan(&out.BySource).Error; err != nil {
		return Stats{}, fmt.Errorf("stats by source: %w", err)
	}
	var ages []Bucket
	if err := g.Raw(`SELECT CASE WHEN last_activity_at >= ? THEN 0 WHEN last_activity_at >= ? THEN 1 WHEN last_activity_at >= ? THEN 2
			WHEN last_activity_at >= ? THEN 3 WHEN last_activity_at >= ? THEN 4 ELSE 5 END AS name,
			count(*) AS sessions, COALESCE(sum(message_count), 0) AS messages
		FROM sessions WHERE trashed_at IS NULL GROUP BY 1 ORDER BY 1`,
		ago(day), ago(7*day), ago(30*day), ago(90*day), ago(365*day)).Scan(&ages).Error; err != nil {
		return Stats{}, fmt.Errorf("stats by age: %w", err)
	}
	have := map[string]Bucket{}
	for _, a := range ages {
		have[a.Name] = a
	}
	for i, name := range AgeBuckets {
		b := have[fmt.Sprint(i)]
		b.Name = name
		out.ByAge = append(out.ByAge, b)
		out.Sessions += b.Sessions
		out.Messages += b.Messages
	}
	return out, nil
}

// PrunePreview is what retention (Prune with days) would remove now, and
// when the next session would qualify if nothing does before.
type PrunePreview struct {
	Days     int        `json:"days"`
	Sessions int        `json:"sessions"`
	Messages int64      `json:"messages"`
	Titles   []string   `json:"titles"`  // of the first few, oldest first
	NextAt   *time.Time `json:"next_at"` // when the next ended session passes the age (nil: none)
	ToTrash  bool       `json:"to_trash"`
}

// PreviewPrune says, without changing anything, what Prune(days) would take.
func (s *Service) PreviewPrune(ctx context.Context, days int) (PrunePreview, error) {
	if days <= 0 {
		return PrunePreview{}, fmt.Errorf("prune preview: retention days must be positive, got %d", days)
	}
	g := s.db.Read.WithContext(ctx)
	now := s.db.Now()
	cutoff := db.Ms(now.Add(-time.Duration(days) * 24 * time.Hour))
	ids, _, err := pruneSet(ctx, s.db.Query, cutoff)
	if err != nil {
		return PrunePreview{}, err
	}
	trashDays, auto := s.trash()
	out := PrunePreview{Days: days, Titles: []string{}, ToTrash: auto && trashDays > 0}
	if len(ids) > 0 {
		var agg struct{ N, M int64 }
		if err := g.Raw(`SELECT count(*) AS n, COALESCE(sum(message_count), 0) AS m FROM sessions
			WHERE trashed_at IS NULL AND id IN (SELECT value FROM json_each(?))`, jsonArray(ids)).Scan(&agg).Error; err != nil {
			return PrunePreview{}, err
		}
		out.Sessions, out.Messages = int(agg.N), agg.M
		if err := g.Raw(`SELECT CASE WHEN title = '' THEN '(untitled)' ELSE title END FROM sessions
			WHERE id IN (SELECT value FROM json_each(?)) ORDER BY last_activity_at, id LIMIT 5`, jsonArray(ids)).Scan(&out.Titles).Error; err != nil {
			return PrunePreview{}, err
		}
		return out, nil
	}
	var next *int64
	if err := g.Raw(`SELECT min(last_activity_at) FROM sessions WHERE trashed_at IS NULL AND ended_at IS NOT NULL AND pinned = 0
		AND last_activity_at >= ?`, cutoff).Scan(&next).Error; err != nil {
		return PrunePreview{}, err
	}
	if next != nil {
		at := time.UnixMilli(*next).UTC().Add(time.Duration(days) * 24 * time.Hour)
		out.NextAt = &at
	}
	return out, nil
}
