package plugins

import (
	"fmt"
	"os"
	"slices"
	"time"

	"atrium/backend/config"
	"atrium/backend/shellhooks"
)

// Shell hooks (config.yaml's hooks:) run where process plugins run: in the
// profile's plugin host, or inline. Each sync reads them again with the
// allowlist, so an edit, an approval or a revocation counts without a
// restart.

// ShellHooks reads the profile's configured shell hooks: every one that
// can run, and a warning for each entry that cannot.
func ShellHooks(cfg config.Config) ([]shellhooks.Spec, []string) {
	return shellhooks.Parse(cfg.Hooks.Shell)
}

// AcceptHooks tells whether hooks are approved without asking: the
// environment (ATRIUM_ACCEPT_HOOKS, HERMES_ACCEPT_HOOKS) or
// hooks_auto_accept.
func AcceptHooks(cfg config.Config) bool {
	for _, k := range shellhooks.AcceptEnv {
		if config.Truthy(os.Getenv(k)) {
			return true
		}
	}
	return cfg.AcceptsHooks()
}

// syncShell registers the approved shell hooks this process wants and
// returns the subscriber names of every approved one. Entries that cannot run are problems
// (the command that started the sync says so).
func (r *Runtime) syncShell(cfg config.Config, problems *[]error) []string {
	specs, warns := ShellHooks(cfg)
	if r.opts.Discover.getenv(EnvSafeMode) == "1" {
		specs, warns = nil, nil // safe mode runs no configured code at all
	}
	for _, w := range warns {
		*problems = append(*problems, fmt.Errorf("%s", w))
	}
	approved, waiting, err := shellhooks.NewAllowlist(r.home.Dir).Split(specs, r.opts.AcceptHooks || AcceptHooks(cfg), time.Now())
	if err != nil {
		*problems = append(*problems, err)
	}
	// Every approved hook keeps its place in the log (as every enabled
	// plugin does), though this process may register only some.
	var keep []string
	for _, s := range approved {
		if n := shellhooks.Subscriber(s.Command); !slices.Contains(keep, n) {
			keep = append(keep, n)
		}
	}
	approved = slices.DeleteFunc(approved, func(s shellhooks.Spec) bool {
		return r.opts.Want.Hooks != nil && !slices.Contains(r.opts.Want.Hooks, s.Event)
	})
	// The command that fires them says so itself (it may ask); here it is
	// for the log.
	for _, s := range waiting {
		r.log.Info("shell hook not approved: it does not run", "event", s.Name, "command", s.Command)
	}
	r.mu.Lock()
	if r.shell == nil {
		r.shell = shellhooks.NewRegistry(shellhooks.Options{Bus: r.opts.Bus, Env: shellhooks.Env{Dir: r.home.Dir, Profile: r.home.Profile},
			Transcripts: r.opts.Transcripts, Logger: r.log})
	}
	reg := r.shell
	r.mu.Unlock()
	if _, err := reg.Apply(approved); err != nil {
		*problems = append(*problems, err)
	}
	return keep
}

// ShellRegistered is what this process registered.
func (r *Runtime) ShellRegistered() []shellhooks.Registered {
	r.mu.Lock()
	reg := r.shell
	r.mu.Unlock()
	if reg == nil {
		return nil
	}
	return reg.Registered()
}

// LiveShellHook is a shell hook a live process of the profile registered.
type LiveShellHook struct {
	shellhooks.Registered
	Process string `json:"process"`
	PID     int    `json:"pid"`
}

// LiveShellHooks lists the shell hooks registered by the profile's live
// processes (the plugin host, inline commands): the registry as it is, not
// as config.yaml says it should be.
func LiveShellHooks(home config.Home) []LiveShellHook {
	var out []LiveShellHook
	for _, h := range liveHosts(home) {
		for _, s := range h.Shell {
			out = append(out, LiveShellHook{Registered: s, Process: h.Process, PID: h.PID})
		}
	}
	return out
}

// LiveShellHosts names the profile's live processes that register every
// approved shell hook ("atrium plugins host run (pid 42)").
func LiveShellHosts(home config.Home) []string {
	out := []string{}
	for _, h := range liveHosts(home) {
		if h.ShellAll {
			out = append(out, fmt.Sprintf("%s (pid %d)", h.Process, h.PID))
		}
	}
	return out
}

// shellNeeded tells whether an approved shell hook takes one of w's hooks
// (any, when w.Hooks is nil).
func shellNeeded(o DiscoverOptions, cfg config.Config, w Want) bool {
	specs, _ := ShellHooks(cfg)
	if len(specs) == 0 || o.getenv(EnvSafeMode) == "1" {
		return false
	}
	specs = slices.DeleteFunc(specs, func(s shellhooks.Spec) bool { return w.Hooks != nil && !slices.Contains(w.Hooks, s.Event) })
	if len(specs) == 0 {
		return false
	}
	if AcceptHooks(cfg) {
		return true
	}
	approved, _, _ := shellhooks.NewAllowlist(o.Home.Dir).Split(specs, false, time.Now())
	return len(approved) > 0
}
