package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/config"
	"atrium/backend/dotenv"
	"atrium/backend/pluginhost"
	"atrium/backend/plugins"
	"atrium/backend/shellhooks"
	"atrium/backend/stack"
)

// Where this process's plugins run (see README, "One plugin host per
// profile").
type pluginMode int

const (
	// modeClient: the profile's plugin host (the window, atrium serve, a
	// background host) runs the plugins; this process writes its events,
	// pokes the host and forwards synchronous calls to it.
	modeClient pluginMode = iota
	// modeHost: this process is the profile's plugin host.
	modeHost
	// modeInline: plugins.host: inline, or safe mode: this process runs the
	// plugins its command needs itself, as before there was a host.
	modeInline
)

// hosting is this process's part in the profile's plugin hosting.
type hosting struct {
	mu     sync.Mutex
	mode   pluginMode
	kind   string // pluginhost.Kind*: what this process hosts as, if it may host
	site   pluginhost.Site
	client *pluginhost.Client
	lock   *pluginhost.Lock
	server *pluginhost.Server
	since  time.Time
	idle   time.Duration
	done   chan struct{} // closed by Stop/Handover of a background host
	// startProblems: the plugins that did not start with the host, told to
	// the first command that asks (Sync).
	startProblems []string
	doneSet       sync.Once
	manager       *plugins.Manager
}

// hostStartTimeout bounds how long a command waits for a background host to
// answer (its plugins are registered by then).
const hostStartTimeout = 20 * time.Second

// errHosted ends `atrium plugins host run` at once when another host runs.
var errHosted = errors.New("another process hosts the plugins of this profile")

// planPlugins decides this process's mode before the stack opens: inline
// (config or safe mode); the host (the window and serve take the host lock,
// or take over from a background host; a background host takes it or
// exits); or a client, which starts a background host first when its
// command can reach a plugin and none runs.
func (r *runner) planPlugins(ctx context.Context, home config.Home) error {
	cfg, _, err := config.Load(home.ConfigPath())
	if err != nil {
		return err
	}
	h := &r.host
	h.site = pluginhost.NewSite(home.Dir)
	h.idle = cfg.HostIdle()
	if os.Getenv(plugins.EnvSafeMode) == "1" || cfg.InlinePlugins() {
		h.mode = modeInline
		return nil
	}
	h.client = h.site.NewClient()
	h.client.NoWait = r.noWait
	switch h.kind {
	case pluginhost.KindBackground:
		// Wait a little: a window or serve that is closing releases it.
		wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		for {
			l, err := h.site.TryLock()
			if err == nil {
				h.lock, h.mode = l, modeHost
				return nil
			}
			if !errors.Is(err, pluginhost.ErrHeld) {
				return err
			}
			select {
			case <-wctx.Done():
				return errHosted
			case <-time.After(50 * time.Millisecond):
			}
		}
	case pluginhost.KindWindow, pluginhost.KindServe, pluginhost.KindGateway:
		actx, cancel := context.WithTimeout(ctx, hostStartTimeout)
		defer cancel()
		l, _, err := h.site.Acquire(actx, h.client)
		switch {
		case err == nil:
			h.lock, h.mode = l, modeHost
		case errors.Is(err, pluginhost.ErrHeld):
			h.mode = modeClient // another window, serve or gateway hosts; this one stands by
		default:
			return err
		}
		return nil
	}
	h.mode = modeClient
	need := r.processPlugins
	if need {
		var nerr error
		need, nerr = plugins.Needed(r.pluginOptions(home), plugins.Want{Processes: true, Hooks: r.pluginHooks,
			CLICommand: r.pluginCLI, Capabilities: r.pluginCaps})
		if nerr != nil {
			need = true // a plugin folder it cannot read: let the host say what is wrong
		}
	}
	if !need {
		return nil // events it may commit wait in the log for the next host
	}
	h.client.Ensure = func(ctx context.Context) error {
		ectx, cancel := context.WithTimeout(ctx, hostStartTimeout)
		defer cancel()
		_, err := h.site.Ensure(ectx, h.client, func() error { return r.spawnHost(home) })
		return err
	}
	// Start it now, so the plugins are registered before this command
	// commits anything (a plugin never started before learns its
	// handshake), and have it take in changes to plugin folders and
	// config.yaml made since, as a process that starts its own plugins would.
	if err := h.client.Ensure(ctx); err != nil {
		if !config.Unwritable(err) { // a read-only home: the command's own write says so, once
			fmt.Fprintf(r.env.Stderr, "atrium: warning: %s; the events of this command wait in the log for the next host\n", oneLine(err))
		}
		h.client.Ensure = nil // no host to wait for
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, hostStartTimeout)
	defer cancel()
	problems, err := h.client.Sync(sctx)
	if err != nil {
		fmt.Fprintf(r.env.Stderr, "atrium: warning: the plugin host: %s\n", oneLine(err))
	}
	for _, p := range problems {
		fmt.Fprintf(r.env.Stderr, "atrium: warning: %s\n", p)
	}
	return nil
}

// spawnHost starts `atrium plugins host run` for home in the background: a
// session of its own (setsid), no terminal, its output in
// <home>/logs/host.log. It outlives this command.
func (r *runner) spawnHost(home config.Home) error {
	exe, env := r.env.HostExe, r.env.HostEnv
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return err
		}
	}
	if env == nil {
		env = dotenv.Environ() // the host reads the profile's .env itself
	}
	// Approving every hook was this command's choice, recorded in the
	// allowlist already; the host it starts outlives it and must not go on
	// approving what is configured later.
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return slices.ContainsFunc(shellhooks.AcceptEnv, func(k string) bool { return strings.HasPrefix(kv, k+"=") })
	})
	logs := filepath.Join(home.Dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(logs, "host.log")
	if info, err := os.Stat(logPath); err == nil && info.Size() > 4<<20 {
		_ = os.Rename(logPath, logPath+".1")
	}
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(exe, "plugins", "host", "run", "--home", home.Root, "--profile", home.Profile)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", exe, err)
	}
	go func() { _ = cmd.Wait() }() // reaped here while this process lives; by init after
	return nil
}

// startHosting serves the socket once the stack is open (the plugins are
// registered), for a process that holds the host lock.
func (r *runner) startHosting(st *stack.Stack) error {
	h := &r.host
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mode != modeHost || h.server != nil {
		return nil
	}
	h.since = time.Now().UTC()
	h.done = make(chan struct{})
	srv, err := pluginhost.Serve(h.site, st.Bus, hostHandler{r: r}, st.Logger())
	if err != nil {
		return err
	}
	h.server = srv
	return nil
}

// standBy makes a window, serve or gateway run that found another one
// hosting take the lock once that one ends, and host from then on.
func (r *runner) standBy(ctx context.Context, st *stack.Stack) {
	h := &r.host
	if h.mode != modeClient || (h.kind != pluginhost.KindWindow && h.kind != pluginhost.KindServe && h.kind != pluginhost.KindGateway) {
		return
	}
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			l, err := h.site.TryLock()
			if err != nil {
				continue
			}
			if err := r.becomeHost(ctx, st, l); err != nil {
				fmt.Fprintf(r.env.Stderr, "atrium: warning: take over the plugin host: %s\n", oneLine(err))
				l.Release()
				continue
			}
			return
		}
	}()
}

// becomeHost turns a standing-by client into the host: its bus delivers,
// its plugins start, its socket answers.
func (r *runner) becomeHost(ctx context.Context, st *stack.Stack, l *pluginhost.Lock) error {
	h := &r.host
	h.mu.Lock()
	h.lock, h.mode = l, modeHost
	h.mu.Unlock()
	st.Bus.SetRemote(nil)
	if err := r.loadPlugins(st); err != nil {
		return err
	}
	if err := st.Bus.Start(ctx); err != nil {
		return err
	}
	if err := r.startHosting(st); err != nil {
		return err
	}
	h.mu.Lock()
	m := h.manager
	h.mu.Unlock()
	switch {
	case m != nil && r.runtime != nil:
		m.Attach(r.runtime)
		go r.runtime.Watch(ctx, 2*time.Second)
	case r.runtime != nil: // gateway run: no manager, but changes made elsewhere count
		go r.runtime.Watch(ctx, 2*time.Second)
	}
	r.releasePlugins()
	return nil
}

// stopHosting ends this process's hosting after its command: the socket
// closes (clients of a closing window go to the next host), then the stack
// closes (deliveries finish, positions are recorded, plugins stop), then
// the lock goes.
func (r *runner) stopHosting(st *stack.Stack) error {
	h := &r.host
	h.mu.Lock()
	srv := h.server
	h.server = nil
	h.mu.Unlock()
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		srv.Close(ctx)
		cancel()
	}
	var err error
	if st != nil {
		err = st.Close(context.Background())
	}
	h.mu.Lock()
	l := h.lock
	h.lock = nil
	h.mu.Unlock()
	l.Release()
	return err
}

// processLabel says what a host is, for people.
func processLabel(kind string) string {
	switch kind {
	case pluginhost.KindWindow:
		return "the desktop window"
	case pluginhost.KindServe:
		return "atrium serve"
	case pluginhost.KindGateway:
		return "atrium gateway run"
	}
	return "a background host"
}

// hostHandler answers the socket's questions about this host.
type hostHandler struct{ r *runner }

func (hh hostHandler) Info() pluginhost.Info {
	h := &hh.r.host
	in := pluginhost.Info{PID: os.Getpid(), Kind: h.kind, Process: processLabel(h.kind), Since: h.since,
		Profile: hh.r.profile, Version: hh.r.env.Version}
	if h.kind == pluginhost.KindBackground {
		in.IdleMinutes = h.idle.Minutes()
	}
	return in
}

func (hh hostHandler) Plugins() []pluginhost.PluginState {
	out := []pluginhost.PluginState{}
	if hh.r.runtime == nil {
		return out
	}
	for _, s := range hh.r.runtime.States() {
		out = append(out, pluginhost.PluginState{Name: s.Name, State: s.State, PID: s.PID, Restarts: s.Restarts, Error: s.Error})
	}
	// Shell hooks and webhooks run in the host (a child, a request per
	// event).
	subs := []string{}
	for _, s := range hh.r.runtime.ShellRegistered() {
		subs = append(subs, s.Subscriber)
	}
	for _, t := range hh.r.runtime.WebhooksRegistered() {
		subs = append(subs, t.Subscriber())
	}
	for _, s := range subs {
		if !slices.ContainsFunc(out, func(p pluginhost.PluginState) bool { return p.Name == s }) {
			out = append(out, pluginhost.PluginState{Name: s, State: plugins.StateRunning, PID: os.Getpid()})
		}
	}
	return out
}

func (hh hostHandler) Sync() []string {
	h := &hh.r.host
	h.mu.Lock()
	out := h.startProblems
	h.startProblems = nil
	h.mu.Unlock()
	if rt := hh.r.runtime; rt != nil {
		ctx, cancel := context.WithTimeout(context.Background(), hostStartTimeout)
		defer cancel()
		for _, l := range errLines(rt.Sync(ctx)) {
			if !slices.Contains(out, l) { // a config problem is found by both syncs
				out = append(out, l)
			}
		}
	}
	return out
}

// errLines is a joined error's parts, one line each.
func errLines(err error) []string {
	if err == nil {
		return nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var out []string
	for _, e := range errs {
		out = append(out, oneLine(e))
	}
	return out
}

func (hh hostHandler) Handover() error { return hh.stop("hand over") }
func (hh hostHandler) Stop() error     { return hh.stop("stop") }

func (hh hostHandler) stop(verb string) error {
	h := &hh.r.host
	if h.kind != pluginhost.KindBackground {
		return apperr.New(apperr.Rejected, "the plugin host is %s (pid %d): it hosts until it closes, and does not %s", processLabel(h.kind), os.Getpid(), verb)
	}
	h.doneSet.Do(func() { close(h.done) })
	return nil
}

// runBackground is `atrium plugins host run`: it hosts until asked to stop
// or hand over, until SIGINT or SIGTERM, or until it had no work for
// plugins.host_idle_minutes.
func (r *runner) runBackground(ctx context.Context, st *stack.Stack) error {
	h := &r.host
	if r.runtime != nil {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go r.runtime.Watch(wctx, 2*time.Second)
	}
	sig := make(chan os.Signal, 1)
	signalNotify(sig)
	defer signalStop(sig)
	every := min(max(h.idle/10, 20*time.Millisecond), 5*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-h.done:
			return nil
		case <-sig:
			return nil
		case <-ctx.Done():
			return nil
		case <-t.C:
			if h.server != nil && h.server.IdleFor() >= h.idle {
				return nil
			}
		}
	}
}

func signalNotify(c chan os.Signal) { signal.Notify(c, os.Interrupt, syscall.SIGTERM) }
func signalStop(c chan os.Signal)   { signal.Stop(c) }
