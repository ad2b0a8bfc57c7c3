package cli

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"atrium/backend/config"
	"atrium/backend/hooks"
	"atrium/backend/plugins"
	"atrium/backend/stack"
	"atrium/backend/tools"
	"atrium/backend/turns"
	hookaudit "atrium/plugins/hook-audit"
	memoryrules "atrium/plugins/memory-rules"
	"atrium/plugins/whoami"
)

// goPlugins are the bundled plugins with runtime go, by manifest name.
var goPlugins = map[string]plugins.GoPlugin{
	memoryrules.Name: func(c *hooks.Context, _ config.Home, s map[string]any) error {
		_, err := memoryrules.Register(c, s)
		return err
	},
	hookaudit.Name: func(c *hooks.Context, home config.Home, _ map[string]any) error {
		return hookaudit.Register(c, filepath.Join(home.Dir, "logs"))
	},
}

// pluginOptions are the profile's discovery options (the bundled plugins
// written out once per version, unless $ATRIUM_BUNDLED_PLUGINS replaces them).
func (r *runner) pluginOptions(home config.Home) plugins.DiscoverOptions {
	return plugins.DefaultOptions(home, config.Config{}, r.env.Version)
}

// processName says what this process is in `atrium plugins list`.
func (r *runner) processName() string {
	if r.host.kind != "" {
		return processLabel(r.host.kind)
	}
	return r.cmdPath
}

// registerPlugins runs before the bus starts. A client forwards to the
// profile's plugin host and runs no plugin; the host and an inline process
// load them (loadPlugins).
func (r *runner) registerPlugins(st *stack.Stack) error {
	switch {
	case r.host.mode == modeClient:
		if r.host.client != nil {
			st.Bus.SetRemote(r.host.client)
		}
		return nil
	case r.host.mode == modeInline && !r.processPlugins && r.pluginCLI == "":
		return nil // a command that fires nothing needs no plugin (and claims nothing)
	}
	return r.loadPlugins(st)
}

// loadPlugins runs every enabled in-process plugin and, in the host, every
// enabled process plugin; inline, only the process plugins this command has
// something for (see firesHooks). A plugin that fails is reported and
// skipped; it never stops the command. The runtime stops with the stack.
func (r *runner) loadPlugins(st *stack.Stack) error {
	if err := whoami.Register(st.Bus.Plugin(whoami.Name)); err != nil {
		return err
	}
	services := stack.NewPluginServices(st)
	// A store this process cannot write fires no hook: no process plugin
	// has anything to receive.
	want := plugins.Want{Processes: r.processPlugins && st.DB.Writable() == nil, Hooks: r.pluginHooks, CLICommand: r.pluginCLI,
		Capabilities: r.pluginCaps}
	if r.host.mode == modeHost {
		want = plugins.Want{Processes: true} // the host runs every enabled plugin
	}
	rt := plugins.NewRuntime(plugins.RuntimeOptions{
		Discover:     r.pluginOptions(st.Home),
		Bus:          st.Bus,
		Go:           goPlugins,
		Want:         want,
		Process:      r.processName(),
		Logger:       st.Logger(),
		BuiltinTools: slices.Sorted(slices.Values(append(slices.Collect(maps.Keys(turns.BuiltinTools())), tools.Offered()...))),
		Services:     services,
		Transcripts:  st.HookTranscript,
		AcceptHooks:  r.acceptHooks,
		// The window paints first: its plugin processes start once the
		// list is on screen (desktop.Options.Ready).
		Hold: r.cmdPath == "atrium",
	})
	services.HasPlugin = rt.Has
	st.OnClose(services.Drain) // events between plugins reach them before they stop
	st.OnClose(rt.Stop)
	r.runtime = rt
	if err := rt.Sync(context.Background()); err != nil {
		r.warnEach("", err)
		if r.host.mode == modeHost {
			r.host.mu.Lock()
			r.host.startProblems = errLines(err) // for the command that started it
			r.host.mu.Unlock()
		}
	}
	return nil
}

// warnEach prints each of a joined error's parts as one warning line.
func (r *runner) warnEach(prefix string, err error) {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		fmt.Fprintf(r.env.Stderr, "atrium: warning: %s%s\n", prefix, oneLine(e))
	}
}

// releasePlugins starts the plugin processes the window held back.
func (r *runner) releasePlugins() {
	if r.runtime != nil {
		r.runtime.Release()
	}
}

// pluginManager manages the plugins of st's profile for a long-lived
// surface (the window, the dashboard): attached to this process's runtime,
// so enabling, disabling, installing and reloading take effect at once, and
// watching the folders and config.yaml, so changes made elsewhere (atrium
// plugins enable in a terminal) do too. The watch ends with ctx.
func (r *runner) pluginManager(ctx context.Context, st *stack.Stack) *plugins.Manager {
	m := plugins.NewManager(r.pluginOptions(st.Home))
	r.host.mu.Lock()
	r.host.manager = m
	r.host.mu.Unlock()
	if r.runtime != nil {
		m.Attach(r.runtime)
		go r.runtime.Watch(ctx, 2*time.Second)
	}
	r.standBy(ctx, st) // a client window or serve hosts once the host it found ends
	return m
}
