package sessions_test

import (
	"reflect"
	"testing"

	"atrium/backend/db"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

// The hot reads (a session, a list page, search hits, a transcript) decode
// rows by hand from fixed column lists. Every column of sessions and
// messages is set here, and what those reads return must equal gorm's
// reading of the same rows through the structs' column tags: a column
// missing from a list, read in the wrong place or decoded wrongly fails.
func TestScansCoverEveryColumn(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	root := e.MustCreate(t, sessions.CreateParams{Title: "alpha root"})
	s := e.MustChild(t, root.ID, "compression")
	e.MustAppend(t, s.ID, 3)
	w := e.DB.Write
	if err := w.Exec(`UPDATE sessions SET title = 'alpha needle', platform = 'telegram', sender_id = 'u1', sender_name = 'Ann',
		ended_at = 1700000000123, end_reason = 'user', archived = 1, archived_at = 1700000000456, archived_by = 'me', pinned = 1,
		token_count = 77, trashed_at = 1700000000789, trash_batch = 'b1', trash_reason = 'why', trash_reported = 1 WHERE id = ?`, s.ID).Error; err != nil {
		t.Fatal(err)
	}
	if err := w.Exec(`UPDATE messages SET sent_content = 'sent', tool_name = 'shell', tool_call_id = 'c1', token_count = 5, active = 1, pos = 1.5
		WHERE session_id = ?`, s.ID).Error; err != nil {
		t.Fatal(err)
	}
	var want sessions.Session
	if err := e.DB.Read.Raw(`SELECT * FROM sessions WHERE id = ?`, s.ID).Scan(&want).Error; err != nil {
		t.Fatal(err)
	}
	nonZero(t, want)
	got, err := e.Sessions.Get(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "Get", got, want)
	p, err := e.Sessions.List(ctx, sessions.Filter{Rule: sessions.Rule{Scope: sessions.ScopeTrash}})
	if err != nil || len(p.Sessions) != 1 {
		t.Fatalf("list the trash: %d rows, %v", len(p.Sessions), err)
	}
	same(t, "List", p.Sessions[0], want)
	if err := e.Sessions.FlushIndex(ctx); err != nil {
		t.Fatal(err)
	}
	hits, err := e.Sessions.Search(ctx, "needle", sessions.SearchOptions{Scope: sessions.ScopeTrash})
	if err != nil || len(hits) != 1 {
		t.Fatalf("search the trash: %d hits, %v", len(hits), err)
	}
	same(t, "Search", hits[0].Session, want)

	var wantMsgs []sessions.Message
	if err := e.DB.Read.Raw(`SELECT * FROM messages WHERE session_id = ? ORDER BY id`, s.ID).Scan(&wantMsgs).Error; err != nil {
		t.Fatal(err)
	}
	if len(wantMsgs) != 3 {
		t.Fatalf("%d messages, want 3", len(wantMsgs))
	}
	nonZero(t, wantMsgs[0])
	msgs, err := e.Sessions.Messages(ctx, s.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "Messages", msgs, wantMsgs)
}

// nonZero fails on a field left at its zero value: the fixture must set
// every column for the comparison to cover it.
func nonZero(t *testing.T, v any) {
	t.Helper()
	rv := reflect.ValueOf(v)
	for i := range rv.NumField() {
		if rv.Field(i).IsZero() {
			t.Fatalf("%T.%s is zero: the fixture sets every column", v, rv.Type().Field(i).Name)
		}
	}
}

func same(t *testing.T, what string, got, want any) {
	t.Helper()
	// Times compare as instants (gorm's and the hand decoders' locations
	// may differ).
	norm := func(v any) any {
		rv := reflect.ValueOf(v)
		out := reflect.New(rv.Type()).Elem()
		out.Set(rv)
		normTimes(out)
		return out.Interface()
	}
	if g, w := norm(got), norm(want); !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, g, w)
	}
}

var timeType = reflect.TypeOf(db.Time{})

func normTimes(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			normTimes(v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			normTimes(v.Index(i))
		}
	case reflect.Struct:
		if v.Type() == timeType {
			t := v.Interface().(db.Time)
			v.Set(reflect.ValueOf(db.Time{Time: t.UTC()}))
			return
		}
		for i := range v.NumField() {
			if v.Field(i).CanSet() {
				normTimes(v.Field(i))
			}
		}
	}
}
