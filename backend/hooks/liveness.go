package hooks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gorm.io/gorm"

	"atrium/backend/db"
)

// Liveness of Atrium processes: one rule, used for the claims on hook
// subscribers here and for the plugin host records (package plugins).

// ProcessAlive tells whether pid runs and, when start is known, is the
// process that had it then (not a later one given the same pid). A zombie
// (dead, not yet reaped by a parent that never reaps) is dead.
func ProcessAlive(pid int, start string) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	state, now := procStat(pid)
	if state == "Z" || state == "X" {
		return false
	}
	if start != "" && now != "" && now != start {
		return false
	}
	return true
}

// ProcessStart is the process's start time in clock ticks since boot
// (field 22 of /proc/PID/stat), "" where there is no /proc.
func ProcessStart(pid int) string {
	_, start := procStat(pid)
	return start
}

// procStat reads a process's state and start time from /proc/PID/stat
// ("", "" where there is no /proc).
func procStat(pid int) (state, start string) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 {
		return "", ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return "", ""
	}
	return f[0], f[19] // fields 3 and 22 overall: fields after ')' start at field 3
}

// ensureProcess writes this process's row (once, at its first claim: a
// process that never delivers never writes one) and starts its heartbeat.
func (b *Bus) ensureProcess(ctx context.Context) error {
	b.mu.Lock()
	done := b.procRow
	b.mu.Unlock()
	if done {
		return nil
	}
	host, _ := os.Hostname()
	pid := os.Getpid()
	err := b.db.InTx(ctx, func(tx *db.Tx) error {
		return tx.G.WithContext(ctx).Exec(`INSERT OR REPLACE INTO processes (id, host, pid, start, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?)`,
			b.procID, host, pid, ProcessStart(pid), db.Ms(tx.Now), db.Ms(tx.Now)).Error
	})
	if err != nil {
		return fmt.Errorf("register process for hook delivery: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.procRow {
		return nil
	}
	b.procRow = true
	b.bgWG.Add(1)
	go b.heartbeat()
	return nil
}

func (b *Bus) heartbeat() {
	defer b.bgWG.Done()
	t := time.NewTicker(b.lease / 4)
	defer t.Stop()
	for {
		select {
		case <-b.base.Done():
			return
		case <-t.C:
		}
		if b.dropAll.Load() {
			return
		}
		err := b.db.InTx(b.base, func(tx *db.Tx) error {
			return tx.G.Exec(`UPDATE processes SET heartbeat_at = ? WHERE id = ?`, db.Ms(tx.Now), b.procID).Error
		})
		if err != nil && !errors.Is(err, context.Canceled) {
			b.log.Warn("hook bus heartbeat", "error", err)
		}
	}
}

// processAliveTx tells whether the process with row id is alive: on this
// machine, its pid runs with the same start time; elsewhere, its heartbeat
// is within the lease.
func (b *Bus) processAliveTx(g *gorm.DB, id string, now time.Time) (bool, error) {
	var rows []struct {
		Host        string
		Pid         int
		Start       string
		HeartbeatAt int64
	}
	if err := g.Raw(`SELECT host, pid, start, heartbeat_at FROM processes WHERE id = ?`, id).Scan(&rows).Error; err != nil {
		return false, err
	}
	if len(rows) == 0 {
		return false, nil
	}
	r := rows[0]
	if host, _ := os.Hostname(); r.Host == host {
		return ProcessAlive(r.Pid, r.Start), nil
	}
	return r.HeartbeatAt >= db.Ms(now.Add(-b.lease)), nil
}

// markDead makes this process's row say it died (SimulateCrash).
func (b *Bus) markDead() {
	_ = b.db.InTx(context.Background(), func(tx *db.Tx) error {
		return tx.G.Exec(`UPDATE processes SET start = 'dead' WHERE id = ?`, b.procID).Error
	})
}
