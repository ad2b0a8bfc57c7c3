package hooks_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/hooks"
)

func TestCapabilitiesRegisterListCallUnload(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	b := newBus(t, d, hooks.Options{Timeout: 200 * time.Millisecond})
	echo := func(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		return json.Marshal(map[string]any{"method": method, "params": params})
	}
	zed, abc := b.Plugin("zed"), b.Plugin("abc")
	if err := zed.RegisterCapability(hooks.CapTool, "search", map[string]any{"description": "z"}, echo); err != nil {
		t.Fatal(err)
	}
	if err := abc.RegisterCapability(hooks.CapTool, "search", nil, echo); err != nil {
		t.Fatal(err)
	}
	if err := abc.RegisterCapability(hooks.CapMemoryProvider, "mem", nil, echo); err != nil {
		t.Fatal(err)
	}
	if err := abc.RegisterCapability(hooks.CapTool, "search", nil, echo); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("duplicate registration: got %v, want conflict", err)
	}
	tools := b.Capabilities(hooks.CapTool)
	if len(tools) != 2 || tools[0].Plugin != "abc" || tools[1].Plugin != "zed" || string(tools[1].Spec) != `{"description":"z"}` {
		t.Fatalf("tools in plugin-name order with their spec: %+v", tools)
	}
	if all := b.Capabilities(""); len(all) != 3 {
		t.Fatalf("every kind: %+v", all)
	}
	raw, err := b.CallCapability(context.Background(), "zed", hooks.CapTool, "search", "call", map[string]string{"q": "x"})
	if err != nil || string(raw) != `{"method":"call","params":{"q":"x"}}` {
		t.Fatalf("call: %s, %v", raw, err)
	}
	if _, err := b.CallCapability(context.Background(), "nope", hooks.CapTool, "search", "call", nil); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("unknown capability: got %v, want not_found", err)
	}
	abc.Unload()
	if tools := b.Capabilities(""); len(tools) != 1 || tools[0].Plugin != "zed" {
		t.Fatalf("after unload: %+v", tools)
	}
}

func TestCapabilityCallIsBoundedAndRecoversPanics(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	b := newBus(t, d, hooks.Options{Timeout: 50 * time.Millisecond})
	p := b.Plugin("p")
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	if err := p.RegisterCapability(hooks.CapTool, "hang", nil, func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
		<-release
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := p.RegisterCapability(hooks.CapTool, "boom", nil, func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		panic("boom")
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CallCapability(context.Background(), "p", hooks.CapTool, "hang", "call", nil); err == nil {
		t.Fatal("a hanging capability must time out")
	}
	if _, err := b.CallCapability(context.Background(), "p", hooks.CapTool, "boom", "call", nil); err == nil {
		t.Fatal("a panicking capability must be an error")
	}
}
