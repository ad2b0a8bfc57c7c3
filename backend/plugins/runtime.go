package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"atrium/backend/config"
	"atrium/backend/hooks"
	"atrium/backend/plugins/proc"
	pyrunner "atrium/backend/plugins/runner"
	"atrium/backend/shellhooks"
	"atrium/backend/webhooks"
)

// GoPlugin installs one bundled in-process plugin through c, with its
// validated settings.
type GoPlugin func(c *hooks.Context, home config.Home, settings map[string]any) error

// Want says which plugins a process runs. In-process (go) plugins always
// load: they cost nothing until called.
type Want struct {
	// Processes runs out-of-process plugins (python, command) at all.
	Processes bool
	// Hooks, with Processes: nil runs every enabled one; otherwise only those
	// whose last handshake registered one of these hooks, and those never
	// started from their current folder (their handshake is what counts, and
	// it is not known yet).
	Hooks []string
	// CLICommand, with Processes: also runs the plugins whose last handshake
	// registered this command line command (`atrium NAME`).
	CLICommand string
	// Capabilities, with Processes: also runs the plugins whose last
	// handshake registered a capability of one of these kinds (compaction
	// asks the context engine and the memory provider).
	Capabilities []string
}

// RuntimeOptions configure a Runtime.
type RuntimeOptions struct {
	// Discover says where plugins are; its Config is read again from
	// config.yaml at every Sync, so edits made meanwhile count.
	Discover DiscoverOptions
	Bus      *hooks.Bus
	Go       map[string]GoPlugin // in-process implementations, by manifest name
	Want     Want
	Python   string // interpreter for runtime python (default python3)
	Process  string // what this process is, for `plugins list` ("atrium serve")
	Logger   *slog.Logger
	// Hold defers the children of launched plugins until Release (the
	// window: it paints first). They are registered at once.
	Hold bool
	// Tune adjusts the process host before the first plugin starts (tests).
	Tune func(*proc.Host)
	// BuiltinTools are the turn loop's own tools: a plugin tool of the same
	// name needs override=True and allow_tool_override.
	BuiltinTools []string
	// Services answers what process plugins ask of their host (ctx.llm,
	// dispatch_tool, ...); nil refuses such requests.
	Services proc.Services
	// Transcripts writes a session's JSONL export for Claude Code shaped
	// shell hooks (transcript_path); nil: they get "".
	Transcripts shellhooks.Transcripts
	// AcceptHooks approves every configured shell hook (--accept-hooks).
	AcceptHooks bool
}

// Change is a plugin's new state, for the UI.
type Change struct {
	Name  string `json:"name"`
	State string `json:"state"`
	Error string `json:"error,omitempty"`
}

// Runtime runs a profile's enabled plugins in this process: the in-process
// ones on the bus, the others as children under a proc.Host. Sync brings it
// in line with the folders and config.yaml (starting, stopping and restarting
// what changed); Watch does that whenever they change. It publishes what runs
// for `plugins list` and records every handshake and failure.
type Runtime struct {
	opts RuntimeOptions
	home config.Home
	host *proc.Host
	log  *slog.Logger

	syncMu sync.Mutex // one Sync at a time

	mu        sync.Mutex
	goLoaded  map[string]*goLoaded
	hosted    map[string]hosted // process plugins given to the host, by name
	runner    string            // the Python runner's path, once written
	changes   observers[Change]
	stopped   bool
	enabled   []string // the enabled plugins in load order, at the last Sync
	shell     *shellhooks.Registry
	webhooks  *webhooks.Registry
	watchSig  string // the folders' signature the last Sync saw
	reloadSig string // the reload marker's, likewise

	recordMu sync.Mutex // serializes the host record's rewrites
}

type goLoaded struct {
	ctx *hooks.Context
	sig string // settings, as JSON
	p   Plugin
	err string
}

type hosted struct {
	sig  string // the spec and folder fingerprint it was started with
	base string // sig without the callback timeout (timeless)
	p    Plugin
}

// NewRuntime makes a runtime; call Sync to load plugins.
func NewRuntime(o RuntimeOptions) *Runtime {
	if o.Python == "" {
		o.Python = "python3"
	}
	lg := o.Logger
	if lg == nil {
		lg = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	r := &Runtime{opts: o, home: o.Discover.Home, log: lg, goLoaded: map[string]*goLoaded{}, hosted: map[string]hosted{}}
	r.host = proc.NewHost(o.Bus, lg)
	if o.Services != nil {
		r.host.SetServices(o.Services)
	}
	if o.Tune != nil {
		o.Tune(r.host)
	}
	if o.Hold {
		r.host.Hold()
	}
	r.host.OnState(r.onHostState)
	return r
}

// Has tells whether plugin id is loaded here and not in error: an
// in-process plugin that registered, or a process plugin that runs or is on
// its way (ctx.has_plugin).
func (r *Runtime) Has(id string) bool {
	r.mu.Lock()
	g, inProc := r.goLoaded[id]
	_, hostedHere := r.hosted[id]
	r.mu.Unlock()
	if inProc {
		return g.err == ""
	}
	if !hostedHere {
		return false
	}
	in, ok := r.host.Info(id)
	return ok && in.State != proc.StateError && in.State != proc.StateStopped
}

// Release starts the plugin processes that Hold kept back.
func (r *Runtime) Release() { r.host.Release() }

// Host is the process host (plugins doctor sends its dry event through it).
func (r *Runtime) Host() *proc.Host { return r.host }

// OnChange adds an observer of plugin state changes in this process.
func (r *Runtime) OnChange(fn func(Change)) { r.changes.add(fn) }

func (r *Runtime) notify(c Change) { r.changes.notify(c) }

// Sync loads, starts, stops and restarts plugins so that this process runs
// exactly the enabled ones it wants, each from its current folder with its
// current settings. A plugin that fails is recorded in error and reported in
// the returned error (one line per plugin); the others still run.
func (r *Runtime) Sync(ctx context.Context) error { return r.sync(ctx, false, false) }

// Apply is Sync for a change the user is waiting on (the plugins page, a
// command): it returns once the plugins it started have handshaken (bounded
// by ctx), so the states it leaves are final.
func (r *Runtime) Apply(ctx context.Context) error { return r.sync(ctx, false, true) }

// Reload is Sync that also restarts every plugin that runs, and tells the
// profile's other long-lived processes (the window, atrium serve) to do the
// same.
func (r *Runtime) Reload(ctx context.Context) error {
	if err := TouchReload(r.home); err != nil {
		r.log.Warn("plugins reload marker", "error", err)
	}
	return r.sync(ctx, true, true)
}

func (r *Runtime) sync(ctx context.Context, force, wait bool) error {
	r.syncMu.Lock()
	defer r.syncMu.Unlock()
	return r.syncLocked(ctx, force, wait)
}

// syncLocked is sync with syncMu held.
func (r *Runtime) syncLocked(ctx context.Context, force, wait bool) error {
	r.mu.Lock()
	stopped := r.stopped
	r.mu.Unlock()
	if stopped {
		return nil
	}
	sig, reloadSig := r.signature()
	cfg, _, err := config.Load(r.home.ConfigPath())
	if err != nil {
		return err
	}
	o := r.opts.Discover
	o.Config = cfg
	list, err := Discover(o)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.enabled = EnabledOrder(list)
	r.mu.Unlock()
	r.opts.Bus.SetPluginOrder(r.enabled)
	// The callback bound follows config.yaml live, like the plugin specs.
	r.opts.Bus.SetTimeout(cfg.HookTimeout())
	r.host.SetMemoryProvider(cfg.Memory.Provider)
	r.opts.Bus.SelectContextEngine(cfg.Context.Engine)
	var problems []error
	r.syncGo(list, cfg, force, &problems)
	var shellNames []string
	if r.opts.Want.Processes {
		r.syncProcesses(ctx, list, cfg, force, wait, &problems)
		shellNames = r.syncConfigured(cfg, &problems)
	}
	r.mu.Lock()
	r.watchSig, r.reloadSig = sig, reloadSig
	r.mu.Unlock()
	// Plugins disabled or removed stop holding events back (their positions
	// are kept for the log's retention, so enabling them soon catches up).
	if r.opts.Bus.Delivering() {
		keep := shellNames
		for _, p := range list {
			if wanted(p) {
				keep = append(keep, p.Name())
			}
		}
		if err := r.opts.Bus.Retire(ctx, keep); err != nil {
			r.log.Warn("retire hook subscribers", "error", err)
		}
	}
	r.publish()
	return errors.Join(problems...)
}

// wanted tells whether p should run here at all.
func wanted(p Plugin) bool { return p.Enabled && p.State != StateError }

func (r *Runtime) syncGo(list []Plugin, cfg config.Config, force bool, problems *[]error) {
	byName := map[string]Plugin{}
	for _, p := range list {
		if p.Manifest.Runtime == RuntimeGo && wanted(p) {
			byName[p.Name()] = p
		}
	}
	var changes []Change
	r.mu.Lock()
	for name, g := range r.goLoaded {
		p, keep := byName[name]
		if keep && !force {
			if sig, _ := settingsSig(p, cfg); sig == g.sig {
				continue
			}
		}
		g.ctx.Unload()
		delete(r.goLoaded, name)
		if !keep {
			changes = append(changes, Change{Name: name, State: StateStopped})
		}
	}
	r.mu.Unlock()
	for _, name := range sortedKeys(byName) {
		p := byName[name]
		r.mu.Lock()
		_, loaded := r.goLoaded[name]
		r.mu.Unlock()
		if loaded {
			continue
		}
		g := &goLoaded{ctx: r.opts.Bus.Plugin(name), p: p}
		g.sig, _ = settingsSig(p, cfg)
		err := r.installGo(g, cfg)
		if err != nil {
			g.ctx.Unload()
			g.err = err.Error()
			*problems = append(*problems, fmt.Errorf("plugin %s: %w", name, err))
			_ = RecordFailure(r.home, p, g.err)
			changes = append(changes, Change{Name: name, State: StateError, Error: g.err})
		} else {
			var cmds []proc.CommandInfo
			for _, c := range g.ctx.Commands() {
				cmds = append(cmds, proc.CommandInfo{Name: c})
			}
			_ = RecordStart(r.home, p, g.ctx.Hooks(), cmds, proc.Extras{})
			changes = append(changes, Change{Name: name, State: StateRunning})
		}
		r.mu.Lock()
		r.goLoaded[name] = g
		r.mu.Unlock()
	}
	for _, c := range changes {
		r.notify(c)
	}
}

func (r *Runtime) installGo(g *goLoaded, cfg config.Config) (err error) {
	impl, ok := r.opts.Go[g.p.Name()]
	if !ok {
		return errors.New("no in-process implementation in this build")
	}
	settings, _, err := g.p.Manifest.Settings(cfg.Plugins.Entries[g.p.Name()])
	if err != nil {
		return err
	}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic in Register: %v", v)
		}
	}()
	return impl(g.ctx, r.home, settings)
}

func settingsSig(p Plugin, cfg config.Config) (string, error) {
	s, _, err := p.Manifest.Settings(cfg.Plugins.Entries[p.Name()])
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(s)
	return string(b), err
}

func (r *Runtime) syncProcesses(ctx context.Context, list []Plugin, cfg config.Config, force, wait bool, problems *[]error) {
	type start struct {
		p         Plugin
		spec      proc.Spec
		sig, base string
		reg       *Registration // its last good handshake from this folder, if known
	}
	var starts []start
	desired := map[string]bool{}
	for _, p := range list {
		rt := p.Manifest.Runtime
		if (rt != RuntimePython && rt != RuntimeCommand) || !wanted(p) {
			continue
		}
		fp := Fingerprint(p)
		reg := readRegistration(r.home, p.Name(), fp)
		if reg != nil && reg.Error != "" && (reg.At.IsZero() || reg.ErrorAt.After(reg.At)) && !force {
			// It failed from this very folder with these settings: starting it
			// again would fail the same way and log the same traceback on
			// every command. A change, `plugins reload` or doctor retries it.
			r.mu.Lock()
			_, here := r.hosted[p.Name()]
			r.mu.Unlock()
			desired[p.Name()] = here // one in error here stays as it is
			continue
		}
		if reg != nil && reg.At.IsZero() {
			reg = nil // only a failure on record
		}
		if !r.selects(reg) {
			continue
		}
		desired[p.Name()] = true
		spec, err := r.Spec(p, cfg)
		if err != nil {
			*problems = append(*problems, fmt.Errorf("plugin %s: %w", p.Name(), err))
			_ = RecordFailure(r.home, p, err.Error())
			r.notify(Change{Name: p.Name(), State: StateError, Error: err.Error()})
			desired[p.Name()] = false
			continue
		}
		b, _ := json.Marshal(spec)
		sig, base := fp+string(b), fp+timeless(spec)
		r.mu.Lock()
		cur, ok := r.hosted[p.Name()]
		r.mu.Unlock()
		if ok && cur.sig == sig && !force {
			continue
		}
		// Only plugins.hook_callback_timeout changed: a process that takes
		// it live keeps running, and what it holds (a memory provider's
		// state, calls under way) with it.
		if ok && cur.base == base && !force && r.host.Configure(p.Name(), spec.Timeout, spec.Env) {
			r.mu.Lock()
			r.hosted[p.Name()] = hosted{sig: sig, base: base, p: p}
			r.mu.Unlock()
			continue
		}
		starts = append(starts, start{p, spec, sig, base, reg})
	}
	// Stop what is no longer wanted, and what restarts with a new spec.
	r.mu.Lock()
	var stops []string
	for name := range r.hosted {
		if !desired[name] || slices.ContainsFunc(starts, func(s start) bool { return s.p.Name() == name }) {
			stops = append(stops, name)
		}
	}
	r.mu.Unlock()
	for _, name := range stops {
		sctx, cancel := context.WithTimeout(ctx, r.host.Grace+5*time.Second)
		_ = r.host.Remove(sctx, name)
		cancel()
		r.mu.Lock()
		delete(r.hosted, name)
		r.mu.Unlock()
	}
	// A plugin whose last handshake from this folder is known is launched:
	// registered at once from it, started in the background (events wait
	// for it). The others start in parallel, and this waits for their
	// handshakes: what they register is not known before.
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, s := range starts {
		r.mu.Lock()
		r.hosted[s.p.Name()] = hosted{sig: s.sig, base: s.base, p: s.p}
		r.mu.Unlock()
		if s.reg != nil {
			if _, err := r.host.Launch(s.spec, s.reg.Handshake()); err == nil {
				if wait {
					wg.Go(func() {
						if in, _ := r.host.Await(ctx, s.p.Name()); in.State == proc.StateError {
							mu.Lock()
							*problems = append(*problems, errors.New(in.Err))
							mu.Unlock()
						}
					})
				}
				continue
			}
		}
		wg.Go(func() {
			if _, err := r.host.Start(ctx, s.spec); err != nil {
				mu.Lock()
				*problems = append(*problems, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// Takes tells whether w wants hook (every hook when Hooks is nil).
func (w Want) Takes(hook string) bool { return w.Hooks == nil || slices.Contains(w.Hooks, hook) }

// selects applies Want to a process plugin with its last good handshake
// (nil: never started from its current folder).
func (r *Runtime) selects(reg *Registration) bool { return r.opts.Want.selects(reg) }

// selects tells whether a plugin with this last good handshake (nil: never
// started from its current folder) has something for w.
func (w Want) selects(reg *Registration) bool {
	if w.Hooks == nil {
		return true
	}
	if reg == nil {
		return true // its handshake decides, and it is not known yet
	}
	if c := w.CLICommand; c != "" && slices.ContainsFunc(reg.Extras.CLICommands, func(x proc.CLIInfo) bool { return x.Name == c }) {
		return true
	}
	for _, k := range w.Capabilities {
		if (k == hooks.CapContextEngine && len(reg.Extras.Engines) > 0) || (k == hooks.CapMemoryProvider && len(reg.Extras.Memory) > 0) {
			return true
		}
	}
	for _, h := range reg.Hooks {
		if slices.Contains(w.Hooks, h) {
			return true
		}
	}
	return false
}

// Spec is how this runtime runs process plugin p under cfg: its argv (the
// Python runner written out once), environment, work folder, settings and
// callback timeout. plugins doctor starts a plugin from it too.
func (r *Runtime) Spec(p Plugin, cfg config.Config) (proc.Spec, error) {
	runner := ""
	if p.Manifest.Runtime == RuntimePython {
		r.mu.Lock()
		runner = r.runner
		r.mu.Unlock()
		if runner == "" {
			path, err := pyrunner.WriteTo(filepath.Join(r.home.Dir, "cache", "runner"))
			if err != nil {
				return proc.Spec{}, err
			}
			r.mu.Lock()
			r.runner, runner = path, path
			r.mu.Unlock()
		}
	}
	var extra []string
	if reg := ReadRegistration(r.home, p); reg != nil {
		extra = reg.Env
	}
	spec, err := p.SpecWith(r.home, cfg, r.opts.Python, runner, SpecContext{BuiltinTools: r.opts.BuiltinTools, ExtraEnv: extra})
	if err != nil {
		return proc.Spec{}, err
	}
	spec.Timeout = cfg.HookTimeout()
	return spec, nil
}

// onHostState records a process plugin's handshake or failure and tells the
// observers.
func (r *Runtime) onHostState(in proc.Info) {
	r.mu.Lock()
	h, ok := r.hosted[in.Name]
	r.mu.Unlock()
	if ok {
		switch in.State {
		case proc.StateRunning:
			_ = RecordStart(r.home, h.p, in.Hooks, in.Commands, in.Extras)
		case proc.StateError:
			_ = RecordFailure(r.home, h.p, in.Err)
			if r.opts.Bus.Delivering() {
				if err := r.opts.Bus.Suspend(context.Background(), in.Name, in.Err); err != nil {
					r.log.Warn("suspend plugin", "plugin", in.Name, "error", err)
				}
			}
		}
	}
	r.publish()
	r.notify(Change{Name: in.Name, State: in.State, Error: in.Err})
}

// publish rewrites this process's host record from the current states.
func (r *Runtime) publish() {
	r.recordMu.Lock()
	defer r.recordMu.Unlock()
	r.mu.Lock()
	stopped := r.stopped
	r.mu.Unlock()
	if stopped {
		return
	}
	if err := writeHostRecord(r.home, r.opts.Process, r.States(), r.ShellRegistered(),
		r.WebhooksRegistered(), r.opts.Want.Processes && r.opts.Want.Hooks == nil); err != nil {
		r.log.Warn("publish plugin states", "error", err)
	}
}

// States reports every plugin this runtime runs: the in-process ones, then
// those of its process host.
func (r *Runtime) States() []RunState {
	r.mu.Lock()
	states := []RunState{}
	for _, name := range sortedKeys(r.goLoaded) {
		g := r.goLoaded[name]
		rs := RunState{Name: name, State: StateRunning, PID: os.Getpid(), Hooks: nonNilList(g.ctx.Hooks()), Commands: nonNilList(g.ctx.Commands())}
		if g.err != "" {
			rs.State, rs.Error, rs.PID = StateError, g.err, 0
		}
		states = append(states, rs)
	}
	r.mu.Unlock()
	for _, in := range r.host.List() {
		cmds := []string{}
		for _, c := range in.Commands {
			cmds = append(cmds, c.Name)
		}
		states = append(states, RunState{Name: in.Name, State: in.State, Error: in.Err, PID: in.PID, Restarts: in.Restarts,
			Hooks: nonNilList(in.Hooks), Commands: cmds})
	}
	return states
}

// Needed tells whether some enabled plugin has something for w (Hooks nil:
// any plugin): one whose last handshake from its current folder registered
// one of w's hooks, its command line command or a capability of one of its
// kinds, or one never started from that folder (its handshake decides). A
// command that needs none starts no plugin host.
func Needed(o DiscoverOptions, w Want) (bool, error) {
	cfg, _, err := config.Load(o.Home.ConfigPath())
	if err != nil {
		return false, err
	}
	o.Config = cfg
	if w.Processes && shellNeeded(o, cfg, w) {
		return true, nil
	}
	list, err := Discover(o)
	if err != nil {
		return false, err
	}
	for _, p := range list {
		if !wanted(p) {
			continue
		}
		reg := ReadRegistration(o.Home, p)
		if reg != nil && reg.At.IsZero() {
			reg = nil
		}
		if w.selects(reg) {
			return true, nil
		}
	}
	return false, nil
}

// Stop stops every child (with the host's grace period), unloads the
// in-process plugins and withdraws this process's record.
func (r *Runtime) Stop(ctx context.Context) error {
	r.syncMu.Lock()
	defer r.syncMu.Unlock()
	err := r.host.Stop(ctx)
	r.recordMu.Lock()
	r.mu.Lock()
	r.stopped = true
	for name, g := range r.goLoaded {
		g.ctx.Unload()
		delete(r.goLoaded, name)
	}
	if r.shell != nil {
		r.shell.Close()
	}
	if r.webhooks != nil {
		r.webhooks.Close()
	}
	r.mu.Unlock()
	if werr := writeHostRecord(r.home, r.opts.Process, nil, nil, nil, false); werr != nil && err == nil {
		err = werr
	}
	r.recordMu.Unlock()
	return err
}

// Watch runs Sync whenever config.yaml or a plugin folder changes, and
// Reload when `atrium plugins reload` asks for it, checking every interval,
// until ctx ends. Problems go to the log (and to the observers as states).
func (r *Runtime) Watch(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !r.watchedChange() {
			continue
		}
		// Look again under syncMu: a Reload or Sync that ran meanwhile (the
		// dashboard's Reload touches the marker, then syncs) took the
		// change in already, and a second forced sync would restart every
		// plugin once more right after.
		r.syncMu.Lock()
		var err error
		if r.watchedChange() {
			_, reloadSig := r.signature()
			r.mu.Lock()
			reload := reloadSig != r.reloadSig
			r.mu.Unlock()
			err = r.syncLocked(ctx, reload, false)
		}
		r.syncMu.Unlock()
		if err != nil && ctx.Err() == nil {
			r.log.Warn("plugins changed; some did not load", "error", err)
		}
	}
}

// watchedChange reports whether the folders, config.yaml or the reload
// marker changed since the last sync.
func (r *Runtime) watchedChange() bool {
	sig, reloadSig := r.signature()
	r.mu.Lock()
	defer r.mu.Unlock()
	return sig != r.watchSig || reloadSig != r.reloadSig
}

// signature summarizes what Watch looks at: config.yaml, the plugin folders
// and their manifests (names, sizes, times); and, apart, the reload marker.
func (r *Runtime) signature() (folders, reload string) {
	var b strings.Builder
	stat := func(path string) {
		if info, err := os.Stat(path); err == nil {
			fmt.Fprintf(&b, "%s %d %d\n", path, info.Size(), info.ModTime().UnixNano())
		}
	}
	stat(r.home.ConfigPath())
	stat(shellhooks.NewAllowlist(r.home.Dir).Path())
	o := r.opts.Discover
	dirs := []string{r.home.PluginsDir(), o.BundledDir, o.getenv(EnvBundled), o.projectDir()}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		stat(d)
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			stat(filepath.Join(d, e.Name()))
			stat(filepath.Join(d, e.Name(), ManifestFile))
		}
	}
	if info, err := os.Stat(reloadMarker(r.home)); err == nil {
		reload = fmt.Sprint(info.ModTime().UnixNano())
	}
	return b.String(), reload
}

// TouchReload asks every long-lived process of the profile to restart its
// plugins (see Watch).
func TouchReload(home config.Home) error {
	path := reloadMarker(home)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(time.Now().UTC().Format(time.RFC3339Nano)+"\n"), 0o644)
}

// timeless is spec encoded without its callback timeout (Spec.Timeout and
// the hook_timeout of ATRIUM_PLUGIN_CONTEXT): two specs that differ only
// there can be brought together by proc.Host.Configure.
func timeless(spec proc.Spec) string {
	spec.Timeout = 0
	spec.Env = slices.Clone(spec.Env)
	for i, kv := range spec.Env {
		v, ok := strings.CutPrefix(kv, contextEnv+"=")
		if !ok {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(v), &m) == nil {
			delete(m, "hook_timeout")
			b, _ := json.Marshal(m)
			spec.Env[i] = contextEnv + "=" + string(b)
		}
	}
	b, _ := json.Marshal(spec)
	return string(b)
}
