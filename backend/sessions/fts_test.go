package sessions_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"atrium/backend/db"
	"atrium/backend/hooks"
	"atrium/backend/sessions"
)

// manualIndexStore is a store whose search-index queue only moves when the
// test calls IndexPending.
func manualIndexStore(t *testing.T) (*db.DB, *sessions.Service) {
	t.Helper()
	return manualIndexStoreWith(t, sessions.Options{})
}

// manualIndexStoreWith is manualIndexStore with options o.
func manualIndexStoreWith(t *testing.T, o sessions.Options) (*db.DB, *sessions.Service) {
	t.Helper()
	d, err := db.Open(ctx, filepath.Join(t.TempDir(), "state.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bus := hooks.NewBus(d, hooks.Options{Timeout: 5 * time.Second})
	if err := bus.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = bus.Close(context.Background())
		_ = d.Close()
	})
	o.ManualIndex = true
	return d, sessions.NewService(d, bus, o)
}

// indexAll applies the index queues to the end.
func indexAll(t *testing.T, svc *sessions.Service) {
	t.Helper()
	for {
		more, err := svc.IndexPending(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			return
		}
	}
}

// unindexed counts the messages the index does not have yet: the queue and
// the tail above the mark.
const unindexed = `SELECT (SELECT count(*) FROM fts_pending) + (SELECT count(*) FROM messages WHERE id > (SELECT upto FROM fts_mark))`

// expectSearch checks the sessions a search finds, newest first.
func expectSearch(t *testing.T, svc *sessions.Service, step, q string, want ...string) {
	t.Helper()
	hits, err := svc.Search(ctx, q, sessions.SearchOptions{})
	if err != nil {
		t.Fatalf("%s: search %q: %v", step, q, err)
	}
	var got []string
	for _, h := range hits {
		got = append(got, h.Session.ID)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("%s: search %q = %v, want %v", step, q, got, want)
	}
}

// waitNone waits until the count q reports is 0 (the background indexer
// at work).
func waitNone(t *testing.T, d *db.DB, q, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for count(t, d, q) != 0 {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func count(t *testing.T, d *db.DB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := d.QueryRow(ctx, q, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A message is searchable the moment it is appended, before the indexer
// took it (it is matched in the queue), after, and never twice.
func TestSearchCoversMessagesNotIndexedYet(t *testing.T) {
	t.Parallel()
	d, svc := manualIndexStore(t)
	a, _ := svc.Create(ctx, sessions.CreateParams{Title: "first"})
	b, _ := svc.Create(ctx, sessions.CreateParams{Title: "second"})
	for _, m := range []struct{ id, text string }{
		{a.ID, "the Zürich deploy runs on Fridays"},
		{b.ID, "nothing relevant here"},
		{b.ID, "Café menus in zurich-west"},
	} {
		if _, err := svc.AppendMessage(ctx, m.id, sessions.NewMessage{Role: "user", Content: m.text}); err != nil {
			t.Fatal(err)
		}
	}
	search := func(step, q string, want ...string) {
		t.Helper()
		expectSearch(t, svc, step, q, want...)
		// The match filter (lists, counts, bulk by rule) agrees.
		rule, err := sessions.ParseRule(map[string]string{sessions.FieldMatch: q})
		if err != nil {
			t.Fatal(err)
		}
		n, err := svc.Count(ctx, sessions.Filter{Rule: rule})
		if err != nil || n != int64(len(want)) {
			t.Fatalf("%s: count of match %q = %d, %v; want %d", step, q, n, err, len(want))
		}
	}
	// Newest matching message first; diacritics and case folded exactly
	// as the index folds them; the last word as a prefix.
	check := func(step string) {
		search(step, "zurich", b.ID, a.ID)
		search(step, "ZÜRICH deploy", a.ID)
		search(step, "cafe", b.ID)
		search(step, "frid", a.ID)
		search(step, "relevant deploy")
	}
	if n := count(t, d, unindexed); n != 3 {
		t.Fatalf("queued = %d, want 3", n)
	}
	check("queued")
	indexAll(t, svc)
	if n := count(t, d, unindexed); n != 0 {
		t.Fatalf("queued after indexing = %d", n)
	}
	if n := count(t, d, `SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'zurich'`); n != 2 {
		t.Fatalf("indexed matches = %d", n)
	}
	check("indexed")
	// Half in the queue, half in the index: still one hit per conversation.
	if _, err := svc.AppendMessage(ctx, a.ID, sessions.NewMessage{Role: "user", Content: "back from Zurich"}); err != nil {
		t.Fatal(err)
	}
	search("mixed", "zurich", a.ID, b.ID)
	// A queued row that is deleted leaves the queue; an indexed one is
	// queued for removal, and left out of every answer meanwhile.
	if _, err := svc.Purge(ctx, []string{a.ID}, nil); err != nil {
		t.Fatal(err)
	}
	state := func() [3]int64 {
		return [3]int64{count(t, d, unindexed), count(t, d, `SELECT count(*) FROM fts_gone`),
			count(t, d, `SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'zurich'`)}
	}
	if st := state(); st != [3]int64{0, 1, 2} {
		t.Fatalf("after the purge: queued, gone, indexed matches = %v", st)
	}
	search("purged", "zurich", b.ID)
	indexAll(t, svc)
	if st := state(); st != [3]int64{0, 0, 1} {
		t.Fatalf("after the purge was indexed: queued, gone, indexed matches = %v", st)
	}
	search("purged and indexed", "zurich", b.ID)
	// An indexed message whose text changes goes back to the queue.
	if err := d.InTx(ctx, func(tx *db.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE messages SET content = 'now about Geneva' WHERE content LIKE 'Café%'`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	search("edited", "zurich")
	search("edited", "geneva", b.ID)
	indexAll(t, svc)
	search("edited and indexed", "geneva", b.ID)
	search("edited and indexed", "zurich")
}

// The queue is matched with the index's own tokenizer.
func TestTailTokenizerIsTheIndexes(t *testing.T) {
	t.Parallel()
	d, _ := manualIndexStore(t)
	var q string
	if err := d.QueryRow(ctx, `SELECT sql FROM sqlite_master WHERE name = 'messages_fts'`).Scan(&q); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(q, "tokenize='"+sessions.FTSTokenizer+"'") {
		t.Fatalf("messages_fts is %s; the queue is matched with %q", q, sessions.FTSTokenizer)
	}
}

// The indexer of a store with a background task catches up on its own, and
// whatever is queued when the store closes is indexed then.
func TestIndexerCatchesUpInTheBackgroundAndAtClose(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	d, err := db.Open(ctx, path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svc := sessions.NewService(d, nil, sessions.Options{})
	s, _ := svc.Create(ctx, sessions.CreateParams{})
	if _, err := svc.AppendMessage(ctx, s.ID, sessions.NewMessage{Role: "user", Content: "background words"}); err != nil {
		t.Fatal(err)
	}
	waitNone(t, d, unindexed+" + (SELECT count(*) FROM fts_gone)", "the background indexer never emptied the queue")
	if _, err := svc.AppendMessage(ctx, s.ID, sessions.NewMessage{Role: "user", Content: "closing words"}); err != nil {
		t.Fatal(err)
	}
	_ = d.Close()
	d, err = db.Open(ctx, path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if q, i := count(t, d, unindexed), count(t, d, `SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'words'`); q != 0 || i != 2 {
		t.Fatalf("after close: %d queued, %d indexed", q, i)
	}
}

// The kept counters follow every path that adds, archives, trashes,
// restores or removes sessions.
func TestScopeCountsFollowEveryPath(t *testing.T) {
	t.Parallel()
	d, svc := manualIndexStore(t)
	check := func(step string) {
		t.Helper()
		for scope, q := range map[string]string{
			sessions.ScopeActive:   `SELECT count(*) FROM sessions WHERE archived = 0 AND trashed_at IS NULL`,
			sessions.ScopeArchived: `SELECT count(*) FROM sessions WHERE archived = 1 AND trashed_at IS NULL`,
			sessions.ScopeTrash:    `SELECT count(*) FROM sessions WHERE trashed_at IS NOT NULL`,
			sessions.ScopeAll:      `SELECT count(*) FROM sessions WHERE trashed_at IS NULL`,
		} {
			n, err := svc.Count(ctx, sessions.Filter{Rule: sessions.Rule{Scope: scope}})
			if want := count(t, d, q); err != nil || n != want {
				t.Fatalf("%s: count %s = %d, %v; want %d", step, scope, n, err, want)
			}
		}
	}
	var ids []string
	for i := 0; i < 6; i++ {
		s, err := svc.Create(ctx, sessions.CreateParams{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	child, _ := svc.Create(ctx, sessions.CreateParams{ParentID: ids[0], Relation: sessions.RelationCompression})
	check("created")
	steps := []struct {
		name string
		run  func() error
	}{
		{"archive", func() error { _, err := svc.Archive(ctx, ids[:3]); return err }},
		{"unarchive", func() error { _, err := svc.Unarchive(ctx, ids[1:2]); return err }},
		{"trash an archived one", func() error { _, err := svc.Delete(ctx, ids[2:4], nil); return err }},
		{"restore", func() error { _, err := svc.Restore(ctx, ids[2:3]); return err }},
		{"purge", func() error { _, err := svc.Purge(ctx, []string{ids[3], ids[4]}, nil); return err }},
		{"trash a chain", func() error { _, err := svc.Delete(ctx, []string{child.ID}, nil); return err }},
		{"empty the trash", func() error { _, err := svc.EmptyTrash(ctx, 0, nil); return err }},
	}
	for _, st := range steps {
		if err := st.run(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		check(st.name)
	}
}

// A message id can come back: SQLite gives a new message max(id)+1, so
// deleting the newest messages of the store (the session a user just
// deleted) hands their ids to the next messages. The new message must be
// found, before the old entry's removal is applied (removals wait for a
// batch in the background) and after it, through a reopening.
func TestReusedMessageIDIsSearchable(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	open := func() (*db.DB, *sessions.Service) {
		d, err := db.Open(ctx, path, db.Options{})
		if err != nil {
			t.Fatal(err)
		}
		bus := hooks.NewBus(d, hooks.Options{Timeout: 5 * time.Second})
		if err := bus.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = bus.Close(context.Background()) })
		return d, sessions.NewService(d, bus, sessions.Options{TrashDays: new(int)}) // the background indexer
	}
	d, svc := open()
	settled := func(step string) {
		t.Helper()
		waitNone(t, d, unindexed, step+": the background indexer never took the new messages")
	}
	search := func(step, q string, want ...string) {
		t.Helper()
		expectSearch(t, svc, step, q, want...) // svc: the one open now
	}
	a, _ := svc.Create(ctx, sessions.CreateParams{})
	old, err := svc.AppendMessage(ctx, a.ID, sessions.NewMessage{Role: "user", Content: "alpha quartz"})
	if err != nil {
		t.Fatal(err)
	}
	settled("appended")
	if _, err := svc.Delete(ctx, []string{a.ID}, nil); err != nil {
		t.Fatal(err)
	}
	if n := count(t, d, `SELECT count(*) FROM fts_gone`); n != 1 {
		t.Fatalf("removals queued = %d, want 1 (waiting for a batch)", n)
	}
	b, _ := svc.Create(ctx, sessions.CreateParams{})
	reused, err := svc.AppendMessage(ctx, b.ID, sessions.NewMessage{Role: "user", Content: "bravo quartz"})
	if err != nil {
		t.Fatal(err)
	}
	if reused.ID != old.ID {
		t.Fatalf("the new message got id %d, the deleted one had %d: the case this test is about did not happen", reused.ID, old.ID)
	}
	search("queued", "quartz", b.ID)
	settled("indexed")
	search("indexed, the old entry's removal still queued", "quartz", b.ID)
	search("indexed, the old entry's removal still queued", "alpha")
	search("indexed, the old entry's removal still queued", "bravo", b.ID)
	_ = d.Close() // the last run applies every queue
	d, svc = open()
	defer d.Close()
	search("reopened", "quartz", b.ID)
	search("reopened", "alpha")
	search("reopened", "bravo", b.ID)
}

// A store from before the mark (migration 0008) keeps its queue: the
// messages queued then are indexed from it, the new ones from the tail.
func TestStoreFromBeforeTheMarkIndexesItsQueue(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	d, err := db.Open(ctx, path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svc := sessions.NewService(d, nil, sessions.Options{ManualIndex: true})
	s, _ := svc.Create(ctx, sessions.CreateParams{})
	if _, err := svc.AppendMessage(ctx, s.ID, sessions.NewMessage{Role: "user", Content: "indexed before"}); err != nil {
		t.Fatal(err)
	}
	indexAll(t, svc)
	// Back to the schema of 0007: no mark, every new message queued (and
	// what later migrations made dropped too: they run again).
	if err := d.InTx(ctx, func(tx *db.Tx) error {
		for _, q := range []string{
			`ALTER TABLE gateway_outbox DROP COLUMN markdown`,                                                       // 0024
			`ALTER TABLE gateway_outbox DROP COLUMN file`,                                                           // 0023
			`DROP TABLE gateway_homes`,                                                                              // 0022
			`DROP TABLE gateway_pairing_requests`, `DROP TABLE gateway_paired`, `DROP TABLE gateway_pairing_limits`, // 0021
			`ALTER TABLE gateway_outbox DROP COLUMN buttons`,                                                                                  // 0020
			`ALTER TABLE session_imports DROP COLUMN last_message`,                                                                            // 0019
			`ALTER TABLE session_imports DROP COLUMN digest`,                                                                                  // 0018
			`ALTER TABLE sessions DROP COLUMN start_source`,                                                                                   // 0017
			`DROP TABLE sidecar_pending`,                                                                                                      // 0013
			`DROP TABLE hook_seq`,                                                                                                             // 0011 (which rebuilds the hook log again)
			`DROP TRIGGER session_facets_ai`, `DROP TRIGGER session_facets_ad`, `DROP TRIGGER session_facets_au`, `DROP TABLE session_facets`, // 0010
			`DROP INDEX sessions_empty`, // 0009
			`DROP TABLE fts_mark`, `DROP TRIGGER messages_fts_ai`, `DROP TRIGGER messages_fts_ad`, `DROP TRIGGER messages_fts_au`,
			`CREATE TRIGGER messages_fts_ai AFTER INSERT ON messages BEGIN INSERT INTO fts_pending (id) VALUES (new.id); END`,
			`CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages BEGIN
			   INSERT OR IGNORE INTO fts_gone (id) SELECT old.id WHERE NOT EXISTS (SELECT 1 FROM fts_pending WHERE id = old.id);
			   DELETE FROM fts_pending WHERE id = old.id; END`,
			`CREATE TRIGGER messages_fts_au AFTER UPDATE OF content ON messages BEGIN
			   INSERT OR IGNORE INTO fts_gone (id) SELECT old.id WHERE NOT EXISTS (SELECT 1 FROM fts_pending WHERE id = old.id);
			   INSERT OR IGNORE INTO fts_pending (id) VALUES (new.id); END`,
			`DELETE FROM schema_migrations WHERE version >= 8`,
			`INSERT INTO messages (session_id, role, content, created_at) VALUES ('` + s.ID + `', 'user', 'queued before', 1), ('` + s.ID + `', 'user', 'queued before too', 2)`,
		} {
			if _, err := tx.Exec(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	_ = d.Close()
	d, err = db.Open(ctx, path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	svc = sessions.NewService(d, nil, sessions.Options{ManualIndex: true})
	if _, err := svc.AppendMessage(ctx, s.ID, sessions.NewMessage{Role: "user", Content: "appended after"}); err != nil {
		t.Fatal(err)
	}
	if q, tail := count(t, d, `SELECT count(*) FROM fts_pending`), count(t, d, `SELECT count(*) FROM messages WHERE id > (SELECT upto FROM fts_mark)`); q != 2 || tail != 1 {
		t.Fatalf("after the migration: %d queued, %d in the tail; want 2 and 1", q, tail)
	}
	// Migration 0010 counted the sessions already there.
	if f, err := svc.Facets(ctx); err != nil || len(f.Sources) != 1 || f.Sources[0] != s.Source || len(f.Profiles) != 1 {
		t.Fatalf("facets after the migration: %+v, %v", f, err)
	}
	for _, step := range []string{"before indexing", "indexed"} {
		for _, w := range []string{"indexed", "queued", "appended"} {
			hits, err := svc.Search(ctx, w, sessions.SearchOptions{})
			if err != nil || len(hits) != 1 {
				t.Fatalf("%s: search %q = %d hits, %v", step, w, len(hits), err)
			}
		}
		indexAll(t, svc)
	}
	if n, i := count(t, d, unindexed), count(t, d, `SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'before OR after'`); n != 0 || i != 4 {
		t.Fatalf("after indexing: %d unindexed, %d indexed; want 0 and 4", n, i)
	}
}

// A delete queues for removal from the search index exactly the messages
// the index has: an indexed message once (an edited one is queued
// already), not one waiting in fts_pending (edited since it was indexed,
// or new under a deleted message's id), which leaves that queue, and none
// above the mark (never indexed). A delete of several sessions leaves the
// queues as deleting them one at a time does; a rolled-back delete leaves
// them as they were.
func TestDeletesQueueExactlyTheIndexedMessages(t *testing.T) {
	t.Parallel()
	type state struct{ gone, pending, msgs string }
	run := func(bulk bool) state {
		d, svc := manualIndexStoreWith(t, sessions.Options{TrashDays: new(int)})
		var ids []string
		for i := range 4 {
			s, err := svc.Create(ctx, sessions.CreateParams{})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, s.ID)
			for j := range 3 {
				if _, err := svc.AppendMessage(ctx, s.ID, sessions.NewMessage{Role: "user", Content: fmt.Sprintf("word%d kept%d turn%d", i, i, j)}); err != nil {
					t.Fatal(err)
				}
			}
		}
		// A fifth session's message (id 13) indexed, then deleted and its
		// removal applied: its id is handed out again below.
		fifth, err := svc.Create(ctx, sessions.CreateParams{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.AppendMessage(ctx, fifth.ID, sessions.NewMessage{Role: "user", Content: "fifth"}); err != nil {
			t.Fatal(err)
		}
		indexAll(t, svc)
		if _, err := svc.Delete(ctx, []string{fifth.ID}, nil); err != nil {
			t.Fatal(err)
		}
		indexAll(t, svc)
		// Session 1's first message edited (queued both ways); in session 2
		// a message that gets id 13 again (at the mark: waiting in
		// fts_pending, never indexed under it) and two above the mark.
		if err := d.Write.Exec(`UPDATE messages SET content = 'edited' WHERE id = (SELECT min(id) FROM messages WHERE session_id = ?)`, ids[1]).Error; err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			if _, err := svc.AppendMessage(ctx, ids[2], sessions.NewMessage{Role: "user", Content: fmt.Sprintf("late%d", j)}); err != nil {
				t.Fatal(err)
			}
		}
		if n := count(t, d, `SELECT count(*) FROM fts_pending WHERE id IN (4, 13)`); n != 2 || count(t, d, `SELECT upto FROM fts_mark`) != 13 {
			t.Fatal("set-up: messages 4 (edited) and 13 (a reused id) should be waiting in fts_pending, the mark at 13")
		}
		gone := func() string {
			var ids []int64
			if err := d.Read.Raw(`SELECT id FROM fts_gone ORDER BY id`).Scan(&ids).Error; err != nil {
				t.Fatal(err)
			}
			return fmt.Sprint(ids)
		}
		before := gone()
		// Rolled back: nothing moves.
		boom := fmt.Errorf("boom")
		if err := d.InTx(ctx, func(tx *db.Tx) error {
			if _, err := svc.DeleteTx(ctx, tx, ids[:3], sessions.DeleteOptions{}); err != nil {
				return err
			}
			return boom
		}); err != boom {
			t.Fatalf("rolled-back delete: %v", err)
		}
		if g, n := gone(), count(t, d, `SELECT count(*) FROM messages`); g != before || n != 15 {
			t.Fatalf("after a rollback: fts_gone %s (was %s), %d messages", g, before, n)
		}
		if bulk {
			if _, err := svc.Delete(ctx, ids[:3], nil); err != nil {
				t.Fatal(err)
			}
		} else {
			for _, id := range ids[:3] {
				if _, err := svc.Delete(ctx, []string{id}, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		var st state
		st.gone = gone()
		var pending []int64
		if err := d.Read.Raw(`SELECT id FROM fts_pending ORDER BY id`).Scan(&pending).Error; err != nil {
			t.Fatal(err)
		}
		st.pending = fmt.Sprint(pending)
		st.msgs = fmt.Sprint(count(t, d, `SELECT count(*) FROM messages`))
		searchAfter := func(step string) {
			t.Helper()
			expectSearch(t, svc, step, "turn0", ids[3])
			for _, word := range []string{"edited", "late0", "late2", "word0", "word1", "fifth"} {
				expectSearch(t, svc, step, word)
			}
		}
		searchAfter("deleted, removals queued")
		indexAll(t, svc)
		searchAfter("deleted, index caught up")
		if n := count(t, d, `SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'turn0 OR turn1 OR turn2 OR edited OR late0 OR late1 OR late2 OR fifth'`); n != 3 {
			t.Fatalf("index entries left: %d, want session 3's 3", n)
		}
		return st
	}
	bulk, each := run(true), run(false)
	// Sessions 0 and 1 were indexed (ids 1-6; 4 edited, queued already),
	// session 2's first three too (7-9); its late ones (13 again, 14, 15)
	// never were.
	want := state{gone: "[1 2 3 4 5 6 7 8 9]", pending: "[]", msgs: "3"}
	if bulk != want || each != want {
		t.Fatalf("queues after the bulk delete %+v, one at a time %+v, want %+v", bulk, each, want)
	}
}
