package hooks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"

	"atrium/backend/db"
)

// Start starts this process's heartbeat and delivers, as redeliveries, the
// events whose claim lapsed because the process that committed them died
// before it delivered them. Register plugins first: a redelivered event goes
// to the subscribers present at Start.
//
// Start writes nothing: the process registers as a claimer (its row in
// processes) in the transaction of its first event, or of its first claim of
// lapsed events, so a command that only reads never writes to the store.
func (b *Bus) Start(ctx context.Context) error {
	b.mu.Lock()
	if b.started {
		b.mu.Unlock()
		return nil
	}
	b.started = true
	b.mu.Unlock()
	if _, err := b.Recover(ctx); err != nil {
		if b.db.Writable() != nil {
			// A store this process cannot write (read-only, damaged): the
			// lapsed events wait for a process that can deliver them.
			b.log.Warn("lapsed hook events not redelivered", "error", err)
		} else {
			return err
		}
	}
	interval := b.lease / 4
	b.bgWG.Add(1)
	go func() {
		defer b.bgWG.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-b.base.Done():
				return
			case <-t.C:
				if b.dropAll.Load() {
					return
				}
				b.heartbeat()
				if _, err := b.Recover(b.base); err != nil && !errors.Is(err, context.Canceled) && b.db.Writable() == nil {
					b.log.Warn("recover lapsed hook events", "error", err)
				}
			}
		}
	}()
	return nil
}

// registerTx makes this process a live claimer in tx (its row in
// processes), before tx records a claim of this process: a claim by a
// process with no row would look lapsed to everyone else. Idempotent.
func (b *Bus) registerTx(ctx context.Context, tx *db.Tx) error {
	if b.registered.Load() {
		return nil
	}
	host, _ := os.Hostname()
	if err := tx.G.WithContext(ctx).Exec(`INSERT OR IGNORE INTO processes (id, host, pid, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?)`,
		b.procID, host, os.Getpid(), db.Ms(tx.Now), db.Ms(tx.Now)).Error; err != nil {
		return fmt.Errorf("register process for hook delivery: %w", err)
	}
	tx.AfterCommitOrdered(func() { b.registered.Store(true) })
	return nil
}

func (b *Bus) heartbeat() {
	if !b.registered.Load() {
		return
	}
	err := b.db.InTx(b.base, func(tx *db.Tx) error {
		return tx.G.Exec(`UPDATE processes SET heartbeat_at = ? WHERE id = ?`, db.Ms(tx.Now), b.procID).Error
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		b.log.Warn("hook bus heartbeat", "error", err)
	}
}

type procRow struct {
	ID          string
	Host        string
	Pid         int
	HeartbeatAt int64
}

type pendingRow struct {
	Seq       int64
	EventID   string
	Hook      string
	Payload   string
	CreatedAt int64
}

// Recover claims the undelivered events of dead processes and delivers them,
// flagged as redeliveries with their original event_id, to each current
// subscriber that has not had them yet. The claim is taken in one write
// transaction, so two processes never deliver the same event. It returns how
// many events it claimed.
//
// Only events of hooks this process has a subscriber for are claimed: a
// process without the plugin (a read-only command, say) leaves the event to
// one that has it, instead of marking it delivered to nobody.
func (b *Bus) Recover(ctx context.Context) (int, error) {
	subscribed := b.subscribedHooks()
	if len(subscribed) == 0 {
		return 0, nil
	}
	// Look first, without writing: most of the time nothing has lapsed.
	if lapsed, err := b.anyLapsed(ctx, subscribed); err != nil || !lapsed {
		if err != nil {
			return 0, fmt.Errorf("recover hook events: %w", err)
		}
		return 0, nil
	}
	var claimed []pendingRow
	done := map[int64]map[string]bool{}
	err := b.db.InTx(ctx, func(tx *db.Tx) error {
		g := tx.G.WithContext(ctx)
		var procs []procRow
		if err := g.Raw(`SELECT id, host, pid, heartbeat_at FROM processes`).Scan(&procs).Error; err != nil {
			return err
		}
		live, dead := b.partition(procs, tx.Now)
		if len(dead) > 0 {
			if err := g.Exec(`DELETE FROM processes WHERE id IN ?`, dead).Error; err != nil {
				return err
			}
		}
		if err := g.Raw(`UPDATE hook_events SET claimed_by = ?, redelivered = 1
			WHERE delivered_at IS NULL AND claimed_by NOT IN ? AND hook IN ?
			RETURNING seq, event_id, hook, payload, created_at`, b.procID, live, subscribed).Scan(&claimed).Error; err != nil {
			return err
		}
		if len(claimed) == 0 {
			return nil
		}
		if err := b.registerTx(ctx, tx); err != nil {
			return err
		}
		seqs := make([]int64, len(claimed))
		for i, c := range claimed {
			seqs[i] = c.Seq
		}
		var rows []struct {
			Seq        int64
			Subscriber string
		}
		if err := g.Raw(`SELECT seq, subscriber FROM hook_deliveries WHERE seq IN ?`, seqs).Scan(&rows).Error; err != nil {
			return err
		}
		for _, r := range rows {
			if done[r.Seq] == nil {
				done[r.Seq] = map[string]bool{}
			}
			done[r.Seq][r.Subscriber] = true
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("recover hook events: %w", err)
	}
	// RETURNING gives no order guarantee; deliver oldest first.
	slices.SortFunc(claimed, func(a, b pendingRow) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, c := range claimed {
		ev := Event{ID: c.EventID, Seq: c.Seq, Hook: c.Hook, Payload: []byte(c.Payload),
			CreatedAt: time.UnixMilli(c.CreatedAt).UTC(), Redelivery: true}
		b.deliverTo(ev, done[c.Seq])
	}
	return len(claimed), nil
}

// partition splits the processes rows into the live claimers (this process
// always among them) and the dead: a lapsed heartbeat, or a pid on this host
// that no longer runs.
func (b *Bus) partition(procs []procRow, now time.Time) (live, dead []string) {
	host, _ := os.Hostname()
	live = []string{b.procID}
	stale := db.Ms(now.Add(-b.lease))
	for _, p := range procs {
		if p.ID == b.procID {
			continue
		}
		if p.HeartbeatAt < stale || (p.Host == host && !pidAlive(p.Pid)) {
			dead = append(dead, p.ID)
		} else {
			live = append(live, p.ID)
		}
	}
	return live, dead
}

// anyLapsed reports, from the read pool, whether an undelivered event of
// one of hooks is claimed by a process that is not a live claimer.
func (b *Bus) anyLapsed(ctx context.Context, hooks []string) (bool, error) {
	g := b.db.Read.WithContext(ctx)
	var owners []string
	if err := g.Raw(`SELECT DISTINCT claimed_by FROM hook_events WHERE delivered_at IS NULL AND hook IN ?`, hooks).Scan(&owners).Error; err != nil {
		return false, err
	}
	if len(owners) == 0 {
		return false, nil
	}
	var procs []procRow
	if err := g.Raw(`SELECT id, host, pid, heartbeat_at FROM processes`).Scan(&procs).Error; err != nil {
		return false, err
	}
	live, _ := b.partition(procs, b.db.Now())
	for _, o := range owners {
		if !slices.Contains(live, o) {
			return true, nil
		}
	}
	return false, nil
}

func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Close waits for pending deliveries (bounded by ctx), then withdraws this
// process's claim. Events still undelivered stay in the log, claimed by a
// process that no longer exists, and the next process that hosts a
// subscriber of their hook redelivers them.
func (b *Bus) Close(ctx context.Context) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	flushErr := b.Flush(ctx)
	b.stop()
	b.bgWG.Wait()
	if b.registered.Load() && !b.dropAll.Load() {
		_ = b.db.InTx(context.Background(), func(tx *db.Tx) error {
			return tx.G.Exec(`DELETE FROM processes WHERE id = ?`, b.procID).Error
		})
	}
	return flushErr
}

// SimulateCrash makes the bus behave as if its process died right after its
// commits: nothing more is delivered, no heartbeat is sent, and its claims are
// left to lapse. Tests only.
func (b *Bus) SimulateCrash() { b.dropAll.Store(true) }

// subscribedHooks lists the observer hooks with at least one subscriber here.
func (b *Bus) subscribedHooks() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for hook, regs := range b.byHook {
		if len(regs) > 0 {
			out = append(out, hook)
		}
	}
	return out
}
