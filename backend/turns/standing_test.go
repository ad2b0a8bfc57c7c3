package turns_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"atrium/backend/approvals"
	"atrium/backend/config"
	"atrium/backend/hooks"
	"atrium/backend/llm"
	"atrium/backend/sessions"
	"atrium/backend/turns"
)

// An "always" answer is kept in config.yaml's command_allowlist under the
// rule the plugin named (plugin_rule:<rule_key>, else plugin_rule:<tool>):
// later asks of that rule run without asking and without approval hooks,
// in other conversations, in another loop (another process), in a
// scheduled run that has nobody to ask; another rule is asked; a revoked
// rule is asked again, in the same conversation too. The file keeps its
// comments.
func TestAnAlwaysAnswerStandsUntilRevoked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100000, nil, func(bus *hooks.Bus) {
		if _, err := bus.RegisterSync("deployer", hooks.PreToolCall, func(_ context.Context, raw json.RawMessage) (any, error) {
			var p hooks.ToolCallPayload
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, err
			}
			if p.ToolName != "echo" {
				return nil, nil
			}
			// The rule is the target: "always" for prod says nothing of staging.
			if text, _ := p.Args["text"].(string); strings.HasPrefix(text, "prod") {
				return map[string]any{"action": "approve", "message": "deploys to prod", "rule_key": "deploy:prod"}, nil
			}
			return map[string]any{"action": "approve", "message": "deploys to staging", "rule_key": "deploy:staging"}, nil
		}); err != nil {
			panic(err)
		}
	})
	home := config.Home{Root: t.TempDir(), Profile: "default"}
	home.Dir = home.Root
	const original = "# my settings\nsessions:\n  retention_days: 30 # a month\n"
	if err := os.WriteFile(home.ConfigPath(), []byte(original), 0o600); err != nil {
		t.Fatal(err)
	}
	standing := approvals.New(home)
	var mu sync.Mutex
	var asked []string
	answer := turns.AnswerAlways
	newLoop := func(ask bool) *turns.Loop {
		o := turns.Options{Provider: llm.OfflineProvider{Window: 100000}, Standing: approvals.New(home)}
		if ask {
			o.Approve = func(_ context.Context, a turns.Approval) (turns.Answer, error) {
				mu.Lock()
				defer mu.Unlock()
				if a.KeepAlways == nil {
					t.Errorf("the person is not offered always: %+v", a)
				}
				asked = append(asked, a.PatternKey)
				return answer, nil
			}
		}
		loop, err := turns.New(e.DB, e.Sessions, e.eng, e.Bus, o)
		if err != nil {
			t.Fatal(err)
		}
		return loop
	}
	first, second := newLoop(true), newLoop(true)
	a := e.MustCreate(t, sessions.CreateParams{Title: "a"})
	b := e.MustCreate(t, sessions.CreateParams{Title: "b"})
	send := func(loop *turns.Loop, platform, id, text string) string {
		t.Helper()
		turn, err := loop.Send(ctx, id, `use tool echo: {"text": "`+text+`"}`, hooks.LocalContext(platform, id))
		if err != nil {
			t.Fatal(err)
		}
		return turn.Reply
	}
	e.Rec.Reset()
	if r := send(first, "desktop", a.ID, "prod 1"); !strings.Contains(r, "returned: prod 1") {
		t.Fatalf("answered always: %q", r)
	}
	keys, err := standing.List()
	if err != nil || strings.Join(keys, ",") != "plugin_rule:deploy:prod" {
		t.Fatalf("standing after always: %v, %v", keys, err)
	}
	data, _ := os.ReadFile(home.ConfigPath())
	if !strings.Contains(string(data), "# my settings") || !strings.Contains(string(data), "# a month") {
		t.Fatalf("config.yaml lost its comments:\n%s", data)
	}
	if err := e.Bus.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	post := e.Rec.Events(hooks.PostApprovalResp)
	var p hooks.ApprovalPayload
	if len(post) != 1 || post[0].Decode(&p) != nil || p.Choice != hooks.ChoiceAlways || p.PatternKey != "plugin_rule:deploy:prod" || p.Error != "" {
		t.Fatalf("post_approval_response: %+v", p)
	}
	// Not asked: another conversation, another loop, a scheduled run.
	e.Rec.Reset()
	cron := newLoop(false)
	c := e.MustCreate(t, sessions.CreateParams{Title: "scheduled"})
	for _, r := range []string{send(first, "desktop", b.ID, "prod 2"), send(second, "cli", a.ID, "prod 3"), send(cron, turns.PlatformCron, c.ID, "prod 4")} {
		if !strings.Contains(r, "returned: prod") {
			t.Fatalf("a standing rule was not honoured: %q", r)
		}
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.PreApprovalRequest: 0, hooks.PostApprovalResp: 0, hooks.PostToolCall: 3,
		hooks.PostLLMCall: 3, hooks.OnSessionEnd: 3, hooks.OnSessionStart: 2})
	// Another rule is asked (and answered once).
	answer = turns.AnswerOnce
	if r := send(first, "desktop", a.ID, "staging 1"); !strings.Contains(r, "returned: staging 1") {
		t.Fatalf("staging: %q", r)
	}
	if r := send(cron, turns.PlatformCron, c.ID, "staging 2"); !strings.Contains(r, "BLOCKED: plugin approval required for echo (a scheduled run has nobody to ask") {
		t.Fatalf("staging in a scheduled run: %q", r)
	}
	// Revoked (by another process: the loops read the file again).
	if found, err := standing.Revoke("plugin_rule:deploy:prod"); err != nil || !found {
		t.Fatalf("revoke: %v %v", found, err)
	}
	answer = turns.AnswerDeny
	if r := send(first, "desktop", a.ID, "prod 5"); !strings.Contains(r, "BLOCKED") {
		t.Fatalf("after the revoke, in the conversation that said always: %q", r)
	}
	if r := send(cron, turns.PlatformCron, c.ID, "prod 6"); !strings.Contains(r, "BLOCKED") {
		t.Fatalf("after the revoke, a scheduled run: %q", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(asked, " "); got != "plugin_rule:deploy:prod plugin_rule:deploy:staging plugin_rule:deploy:prod" {
		t.Fatalf("asked about: %s", got)
	}
	if data, _ := os.ReadFile(home.ConfigPath()); string(data) != original && strings.Contains(string(data), "command_allowlist") {
		t.Fatalf("the emptied list stays:\n%s", data)
	}
}

// An "always" that cannot be kept (a command_allowlist written by hand that
// is not a list of strings, no standing list at all, a rule too long for
// config.yaml: then always is not offered) lets the call run
// and holds for the conversation; post_approval_response says why, and the
// hand-written value is left as it was.
func TestAnAlwaysThatCannotBeKeptLastsTheConversation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100000, nil, func(bus *hooks.Bus) {
		if _, err := bus.RegisterSync("guard", hooks.PreToolCall, func(_ context.Context, raw json.RawMessage) (any, error) {
			if strings.Contains(string(raw), `"text":"long`) { // a rule too long to keep in config.yaml
				return map[string]any{"action": "approve", "rule_key": strings.Repeat("k", approvals.MaxKeyBytes)}, nil
			}
			return map[string]any{"action": "approve"}, nil
		}); err != nil {
			panic(err)
		}
	})
	dir := t.TempDir()
	home := config.Home{Root: dir, Dir: dir, Profile: "default"}
	broken := "command_allowlist:\n  - plugin_rule:echo\n  - {tool: echo}\n"
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	fine := t.TempDir()
	for _, c := range []struct {
		name      string
		standing  turns.Standing
		canAlways bool
		errText   string
		text      string
		choice    string
	}{
		{"broken", approvals.New(home), true, "the standing approval could not be saved", "", hooks.ChoiceAlways},
		{"none", nil, false, "", "", hooks.ChoiceSession},
		{"too long", approvals.New(config.Home{Root: fine, Dir: fine, Profile: "default"}), false, "", "long ", hooks.ChoiceSession},
	} {
		asks := 0
		loop, err := turns.New(e.DB, e.Sessions, e.eng, e.Bus, turns.Options{Provider: llm.OfflineProvider{Window: 100000}, Standing: c.standing,
			Approve: func(_ context.Context, a turns.Approval) (turns.Answer, error) {
				asks++
				if (a.KeepAlways != nil) != c.canAlways {
					t.Errorf("%s: always offered %v", c.name, a.KeepAlways != nil)
				}
				return turns.AnswerAlways, nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		s := e.MustCreate(t, sessions.CreateParams{Title: c.name})
		e.Rec.Reset()
		for _, text := range []string{c.text + "one", c.text + "two"} {
			turn, err := loop.Send(ctx, s.ID, `use tool echo: {"text": "`+text+`"}`, hooks.LocalContext("desktop", s.ID))
			if err != nil || !strings.Contains(turn.Reply, "returned: "+text) {
				t.Fatalf("%s: %q %v", c.name, turn.Reply, err)
			}
		}
		if err := e.Bus.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		var p hooks.ApprovalPayload
		post := e.Rec.Events(hooks.PostApprovalResp)
		if asks != 1 || len(post) != 1 || post[0].Decode(&p) != nil || !strings.Contains(p.Error, c.errText) {
			t.Fatalf("%s: asked %d times, post_approval_response %+v", c.name, asks, p)
		}
		if p.Choice != c.choice {
			t.Fatalf("%s: choice %q, want %q", c.name, p.Choice, c.choice)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "config.yaml")); string(data) != broken {
		t.Fatalf("the hand-written list was changed:\n%s", data)
	}
}

// approvals.mode: off runs every call a plugin asks about without asking
// anyone, on a surface that could ask and in a scheduled run, and no
// approval hook fires; a plugin's block still blocks.
func TestApprovalsOffRunsEveryAskUnasked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100000, nil, func(bus *hooks.Bus) {
		if _, err := bus.RegisterSync("guard", hooks.PreToolCall, func(_ context.Context, raw json.RawMessage) (any, error) {
			if strings.Contains(string(raw), `"text":"never`) {
				return map[string]any{"action": "block", "message": "never, whatever the mode"}, nil
			}
			return map[string]any{"action": "approve", "message": "echo needs a yes"}, nil
		}); err != nil {
			panic(err)
		}
	})
	dir := t.TempDir()
	home := config.Home{Root: dir, Dir: dir, Profile: "default"}
	if err := os.WriteFile(home.ConfigPath(), []byte("approvals:\n  mode: off\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, platform := range []string{"desktop", turns.PlatformCron} {
		o := turns.Options{Provider: llm.OfflineProvider{Window: 100000}, Standing: approvals.New(home)}
		if platform != turns.PlatformCron {
			o.Approve = func(context.Context, turns.Approval) (turns.Answer, error) {
				t.Errorf("%s: a person was asked", platform)
				return turns.AnswerDeny, nil
			}
		}
		loop, err := turns.New(e.DB, e.Sessions, e.eng, e.Bus, o)
		if err != nil {
			t.Fatal(err)
		}
		s := e.MustCreate(t, sessions.CreateParams{Title: platform})
		e.Rec.Reset()
		for text, want := range map[string]string{"runs": "returned: runs", "never": "never, whatever the mode"} {
			turn, err := loop.Send(ctx, s.ID, `use tool echo: {"text": "`+text+`"}`, hooks.LocalContext(platform, s.ID))
			if err != nil || !strings.Contains(turn.Reply, want) {
				t.Fatalf("%s %s: %q %v", platform, text, turn.Reply, err)
			}
		}
		e.Rec.Expect(t, e.Bus, map[string]int{hooks.PreApprovalRequest: 0, hooks.PostApprovalResp: 0, hooks.PostToolCall: 2,
			hooks.PostLLMCall: 2, hooks.OnSessionEnd: 2, hooks.OnSessionStart: 1})
	}
}

// An "always" is written before a surface takes it: a list that cannot be
// written (here its lock is a folder, as a read-only or full disk would
// refuse it) makes KeepAlways say why while the person is still asked, and
// nothing is granted; once it can be written, the rule is in config.yaml
// before the call runs, and post_approval_response reports no error.
func TestAnAlwaysIsWrittenBeforeItIsTaken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100000, nil, func(bus *hooks.Bus) {
		if _, err := bus.RegisterSync("guard", hooks.PreToolCall, func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"action": "approve"}, nil
		}); err != nil {
			panic(err)
		}
	})
	dir := t.TempDir()
	home := config.Home{Root: dir, Dir: dir, Profile: "default"}
	if err := os.WriteFile(home.ConfigPath(), []byte("# mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lock := home.ConfigPath() + ".lock"
	if err := os.Mkdir(lock, 0o700); err != nil {
		t.Fatal(err)
	}
	standing := approvals.New(home)
	var keepErrs []string
	loop, err := turns.New(e.DB, e.Sessions, e.eng, e.Bus, turns.Options{Provider: llm.OfflineProvider{Window: 100000}, Standing: standing,
		Approve: func(_ context.Context, a turns.Approval) (turns.Answer, error) {
			if err := a.KeepAlways(); err != nil {
				keepErrs = append(keepErrs, err.Error())
				return turns.AnswerOnce, nil // the surface asked again; once, this time
			}
			if keys, err := standing.List(); err != nil || !slices.Contains(keys, a.PatternKey) {
				t.Errorf("always taken before it was kept: %v %v", keys, err)
			}
			return turns.AnswerAlways, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	send := func(text string) {
		t.Helper()
		s := e.MustCreate(t, sessions.CreateParams{Title: text})
		turn, err := loop.Send(ctx, s.ID, `use tool echo: {"text": "`+text+`"}`, hooks.LocalContext("desktop", s.ID))
		if err != nil || !strings.Contains(turn.Reply, "returned: "+text) {
			t.Fatalf("%q %v", turn.Reply, err)
		}
	}
	choices := func() []string {
		t.Helper()
		if err := e.Bus.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ev := range e.Rec.Events(hooks.PostApprovalResp) {
			var p hooks.ApprovalPayload
			if err := ev.Decode(&p); err != nil || p.Error != "" {
				t.Fatalf("post_approval_response %+v %v", p, err)
			}
			out = append(out, p.Choice)
		}
		e.Rec.Reset()
		return out
	}
	e.Rec.Reset()
	send("unwritable")
	if len(keepErrs) != 1 || !strings.Contains(keepErrs[0], "config") {
		t.Fatalf("KeepAlways on an unwritable list: %q", keepErrs)
	}
	if got := choices(); !slices.Equal(got, []string{hooks.ChoiceOnce}) {
		t.Fatalf("choices %v", got)
	}
	if keys, _ := standing.List(); len(keys) != 0 {
		t.Fatalf("kept while unwritable: %v", keys)
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	send("writable")
	send("not asked")
	if len(keepErrs) != 1 {
		t.Fatalf("KeepAlways errors %q", keepErrs)
	}
	if got := choices(); !slices.Equal(got, []string{hooks.ChoiceAlways}) {
		t.Fatalf("choices %v (the third call runs unasked)", got)
	}
	if data, _ := os.ReadFile(home.ConfigPath()); !strings.HasPrefix(string(data), "# mine\n") || !strings.Contains(string(data), "plugin_rule:echo") {
		t.Fatalf("config.yaml:\n%s", data)
	}
}
