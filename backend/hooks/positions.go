package hooks

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"gorm.io/gorm"

	"atrium/backend/db"
)

// Everything hook_subscribers holds: a subscriber's position in the log,
// its in-flight mark, the process delivering to it (its claim), whether it
// is active. Only this package reads or writes these tables.

// outcome is one subscriber's result for one event, or (suspend) the news
// that its plugin is in error.
type outcome struct {
	seq        int64
	subscriber string
	status     string
	err        string
	redelivery bool
	at         time.Time
	dur        time.Duration
	suspend    bool
	attempt    bool // a failed attempt (retrying): its row only, no position moved
	attempts   int  // the attempt's number, when its handler said (LaterAt)
	nextAt     time.Time
}

// recorder writes outcomes in batches (whatever arrived while the previous
// batch was written goes in the next transaction), moves the positions,
// bumps the events' rev for the activity feed and settles events.
type recorder struct {
	b *Bus

	mu       sync.Mutex
	queue    []outcome
	settle   bool
	running  bool
	stopping bool
	ready    chan struct{}
	done     chan struct{}
}

func newRecorder(b *Bus) *recorder {
	return &recorder{b: b, ready: make(chan struct{}, 1), done: make(chan struct{})}
}

func (r *recorder) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running {
		return
	}
	r.running = true
	go r.loop()
}

func (r *recorder) signal() {
	select {
	case r.ready <- struct{}{}:
	default:
	}
}

func (r *recorder) push(o outcome) {
	r.mu.Lock()
	r.queue = append(r.queue, o)
	r.mu.Unlock()
	r.signal()
}

// settleSoon asks for a settle pass (commits by other processes).
func (r *recorder) settleSoon() {
	r.mu.Lock()
	r.settle = true
	r.mu.Unlock()
	r.signal()
}

// stopAndDrain writes what is queued, then stops the recorder.
func (r *recorder) stopAndDrain() {
	r.mu.Lock()
	running := r.running
	r.stopping = true
	r.mu.Unlock()
	if !running {
		return
	}
	r.signal()
	<-r.done
}

func (r *recorder) loop() {
	defer close(r.done)
	for range r.ready {
		for {
			r.mu.Lock()
			batch := r.queue
			if len(batch) > 512 {
				batch = batch[:512]
			}
			r.queue = r.queue[len(batch):]
			settle := r.settle
			r.settle = false
			stopping := r.stopping && len(r.queue) == 0
			r.mu.Unlock()
			if len(batch) > 0 || settle {
				r.write(batch)
			}
			if stopping {
				return
			}
			if len(batch) == 0 {
				break
			}
		}
	}
}

func (r *recorder) write(batch []outcome) {
	b := r.b
	if b.dropAll.Load() {
		return
	}
	type ack struct {
		seq int64
		n   int
	}
	acks := map[string]*ack{}
	// A batch is a handful of statements, whatever its size: the rows go in
	// as one JSON array each.
	type deliveryRow struct {
		Seq        int64  `json:"seq"`
		Subscriber string `json:"sub"`
		Status     string `json:"st"`
		Err        string `json:"err"`
		Redelivery int    `json:"re"`
		At         int64  `json:"at"`
		Micros     int64  `json:"us"`
		Attempts   int    `json:"n"`
		NextAt     int64  `json:"nx"`
	}
	type positionRow struct {
		Name string `json:"name"`
		Seq  int64  `json:"seq"`
		Err  string `json:"err"`
	}
	var rows []deliveryRow
	var seqs, redelivered []int64
	var suspends []outcome
	lastErr := map[string]string{}
	for _, o := range batch {
		if o.suspend {
			suspends = append(suspends, o)
			continue
		}
		r := deliveryRow{Seq: o.seq, Subscriber: o.subscriber, Status: o.status, Err: o.err, At: db.Ms(o.at), Micros: o.dur.Microseconds(),
			Attempts: o.attempts}
		if !o.nextAt.IsZero() {
			r.NextAt = db.Ms(o.nextAt)
		}
		if o.redelivery {
			r.Redelivery = 1
			redelivered = append(redelivered, o.seq)
		}
		rows = append(rows, r)
		seqs = append(seqs, o.seq)
		if o.attempt {
			continue
		}
		a := acks[o.subscriber]
		if a == nil {
			a = &ack{}
			acks[o.subscriber] = a
		}
		a.seq, a.n = max(a.seq, o.seq), a.n+1
		lastErr[o.subscriber] = o.err
	}
	positions := make([]positionRow, 0, len(acks))
	for name, a := range acks {
		positions = append(positions, positionRow{Name: name, Seq: a.seq, Err: lastErr[name]})
	}
	err := b.db.InTx(context.Background(), func(tx *db.Tx) error {
		g := tx.G
		for _, o := range suspends {
			if err := g.Exec(`UPDATE hook_subscribers SET active = 0, last_error = ?, updated_at = ? WHERE name = ?`,
				o.err, db.Ms(tx.Now), o.subscriber).Error; err != nil {
				return err
			}
		}
		if len(rows) > 0 {
			// A final outcome keeps the count of the attempts before it.
			if err := g.Exec(`INSERT INTO hook_deliveries (seq, subscriber, status, error, redelivery, delivered_at, duration_us, attempts, next_at)
				SELECT value->>'seq', value->>'sub', value->>'st', value->>'err', value->>'re', value->>'at', value->>'us', value->>'n', value->>'nx'
				FROM json_each(?) WHERE true
				ON CONFLICT (seq, subscriber) DO UPDATE SET status = excluded.status, error = excluded.error, redelivery = excluded.redelivery,
					delivered_at = excluded.delivered_at, duration_us = excluded.duration_us, next_at = excluded.next_at,
					attempts = CASE WHEN excluded.attempts > 0 THEN excluded.attempts ELSE hook_deliveries.attempts END`,
				mustJSON(rows)).Error; err != nil {
				return err
			}
			if err := g.Exec(`UPDATE hook_subscribers SET position = MAX(position, v.seq), last_error = v.err, updated_at = ?
				FROM (SELECT value->>'name' AS name, value->>'seq' AS seq, value->>'err' AS err FROM json_each(?)) AS v
				WHERE hook_subscribers.name = v.name`, db.Ms(tx.Now), mustJSON(positions)).Error; err != nil {
				return err
			}
		}
		if len(redelivered) > 0 {
			if err := g.Exec(`UPDATE hook_events SET redelivered = 1 WHERE seq IN (SELECT value FROM json_each(?))`, mustJSON(redelivered)).Error; err != nil {
				return err
			}
		}
		rev, err := nextRev(g)
		if err != nil {
			return err
		}
		if len(seqs) > 0 {
			if err := g.Exec(`UPDATE hook_events SET rev = ? WHERE seq IN (SELECT value FROM json_each(?))`, rev, mustJSON(seqs)).Error; err != nil {
				return err
			}
		}
		return settleTx(g, tx.Now, rev)
	})
	if err != nil && b.base.Err() == nil {
		b.log.Error("record hook deliveries", "error", err)
	}
	for name, a := range acks {
		b.recorded(name, a.seq, a.n)
	}
}

func nextRev(g *gorm.DB) (int64, error) {
	var rev int64
	err := g.Raw(`SELECT COALESCE(MAX(rev), 0) + 1 FROM hook_events WHERE rev > 0`).Scan(&rev).Error
	return rev, err
}

// takers is the active subscribers that take a hook, to be completed with
// the hook: an event none of them still has to take is delivered (settleTx,
// and EnqueueTx at the event's commit).
const takers = `SELECT 1 FROM hook_subscribers s, json_each(s.hooks) h WHERE s.active = 1 AND h.value = `

// settleTx marks delivered every event that no active subscriber still has
// to take.
func settleTx(g *gorm.DB, now time.Time, rev int64) error {
	return g.Exec(`UPDATE hook_events SET delivered_at = ?, rev = ? WHERE delivered_at IS NULL AND NOT EXISTS (
		`+takers+`hook_events.hook AND s.position < hook_events.seq)`, db.Ms(now), rev).Error
}

type subRow struct {
	Name      string
	Hooks     string
	Position  int64
	Inflight  int64
	ClaimedBy string
	Active    bool
	LastError string
	UpdatedAt int64
}

// claim makes this process the one delivering to s, unless another live
// process is. A subscriber seen for the first time starts at the head of
// the log. Events a previous deliverer handed out and did not record go out
// again flagged as redeliveries: (position, inflight] after a clean
// release; after its death, whose hand-outs are not written down (a write
// before each would cost more than the delivery), everything up to the
// head of the log.
func (b *Bus) claim(ctx context.Context, s *subscriber, hooks []string) (bool, error) {
	if err := b.ensureProcess(ctx); err != nil {
		return false, err
	}
	hooksJSON := mustJSON(hooks)
	var row subRow
	ok := false
	err := b.db.InTx(ctx, func(tx *db.Tx) error {
		g := tx.G.WithContext(ctx)
		var rows []subRow
		if err := g.Raw(`SELECT name, hooks, position, inflight, claimed_by, active FROM hook_subscribers WHERE name = ?`, s.name).Scan(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			var head int64
			if err := g.Raw(`SELECT COALESCE(MAX(seq), 0) FROM hook_events`).Scan(&head).Error; err != nil {
				return err
			}
			b.mu.Lock()
			if s.sinceSet && s.since < head {
				head = s.since
			}
			b.mu.Unlock()
			row = subRow{Name: s.name, Position: head, Inflight: head}
			ok = true
			return g.Exec(`INSERT INTO hook_subscribers (name, hooks, position, inflight, claimed_by, active, created_at, updated_at)
				VALUES (?, ?, ?, ?, ?, 1, ?, ?)`, s.name, hooksJSON, head, head, b.procID, db.Ms(tx.Now), db.Ms(tx.Now)).Error
		}
		row = rows[0]
		if row.ClaimedBy != "" && row.ClaimedBy != b.procID {
			alive, err := b.processAliveTx(g, row.ClaimedBy, tx.Now)
			if err != nil || alive {
				return err
			}
			// Its process died holding it: what it may have handed out is
			// unknown, so everything up to the head goes out flagged.
			if err := g.Raw(`SELECT COALESCE(MAX(seq), 0) FROM hook_events`).Scan(&row.Inflight).Error; err != nil {
				return err
			}
			if err := g.Exec(`DELETE FROM processes WHERE id = ? AND NOT EXISTS (
				SELECT 1 FROM hook_subscribers WHERE claimed_by = ? AND name != ?)`, row.ClaimedBy, row.ClaimedBy, s.name).Error; err != nil {
				return err
			}
		}
		ok = true
		return g.Exec(`UPDATE hook_subscribers SET claimed_by = ?, active = 1, hooks = ?, last_error = '', updated_at = ? WHERE name = ?`,
			b.procID, hooksJSON, db.Ms(tx.Now), s.name).Error
	})
	b.mu.Lock()
	s.tried = true
	if err != nil || !ok {
		b.notifyProgressLocked()
		b.mu.Unlock()
		return false, err
	}
	s.claimed, s.position, s.through, s.inflight = true, row.Position, row.Position, row.Inflight
	s.retriesLoaded = false // another process may have tried them meanwhile
	if row.Inflight > row.Position {
		s.redeliver = max(s.redeliver, row.Inflight)
	}
	s.hooksSaved, s.waiting, s.lastErr = hooksJSON, false, ""
	b.notifyProgressLocked()
	b.mu.Unlock()
	b.rec.settleSoon()
	return true, nil
}

// release withdraws this process's claim on s once its outcomes are
// recorded (bounded), so the next deliverer starts where it stands.
func (b *Bus) release(s *subscriber) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		b.mu.Lock()
		claimed, pending, ch := s.claimed, s.unrecorded, b.progress
		b.mu.Unlock()
		if !claimed {
			return
		}
		if pending <= 0 || time.Now().After(deadline) || b.dropAll.Load() {
			break
		}
		select {
		case <-ch:
		case <-time.After(50 * time.Millisecond):
		}
	}
	if !b.dropAll.Load() {
		b.mu.Lock()
		handedOut := s.inflight
		b.mu.Unlock()
		err := b.db.InTx(context.Background(), func(tx *db.Tx) error {
			return tx.G.Exec(`UPDATE hook_subscribers SET claimed_by = '', inflight = MAX(inflight, ?), updated_at = ? WHERE name = ? AND claimed_by = ?`,
				handedOut, db.Ms(tx.Now), s.name, b.procID).Error
		})
		if err != nil {
			b.log.Warn("release hook subscriber", "plugin", s.name, "error", err)
		}
	}
	b.mu.Lock()
	s.claimed, s.tried = false, false
	b.notifyProgressLocked()
	b.mu.Unlock()
}

// releaseAll withdraws every claim of this process and its process row.
func (b *Bus) releaseAll() {
	b.mu.Lock()
	row := b.procRow
	handedOut := map[string]int64{}
	for name, s := range b.subs {
		if s.claimed {
			handedOut[name] = s.inflight
		}
		s.claimed = false
	}
	b.mu.Unlock()
	if !row {
		return
	}
	err := b.db.InTx(context.Background(), func(tx *db.Tx) error {
		// A callback cut off by the close may have had its event: the next
		// deliverer sends what this one handed out unrecorded again, flagged.
		for name, seq := range handedOut {
			if err := tx.G.Exec(`UPDATE hook_subscribers SET inflight = MAX(inflight, ?) WHERE name = ? AND claimed_by = ?`, seq, name, b.procID).Error; err != nil {
				return err
			}
		}
		if err := tx.G.Exec(`UPDATE hook_subscribers SET claimed_by = '', updated_at = ? WHERE claimed_by = ?`, db.Ms(tx.Now), b.procID).Error; err != nil {
			return err
		}
		return tx.G.Exec(`DELETE FROM processes WHERE id = ?`, b.procID).Error
	})
	if err != nil {
		b.log.Warn("release hook subscribers", "error", err)
	}
}

// saveHooks records the hooks s takes when they changed (a plugin that
// registered differently after a restart).
func (b *Bus) saveHooks(s *subscriber, hooks []string) error {
	j := mustJSON(hooks)
	b.mu.Lock()
	same := s.hooksSaved == j
	b.mu.Unlock()
	if same {
		return nil
	}
	err := b.db.InTx(b.base, func(tx *db.Tx) error {
		return tx.G.Exec(`UPDATE hook_subscribers SET hooks = ?, active = 1, updated_at = ? WHERE name = ?`, j, db.Ms(tx.Now), s.name).Error
	})
	if err != nil {
		return err
	}
	b.mu.Lock()
	s.hooksSaved = j
	b.mu.Unlock()
	b.rec.settleSoon()
	return nil
}

// readAfter reads the next events after seq of the given hooks (nil: all),
// and how far
// it looked: the head of the log, or the last event read if the batch is
// full. One statement: the head and the events are of the same snapshot.
func (b *Bus) readAfter(ctx context.Context, seq int64, hooks []string) ([]Event, int64, error) {
	var rows []struct {
		Seq       *int64
		EventID   string
		Hook      string
		Payload   string
		CreatedAt int64
		Head      int64
	}
	filter, args := `AND hook IN ?`, []any{seq, hooks}
	if hooks == nil { // every hook (the shared cache)
		filter, args = ``, []any{seq}
	}
	if err := b.db.Read.WithContext(ctx).Raw(`SELECT e.seq, e.event_id, e.hook, e.payload, e.created_at, h.head FROM
		(SELECT COALESCE(MAX(seq), 0) AS head FROM hook_events) h
		LEFT JOIN (SELECT seq, event_id, hook, payload, created_at FROM hook_events
			WHERE seq > ? `+filter+` ORDER BY seq`+db.Limit(readBatch)+`) e ON 1
		ORDER BY e.seq`, args...).Scan(&rows).Error; err != nil {
		return nil, 0, err
	}
	if len(rows) == 0 {
		return nil, seq, nil
	}
	head := rows[0].Head
	evs := make([]Event, 0, len(rows))
	for _, r := range rows {
		if r.Seq == nil {
			continue // no event after seq: the one row carries the head
		}
		evs = append(evs, Event{ID: r.EventID, Seq: *r.Seq, Hook: r.Hook, Payload: json.RawMessage(r.Payload), CreatedAt: time.UnixMilli(r.CreatedAt).UTC()})
	}
	upto := head
	if len(evs) == readBatch {
		upto = evs[len(evs)-1].Seq
	}
	return evs, upto, nil
}

// head is the newest seq in the log (0 when empty).
func (b *Bus) head(ctx context.Context) (int64, error) {
	var head int64
	if err := b.db.Read.WithContext(ctx).Raw(`SELECT COALESCE(MAX(seq), 0) FROM hook_events`).Scan(&head).Error; err != nil {
		return 0, fmt.Errorf("read the head of the hook log: %w", err)
	}
	return head, nil
}

// Head is the newest seq in the log (0 when empty).
func (b *Bus) Head(ctx context.Context) (int64, error) { return b.head(ctx) }

// readConn pins one read connection (PRAGMA data_version is per connection).
func (b *Bus) readConn(ctx context.Context) (*sql.Conn, error) {
	sqlDB, err := b.db.Read.DB()
	if err != nil {
		return nil, err
	}
	return sqlDB.Conn(ctx)
}

// pendingElsewhere lists the active subscribers that another live process
// delivers to and that have not taken every event up to seq.
func (b *Bus) pendingElsewhere(ctx context.Context, seq int64) ([]string, error) {
	var rows []struct {
		Name      string
		ClaimedBy string
	}
	err := b.db.Read.WithContext(ctx).Raw(`SELECT s.name, s.claimed_by FROM hook_subscribers s
		WHERE s.active = 1 AND s.claimed_by != '' AND s.claimed_by != ? AND EXISTS (
			SELECT 1 FROM json_each(s.hooks) h JOIN hook_events e ON e.hook = h.value
			WHERE e.seq > s.position AND e.seq <= ?)`, b.procID, seq).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read hook positions: %w", err)
	}
	var out []string
	for _, r := range rows {
		alive, err := b.processAliveTx(b.db.Read.WithContext(ctx), r.ClaimedBy, b.db.Now())
		if err != nil {
			return nil, err
		}
		if alive {
			out = append(out, r.Name)
		}
	}
	return out, nil
}

// Retire marks inactive every subscriber not in keep (the plugins that are
// enabled): events stop waiting for it; its position is kept for the log's
// retention, so enabling it again soon catches it up.
func (b *Bus) Retire(ctx context.Context, keep []string) error {
	err := b.db.InTx(ctx, func(tx *db.Tx) error {
		q := tx.G.WithContext(ctx)
		if len(keep) == 0 {
			return q.Exec(`UPDATE hook_subscribers SET active = 0, updated_at = ? WHERE active = 1`, db.Ms(tx.Now)).Error
		}
		return q.Exec(`UPDATE hook_subscribers SET active = 0, updated_at = ? WHERE active = 1 AND name NOT IN ?`, db.Ms(tx.Now), keep).Error
	})
	if err != nil {
		return fmt.Errorf("retire hook subscribers: %w", err)
	}
	// A worker that has not yet seen its plugin unregistered (or that sees
	// it registered again before it runs) still holds its claim: like after
	// Suspend, it writes its row (active again) at its next turn.
	b.mu.Lock()
	for name, s := range b.subs {
		if !slices.Contains(keep, name) {
			s.hooksSaved = ""
			s.poke()
		}
	}
	b.mu.Unlock()
	b.rec.settleSoon()
	return nil
}

// SubscriberState is one subscriber as the log knows it.
type SubscriberState struct {
	Name       string    `json:"name"`
	Hooks      []string  `json:"hooks"`
	Position   int64     `json:"position"`    // every event up to here is handled
	Backlog    int64     `json:"backlog"`     // its events after the position
	Active     bool      `json:"active"`      // events wait for it
	ClaimedPID int       `json:"claimed_pid"` // the process delivering to it, 0 if none
	LastError  string    `json:"last_error,omitempty"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// SubscriberStates reads every subscriber's position and backlog.
func (b *Bus) SubscriberStates(ctx context.Context) ([]SubscriberState, error) {
	var rows []struct {
		Name      string
		Hooks     string
		Position  int64
		Active    bool
		LastError string
		UpdatedAt int64
		Backlog   int64
		Pid       int
		Start     string
	}
	err := b.db.Read.WithContext(ctx).Raw(`SELECT s.name, s.hooks, s.position, s.inflight, s.claimed_by, s.active, s.last_error, s.updated_at,
		(SELECT COUNT(*) FROM hook_events e WHERE e.seq > s.position AND e.hook IN (SELECT value FROM json_each(s.hooks))) AS backlog,
		COALESCE(p.pid, 0) AS pid, COALESCE(p.start, '') AS start
		FROM hook_subscribers s LEFT JOIN processes p ON p.id = s.claimed_by ORDER BY s.name`).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read hook positions: %w", err)
	}
	out := make([]SubscriberState, 0, len(rows))
	for _, r := range rows {
		st := SubscriberState{Name: r.Name, Position: r.Position, Backlog: r.Backlog, Active: r.Active, LastError: r.LastError,
			UpdatedAt: time.UnixMilli(r.UpdatedAt).UTC(), Hooks: []string{}}
		_ = json.Unmarshal([]byte(r.Hooks), &st.Hooks)
		if r.Pid > 0 && ProcessAlive(r.Pid, r.Start) {
			st.ClaimedPID = r.Pid
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b SubscriberState) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// Suspend marks plugin inactive because it is in error (a refused
// handshake, cut off): events stop waiting for it, its position is kept,
// and it resumes from there when it registers again.
func (b *Bus) Suspend(ctx context.Context, plugin, reason string) error {
	err := b.db.InTx(ctx, func(tx *db.Tx) error {
		return tx.G.WithContext(ctx).Exec(`UPDATE hook_subscribers SET active = 0, last_error = ?, updated_at = ? WHERE name = ?`,
			reason, db.Ms(tx.Now), plugin).Error
	})
	if err != nil {
		return fmt.Errorf("suspend hook subscriber %s: %w", plugin, err)
	}
	b.mu.Lock()
	if s := b.subs[plugin]; s != nil {
		s.hooksSaved = "" // written again (active again) at its next registration
	}
	b.mu.Unlock()
	b.rec.settleSoon()
	return nil
}
