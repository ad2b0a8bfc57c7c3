package hooks

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"
)

// ErrTimedOut marks a synchronous callback that did not answer within the
// callback timeout; ErrSkipped one that was not called because it timed out
// less than SuppressFor ago. A control hook (pre_tool_call) treats both as
// a block.
var (
	ErrTimedOut = errors.New("timed out")
	ErrSkipped  = errors.New("skipped: it timed out less than 60 s ago")
)

// SuppressFor is how long a synchronous callback that timed out is skipped,
// so a hung plugin cannot pile up calls.
const SuppressFor = 60 * time.Second

// SetPluginOrder sets the load order plugins' callbacks run in (requires_
// plugins first, then alphabetical; see plugins.LoadOrder). Plugins it does
// not name come after, by name.
func (b *Bus) SetPluginOrder(order []string) {
	m := make(map[string]int, len(order))
	for i, n := range order {
		m[n] = i
	}
	b.mu.Lock()
	b.order = m
	b.mu.Unlock()
}

// PluginOrder returns the load order in force.
func (b *Bus) PluginOrder() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.order))
	for n := range b.order {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return b.order[out[i]] < b.order[out[j]] })
	return out
}

// comparePlugins orders two plugin names by load order, then by name.
func (b *Bus) comparePlugins(x, y string) int {
	b.mu.Lock()
	ix, okx := b.order[x]
	iy, oky := b.order[y]
	b.mu.Unlock()
	switch {
	case okx && oky:
		if c := cmp.Compare(ix, iy); c != 0 {
			return c
		}
	case okx:
		return -1
	case oky:
		return 1
	}
	return cmp.Compare(x, y)
}

func (b *Bus) isSuppressed(id uint64) (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	until, ok := b.suppressed[id]
	if !ok {
		return time.Time{}, false
	}
	if time.Now().After(until) {
		delete(b.suppressed, id)
		return time.Time{}, false
	}
	return until, true
}

func (b *Bus) suppress(id uint64) {
	b.mu.Lock()
	b.suppressed[id] = time.Now().Add(SuppressFor)
	b.mu.Unlock()
}

// EncodePayload encodes a hook payload and adds telemetry_schema_version
// when the payload is an object that does not carry it.
func EncodePayload(payload any) (json.RawMessage, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, err
	}
	if len(raw) < 2 || raw[0] != '{' || bytes.Contains(raw, []byte(`"telemetry_schema_version"`)) {
		return raw, nil
	}
	head := `{"telemetry_schema_version":"` + TelemetrySchemaVersion + `"`
	if string(raw) == "{}" {
		return json.RawMessage(head + "}"), nil
	}
	out := make([]byte, 0, len(raw)+len(head)+1)
	out = append(out, head...)
	out = append(out, ',')
	out = append(out, raw[1:]...)
	return out, nil
}

// failureLog remembers which distinct failures were already reported.
type failureLog struct {
	mu   sync.Mutex
	seen map[string]bool
}

// reportFailure logs a callback failure: a warning the first time a
// (plugin, hook, error) is seen, naming the fields the hook provides so the
// plugin's author can fix a signature; identical repeats at debug.
func (b *Bus) reportFailure(plugin, hook string, err error, payload json.RawMessage, extra ...any) {
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200]
	}
	key := plugin + "\x00" + hook + "\x00" + msg
	b.failures.mu.Lock()
	if b.failures.seen == nil {
		b.failures.seen = map[string]bool{}
	}
	first := !b.failures.seen[key]
	b.failures.seen[key] = true
	b.failures.mu.Unlock()
	args := append([]any{"plugin", plugin, "hook", hook, "error", err}, extra...)
	if !first {
		b.log.Debug("hook callback failed again", args...)
		return
	}
	args = append(args, "provides", payloadFields(payload), "note", "identical failures are logged at debug from now on")
	b.log.Log(b.base, slog.LevelWarn, "hook callback failed", args...)
}

// payloadFields lists a payload's top-level field names, sorted.
func payloadFields(raw json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return "no fields"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return fmt.Sprint(keys)
}

// HasSync reports whether any plugin registered the synchronous hook, so a
// caller can skip building a large payload nobody receives: here, or, for a
// client, in the profile's plugin host (asked once every few seconds; if it
// cannot be asked, yes, and CallSync tells).
func (b *Bus) HasSync(hook string) bool {
	b.mu.Lock()
	for _, r := range b.syncRegs {
		if r.hook == hook {
			b.mu.Unlock()
			return true
		}
	}
	remote := b.remote
	b.mu.Unlock()
	if remote == nil {
		return false
	}
	ctx, cancel := b.remoteContext()
	defer cancel()
	list, err := remote.SyncHooks(ctx)
	return err != nil || slices.Contains(list, hook)
}
