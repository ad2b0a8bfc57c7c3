package hooks_test

import (
	"fmt"
	"strings"
	"testing"

	"atrium/backend/db"
	"atrium/backend/hooks"
	"atrium/backend/hooks/hookstest"
)

// A store whose hook log was written before migration 0011 (AUTOINCREMENT,
// a unique event_id, every event in the rev index) keeps its events and
// their deliveries, and its next event takes the seq after the old
// AUTOINCREMENT counter, even when the newest events had been pruned: a
// subscriber standing there must not miss it.
func TestHookLogFromBefore0011KeepsEventsDeliveriesAndCounter(t *testing.T) {
	t.Parallel()
	clock, d := newStore(t)
	b := newBus(t, d, hooks.Options{})
	rec := hookstest.Record(t, b)
	mustStart(t, b)
	for i := range 3 {
		mustEnqueue(t, d, b, hooks.OnSessionDelete, payload{N: i})
	}
	mustFlush(t, b)
	rec.Expect(t, b, map[string]int{hooks.OnSessionDelete: 3, "*": 0})
	before := mustList(t, d, hooks.LogFilter{})
	if len(before) != 3 || len(before[0].Deliveries) != 1 {
		t.Fatalf("before: %+v", before)
	}
	b.SimulateCrash() // its process is gone; the next one delivers after the upgrade

	// Back to the store of 0010 (0011 onwards run again), with the counter at 1000: events up to
	// seq 1000 had been written and the newest ones pruned since; the
	// recorder had taken them all.
	const counter = 1000
	if err := d.InTx(bg, func(tx *db.Tx) error {
		for _, q := range []string{
			`CREATE TEMP TABLE ev AS SELECT * FROM hook_events`,
			`CREATE TEMP TABLE dl AS SELECT * FROM hook_deliveries`,
			`DROP TABLE hook_deliveries`, `DROP TABLE hook_events`, `DROP TABLE hook_seq`,
			`CREATE TABLE hook_events (seq INTEGER PRIMARY KEY AUTOINCREMENT, event_id TEXT NOT NULL UNIQUE, hook TEXT NOT NULL,
			   payload TEXT NOT NULL, created_at INTEGER NOT NULL, delivered_at INTEGER, redelivered INTEGER NOT NULL DEFAULT 0,
			   rev INTEGER NOT NULL DEFAULT 0)`,
			`CREATE INDEX hook_events_pending ON hook_events (seq) WHERE delivered_at IS NULL`,
			`CREATE INDEX hook_events_hook ON hook_events (hook, seq)`,
			`CREATE INDEX hook_events_delivered ON hook_events (delivered_at) WHERE delivered_at IS NOT NULL`,
			`CREATE INDEX hook_events_rev ON hook_events (rev)`,
			`CREATE TABLE hook_deliveries (seq INTEGER NOT NULL REFERENCES hook_events (seq) ON DELETE CASCADE,
			   subscriber TEXT NOT NULL, status TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'timeout')),
			   error TEXT NOT NULL DEFAULT '', redelivery INTEGER NOT NULL DEFAULT 0, delivered_at INTEGER NOT NULL,
			   duration_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (seq, subscriber)) WITHOUT ROWID`,
			`INSERT INTO hook_events SELECT * FROM temp.ev`,
			`INSERT INTO hook_deliveries SELECT seq, subscriber, status, error, redelivery, delivered_at, duration_us FROM temp.dl`,
			`DROP TABLE temp.ev`, `DROP TABLE temp.dl`,
			fmt.Sprintf(`UPDATE sqlite_sequence SET seq = %d WHERE name = 'hook_events'`, counter),
			fmt.Sprintf(`UPDATE hook_subscribers SET position = %d, inflight = %d WHERE name = 'recorder'`, counter, counter),
			`DROP TABLE sidecar_pending`, `ALTER TABLE sessions DROP COLUMN start_source`, // 0013, 0017
			`ALTER TABLE session_imports DROP COLUMN digest`,                                                        // 0018
			`ALTER TABLE session_imports DROP COLUMN last_message`,                                                  // 0019
			`ALTER TABLE gateway_outbox DROP COLUMN buttons`,                                                        // 0020
			`ALTER TABLE gateway_outbox DROP COLUMN file`,                                                           // 0023
			`ALTER TABLE gateway_outbox DROP COLUMN markdown`,                                                       // 0024
			`DROP TABLE gateway_homes`,                                                                              // 0022
			`DROP TABLE gateway_pairing_requests`, `DROP TABLE gateway_paired`, `DROP TABLE gateway_pairing_limits`, // 0021
			`DELETE FROM schema_migrations WHERE version >= 11`, // 0011 onwards
		} {
			if _, err := tx.Exec(bg, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if c := count(t, d, `SELECT seq FROM sqlite_sequence WHERE name = 'hook_events'`); c != counter {
		t.Fatalf("the old counter is %d, want %d", c, counter)
	}

	d2 := reopen(t, d, clock) // migrates
	after := mustList(t, d2, hooks.LogFilter{})
	if fmt.Sprintf("%+v", after) != fmt.Sprintf("%+v", before) {
		t.Fatalf("the log changed in the migration:\n before %+v\n after  %+v", before, after)
	}
	var schema string
	if err := d2.Read.Raw(`SELECT group_concat(sql, ';') FROM sqlite_master WHERE tbl_name IN ('hook_events', 'hook_deliveries')`).Scan(&schema).Error; err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"AUTOINCREMENT", "UNIQUE", "hook_events_new", "ON hook_events (rev)\n", "hook_events_delivered"} {
		if strings.Contains(schema+"\n", bad) {
			t.Fatalf("the migrated hook log still has %q:\n%s", bad, schema)
		}
	}
	for _, want := range []string{"REFERENCES hook_events (seq) ON DELETE CASCADE", "CHECK (status IN ('ok', 'failed', 'timeout', 'retrying'))", "hook_events_pending", "hook_events_hook",
		"ON hook_events (rev) WHERE rev > 0"} {
		if !strings.Contains(schema, want) {
			t.Fatalf("the migrated hook log lacks %q:\n%s", want, schema)
		}
	}
	if c := count(t, d2, `SELECT count(*) FROM pragma_foreign_key_check`); c != 0 {
		t.Fatalf("%d foreign key violations after the migration", c)
	}

	// The next event, from a bus on the migrated store, comes after the
	// counter, and the recorder standing there takes it.
	b2 := newBus(t, d2, hooks.Options{})
	rec2 := hookstest.Record(t, b2)
	mustStart(t, b2)
	ev := mustEnqueue(t, d2, b2, hooks.PostCompaction, payload{N: 9})
	if ev.Seq != counter+1 {
		t.Fatalf("the first event after the migration has seq %d, want %d", ev.Seq, counter+1)
	}
	mustFlush(t, b2)
	rec2.Expect(t, b2, map[string]int{hooks.PostCompaction: 1, "*": 0})
	// Deleting an event still takes its deliveries with it.
	if err := d2.InTx(bg, func(tx *db.Tx) error {
		_, err := tx.Exec(bg, `DELETE FROM hook_events WHERE seq = ?`, before[0].Seq)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if c := count(t, d2, `SELECT count(*) FROM hook_deliveries WHERE seq = ?`, before[0].Seq); c != 0 {
		t.Fatalf("%d deliveries of a deleted event left", c)
	}
}
