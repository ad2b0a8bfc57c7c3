package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"atrium/backend/db"
)

// DefaultEventRetention is how long delivered events are kept.
const DefaultEventRetention = 30 * 24 * time.Hour

// Delivery is one subscriber's outcome for a logged event.
type Delivery struct {
	Subscriber  string    `json:"subscriber"`
	Status      string    `json:"status"`
	Error       string    `json:"error,omitempty"`
	Redelivery  bool      `json:"redelivery"`
	DeliveredAt time.Time `json:"delivered_at"`
	// Attempts a receiver elsewhere (a webhook) made, when it was tried
	// again: so far while retrying, in all once the outcome is final.
	Attempts int `json:"attempts,omitempty"`
}

// LoggedEvent is an event as the log holds it.
type LoggedEvent struct {
	EventID    string          `json:"event_id"`
	Seq        int64           `json:"seq"`
	Hook       string          `json:"hook"`
	Payload    json.RawMessage `json:"payload"`
	CreatedAt  time.Time       `json:"created_at"`
	Delivered  bool            `json:"delivered"`
	Redelivery bool            `json:"redelivery"`
	Deliveries []Delivery      `json:"deliveries"`
	// Pending lists the active subscribers that take this event and have
	// not yet (a disabled or removed plugin never appears here).
	Pending []string `json:"pending"`
	// Rev orders changes to the event for the activity feed (Bus.Tail).
	Rev int64 `json:"-"`
}

// LogFilter narrows ListEvents.
type LogFilter struct {
	Hook     string // "" for all
	AfterSeq int64
	Limit    int     // default 1000
	Session  string  // "": all; else events whose payload names this session
	Seqs     []int64 // nil: all; else only these sequence numbers
}

// ListEvents reads the durable event log, oldest first by sequence.
func ListEvents(ctx context.Context, d *db.DB, f LogFilter) ([]LoggedEvent, error) {
	if f.Hook != "" {
		if _, err := Lookup(f.Hook); err != nil {
			return nil, err
		}
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	q := `SELECT seq, event_id, hook, payload, created_at, delivered_at, redelivered, rev FROM hook_events WHERE seq > ?`
	args := []any{f.AfterSeq}
	if f.Hook != "" {
		q += ` AND hook = ?`
		args = append(args, f.Hook)
	}
	if f.Session != "" {
		q += ` AND (json_extract(payload, '$.session_id') = ? OR json_extract(payload, '$.old_session_id') = ?
			OR EXISTS (SELECT 1 FROM json_each(payload, '$.deleted_ids') WHERE value = ?))`
		args = append(args, f.Session, f.Session, f.Session)
	}
	if f.Seqs != nil {
		q += ` AND seq IN (SELECT value FROM json_each(?))`
		args = append(args, mustJSON(f.Seqs))
	}
	return readEvents(ctx, d, q+` ORDER BY seq`+db.Limit(limit), args...)
}

// readEvents runs a query over hook_events (the columns of ListEvents) and
// adds each event's deliveries and pending subscribers.
func readEvents(ctx context.Context, d *db.DB, q string, args ...any) ([]LoggedEvent, error) {
	var rows []struct {
		Seq         int64
		EventID     string
		Hook        string
		Payload     string
		CreatedAt   int64
		DeliveredAt *int64
		Redelivered bool
		Rev         int64
	}
	g := d.Read.WithContext(ctx)
	if err := g.Raw(q, args...).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	out := make([]LoggedEvent, 0, len(rows))
	index := map[int64]int{}
	seqs := make([]int64, 0, len(rows))
	for _, r := range rows {
		index[r.Seq] = len(out)
		seqs = append(seqs, r.Seq)
		out = append(out, LoggedEvent{EventID: r.EventID, Seq: r.Seq, Hook: r.Hook, Payload: json.RawMessage(r.Payload),
			CreatedAt: time.UnixMilli(r.CreatedAt).UTC(), Delivered: r.DeliveredAt != nil, Redelivery: r.Redelivered,
			Deliveries: []Delivery{}, Pending: []string{}, Rev: r.Rev})
	}
	if len(seqs) == 0 {
		return out, nil
	}
	var ds []struct {
		Seq         int64
		Subscriber  string
		Status      string
		Error       string
		Redelivery  bool
		DeliveredAt int64
		Attempts    int
	}
	if err := g.Raw(`SELECT seq, subscriber, status, error, redelivery, delivered_at, attempts FROM hook_deliveries
		WHERE seq IN (SELECT value FROM json_each(?)) ORDER BY seq, delivered_at`, mustJSON(seqs)).Scan(&ds).Error; err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	for _, x := range ds {
		e := &out[index[x.Seq]]
		e.Deliveries = append(e.Deliveries, Delivery{Subscriber: x.Subscriber, Status: x.Status, Error: x.Error,
			Redelivery: x.Redelivery, DeliveredAt: time.UnixMilli(x.DeliveredAt).UTC(), Attempts: x.Attempts})
	}
	var subs []struct {
		Name     string
		Hooks    string
		Position int64
	}
	if err := g.Raw(`SELECT name, hooks, position FROM hook_subscribers WHERE active = 1 ORDER BY name`).Scan(&subs).Error; err != nil {
		return nil, fmt.Errorf("list hook positions: %w", err)
	}
	for _, sub := range subs {
		var hooks []string
		_ = json.Unmarshal([]byte(sub.Hooks), &hooks)
		for i := range out {
			e := &out[i]
			if !e.Delivered && e.Seq > sub.Position && slices.Contains(hooks, e.Hook) {
				e.Pending = append(e.Pending, sub.Name)
			}
		}
	}
	return out, nil
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// PruneDelivered removes delivered events older than keep (and their
// delivery rows); undelivered events are never pruned. It first drops the
// positions of subscribers that no live process delivers to and that have
// not moved for keep (a plugin disabled or removed long ago, or one that
// has had no host since), so their backlog goes with the log's retention,
// and marks delivered every event no active subscriber still takes.
func PruneDelivered(ctx context.Context, d *db.DB, keep time.Duration) (int64, error) {
	var n int64
	err := d.InTx(ctx, func(tx *db.Tx) error {
		g := tx.G.WithContext(ctx)
		cutoff := db.Ms(tx.Now.Add(-keep))
		var stale []struct {
			Name      string
			ClaimedBy string
			Pid       int
			Start     string
		}
		if err := g.Raw(`SELECT s.name, s.claimed_by, COALESCE(p.pid, 0) AS pid, COALESCE(p.start, '') AS start
			FROM hook_subscribers s LEFT JOIN processes p ON p.id = s.claimed_by WHERE s.updated_at < ?`, cutoff).Scan(&stale).Error; err != nil {
			return err
		}
		var drop []string
		for _, s := range stale {
			if s.ClaimedBy == "" || !ProcessAlive(s.Pid, s.Start) {
				drop = append(drop, s.Name)
			}
		}
		if len(drop) > 0 {
			if err := g.Exec(`DELETE FROM hook_subscribers WHERE name IN ?`, drop).Error; err != nil {
				return err
			}
		}
		// Settle what no subscriber still takes: the events of the
		// subscribers just dropped, and those a store written before the
		// bus settled events at birth kept pending for nobody.
		rev, err := nextRev(g)
		if err != nil {
			return err
		}
		if err := settleTx(g, tx.Now, rev); err != nil {
			return err
		}
		// What goes was created before the cutoff (a delivery comes after
		// its event): the log is walked by seq up to the newest such event,
		// found walking down from the newest of all (the retention's days).
		var upto int64
		if err := g.Raw(`SELECT COALESCE((SELECT seq FROM hook_events WHERE created_at < ? ORDER BY seq DESC LIMIT 1), 0)`,
			cutoff).Scan(&upto).Error; err != nil {
			return err
		}
		// No seq pruned is ever given again (subscribers' positions and
		// the feed's cursors are seqs): the floor rises to upto, past
		// every seq this prune may remove (each up to it was given
		// already), without walking them a second time to find the highest.
		if err := g.Exec(`UPDATE hook_seq SET floor = max(floor, ?)`, upto).Error; err != nil {
			return err
		}
		res := g.Exec(`DELETE FROM hook_events WHERE seq <= ? AND delivered_at IS NOT NULL AND delivered_at < ?`, upto, cutoff)
		n = res.RowsAffected
		return res.Error
	})
	if err != nil {
		return 0, fmt.Errorf("prune delivered events: %w", err)
	}
	return n, nil
}
