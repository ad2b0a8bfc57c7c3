package hooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"atrium/backend/hooks"
)

func TestDecideToolCall(t *testing.T) {
	t.Parallel()
	args := map[string]any{"path": "/tmp/x", "mode": "w"}
	scenarios := []struct {
		name    string
		results []hooks.SyncResult
		action  string
		message string
		args    map[string]any
	}{
		{"no answer runs it", []hooks.SyncResult{{Plugin: "a"}}, "", "", nil},
		{"block", []hooks.SyncResult{{Plugin: "a", Value: map[string]any{"action": "block", "message": "no"}}}, "block", "no", nil},
		{"a block without a message is ignored", []hooks.SyncResult{{Plugin: "a", Value: map[string]any{"action": "block"}}}, "", "", nil},
		{"approve", []hooks.SyncResult{{Plugin: "a", Value: hooks.Results{map[string]any{"action": "approve", "message": "sure?"}}}}, "approve", "sure?", nil},
		{"modifications accumulate, then a block wins", []hooks.SyncResult{
			{Plugin: "a", Value: hooks.Results{map[string]any{"action": "modify", "args": map[string]any{"mode": "r"}}}},
			{Plugin: "b", Value: map[string]any{"action": "modify", "args": map[string]any{"path": "/safe"}}},
			{Plugin: "c", Value: map[string]any{"action": "block", "message": "stop"}},
		}, "block", "stop", map[string]any{"path": "/safe", "mode": "r"}},
		{"a timeout fails closed", []hooks.SyncResult{{Plugin: "a", Err: fmt.Errorf("x: %w", hooks.ErrTimedOut)}}, "block", hooks.TimeoutBlockMessage, nil},
		{"a skipped callback fails closed", []hooks.SyncResult{{Plugin: "a", Err: hooks.ErrSkipped}}, "block", hooks.TimeoutBlockMessage, nil},
		{"an exception fails closed", []hooks.SyncResult{{Plugin: "a", Err: errors.New("ValueError: boom")}}, "block", "pre_tool_call plugin a raised: ValueError: boom", nil},
	}
	for _, sc := range scenarios {
		d := hooks.DecideToolCall(sc.results, args)
		if d.Action != sc.action || d.Message != sc.message || !reflect.DeepEqual(d.Args, sc.args) {
			t.Errorf("%s: %+v", sc.name, d)
		}
	}
}

func TestEncodePayloadAddsTheTelemetryVersion(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{}`:                                  `{"telemetry_schema_version":"hermes.observer.v1"}`,
		`{"a":1}`:                             `{"telemetry_schema_version":"hermes.observer.v1","a":1}`,
		`{"telemetry_schema_version":"mine"}`: `{"telemetry_schema_version":"mine"}`,
		`[1]`:                                 `[1]`,
	} {
		got, err := hooks.EncodePayload(json.RawMessage(in))
		if err != nil || string(got) != want {
			t.Errorf("%s: %s %v", in, got, err)
		}
	}
}

// A synchronous callback that timed out is skipped for the next 60 s.
func TestTimedOutSyncCallbackIsSkipped(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	b := newBus(t, d, hooks.Options{Timeout: 50 * time.Millisecond})
	var calls atomic.Int32
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	if _, err := b.RegisterSync("slow", hooks.PreToolCall, func(context.Context, json.RawMessage) (any, error) {
		calls.Add(1)
		<-release
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	res, _ := b.CallSync(context.Background(), hooks.PreToolCall, map[string]any{"tool_name": "x"})
	if len(res) != 1 || !errors.Is(res[0].Err, hooks.ErrTimedOut) {
		t.Fatalf("first call: %+v", res)
	}
	start := time.Now()
	res, _ = b.CallSync(context.Background(), hooks.PreToolCall, map[string]any{"tool_name": "x"})
	if len(res) != 1 || !errors.Is(res[0].Err, hooks.ErrSkipped) || time.Since(start) > 40*time.Millisecond || calls.Load() != 1 {
		t.Fatalf("second call: %+v after %s, %d calls", res, time.Since(start), calls.Load())
	}
	if d := hooks.DecideToolCall(res, nil); d.Action != "block" || !strings.Contains(d.Message, "timed out") {
		t.Fatalf("a skipped guard must still block: %+v", d)
	}
}
