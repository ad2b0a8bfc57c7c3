package app

import (
	"context"
	"slices"

	"github.com/samber/lo"

	"atrium/backend/apperr"
	"atrium/backend/config"
	"atrium/backend/dotenv"
	"atrium/backend/limits"
	"atrium/backend/plugins"
)

// Picker shows the window's native file dialogs.
type Picker interface {
	// PickPluginSource lets the user choose a plugin folder (zip false) or a
	// .zip archive; "" when cancelled.
	PickPluginSource(zip bool) (string, error)
}

// Saver asks the user where to save a file.
type Saver interface {
	// SaveFile shows a native save dialog proposing filename; "" when
	// cancelled.
	SaveFile(title, filename string) (string, error)
}

// Opener shows a folder in the desktop's file manager.
type Opener interface {
	OpenFolder(path string) error
}

// Plugins lists, toggles, installs and removes plugins, and shows the
// shell hooks of config.yaml with their consent.
type Plugins struct {
	base
	m        *plugins.Manager
	platform string
	picker   Picker
	opener   Opener
}

// NewPlugins binds m for platform; picker and opener may be nil (the
// dashboard).
func NewPlugins(ctx context.Context, m *plugins.Manager, platform string, picker Picker, opener Opener) *Plugins {
	return &Plugins{base: base{ctx: ctx}, m: m, platform: platform, picker: picker, opener: opener}
}

// ShellHookDTO is one configured shell hook: what it runs on which event,
// whether it is approved, and which live processes registered it.
type ShellHookDTO struct {
	Event          string   `json:"event"` // Atrium's hook
	Name           string   `json:"name"`  // as configured (Claude Code's event name in its shape)
	Command        string   `json:"command"`
	Matcher        string   `json:"matcher,omitempty"`
	Dialect        string   `json:"dialect"` // hermes or claude
	TimeoutSeconds float64  `json:"timeout_seconds"`
	FailClosed     bool     `json:"fail_closed"`
	Approved       bool     `json:"approved"`
	ApprovedAt     string   `json:"approved_at,omitempty"`
	RegisteredIn   []string `json:"registered_in"`
}

// ShellHooksDTO is the profile's shell hooks, the warnings of config.yaml
// entries that cannot run, and whether this surface may approve.
type ShellHooksDTO struct {
	Hooks      []ShellHookDTO `json:"hooks"`
	Warnings   []string       `json:"warnings"`
	CanApprove bool           `json:"can_approve"` // the window; a browser cannot approve code to run
}

// ShellHookRequest names configured hooks: a command, and an event (""
// for every event of the command).
type ShellHookRequest struct {
	Event   string `json:"event"`
	Command string `json:"command"`
}

// ShellHooks lists the configured shell hooks with their consent.
func (p *Plugins) ShellHooks() (ShellHooksDTO, error) {
	st, warns, err := p.m.ShellHooks()
	if err != nil {
		return ShellHooksDTO{}, err
	}
	out := ShellHooksDTO{Hooks: make([]ShellHookDTO, 0, len(st)), Warnings: nonNil(warns), CanApprove: p.platform != PlatformDashboard}
	for _, h := range st {
		out.Hooks = append(out.Hooks, ShellHookDTO{Event: h.Event, Name: h.Name, Command: h.Command, Matcher: h.Matcher,
			Dialect: string(h.Dialect), TimeoutSeconds: h.TimeoutSeconds, FailClosed: h.FailClosed, Approved: h.Approved,
			ApprovedAt: h.ApprovedAt, RegisteredIn: h.RegisteredIn})
	}
	return out, nil
}

// ApproveShellHook approves a configured hook so it runs (the consent the
// command line asks for on a terminal). Only the window may: the
// dashboard, reachable from a browser, may not approve code to run.
func (p *Plugins) ApproveShellHook(req ShellHookRequest) (ShellHooksDTO, error) {
	if p.platform == PlatformDashboard {
		return ShellHooksDTO{}, apperr.New(apperr.Rejected, "shell hooks are approved in the window or with `atrium hooks approve`, not from a browser")
	}
	ctx, cancel := p.with(writeTimeout)
	defer cancel()
	if _, err := p.m.ApproveShellHook(ctx, req.Event, req.Command); err != nil {
		return ShellHooksDTO{}, err
	}
	return p.ShellHooks()
}

// RevokeShellHook withdraws every approval of a command: it stops running.
func (p *Plugins) RevokeShellHook(req ShellHookRequest) (ShellHooksDTO, error) {
	ctx, cancel := p.with(writeTimeout)
	defer cancel()
	if _, err := p.m.RevokeShellHook(ctx, req.Command); err != nil {
		return ShellHooksDTO{}, err
	}
	return p.ShellHooks()
}

// List returns every discovered plugin, by name.
func (p *Plugins) List() ([]PluginDTO, error) {
	// What each plugin misses is told from the .env as it is now (set by
	// another process perhaps); unreadable, the start warned of it.
	_ = p.m.Home().RefreshEnv()
	all, err := p.m.List()
	if err != nil {
		return nil, err
	}
	return lo.Map(all, toPlugin), nil
}

// Enable turns a plugin on in config.yaml and starts it.
func (p *Plugins) Enable(name string) (PluginDTO, error) {
	ctx, cancel := p.with(writeTimeout)
	defer cancel()
	got, err := p.m.Enable(ctx, name)
	if err != nil {
		return PluginDTO{}, err
	}
	return toPlugin(got, 0), nil
}

// Disable turns a plugin off in config.yaml and stops it.
func (p *Plugins) Disable(name string) (PluginDTO, error) {
	ctx, cancel := p.with(writeTimeout)
	defer cancel()
	got, err := p.m.Disable(ctx, name)
	if err != nil {
		return PluginDTO{}, err
	}
	return toPlugin(got, 0), nil
}

// SetEnv keeps a value for a variable the plugin's manifest declares
// (requires_env, optional_env) in the profile's .env, as its installer
// asks for it in the familiar agent ("" removes it). The plugin gets it
// when it starts again (Reload); the value is never returned. A variable
// that changes how programs start (PATH, LD_PRELOAD, PYTHONPATH, ...) is
// refused whatever the manifest declares.
func (p *Plugins) SetEnv(plugin string, in PluginEnvRequest) (PluginDTO, error) {
	got, err := p.m.Find(plugin)
	if err != nil {
		return PluginDTO{}, err
	}
	declared := false
	for _, e := range append(slices.Clone(got.Manifest.RequiresEnv), got.Manifest.OptionalEnv...) {
		declared = declared || e.Name == in.Name
	}
	if !declared || config.ProgramVariable(in.Name) || !dotenv.ValidName(in.Name) {
		return PluginDTO{}, apperr.New(apperr.Invalid, "%s does not declare %s among its variables (requires_env, optional_env), or it is one that is never written here", plugin, limits.Echo(in.Name))
	}
	if err := keepKey(p.m.Home(), in.Name, in.Value); err != nil {
		return PluginDTO{}, err
	}
	if got, err = p.m.Find(plugin); err != nil {
		return PluginDTO{}, err
	}
	return toPlugin(got, 0), nil
}

// Install copies a plugin folder or archive into the profile.
func (p *Plugins) Install(req InstallRequest) (PluginDTO, error) {
	ctx, cancel := p.with(writeTimeout)
	defer cancel()
	got, err := p.m.Install(ctx, req.Source, req.Force)
	if err != nil {
		return PluginDTO{}, err
	}
	return toPlugin(got, 0), nil
}

// Remove stops and deletes a user plugin.
func (p *Plugins) Remove(name string) error {
	ctx, cancel := p.with(writeTimeout)
	defer cancel()
	return p.m.Remove(ctx, name)
}

// Reload writes the bundled plugins out again, rediscovers every plugin and
// restarts those that run.
func (p *Plugins) Reload() ([]PluginDTO, error) {
	ctx, cancel := p.with(writeTimeout)
	defer cancel()
	_ = p.m.Home().RefreshEnv()
	all, err := p.m.Reload(ctx)
	if err != nil {
		return nil, err
	}
	return lo.Map(all, toPlugin), nil
}

// Open shows a plugin's folder in the file manager (desktop), and returns
// its path either way.
func (p *Plugins) Open(name string) (FolderDTO, error) {
	got, err := p.m.Find(name)
	if err != nil {
		return FolderDTO{}, err
	}
	if got.Dir == "" {
		return FolderDTO{}, apperr.New(apperr.NotFound, "plugin %s has no folder on disk", name)
	}
	out := FolderDTO{Path: got.Dir}
	if p.opener != nil {
		if err := p.opener.OpenFolder(got.Dir); err != nil {
			return out, apperr.Wrap(apperr.Internal, err, "open %s", got.Dir)
		}
		out.Opened = true
	}
	return out, nil
}

// Browse shows a native dialog to choose a plugin folder or .zip to install;
// "" when cancelled. Only the window has one.
func (p *Plugins) Browse(zip bool) (string, error) {
	if p.picker == nil {
		return "", apperr.New(apperr.Rejected, "no file dialog here: type the plugin's path")
	}
	return p.picker.PickPluginSource(zip)
}
