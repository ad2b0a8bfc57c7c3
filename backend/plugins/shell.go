package plugins

import (
	"fmt"
	"os"
	"slices"
	"time"

	"atrium/backend/config"
	"atrium/backend/shellhooks"
	"atrium/backend/webhooks"
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
	return append(keep, r.syncWebhooks(cfg, problems)...)
}

// Webhooks reads the profile's outbound webhook targets (hooks.outbound)
// and a warning for each entry that cannot be posted to.
func Webhooks(cfg config.Config) ([]webhooks.Target, []string) {
	return webhooks.Parse(cfg.Hooks.Shell["outbound"], nil)
}

// syncWebhooks registers the outbound webhook targets taking a hook this
// process wants, and returns the subscriber names of them all. They need
// no consent: they run no code here (as in the familiar agent).
func (r *Runtime) syncWebhooks(cfg config.Config, problems *[]error) []string {
	targets, warns := Webhooks(cfg)
	if r.opts.Discover.getenv(EnvSafeMode) == "1" {
		targets, warns = nil, nil
	}
	for _, w := range warns {
		*problems = append(*problems, fmt.Errorf("%s", w))
	}
	var keep []string
	var mine []webhooks.Target
	for _, t := range targets {
		keep = append(keep, t.Subscriber())
		if w := r.opts.Want.Hooks; w != nil {
			t.Events = slices.DeleteFunc(slices.Clone(t.Events), func(e string) bool { return !slices.Contains(w, e) })
		}
		if len(t.Events) > 0 {
			mine = append(mine, t)
		}
	}
	r.mu.Lock()
	if r.webhooks == nil {
		r.webhooks = webhooks.NewRegistry(webhooks.Options{Bus: r.opts.Bus, Env: shellhooks.Env{Dir: r.home.Dir, Profile: r.home.Profile},
			Logger: r.log})
	}
	reg := r.webhooks
	r.mu.Unlock()
	if _, err := reg.Apply(mine); err != nil {
		*problems = append(*problems, err)
	}
	return keep
}

// WebhooksRegistered are the targets this process registered.
func (r *Runtime) WebhooksRegistered() []webhooks.Target {
	r.mu.Lock()
	reg := r.webhooks
	r.mu.Unlock()
	if reg == nil {
		return nil
	}
	return reg.Registered()
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

// Live is something a live process of the profile registered (the
// registry as it is, not as config.yaml says it should be).
type Live[T any] struct {
	Item    T
	Process string
	PID     int
}

func liveOf[T any](home config.Home, pick func(hostRecord) []T) []Live[T] {
	var out []Live[T]
	for _, h := range liveHosts(home) {
		for _, x := range pick(h) {
			out = append(out, Live[T]{Item: x, Process: h.Process, PID: h.PID})
		}
	}
	return out
}

// LiveShellHooks lists the shell hooks the profile's live processes (the
// plugin host, inline commands) registered.
func LiveShellHooks(home config.Home) []Live[shellhooks.Registered] {
	return liveOf(home, func(h hostRecord) []shellhooks.Registered { return h.Shell })
}

// LiveWebhooks lists the outbound targets the profile's live processes
// registered.
func LiveWebhooks(home config.Home) []Live[webhooks.Target] {
	return liveOf(home, func(h hostRecord) []webhooks.Target { return h.Webhooks })
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
	if o.getenv(EnvSafeMode) == "1" {
		return false
	}
	targets, _ := Webhooks(cfg)
	for _, t := range targets {
		if w.Hooks == nil || slices.ContainsFunc(t.Events, func(e string) bool { return slices.Contains(w.Hooks, e) }) {
			return true
		}
	}
	specs, _ := ShellHooks(cfg)
	if len(specs) == 0 {
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
