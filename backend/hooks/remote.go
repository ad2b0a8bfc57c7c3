package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Remote is the profile's plugin host as a client process sees it (a
// command that does not run plugins itself): it delivers the client's
// events and answers what only the one instance of each plugin can answer.
// Everything crosses as plain JSON, so any synchronous hook, command or
// capability a plugin registers in the host is reachable from every client.
type Remote interface {
	// Poke says that events were committed (an optimisation: the host also
	// notices commits by itself).
	Poke()
	// Wait returns once every event up to seq was delivered by the host to
	// the subscribers that take it (bounded by ctx).
	Wait(ctx context.Context, seq int64) error
	// SyncHooks lists the synchronous hooks the host's plugins registered.
	SyncHooks(ctx context.Context) ([]string, error)
	// CallSync calls a synchronous hook on the host's plugins. A plugin's
	// Results and the errors control hooks decide on (ErrTimedOut,
	// ErrSkipped) come back as such.
	CallSync(ctx context.Context, hook string, payload json.RawMessage) ([]SyncResult, error)
	// Commands lists the plugin commands registered in the host.
	Commands(ctx context.Context) ([]Command, error)
	// RunCommand runs a plugin command in the host.
	RunCommand(ctx context.Context, name, args string, cc CommandContext) (string, error)
	// Capabilities lists the host's capabilities of kind ("" for all).
	Capabilities(ctx context.Context, kind string) ([]Capability, error)
	// CallCapability calls a capability's method in the host.
	CallCapability(ctx context.Context, plugin, kind, name, method string, params json.RawMessage) (json.RawMessage, error)
}

// ErrSuspended, wrapped in a Handler's error, says the plugin is in error
// and will not take events until it registers again (fixed, reloaded): the
// subscriber stops taking events, keeps its position, and nobody waits for
// it meanwhile.
var ErrSuspended = errors.New("subscriber suspended")

// UnavailableError is a Handler's way to say "not delivered, try again": the
// plugin's process is down or restarting. The event stays after the
// subscriber's position and is retried when the plugin is back (Bus.Wake)
// or after a second. HandedOut says the plugin may have seen it already
// (its process died while handling it): the retry is then flagged as a
// redelivery.
type UnavailableError struct {
	Err       error
	HandedOut bool
	// Later: a receiver elsewhere (a webhook) did not take it, and may
	// not for a long while. The attempt is recorded (status "retrying",
	// in the activity feed), and nobody waits for this subscriber
	// meanwhile: a command returns; the event waits in the log.
	Later bool
	// Attempt is the attempt's number and NextAt when the next may be
	// made (LaterAt): kept in the log, handed back with the event
	// (Event.Attempts, Event.RetryAt).
	Attempt int
	NextAt  time.Time
}

func (e *UnavailableError) Error() string { return "unavailable: " + e.Err.Error() }
func (e *UnavailableError) Unwrap() error { return e.Err }

// Unavailable wraps err as an UnavailableError.
func Unavailable(err error, handedOut bool) error {
	return &UnavailableError{Err: err, HandedOut: handedOut}
}

// Later wraps err as an UnavailableError with Later set: the attempt that
// failed is recorded, and the event is offered again (about once a second)
// until the handler takes it or gives up with an ordinary error.
func Later(err error) error {
	return &UnavailableError{Err: err, HandedOut: true, Later: true}
}

// LaterAt is Later for attempt number attempt, the next not before next:
// both are kept with the event's delivery, and handed back with it
// (Event.Attempts, Event.RetryAt), in this process or the next.
func LaterAt(err error, attempt int, next time.Time) error {
	return &UnavailableError{Err: err, HandedOut: true, Later: true, Attempt: attempt, NextAt: next}
}
