package plugins

import (
	"context"
	"fmt"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/config"
	"atrium/backend/shellhooks"
)

// HookStatus is one configured shell hook as people see it: what it runs,
// whether it is approved, and which live processes registered it.
type HookStatus struct {
	shellhooks.Spec
	TimeoutSeconds float64  `json:"timeout_seconds"`
	Approved       bool     `json:"approved"`
	ApprovedAt     string   `json:"approved_at,omitempty"`
	RegisteredIn   []string `json:"registered_in"`
}

// HookStatuses is specs with their consent (from the profile's allowlist)
// and where they are registered now (from the live processes' records).
func HookStatuses(home config.Home, specs []shellhooks.Spec) ([]HookStatus, error) {
	approvals, err := shellhooks.NewAllowlist(home.Dir).Load()
	if err != nil {
		return nil, err
	}
	live := LiveShellHooks(home)
	out := []HookStatus{}
	for _, s := range specs {
		st := HookStatus{Spec: s, TimeoutSeconds: s.Timeout.Seconds(), RegisteredIn: []string{}}
		for _, a := range approvals {
			if a.Event == s.Name && a.Command == s.Command {
				st.Approved, st.ApprovedAt = true, a.ApprovedAt
			}
		}
		for _, l := range live {
			if l.Item.Name == s.Name && l.Item.Command == s.Command && l.Item.Matcher == s.Matcher {
				st.RegisteredIn = append(st.RegisteredIn, fmt.Sprintf("%s (pid %d)", l.Process, l.PID))
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// ShellHooks is the profile's configured shell hooks with their consent
// and registration, and a warning for each entry of config.yaml that
// cannot run.
func (m *Manager) ShellHooks() ([]HookStatus, []string, error) {
	cfg, _, err := config.Load(m.opts.Home.ConfigPath())
	if err != nil {
		return nil, nil, err
	}
	specs, warns := ShellHooks(cfg)
	st, err := HookStatuses(m.opts.Home, specs)
	return st, warns, err
}

// ApproveShellHook approves the configured hooks of command for event (the
// hook's name as configured, or Atrium's event; "" for every event of the
// command) and has the running processes take them in now. It returns how
// many it approved; a command that is not configured is not found.
func (m *Manager) ApproveShellHook(ctx context.Context, event, command string) (int, error) {
	cfg, _, err := config.Load(m.opts.Home.ConfigPath())
	if err != nil {
		return 0, err
	}
	specs, _ := ShellHooks(cfg)
	var picked []shellhooks.Spec
	for _, s := range specs {
		if s.Command == command && (event == "" || s.Name == event || s.Event == event) {
			picked = append(picked, s)
		}
	}
	if len(picked) == 0 {
		return 0, apperr.New(apperr.NotFound, "no shell hook %q is configured for %s in %s", command, orAny(event), m.opts.Home.ConfigPath())
	}
	n, err := shellhooks.NewAllowlist(m.opts.Home.Dir).ApproveWaiting(picked, time.Now())
	if err != nil {
		return 0, err
	}
	m.nudge(ctx)
	return n, nil
}

// RevokeShellHook withdraws every approval of command and has the running
// processes drop it now. It returns how many approvals it removed.
func (m *Manager) RevokeShellHook(ctx context.Context, command string) (int, error) {
	allow := shellhooks.NewAllowlist(m.opts.Home.Dir)
	n, err := allow.Revoke(command)
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, apperr.New(apperr.NotFound, "no approval of %q in %s", command, allow.Path())
	}
	m.nudge(ctx)
	return n, nil
}

// nudge has this process's runtime take the allowlist in now, without
// restarting a plugin; the profile's other processes watch the file and
// take it in at their next look.
func (m *Manager) nudge(ctx context.Context) {
	if rt := m.runtime(); rt != nil {
		// What it reports are the configuration's problems, which the
		// plugins page shows already; the approval is written either way.
		_ = rt.Apply(ctx)
	}
}

func orAny(event string) string {
	if event == "" {
		return "any event"
	}
	return event
}
