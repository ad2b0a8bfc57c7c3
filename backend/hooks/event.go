package hooks

import (
	"context"
	"encoding/json"
	"time"
)

// Event is one delivery of a hook to a callback. Payload is plain JSON, the
// same bytes an out-of-process plugin receives.
type Event struct {
	ID         string          `json:"event_id"`
	Seq        int64           `json:"seq"`
	Hook       string          `json:"hook"`
	Payload    json.RawMessage `json:"payload"`
	CreatedAt  time.Time       `json:"created_at"`
	Redelivery bool            `json:"redelivery"`
	// Attempts is how many attempts at this event its receiver elsewhere
	// made so far, and RetryAt when the next may be made, as the log keeps
	// them (LaterAt): a process started again goes on from there. Zero
	// for a first delivery, and for a plugin.
	Attempts int       `json:"-"`
	RetryAt  time.Time `json:"-"`
}

// Decode unmarshals the payload into v (for example a *SessionDelete).
func (e Event) Decode(v any) error { return json.Unmarshal(e.Payload, v) }

// Handler is an observer callback. Its ctx carries the callback timeout; the
// returned error is logged and recorded, never propagated.
type Handler func(ctx context.Context, ev Event) error
