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

// configured reads the shell hooks and webhook targets of config.yaml,
// with a warning for each entry that cannot run; safe mode runs no
// configured code at all.
func configured(o DiscoverOptions, cfg config.Config) ([]shellhooks.Spec, []webhooks.Target, []string) {
	if o.safeMode() {
		return nil, nil, nil
	}
	specs, warns := ShellHooks(cfg)
	targets, twarns := Webhooks(cfg)
	return specs, targets, append(warns, twarns...)
}

// syncConfigured registers the approved shell hooks and the webhook
// targets that take a hook this process wants, and returns the subscriber
// names of all of them: each keeps its place in the log (as every enabled
// plugin does), though this process may register only some. Entries that
// cannot run are problems (the command that started the sync says so).
func (r *Runtime) syncConfigured(cfg config.Config, problems *[]error) []string {
	specs, targets, warns := configured(r.opts.Discover, cfg)
	for _, w := range warns {
		*problems = append(*problems, fmt.Errorf("%s", w))
	}
	approved, waiting, err := shellhooks.NewAllowlist(r.home.Dir).Split(specs, r.opts.AcceptHooks || AcceptHooks(cfg), time.Now())
	if err != nil {
		*problems = append(*problems, err)
	}
	// The command that fires them says so itself (it may ask); here it is
	// for the log.
	for _, s := range waiting {
		r.log.Info("shell hook not approved: it does not run", "event", s.Name, "command", s.Command)
	}
	var keep []string
	var mine []webhooks.Target
	for _, s := range approved {
		if n := shellhooks.Subscriber(s.Command); !slices.Contains(keep, n) {
			keep = append(keep, n)
		}
	}
	for _, t := range targets {
		keep = append(keep, t.Subscriber())
		t.Events = slices.DeleteFunc(slices.Clone(t.Events), func(e string) bool { return !r.opts.Want.Takes(e) })
		if len(t.Events) > 0 {
			mine = append(mine, t)
		}
	}
	approved = slices.DeleteFunc(approved, func(s shellhooks.Spec) bool { return !r.opts.Want.Takes(s.Event) })
	env := shellhooks.Env{Dir: r.home.Dir, Profile: r.home.Profile}
	r.mu.Lock()
	if r.shell == nil {
		r.shell = shellhooks.NewRegistry(shellhooks.Options{Bus: r.opts.Bus, Env: env, Transcripts: r.opts.Transcripts, Logger: r.log})
		r.webhooks = webhooks.NewRegistry(webhooks.Options{Bus: r.opts.Bus, Env: env, Logger: r.log})
	}
	shell, hooksOut := r.shell, r.webhooks
	r.mu.Unlock()
	if _, err := shell.Apply(approved); err != nil {
		*problems = append(*problems, err)
	}
	if _, err := hooksOut.Apply(mine); err != nil {
		*problems = append(*problems, err)
	}
	return keep
}

// Webhooks reads the profile's outbound webhook targets (hooks.outbound)
// and a warning for each entry that cannot be posted to.
func Webhooks(cfg config.Config) ([]webhooks.Target, []string) {
	return webhooks.Parse(cfg.Hooks.Shell["outbound"], nil)
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

// shellNeeded tells whether an approved shell hook or a webhook target
// takes one of w's hooks.
func shellNeeded(o DiscoverOptions, cfg config.Config, w Want) bool {
	specs, targets, _ := configured(o, cfg)
	for _, t := range targets {
		if slices.ContainsFunc(t.Events, w.Takes) {
			return true
		}
	}
	specs = slices.DeleteFunc(specs, func(s shellhooks.Spec) bool { return !w.Takes(s.Event) })
	if len(specs) == 0 || AcceptHooks(cfg) {
		return len(specs) > 0
	}
	approved, _, _ := shellhooks.NewAllowlist(o.Home.Dir).Split(specs, false, time.Now())
	return len(approved) > 0
}
