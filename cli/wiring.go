package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"atrium/backend/hooks"
	"atrium/backend/plugins"
	"atrium/backend/plugins/proc"
	pyrunner "atrium/backend/plugins/runner"
	"atrium/backend/stack"
	bundled "atrium/plugins"
	hookaudit "atrium/plugins/hook-audit"
	memoryrules "atrium/plugins/memory-rules"
	"atrium/plugins/whoami"
)

// goPlugin installs a bundled in-process plugin with its validated settings.
type goPlugin func(ctx *hooks.Context, st *stack.Stack, settings map[string]any) error

// goPlugins are the bundled plugins with runtime go, by manifest name.
var goPlugins = map[string]goPlugin{
	memoryrules.Name: func(c *hooks.Context, _ *stack.Stack, s map[string]any) error {
		_, err := memoryrules.Register(c, s)
		return err
	},
	hookaudit.Name: func(c *hooks.Context, st *stack.Stack, _ map[string]any) error {
		return hookaudit.Register(c, filepath.Join(st.Home.Dir, "logs"))
	},
}

func (r *runner) discoverOptions(st *stack.Stack) plugins.DiscoverOptions {
	o := plugins.DiscoverOptions{Home: st.Home, Config: st.Config, Version: r.env.Version, Bundled: bundled.Bundled}
	// Bundled python and command plugins need a folder on disk: the
	// embedded tree is written out once per version.
	dir := plugins.BundledCacheDir(st.Home, r.env.Version)
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		if err := plugins.MaterializeBundled(dir); err == nil {
			_ = os.WriteFile(filepath.Join(dir, ".complete"), nil, 0o644)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err == nil {
		o.BundledDir = dir
	}
	return o
}

// startProcessPlugins starts the enabled python and command plugins whose
// manifest subscribes to something, through one host that stops with the
// stack. A plugin that fails to start is reported and skipped.
func (r *runner) startProcessPlugins(st *stack.Stack, list []plugins.Plugin) {
	var host *proc.Host
	runnerPath := ""
	for _, p := range list {
		rt := p.Manifest.Runtime
		if !p.Enabled || p.State == plugins.StateError || (rt != plugins.RuntimePython && rt != plugins.RuntimeCommand) {
			continue
		}
		if !r.receives(p.Manifest) {
			continue // nothing to receive from this command
		}
		if host == nil {
			host = proc.NewHost(st.Bus, st.Logger())
			st.OnClose(host.Stop)
		}
		if rt == plugins.RuntimePython && runnerPath == "" {
			path, err := pyrunner.WriteTo(filepath.Join(st.Home.Dir, "cache", "runner"))
			if err != nil {
				fmt.Fprintf(r.env.Stderr, "atrium: warning: python runner: %s\n", oneLine(err))
				continue
			}
			runnerPath = path
		}
		spec, err := p.Spec(st.Home, st.Config, "python3", runnerPath)
		if err == nil {
			spec.Timeout = st.Config.HookTimeout()
			err = host.Add(spec)
		}
		if err != nil {
			fmt.Fprintf(r.env.Stderr, "atrium: warning: plugin %s: %s\n", p.Name(), oneLine(err))
		}
	}
}

// registerPlugins installs, in plugin-name order and before the bus starts,
// every enabled in-process plugin. A plugin that fails to register is
// reported and skipped; it never stops the command.
func (r *runner) registerPlugins(st *stack.Stack) error {
	if err := whoami.Register(st.Bus.Plugin(whoami.Name)); err != nil {
		return err
	}
	list, err := plugins.Discover(r.discoverOptions(st))
	if err != nil {
		fmt.Fprintf(r.env.Stderr, "atrium: warning: plugins: %s\n", oneLine(err))
		return nil
	}
	if r.processPlugins {
		r.startProcessPlugins(st, list)
	}
	for _, p := range list {
		if !p.Enabled || p.State == plugins.StateError || p.Manifest.Runtime != plugins.RuntimeGo {
			continue
		}
		install, ok := goPlugins[p.Name()]
		if !ok {
			fmt.Fprintf(r.env.Stderr, "atrium: warning: plugin %s: no in-process implementation in this build\n", p.Name())
			continue
		}
		settings, _, err := p.Manifest.Settings(st.Config.Plugins.Entries[p.Name()])
		if err == nil {
			err = install(st.Bus.Plugin(p.Name()), st, settings)
		}
		if err != nil {
			fmt.Fprintf(r.env.Stderr, "atrium: warning: plugin %s: %s\n", p.Name(), oneLine(err))
		}
	}
	return nil
}

// receives tells whether a plugin whose manifest declares these hooks and
// commands has anything to receive from the running command.
func (r *runner) receives(m plugins.Manifest) bool {
	if r.pluginHooks == nil {
		return len(m.Hooks) > 0 || len(m.Commands) > 0
	}
	for _, h := range m.Hooks {
		for _, want := range r.pluginHooks {
			if h == want {
				return true
			}
		}
	}
	return false
}
