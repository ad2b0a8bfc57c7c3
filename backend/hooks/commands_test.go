package hooks_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/hooks"
)

// whoami is the canonical plugin command: who, on which platform, in which session.
func whoami(_ context.Context, _ string, cc hooks.CommandContext) (string, error) {
	who := "local user"
	if cc.Source != nil {
		who = cc.Source.UserID
	}
	session := cc.SessionID
	if session == "" {
		session = "(none yet)"
	}
	return who + " on " + cc.Platform + " in " + session + " (" + cc.SessionKey + ")", nil
}

func TestCommandHandlerShapesGetTheirContext(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	b := newBus(t, d, hooks.Options{Timeout: 200 * time.Millisecond})
	p := b.Plugin("demo")
	var plainCalls atomic.Int32
	for name, h := range map[string]any{
		"plain":   func(args string) (string, error) { plainCalls.Add(1); return "plain:" + args, nil },
		"bare":    func(args string) string { return "bare:" + args },
		"whoami":  whoami,
		"typed":   hooks.ContextCommand(whoami),
		"ccfirst": func(cc hooks.CommandContext, args string) (string, error) { return cc.Platform + ":" + args, nil },
	} {
		if err := p.RegisterCommand(name, h, "demo "+name); err != nil {
			t.Fatalf("register %s: %v", name, err)
		}
	}
	local := hooks.LocalContext("desktop", "S1")
	gw := hooks.GatewayContext("telegram", "S2", hooks.Source{UserID: "u42", ChatID: "c7", ChatType: "group", ThreadID: "t1"})
	scenarios := []struct {
		cmd, args string
		cc        hooks.CommandContext
		want      string
	}{
		{"/plain", "raw  args ", local, "plain:raw  args "},
		{"BARE", "x", local, "bare:x"},
		{"/WhoAmI", "", local, "local user on desktop in S1 (desktop:S1)"},
		{"whoami", "", gw, "u42 on telegram in S2 (telegram:group:c7:t1)"},
		{"typed", "", hooks.CommandContext{Platform: "cli"}, "local user on cli in (none yet) ()"},
		{"ccfirst", "a b", local, "desktop:a b"},
	}
	for _, sc := range scenarios {
		out, err := b.RunCommand(bg, sc.cmd, sc.args, sc.cc)
		if err != nil || out != sc.want {
			t.Errorf("%s: %q, %v; want %q", sc.cmd, out, err, sc.want)
		}
	}
	if plainCalls.Load() != 1 {
		t.Fatalf("plain called %d times, want exactly once", plainCalls.Load())
	}
	name, args, ok := hooks.ParseCommand("  /Compress   the db decisions ")
	if !ok || name != "compress" || args != "the db decisions" {
		t.Fatalf("parse: %q %q %v", name, args, ok)
	}
	if _, _, ok := hooks.ParseCommand("not a command"); ok {
		t.Fatal("plain text parsed as a command")
	}
}

func TestCommandRegistryRefusals(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	b := newBus(t, d, hooks.Options{})
	cmds := b.Commands()
	if err := cmds.RegisterBuiltin("compress", "built in", func(string) (string, error) { return "", nil }); err != nil {
		t.Fatal(err)
	}
	p := b.Plugin("demo")
	ok := func(string) (string, error) { return "", nil }
	scenarios := []struct {
		name    string
		handler any
		code    apperr.Code
	}{
		{"/Compress", ok, apperr.Conflict},
		{"", ok, apperr.Invalid},
		{"/", ok, apperr.Invalid},
		{"has/slash", ok, apperr.Invalid},
		{"nohandler", nil, apperr.Invalid},
		{"badshape", func(int) {}, apperr.Invalid},
	}
	for _, sc := range scenarios {
		if err := p.RegisterCommand(sc.name, sc.handler, ""); apperr.CodeOf(err) != sc.code {
			t.Errorf("%q: %v, want %s", sc.name, err, sc.code)
		}
	}
	// As in the familiar plugin API: lower-cased, leading '/' dropped,
	// spaces turned into '-'.
	if err := p.RegisterCommand("/Has Space", ok, ""); err != nil {
		t.Fatal(err)
	}
	if _, found := cmds.Lookup("has-space"); !found {
		t.Fatal("a name with a space is registered with '-' in its place")
	}
	if err := p.RegisterCommand("dup", ok, ""); err != nil {
		t.Fatal(err)
	}
	if err := b.Plugin("other").RegisterCommand("/DUP", ok, ""); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := b.RunCommand(bg, "missing", "", hooks.CommandContext{}); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("unknown: %v", err)
	}
	p.Unload()
	if _, found := cmds.Lookup("dup"); found {
		t.Fatal("unload kept the command")
	}
	if _, found := cmds.Lookup("compress"); !found {
		t.Fatal("unload removed a built-in")
	}
}

func TestCommandThatPanicsOrHangs(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	b := newBus(t, d, hooks.Options{Timeout: 100 * time.Millisecond})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	p := b.Plugin("bad")
	p.RegisterCommand("boom", func(string) (string, error) { panic("kaboom") }, "")
	var hangCalls atomic.Int32
	p.RegisterCommand("hang", func(string) (string, error) { hangCalls.Add(1); <-release; return "late", nil }, "")
	if _, err := b.RunCommand(bg, "boom", "", hooks.CommandContext{}); err == nil || !strings.Contains(err.Error(), "kaboom") {
		t.Fatalf("panic: %v", err)
	}
	start := time.Now()
	_, err := b.RunCommand(bg, "hang", "", hooks.CommandContext{})
	if apperr.CodeOf(err) != apperr.Rejected || time.Since(start) > 2*time.Second {
		t.Fatalf("hang: %v after %s", err, time.Since(start))
	}
	if hangCalls.Load() != 1 {
		t.Fatalf("a timed-out command must not be retried (%d calls)", hangCalls.Load())
	}
}

func TestSyncHookOrderTimeoutAndObserverBarrier(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	b := newBus(t, d, hooks.Options{Timeout: 150 * time.Millisecond})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var sawObserver atomic.Bool
	// "zeta" registers first but plugin order is by name.
	b.Plugin("zeta").RegisterSync(hooks.PreLLMCall, func(context.Context, json.RawMessage) (any, error) { return "from zeta", nil })
	b.Plugin("alpha").RegisterHook(hooks.PostCompaction, func(context.Context, hooks.Event) error {
		time.Sleep(50 * time.Millisecond)
		sawObserver.Store(true)
		return nil
	})
	b.Plugin("alpha").RegisterSync(hooks.PreLLMCall, func(context.Context, json.RawMessage) (any, error) {
		if !sawObserver.Load() {
			return "overtook post_compaction", nil
		}
		return map[string]any{"context": "from alpha"}, nil
	})
	b.Plugin("hangs").RegisterSync(hooks.PreLLMCall, func(context.Context, json.RawMessage) (any, error) { <-release; return "late", nil })
	b.Plugin("panics").RegisterSync(hooks.PreLLMCall, func(context.Context, json.RawMessage) (any, error) { panic("no") })
	if _, err := b.RegisterHook("x", hooks.PreLLMCall, func(context.Context, hooks.Event) error { return nil }); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("observer registration of a sync hook: %v", err)
	}
	if _, err := b.RegisterSync("x", hooks.PostCompaction, func(context.Context, json.RawMessage) (any, error) { return nil, nil }); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("sync registration of an observer hook: %v", err)
	}
	mustStart(t, b)
	mustEnqueue(t, d, b, hooks.PostCompaction, payload{N: 1})
	res, err := b.CallSync(bg, hooks.PreLLMCall, map[string]string{"session_id": "S"})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range res {
		order = append(order, r.Plugin)
	}
	if strings.Join(order, ",") != "alpha,hangs,panics,zeta" {
		t.Fatalf("order %v", order)
	}
	if res[1].Err == nil || res[2].Err == nil {
		t.Fatalf("hang/panic not reported: %+v", res)
	}
	if got := hooks.ContextTexts(res); strings.Join(got, "|") != "from alpha|from zeta" {
		t.Fatalf("context texts %v", got)
	}
	if _, err := b.CallSync(bg, hooks.PostCompaction, nil); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("CallSync on an observer hook: %v", err)
	}
}
