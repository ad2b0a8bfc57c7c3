package proc

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"atrium/backend/apperr"
)

// DryRun sends one synthetic event straight to a hosted plugin, outside the
// bus and the event log (nothing is recorded, no other plugin sees it), and
// reports how the plugin answered. It is what `atrium plugins doctor` runs.
func (h *Host) DryRun(ctx context.Context, name, hook string, payload any) (time.Duration, error) {
	h.mu.Lock()
	p := h.plugins[name]
	h.mu.Unlock()
	if p == nil {
		return 0, apperr.New(apperr.NotFound, "plugin %s is not hosted", name)
	}
	inst, err := p.waitRunning(ctx)
	if err != nil {
		return 0, err
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	done, err := inst.sendEvent(ctx, EventParams{Hook: hook, EventID: "dry-run-" + uuid.NewString(), Payload: raw, CreatedAt: start.UTC()})
	if err != nil {
		return time.Since(start), err
	}
	return time.Since(start), doneError(done)
}
