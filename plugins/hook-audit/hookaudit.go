// Package hookaudit is the bundled hook-audit plugin (disabled by default):
// it appends every observer event it receives as one JSON line to
// <home>/logs/hook-audit.jsonl, for people debugging their plugins.
package hookaudit

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"

	"atrium/backend/hooks"
)

// Name is the plugin's name.
const Name = "hook-audit"

// Line is one audit record.
type Line struct {
	EventID    string          `json:"event_id"`
	Seq        int64           `json:"seq"`
	Hook       string          `json:"hook"`
	Redelivery bool            `json:"redelivery"`
	CreatedAt  time.Time       `json:"created_at"`
	Payload    json.RawMessage `json:"payload"`
}

// Register subscribes to every observer hook, writing under logsDir.
func Register(ctx *hooks.Context, logsDir string) error {
	var mu sync.Mutex
	path := filepath.Join(logsDir, "hook-audit.jsonl")
	write := func(_ context.Context, ev hooks.Event) error {
		line, err := json.Marshal(Line{EventID: ev.ID, Seq: ev.Seq, Hook: ev.Hook, Redelivery: ev.Redelivery, CreatedAt: ev.CreatedAt, Payload: ev.Payload})
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if err := os.MkdirAll(logsDir, 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.Write(append(line, '\n')); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	for _, name := range hooks.Names() {
		if k, _ := hooks.Lookup(name); k == hooks.Observer {
			if err := ctx.RegisterHook(name, write); err != nil {
				return err
			}
		}
	}
	return nil
}
