package app_test

import (
	"os"
	"strings"
	"testing"

	"atrium/app"
	"atrium/backend/apperr"
	"atrium/backend/shellhooks"
)

const hooksYAML = `hooks:
  pre_tool_call:
    - command: ./guard.sh
      fail_closed: true
  UserPromptSubmit:
    - hooks: [{type: command, command: "echo notes"}]
  kanban_task_claimed:
    - command: y
`

// The window approves a configured shell hook (the consent a terminal
// asks for) and revokes it; the allowlist is the command line's.
func TestShellHooksApprovedInTheWindow(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, app.Options{Platform: app.PlatformDesktop, Version: "test"})
	home := e.st.Home
	if err := os.WriteFile(home.ConfigPath(), []byte(hooksYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	p := e.app.Plugins
	d, err := p.ShellHooks()
	if err != nil || len(d.Hooks) != 2 || !d.CanApprove || len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], "kanban_task_claimed") {
		t.Fatalf("list: %+v %v", d, err)
	}
	for _, h := range d.Hooks {
		if h.Approved {
			t.Fatalf("approved before anyone said so: %+v", h)
		}
	}
	d, err = p.ApproveShellHook(app.ShellHookRequest{Event: "pre_tool_call", Command: "./guard.sh"})
	if err != nil {
		t.Fatal(err)
	}
	byCmd := map[string]app.ShellHookDTO{}
	for _, h := range d.Hooks {
		byCmd[h.Command] = h
	}
	if g := byCmd["./guard.sh"]; !g.Approved || g.ApprovedAt == "" || !g.FailClosed || g.Dialect != "hermes" || byCmd["echo notes"].Approved {
		t.Fatalf("after approving ./guard.sh: %+v", d.Hooks)
	}
	if a, err := shellhooks.NewAllowlist(home.Dir).Find("pre_tool_call", "./guard.sh"); err != nil || a == nil {
		t.Fatalf("the allowlist: %+v %v", a, err)
	}
	if _, err := p.ApproveShellHook(app.ShellHookRequest{Command: "./not-configured.sh"}); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("a command not configured: %v", err)
	}
	d, err = p.RevokeShellHook(app.ShellHookRequest{Command: "./guard.sh"})
	if err != nil || d.Hooks[0].Approved || d.Hooks[1].Approved {
		t.Fatalf("after revoking: %+v %v", d, err)
	}
	if _, err := p.RevokeShellHook(app.ShellHookRequest{Command: "./guard.sh"}); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("revoking twice: %v", err)
	}
}

// A browser sees the hooks but cannot approve one: code to run is
// approved in the window or on the command line.
func TestShellHooksOverHTTPCannotBeApproved(t *testing.T) {
	t.Parallel()
	e, c := newServer(t)
	if err := os.WriteFile(e.st.Home.ConfigPath(), []byte(hooksYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	var d app.ShellHooksDTO
	if code := c.do("GET", "/api/hooks/shell", token, nil, &d); code != 200 || len(d.Hooks) != 2 || d.CanApprove {
		t.Fatalf("list = %d %+v", code, d)
	}
	var bad struct{ Code, Message string }
	if code := c.do("POST", "/api/hooks/shell/approve", token, map[string]any{"event": "pre_tool_call", "command": "./guard.sh"}, &bad); code != 422 ||
		!strings.Contains(bad.Message, "not from a browser") {
		t.Fatalf("approve = %d %+v", code, bad)
	}
	if a, _ := shellhooks.NewAllowlist(e.st.Home.Dir).Find("pre_tool_call", "./guard.sh"); a != nil {
		t.Fatal("a browser approved a hook")
	}
	if code := c.do("POST", "/api/hooks/shell/revoke", token, map[string]any{"command": "./guard.sh"}, &bad); code != 404 {
		t.Fatalf("revoke of nothing = %d %+v", code, bad)
	}
}
