package sessions_test

import (
	"slices"
	"testing"

	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

// Facets are the distinct sources, profiles and platforms of every
// session (archived and trashed ones too), sorted; a session without a
// platform adds none.
func TestFacetsListEachValueInUseOnce(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	f, err := e.Sessions.Facets(ctx)
	if err != nil || f.Sources == nil || f.Profiles == nil || f.Platforms == nil || len(f.Sources)+len(f.Profiles)+len(f.Platforms) != 0 {
		t.Fatalf("empty store: %+v, %v", f, err)
	}
	for _, p := range []sessions.CreateParams{
		{Source: "cron"}, {Source: "gateway", Platform: "telegram"}, {Source: "gateway", Platform: "slack"},
		{Source: "gateway", Platform: "telegram"}, {Source: "cli"}, {Source: "cli"},
	} {
		e.MustCreate(t, p)
	}
	odd := e.MustCreate(t, sessions.CreateParams{Source: "tool", Platform: "discord"})
	if err := e.DB.Write.Exec(`UPDATE sessions SET profile = 'work', archived = 1, trashed_at = 1 WHERE id = ?`, odd.ID).Error; err != nil {
		t.Fatal(err)
	}
	f, err = e.Sessions.Facets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := sessions.Facets{Sources: []string{"cli", "cron", "gateway", "tool"}, Profiles: []string{"default", "work"},
		Platforms: []string{"discord", "slack", "telegram"}}
	if !slices.Equal(f.Sources, want.Sources) || !slices.Equal(f.Profiles, want.Profiles) || !slices.Equal(f.Platforms, want.Platforms) {
		t.Fatalf("facets = %+v, want %+v", f, want)
	}
}

// session_facets is kept by triggers on every path that adds, removes or
// relabels a session: after creates, deletes for good, moves to the trash
// and relabels, it holds what counting the sessions gives.
func TestFacetsFollowEveryChange(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	now := e.NoTrash()
	var ids []string
	for i, p := range []sessions.CreateParams{
		{Source: "cron"}, {Source: "gateway", Platform: "telegram"}, {Source: "gateway", Platform: "slack"},
		{Source: "gateway", Platform: "telegram"}, {Source: "cli"}, {Source: "tool", Platform: "discord"},
	} {
		s := e.MustCreate(t, p)
		ids = append(ids, s.ID)
		if i%2 == 0 {
			e.MustChild(t, s.ID, "delegate")
		}
	}
	check := func(when string) {
		t.Helper()
		type row struct {
			Facet, Value string
			N            int64
		}
		var got, want []row
		if err := e.DB.Read.Raw(`SELECT facet, value, n FROM session_facets WHERE n > 0 ORDER BY facet, value`).Scan(&got).Error; err != nil {
			t.Fatal(err)
		}
		if err := e.DB.Read.Raw(`SELECT * FROM (SELECT 'platform' AS facet, platform AS value, count(*) AS n FROM sessions WHERE platform <> '' GROUP BY platform
			UNION ALL SELECT 'profile', profile, count(*) FROM sessions GROUP BY profile
			UNION ALL SELECT 'source', source, count(*) FROM sessions GROUP BY source) ORDER BY facet, value`).Scan(&want).Error; err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: session_facets = %v, counting gives %v", when, got, want)
		}
	}
	check("after creating")
	if _, err := e.Sessions.Delete(ctx, []string{ids[1]}, nil); err != nil { // to the trash: still a session
		t.Fatal(err)
	}
	check("after a move to the trash")
	if _, err := now.Delete(ctx, []string{ids[0], ids[5]}, nil); err != nil { // for good, with their children
		t.Fatal(err)
	}
	check("after deleting for good")
	if err := e.DB.Write.Exec(`UPDATE sessions SET platform = 'slack', source = 'cli', profile = 'work' WHERE id = ?`, ids[3]).Error; err != nil {
		t.Fatal(err)
	}
	check("after relabelling")
	// A platform taken away, and one given to a session that had none.
	if err := e.DB.Write.Exec(`UPDATE sessions SET platform = CASE id WHEN ? THEN '' ELSE 'matrix' END WHERE id IN (?, ?)`, ids[2], ids[2], ids[4]).Error; err != nil {
		t.Fatal(err)
	}
	check("after a platform went and came")
	if _, err := now.DeleteWith(ctx, ids, sessions.DeleteOptions{Now: true}); err != nil {
		t.Fatal(err)
	}
	check("after deleting the rest")
	if n := e.Count(t, `SELECT count(*) FROM session_facets WHERE n <> 0`); n != 0 {
		t.Fatalf("%d facets in use in an empty store", n)
	}
	if n := e.Count(t, `SELECT count(*) FROM sessions`); n != 0 {
		t.Fatalf("%d sessions left", n)
	}
}
