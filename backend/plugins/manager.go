package plugins

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/goccy/go-yaml"

	"atrium/backend/apperr"
	"atrium/backend/config"
	"atrium/backend/limits"
)

// Manager lists and changes a profile's plugins: enable and disable rewrite
// config.yaml, install and remove change the user folder, reload restarts
// them. Each call reads config.yaml afresh, so it sees edits made meanwhile.
// Attached to this process's Runtime (the window, atrium serve), every change
// takes effect at once: plugins start, stop and restart.
type Manager struct {
	opts DiscoverOptions // Config is ignored: it is loaded per call

	mu      sync.Mutex
	rt      *Runtime
	changes observers[Change]
}

// NewManager manages the plugins of opts.Home.
func NewManager(opts DiscoverOptions) *Manager { return &Manager{opts: opts} }

// Attach makes the manager's changes take effect in rt, and passes rt's
// state changes (a plugin started, crashed, restarting, cut off) to the
// manager's observers.
func (m *Manager) Attach(rt *Runtime) {
	m.mu.Lock()
	m.rt = rt
	m.mu.Unlock()
	rt.OnChange(m.notify)
}

func (m *Manager) runtime() *Runtime {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rt
}

// apply brings the attached runtime in line after a change. Its failures
// show as the plugins' states, which the caller reports.
func (m *Manager) apply(ctx context.Context) {
	if rt := m.runtime(); rt != nil {
		_ = rt.Apply(ctx)
	}
}

// Home is the profile whose plugins m manages.
func (m *Manager) Home() config.Home { return m.opts.Home }

// OnChange adds an observer called when a plugin changes state: after it was
// enabled, disabled, installed or removed ("removed"), and, with a runtime
// attached, when it starts, stops, crashes or is cut off. The desktop
// re-emits it as a UI event.
func (m *Manager) OnChange(fn func(Change)) { m.changes.add(fn) }

func (m *Manager) notify(c Change) { m.changes.notify(c) }

func (m *Manager) notifyPlugin(p Plugin) {
	m.notify(Change{Name: p.Name(), State: p.State, Error: p.Err})
}

// List discovers the plugins with the current config.yaml, sorted by name,
// with what the profile's live processes and last handshakes say of them
// (running where, restarting, in error, what they registered).
func (m *Manager) List() ([]Plugin, error) {
	cfg, _, err := config.Load(m.opts.Home.ConfigPath())
	if err != nil {
		return nil, err
	}
	o := m.opts
	o.Config = cfg
	list, err := Discover(o)
	if err != nil {
		return nil, err
	}
	applyStatus(o.Home, list)
	return list, nil
}

// Find returns one plugin, or a not_found error.
func (m *Manager) Find(name string) (Plugin, error) {
	all, err := m.List()
	if err != nil {
		return Plugin{}, err
	}
	for _, p := range all {
		if p.Manifest.Name == name {
			return p, nil
		}
	}
	return Plugin{}, apperr.New(apperr.NotFound, "no plugin named %s (see atrium plugins list)", limits.Echo(name))
}

// Enable removes name from plugins.disabled and, unless it is a bundled
// plugin that is on by default, adds it to plugins.enabled.
func (m *Manager) Enable(ctx context.Context, name string) (Plugin, error) {
	return m.setEnabled(ctx, name, true)
}

// Disable removes name from plugins.enabled and adds it to plugins.disabled.
func (m *Manager) Disable(ctx context.Context, name string) (Plugin, error) {
	return m.setEnabled(ctx, name, false)
}

func (m *Manager) setEnabled(ctx context.Context, name string, on bool) (Plugin, error) {
	p, err := m.Find(name)
	if err != nil {
		return Plugin{}, err
	}
	byDefault := p.Source == SourceBundled && (p.Manifest.EnabledByDefault == nil || *p.Manifest.EnabledByDefault)
	err = editPluginLists(m.opts.Home.ConfigPath(), func(enabled, disabled []string) ([]string, []string) {
		enabled, disabled = without(enabled, name), without(disabled, name)
		switch {
		case !on:
			disabled = append(disabled, name)
		case !byDefault:
			enabled = append(enabled, name)
		}
		return enabled, disabled
	})
	if err != nil {
		return Plugin{}, fmt.Errorf("%s plugin %s: %w", map[bool]string{true: "enable", false: "disable"}[on], name, err)
	}
	m.apply(ctx)
	if p, err = m.Find(name); err != nil {
		return Plugin{}, err
	}
	m.notifyPlugin(p)
	return p, nil
}

// Install copies a plugin folder or .zip into the user folder. The manifest
// is validated first and nothing is written when it or the archive is bad; an
// existing plugin of that name is a conflict unless force. The new plugin is
// not enabled.
func (m *Manager) Install(ctx context.Context, src string, force bool) (Plugin, error) {
	p, err := install(ctx, src, m.opts.Home.PluginsDir(), m.opts.Version, force)
	if err != nil {
		return Plugin{}, err
	}
	m.apply(ctx)
	got, err := m.Find(p)
	if err != nil {
		return Plugin{}, err
	}
	m.notifyPlugin(got)
	return got, nil
}

// Remove deletes a user plugin's folder (its work dir in plugins-data is
// kept). Bundled and project plugins are rejected.
func (m *Manager) Remove(ctx context.Context, name string) error {
	p, err := m.Find(name)
	if err != nil {
		return err
	}
	switch p.Source {
	case SourceBundled:
		return apperr.New(apperr.Rejected, "%s: bundled plugins can only be disabled", name)
	case SourceProject:
		return apperr.New(apperr.Rejected, "%s is a project plugin: remove it from %s", name, filepath.Dir(p.Dir))
	}
	root, err := filepath.Abs(m.opts.Home.PluginsDir())
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(p.Dir)
	if err != nil || filepath.Dir(dir) != root {
		return apperr.New(apperr.Internal, "plugin %s lives outside %s", name, root)
	}
	if err := os.RemoveAll(dir); err != nil {
		return apperr.Wrap(apperr.Internal, err, "remove plugin %s", name)
	}
	m.apply(ctx)
	m.notify(Change{Name: name, State: "removed"})
	return nil
}

// Reload writes the bundled plugins out again from this binary, discovers
// every plugin again and restarts those that run: here at once when a
// runtime is attached, and in the profile's other long-lived processes (the
// window, atrium serve) within seconds.
func (m *Manager) Reload(ctx context.Context) ([]Plugin, error) {
	if m.opts.BundledDir != "" && m.opts.BundledDir == BundledCacheDir(m.opts.Home, m.opts.Version) {
		if err := os.RemoveAll(m.opts.BundledDir); err != nil {
			return nil, apperr.Wrap(apperr.Internal, err, "reload bundled plugins")
		}
		if PrepareBundled(m.opts.Home, m.opts.Version) == "" {
			return nil, apperr.New(apperr.Internal, "cannot write the bundled plugins to %s", m.opts.BundledDir)
		}
	}
	if rt := m.runtime(); rt != nil {
		_ = rt.Reload(ctx)
	} else if err := TouchReload(m.opts.Home); err != nil {
		return nil, apperr.Wrap(apperr.Internal, err, "ask running processes to reload")
	}
	list, err := m.List()
	if err != nil {
		return nil, err
	}
	for _, p := range list {
		m.notifyPlugin(p)
	}
	return list, nil
}

func without(list []string, s string) []string {
	out := []string{}
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// editPluginLists rewrites plugins.enabled and plugins.disabled in the
// config file under its lock (two processes toggling plugins both count),
// touching only the lines of the entries that change; a list that does not
// change is left as written.
func editPluginLists(path string, edit func(enabled, disabled []string) ([]string, []string)) error {
	enabledKeys, disabledKeys := []string{"plugins", "enabled"}, []string{"plugins", "disabled"}
	return rewriteConfig(path, func(doc yaml.MapSlice) ([]pathEdit, error) {
		wasOn, wasOff := stringsOf(getPath(doc, enabledKeys)), stringsOf(getPath(doc, disabledKeys))
		enabled, disabled := edit(slices.Clone(wasOn), slices.Clone(wasOff))
		var edits []pathEdit
		if !slices.Equal(enabled, wasOn) {
			edits = append(edits, pathEdit{keys: enabledKeys, value: listOrNil(enabled)})
		}
		if !slices.Equal(disabled, wasOff) {
			edits = append(edits, pathEdit{keys: disabledKeys, value: listOrNil(disabled)})
		}
		return edits, nil
	})
}

// stringsOf is a list of the config file as the strings config.Load reads.
func stringsOf(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

// listOrNil makes an empty list remove its key.
func listOrNil(list []string) any {
	if len(list) == 0 {
		return nil
	}
	return list
}
