package plugins

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"atrium/backend/apperr"
	"atrium/backend/config"
	"atrium/backend/plugins/proc"
	bundled "atrium/plugins"
)

// Environment variables that change discovery.
const (
	EnvBundled        = "ATRIUM_BUNDLED_PLUGINS"        // a folder replacing the embedded bundled plugins
	EnvProjectPlugins = "ATRIUM_ENABLE_PROJECT_PLUGINS" // "1" adds ./.atrium/plugins/
	EnvSafeMode       = "ATRIUM_SAFE_MODE"              // "1" loads no plugin
)

// Plugin is one discovered plugin.
type Plugin struct {
	// ID is the plugin's key: its manifest name, or "category/name" for a
	// plugin found one level down in a category folder. Settings, the
	// enabled and disabled lists and every command use it.
	ID       string   `json:"id"`
	Manifest Manifest `json:"manifest"`
	// Dir is the plugin's folder on disk; empty for a bundled plugin that is
	// only embedded (see MaterializeBundled and DiscoverOptions.BundledDir).
	Dir     string `json:"dir"`
	Source  string `json:"source"` // bundled, user or project
	Enabled bool   `json:"enabled"`
	State   string `json:"state"` // stopped, running, restarting, error or disabled
	// Err says why the plugin is in error, or why it is disabled.
	Err      string   `json:"error,omitempty"`
	Warnings []string `json:"warnings,omitempty"`

	// What live processes and the last handshake add (Manager.List; plain
	// Discover leaves these empty).
	Hooks      []string `json:"hooks,omitempty"`    // registered at the last handshake, else the manifest's
	Commands   []string `json:"commands,omitempty"` // likewise
	Registered bool     `json:"registered"`         // Hooks and Commands come from a handshake
	// Extras: what its last handshake registered beyond hooks and commands
	// (tools, memory providers, CLI commands, ...), and what Atrium accepted
	// but never calls (Inert), with why.
	Extras   proc.Extras `json:"extras"`
	PID      int         `json:"pid,omitempty"`     // its process while running
	Process  string      `json:"process,omitempty"` // the Atrium process hosting it
	Restarts int         `json:"restarts,omitempty"`

	// Settings are the plugin's validated settings (defaults filled) from
	// the config Discover was given.
	Settings map[string]any `json:"-"`
}

// Name is the plugin's key (ID): the manifest's name, or "category/name".
func (p Plugin) Name() string {
	if p.ID != "" {
		return p.ID
	}
	return p.Manifest.Name
}

// DiscoverOptions say where to look.
type DiscoverOptions struct {
	Home   config.Home   // <home>/plugins/ is the user folder
	Config config.Config // plugins.enabled, plugins.disabled, plugins.entries
	// Version is `atrium version`, checked against requires_atrium.
	Version string
	// Bundled replaces the embedded bundled plugins (tests); nil means
	// $ATRIUM_BUNDLED_PLUGINS if set, else the embedded tree.
	Bundled fs.FS
	// BundledDir is where the bundled tree sits on disk (a folder written by
	// MaterializeBundled); bundled plugins get their Dir under it. It is
	// implied by $ATRIUM_BUNDLED_PLUGINS.
	BundledDir string
	// ProjectDir is the project folder (default ./.atrium/plugins), read
	// only when $ATRIUM_ENABLE_PROJECT_PLUGINS is 1.
	ProjectDir string
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
}

func (o DiscoverOptions) getenv(k string) string {
	if o.Getenv != nil {
		return o.Getenv(k)
	}
	return os.Getenv(k)
}

// safeMode tells whether $ATRIUM_SAFE_MODE is 1: no plugin and no
// configured hook runs.
func (o DiscoverOptions) safeMode() bool { return o.getenv(EnvSafeMode) == "1" }

// projectDir is the project plugin folder, absolute, when
// $ATRIUM_ENABLE_PROJECT_PLUGINS is 1; "" otherwise.
func (o DiscoverOptions) projectDir() string {
	if o.getenv(EnvProjectPlugins) != "1" {
		return ""
	}
	d := o.ProjectDir
	if d == "" {
		d = filepath.Join(".atrium", "plugins")
	}
	if abs, err := filepath.Abs(d); err == nil {
		d = abs
	}
	return d
}

// candidate is a loaded folder before precedence is applied.
type candidate struct {
	p        Plugin
	folder   string // the folder's own name
	rel      string // its path in the source ("cat/name" in a category)
	category string // "" unless found in a category folder
	where    string
}

// Discover finds every plugin, sorted by name (the load order). Sources are
// read in precedence order, a later one winning on the same name: bundled,
// the user folder, then the project folder (only with
// ATRIUM_ENABLE_PROJECT_PLUGINS=1). A non-bundled plugin that claims a
// bundled plugin's name from a folder of another name is ignored with a
// warning. A broken plugin is an entry in state error; the others load.
func Discover(opts DiscoverOptions) ([]Plugin, error) {
	type source struct {
		name  string
		fsys  fs.FS
		dir   string // "" when not on disk
		where string
	}
	var sources []source
	bfs, bdir := opts.Bundled, opts.BundledDir
	if bfs == nil {
		if d := opts.getenv(EnvBundled); d != "" {
			bfs, bdir = os.DirFS(d), d
		} else {
			bfs = bundled.Bundled
		}
	}
	sources = append(sources, source{SourceBundled, bfs, bdir, "bundled"})
	if opts.Home.Dir != "" {
		d := opts.Home.PluginsDir()
		sources = append(sources, source{SourceUser, os.DirFS(d), d, d})
	}
	if d := opts.projectDir(); d != "" {
		sources = append(sources, source{SourceProject, os.DirFS(d), d, d})
	}

	byName := map[string]*candidate{}
	bundledNames := map[string]bool{}
	for _, src := range sources {
		cands, err := scan(src.fsys, src.name, src.dir, src.where, opts.Version)
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		for i := range cands {
			c := &cands[i]
			name := c.p.Name()
			prev, exists := byName[name]
			switch {
			case exists && bundledNames[name] && src.name != SourceBundled && c.folder != name:
				prev.p.Warnings = append(prev.p.Warnings, fmt.Sprintf(
					"ignored the %s plugin in %s: it claims the bundled name %q from a folder of another name", src.name, c.where, name))
				continue
			case seen[name]:
				// Two folders of one source share a name: the folder named after it wins.
				keep, drop := prev, c
				if c.folder == name {
					keep, drop = c, prev
				}
				keep.p.Warnings = append(keep.p.Warnings, fmt.Sprintf("ignored %s: it also claims the name %q", drop.where, name))
				byName[name] = keep
				continue
			case exists:
				c.p.Warnings = append(c.p.Warnings, fmt.Sprintf("overrides the %s plugin of the same name", prev.p.Source))
			}
			if c.folder != c.p.Manifest.Name && c.p.Err == "" {
				c.p.Warnings = append(c.p.Warnings, fmt.Sprintf("folder %q holds plugin %q", c.folder, name))
			}
			seen[name] = true
			byName[name] = c
			if src.name == SourceBundled {
				bundledNames[name] = true
			}
		}
	}

	safe := opts.safeMode()
	out := make([]Plugin, 0, len(byName))
	for _, c := range byName {
		p := c.p
		if p.Err == "" {
			settingsErr(&p, opts.Config)
		}
		decide(&p, opts.Config, safe)
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	var enabled []Plugin
	for _, p := range out {
		if wanted(p) {
			enabled = append(enabled, p)
		}
	}
	_, orderWarnings := LoadOrder(enabled)
	for i := range out {
		out[i].Warnings = append(out[i].Warnings, orderWarnings[out[i].Name()]...)
	}
	return out, nil
}

// EnabledOrder is the load order of the plugins of list that run (enabled
// and not broken): requires_plugins first, then alphabetical.
func EnabledOrder(list []Plugin) []string {
	var enabled []Plugin
	for _, p := range list {
		if wanted(p) {
			enabled = append(enabled, p)
		}
	}
	order, _ := LoadOrder(enabled)
	return order
}

// scan loads every folder of one source, sorted by folder name. Hidden and
// dunder folders and plain files are skipped; a missing root is no
// plugins. A folder with no manifest whose subfolders have one is a
// category: each subfolder is a plugin keyed "category/name".
func scan(fsys fs.FS, source, dir, where, atriumVersion string) ([]candidate, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, apperr.Wrap(apperr.Internal, err, "read %s plugins (%s)", source, where)
	}
	var out []candidate
	for _, e := range entries {
		name := e.Name()
		if skipFolder(name) || !isDir(fsys, name) {
			continue
		}
		if manifestName(fsys, name) == "" {
			if subs := categoryMembers(fsys, name); len(subs) > 0 {
				for _, sub := range subs {
					c := newCandidate(fsys, source, dir, where, path.Join(name, sub), sub)
					c.category = name
					load(&c, fsys, atriumVersion)
					out = append(out, c)
				}
				continue
			}
		}
		c := newCandidate(fsys, source, dir, where, name, name)
		load(&c, fsys, atriumVersion)
		out = append(out, c)
	}
	return out, nil
}

func newCandidate(fsys fs.FS, source, dir, where, rel, folder string) candidate {
	c := candidate{folder: folder, rel: rel, where: path.Join(where, rel)}
	if dir != "" {
		c.where = filepath.Join(dir, filepath.FromSlash(rel))
		c.p.Dir = c.where
	}
	c.p.Source = source
	return c
}

// skipFolder: hidden folders and Python's dunder folders (__pycache__).
func skipFolder(name string) bool {
	return strings.HasPrefix(name, ".") || (strings.HasPrefix(name, "__") && strings.HasSuffix(name, "__"))
}

func isDir(fsys fs.FS, name string) bool {
	info, err := fs.Stat(fsys, name) // follows symlinked folders
	return err == nil && info.IsDir()
}

// manifestName is the manifest file in folder rel (plugin.yaml, else
// plugin.yml), or "" when it has none.
func manifestName(fsys fs.FS, rel string) string {
	for _, n := range []string{ManifestFile, ManifestFileAlt} {
		if _, err := fs.Stat(fsys, path.Join(rel, n)); err == nil {
			return n
		}
	}
	return ""
}

// categoryMembers lists the subfolders of a category folder that hold a
// manifest, sorted.
func categoryMembers(fsys fs.FS, rel string) []string {
	entries, err := fs.ReadDir(fsys, rel)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		sub := path.Join(rel, e.Name())
		if skipFolder(e.Name()) || !isDir(fsys, sub) || manifestName(fsys, sub) == "" {
			continue
		}
		out = append(out, e.Name())
	}
	return out
}

// load reads and validates one folder's manifest into c.p; failures become
// c.p.Err.
func load(c *candidate, fsys fs.FS, atriumVersion string) {
	p := &c.p
	mf := manifestName(fsys, c.rel)
	if mf == "" {
		mf = ManifestFile
	}
	file := path.Join(c.where, mf)
	if p.Dir != "" {
		file = filepath.Join(p.Dir, mf)
	}
	key := func(name string) string {
		if c.category != "" {
			return c.category + "/" + name
		}
		return name
	}
	data, err := readManifest(fsys, path.Join(c.rel, mf), file)
	if err != nil {
		p.Manifest.Name, p.ID = c.folder, key(c.folder)
		var ae *apperr.Error
		switch {
		case errors.Is(err, fs.ErrNotExist):
			p.Err = fmt.Sprintf("%s: no %s", c.where, ManifestFile)
		case errors.As(err, &ae):
			p.Err = err.Error()
		default:
			p.Err = fmt.Sprintf("cannot read %s: %v", file, err)
		}
		return
	}
	m, warnings, err := parseManifest(data, file)
	p.Manifest, p.Warnings = m, warnings
	if err != nil {
		if !ValidName(m.Name) {
			p.Manifest.Name = c.folder
		}
		p.ID = key(p.Manifest.Name)
		p.Err = err.Error()
		return
	}
	p.ID = key(m.Name)
	_, statErr := fs.Stat(fsys, path.Join(c.rel, PythonPackageFile))
	if err := p.Manifest.ResolveRuntime(statErr == nil); err != nil {
		p.Err = fmt.Sprintf("%s: %v", file, err)
		return
	}
	if p.Manifest.Runtime == RuntimeGo && p.Source != SourceBundled {
		p.Err = fmt.Sprintf("%s: runtime go is only for bundled plugins (use python or command)", file)
		return
	}
	if err := p.Manifest.CheckAtrium(atriumVersion); err != nil {
		p.Err = err.Error()
	}
}

// settingsErr validates the plugin's settings from config.yaml; an invalid
// setting puts the plugin in error.
func settingsErr(p *Plugin, cfg config.Config) {
	settings, warnings, err := p.Manifest.Settings(cfg.Plugins.Entries[p.Name()])
	p.Warnings = append(p.Warnings, warnings...)
	if err != nil {
		p.Err = err.Error()
		return
	}
	p.Settings = settings
}

// decide sets Enabled and State: the deny list wins, then the allow list,
// then a bundled plugin's enabled_by_default; safe mode loads none.
func decide(p *Plugin, cfg config.Config, safe bool) {
	name := p.Name()
	reason := ""
	switch {
	case contains(cfg.Plugins.Disabled, name):
		reason = "disabled in config (plugins.disabled)"
	case contains(cfg.Plugins.Enabled, name):
		p.Enabled = true
	case p.Source == SourceBundled && (p.Manifest.EnabledByDefault == nil || *p.Manifest.EnabledByDefault):
		p.Enabled = true
	case p.Source == SourceBundled:
		reason = "off by default (enabled_by_default: false); turn on with atrium plugins enable " + name
	default:
		reason = "not enabled (opt in with atrium plugins enable " + name + ")"
	}
	switch {
	case safe:
		if p.Err != "" {
			p.Warnings = append(p.Warnings, p.Err)
		}
		p.Enabled, p.State, p.Err = false, StateDisabled, "safe mode"
	case p.Err != "":
		p.State = StateError
	case !p.Enabled:
		p.State, p.Err = StateDisabled, reason
	default:
		p.State = StateStopped
	}
}
