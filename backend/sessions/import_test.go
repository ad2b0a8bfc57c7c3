package sessions_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"atrium/backend/apperr"
	"atrium/backend/db"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

func TestImportChecksWhatItCannotMendAndMendsTheRest(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	one := func(mod func(*sessions.Imported)) sessions.Imported {
		it := sessions.Imported{Origin: sessions.Origin{Kind: sessions.ImportClaude, Key: "k1"}, StartedAt: at,
			Messages: []sessions.ImportedMessage{{Role: "user", Content: "hi", CreatedAt: at}}}
		mod(&it)
		return it
	}
	// Refused, and nothing written: an unknown kind, a missing key, a role
	// the store does not keep, a relation it does not know.
	for name, bad := range map[string]sessions.Imported{
		"kind":     one(func(it *sessions.Imported) { it.Origin.Kind = "openclaw" }),
		"key":      one(func(it *sessions.Imported) { it.Origin.Key = "" }),
		"role":     one(func(it *sessions.Imported) { it.Messages[0].Role = "developer" }),
		"relation": one(func(it *sessions.Imported) { it.ParentKey, it.Relation = "p", "fork" }),
		"source":   one(func(it *sessions.Imported) { it.Source = "slack" }),
	} {
		good := one(func(it *sessions.Imported) { it.Origin.Key = "fine" })
		if _, err := e.Sessions.Import(ctx, []sessions.Imported{good, bad}, sessions.ImportOptions{}); apperr.CodeOf(err) != apperr.Invalid {
			t.Errorf("%s: %v", name, err)
		}
		if e.Exists(t, "fine") {
			t.Fatalf("%s: a refused import wrote the good session beside it", name)
		}
	}

	// Mended: a key that is not an id gets one of its own, a title is one
	// clean line within the limit, a platform that is not a name is
	// dropped, messages without a time take the one before.
	long := strings.Repeat("word ", 100)
	res, err := e.Sessions.Import(ctx, []sessions.Imported{one(func(it *sessions.Imported) {
		it.Origin.Key = "/home/u/.claude/projects/x/../y.jsonl"
		it.Title = "\n\n  first\tline \x07here  \nsecond"
		it.Platform = "not a platform!"
		it.Messages = append(it.Messages, sessions.ImportedMessage{Role: "assistant", Content: "no time"})
	}), one(func(it *sessions.Imported) { it.Origin.Key = "long"; it.Title = long })}, sessions.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Outcomes[0].ID
	if id != sessions.ImportID(sessions.ImportClaude, "/home/u/.claude/projects/x/../y.jsonl") || !strings.HasPrefix(id, "claude-code-") || sessions.ValidateID(id) != nil {
		t.Fatalf("derived id %q", id)
	}
	s, err := e.Sessions.Get(ctx, id)
	if err != nil || s.Title != "first line here" || s.Platform != "" {
		t.Fatalf("mended session %+v %v", s, err)
	}
	msgs, _ := e.Sessions.Messages(ctx, id, true)
	if len(msgs) != 2 || !msgs[1].CreatedAt.Equal(at) {
		t.Fatalf("messages %+v", msgs)
	}
	l, _ := e.Sessions.Get(ctx, "long")
	if n := utf8.RuneCountInString(l.Title); n > 300 || !strings.HasSuffix(l.Title, "…") {
		t.Fatalf("long title (%d runes) %q", n, l.Title)
	}
	// A parent the store does not have: imported without the link, said.
	res, err = e.Sessions.Import(ctx, []sessions.Imported{one(func(it *sessions.Imported) {
		it.Origin.Key, it.ParentKey, it.Relation = "orphan", "gone", sessions.RelationDelegate
	})}, sessions.ImportOptions{})
	if err != nil || res.Outcomes[0].Status != sessions.ImportStatusImported || !strings.Contains(res.Outcomes[0].Note, "its parent gone is not in the store") {
		t.Fatalf("orphan %+v %v", res, err)
	}
	if o, _ := e.Sessions.Get(ctx, "orphan"); o.ParentSessionID != nil || o.Relation != "" {
		t.Fatalf("orphan kept a link: %+v", o)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{})
}

// importAt is the time of the messages importMsg makes for these tests.
var importAt = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func importMsg(role, text string) sessions.ImportedMessage {
	return sessions.ImportedMessage{Role: role, Content: text, CreatedAt: importAt}
}

// An import run again adds a source's new messages only while the ones it
// took are still the source's first ones: a conversation rewound or edited
// in the other agent is left as imported, said to be so, and nothing is
// added or fired. A row of an earlier version, without its digest, gets one
// at its next import.
func TestImportLeavesARewrittenSourceAsImported(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	at, msg := importAt, importMsg
	src := func(ms ...sessions.ImportedMessage) []sessions.Imported {
		return []sessions.Imported{{Origin: sessions.Origin{Kind: sessions.ImportGemini, Key: "conv"}, StartedAt: at, Messages: ms}}
	}
	run := func(items []sessions.Imported, dry bool) sessions.ImportOutcome {
		t.Helper()
		res, err := e.Sessions.Import(ctx, items, sessions.ImportOptions{DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		return res.Outcomes[0]
	}
	stored := func() []string {
		t.Helper()
		ms, err := e.Sessions.Messages(ctx, "conv", true)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range ms {
			out = append(out, m.Role+":"+m.Content)
		}
		return out
	}
	if o := run(src(msg("user", "q1"), msg("assistant", "a1")), false); o.Status != sessions.ImportStatusImported {
		t.Fatalf("first import %+v", o)
	}
	// The same messages with new times, and one more: the new one added.
	later := src(msg("user", "q1"), msg("assistant", "a1"), msg("user", "q2"))
	for i := range later[0].Messages {
		later[0].Messages[i].CreatedAt = at.Add(time.Hour)
	}
	if o := run(later, false); o.Status != sessions.ImportStatusUpdated || o.Messages != 1 {
		t.Fatalf("grown %+v", o)
	}
	// q2 taken back there and another question asked: as many messages,
	// and more after, but not the same ones.
	rewound := src(msg("user", "q1"), msg("assistant", "a1"), msg("user", "q2, asked better"), msg("assistant", "a2"))
	for _, dry := range []bool{true, false} {
		o := run(rewound, dry)
		if o.Status != sessions.ImportStatusConflict || o.Messages != 0 || !strings.Contains(o.Note, "its first 3 messages changed in gemini-cli") {
			t.Fatalf("rewound (dry run %v) %+v", dry, o)
		}
	}
	if got := strings.Join(stored(), " | "); got != "user:q1 | assistant:a1 | user:q2" {
		t.Fatalf("stored after the rewind: %s", got)
	}
	// A tool call's id is part of what a message is.
	call := func(id string) []sessions.Imported {
		it := src(msg("user", "q1"), msg("assistant", "a1"), msg("user", "q2"), msg("assistant", "{}"))
		it[0].Messages[3].ToolName, it[0].Messages[3].ToolCallID = "ls", id
		return it
	}
	if o := run(call("c1"), false); o.Status != sessions.ImportStatusUpdated {
		t.Fatalf("a call %+v", o)
	}
	if o := run(call("c2"), false); o.Status != sessions.ImportStatusConflict {
		t.Fatalf("the call's id changed %+v", o)
	}

	// An import of an earlier version kept no digest: the next one takes
	// it, and tells a rewind from then on.
	if err := e.DB.InTx(ctx, func(tx *db.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE session_imports SET digest = '' WHERE source_key = 'conv'`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if o := run(call("c1"), false); o.Status != sessions.ImportStatusUnchanged || o.Note != "" {
		t.Fatalf("without a digest %+v", o)
	}
	if o := run(call("c2"), false); o.Status != sessions.ImportStatusConflict {
		t.Fatalf("after the digest was taken again %+v", o)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})
}

// A session continued here since it was imported (its own turns after the
// imported messages) does not take its source's new messages after them:
// that would splice two agents' continuations into one transcript. It is
// left as it is, said to be so; one not continued here takes them.
func TestImportLeavesASessionContinuedHereAsItIs(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	at, msg := importAt, importMsg
	src := func(key string, ms ...sessions.ImportedMessage) sessions.Imported {
		return sessions.Imported{Origin: sessions.Origin{Kind: sessions.ImportOpenCode, Key: key}, StartedAt: at, Messages: ms}
	}
	res, err := e.Sessions.Import(ctx, []sessions.Imported{src("here", msg("user", "q1"), msg("assistant", "a1")),
		src("there", msg("user", "q1"), msg("assistant", "a1"))}, sessions.ImportOptions{})
	if err != nil || res.Count(sessions.ImportStatusImported) != 2 {
		t.Fatalf("first import %+v %v", res, err)
	}
	if _, err := e.Sessions.AppendMessage(ctx, "here", sessions.NewMessage{Role: "user", Content: "asked in Atrium"}); err != nil {
		t.Fatal(err)
	}
	res, err = e.Sessions.Import(ctx, []sessions.Imported{src("here", msg("user", "q1"), msg("assistant", "a1"), msg("user", "asked there")),
		src("there", msg("user", "q1"), msg("assistant", "a1"), msg("user", "asked there"))}, sessions.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	here, there := res.Outcomes[0], res.Outcomes[1]
	if here.Status != sessions.ImportStatusConflict || here.Messages != 0 ||
		!strings.Contains(here.Note, "continued here since it was imported (1 message(s) of its own after the imported ones): the 1 new in opencode are not added") {
		t.Errorf("continued here: %+v", here)
	}
	if there.Status != sessions.ImportStatusUpdated || there.Messages != 1 {
		t.Errorf("not continued here: %+v", there)
	}
	for id, want := range map[string]string{"here": "q1 a1 asked in Atrium", "there": "q1 a1 asked there"} {
		ms, err := e.Sessions.Messages(ctx, id, true)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range ms {
			got = append(got, m.Content)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%s holds %q, want %q", id, got, want)
		}
	}
	// Nothing new at the source: unchanged, whatever happened here.
	res, err = e.Sessions.Import(ctx, []sessions.Imported{src("there", msg("user", "q1"), msg("assistant", "a1"), msg("user", "asked there"))},
		sessions.ImportOptions{})
	if err != nil || res.Outcomes[0].Status != sessions.ImportStatusUnchanged {
		t.Errorf("again %+v %v", res, err)
	}
	// Its last message is what it is compared with: what there takes next
	// comes after the message it took last time.
	res, err = e.Sessions.Import(ctx, []sessions.Imported{src("there", msg("user", "q1"), msg("assistant", "a1"), msg("user", "asked there"),
		msg("assistant", "answered there"))}, sessions.ImportOptions{})
	if err != nil || res.Outcomes[0].Status != sessions.ImportStatusUpdated {
		t.Errorf("more %+v %v", res, err)
	}
}

// A reader that reads an unchanged source another way (a new version of
// Atrium that converts it better) names another reading: what was taken
// before is then not mistaken for a source rewritten, and the new reading
// is the one compared from then on.
func TestImportComparesOnlyWhatWasReadTheSameWay(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	msg := importMsg
	src := func(reading string, ms ...sessions.ImportedMessage) []sessions.Imported {
		return []sessions.Imported{{Origin: sessions.Origin{Kind: sessions.ImportGemini, Key: "conv"}, Reading: reading, StartedAt: importAt, Messages: ms}}
	}
	run := func(items []sessions.Imported) sessions.ImportOutcome {
		t.Helper()
		res, err := e.Sessions.Import(ctx, items, sessions.ImportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Outcomes[0]
	}
	if o := run(src("gemini-cli/1", msg("user", "q1"), msg("assistant", "a1 (as read then)"))); o.Status != sessions.ImportStatusImported {
		t.Fatalf("first %+v", o)
	}
	if o := run(src("gemini-cli/2", msg("user", "q1"), msg("assistant", "a1 (read better)"))); o.Status != sessions.ImportStatusUnchanged || o.Note != "" {
		t.Fatalf("read another way %+v", o)
	}
	if o := run(src("gemini-cli/2", msg("user", "q1"), msg("assistant", "a1 (read better)"), msg("user", "q2"))); o.Status != sessions.ImportStatusUpdated {
		t.Fatalf("grown %+v", o)
	}
	if o := run(src("gemini-cli/2", msg("user", "q1"), msg("assistant", "rewritten"), msg("user", "q2"))); o.Status != sessions.ImportStatusConflict {
		t.Fatalf("rewritten, read the same way %+v", o)
	}
}
