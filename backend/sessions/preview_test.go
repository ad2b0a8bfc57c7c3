package sessions_test

import (
	"testing"

	"atrium/backend/apperr"
	"atrium/backend/hooks"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

func TestDeletePreviewMatchesDeleteAndChangesNothing(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	root := e.MustCreate(t, sessions.CreateParams{Title: "root"})
	tip := e.MustChild(t, root.ID, sessions.RelationCompression)
	del := e.MustChild(t, tip.ID, sessions.RelationDelegate)
	branch := e.MustChild(t, root.ID, sessions.RelationBranch)

	got, err := e.Sessions.DeletePreview(ctx, []string{tip.ID, "missing"})
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != tip.ID || sorted(got) != sorted([]string{root.ID, tip.ID, del.ID}) {
		t.Fatalf("preview = %v", got)
	}
	if _, err := e.Sessions.Get(ctx, branch.ID); err != nil {
		t.Fatalf("preview changed the store: %v", err)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})

	res, err := e.Sessions.Delete(ctx, []string{tip.ID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sorted(res.AffectedIDs) != sorted(got) {
		t.Fatalf("delete removed %v, preview said %v", res.AffectedIDs, got)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, "*": 0})

	scenarios := []struct {
		name string
		ids  []string
		code apperr.Code
	}{
		{"none known", []string{"nope"}, apperr.NotFound},
		{"hostile", []string{"../x"}, apperr.Invalid},
		{"empty", nil, apperr.Invalid},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			if _, err := e.Sessions.DeletePreview(ctx, sc.ids); apperr.CodeOf(err) != sc.code {
				t.Fatalf("err = %v, want %s", err, sc.code)
			}
		})
	}
}
