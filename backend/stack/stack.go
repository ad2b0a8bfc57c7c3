// Package stack opens one profile's store and wires its services: the
// command line, the desktop window and the dashboard all start here, so they
// share every code path below the surface.
package stack

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"atrium/backend/approvals"
	"atrium/backend/compaction"
	"atrium/backend/config"
	"atrium/backend/db"
	"atrium/backend/hooks"
	"atrium/backend/maintenance"
	"atrium/backend/receipts"
	"atrium/backend/sessions"
	"atrium/backend/tools"
	"atrium/backend/turns"
)

// Options configure Open.
type Options struct {
	Logger *slog.Logger
	Clock  func() time.Time
	// Register installs in-process plugins on the bus before it starts (so
	// redelivered events reach them).
	Register func(st *Stack) error
	// Interactive: a window runs this stack's maintenance and asks the user
	// to confirm the first automatic prune.
	Interactive bool
}

// Stack is one open profile.
type Stack struct {
	Home        config.Home
	Config      config.Config
	Warnings    []string
	DB          *db.DB
	Bus         *hooks.Bus
	Sessions    *sessions.Service
	Receipts    *receipts.Service
	Maintenance *maintenance.Service
	Compaction  *compaction.Engine
	// Runs: the turns running in the profile's processes (one file each
	// under run/turns), so that a person can stop one from any of them.
	Runs *turns.Runs
	// Standing: the profile's standing approvals (config.yaml's
	// command_allowlist), read by every loop of the process.
	Standing *approvals.Standing
	// Processes: the background processes the agent's terminal started in
	// this process (terminal with background: true); they end with it.
	Processes *tools.Processes
	log       *slog.Logger
	watch     *configWatch // config.yaml as it is now
	calls     *toolCallLog // logs/tool_calls.log (display.tool_progress: log)
	closers   []func(ctx context.Context) error
	opts      Options
}

// Open creates the home if missing, reads its config and opens the store.
func Open(ctx context.Context, home config.Home, opts Options) (*Stack, error) {
	lg := opts.Logger
	if lg == nil {
		lg = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if err := home.Ensure(); err != nil {
		return nil, err
	}
	// The file as it was before it was read: the settings a running process
	// follows read it again only once it changed (a stat taken first errs
	// towards reading).
	stamp := config.StatStamp(home.ConfigPath()).ReadNow()
	cfg, warnings, err := config.Load(home.ConfigPath())
	if err != nil {
		return nil, err
	}
	d, err := db.Open(ctx, home.StatePath(), db.Options{Synchronous: cfg.Storage.Synchronous, Clock: opts.Clock})
	if err != nil {
		return nil, err
	}
	bus := hooks.NewBus(d, hooks.Options{Timeout: cfg.HookTimeout(), Logger: lg})
	bus.SelectContextEngine(cfg.Context.Engine)
	watch := &configWatch{path: home.ConfigPath(), log: lg, stamp: stamp, cfg: cfg}
	watch.onChange(func(cfg config.Config) { bus.SetTimeout(cfg.HookTimeout()) })
	sess := sessions.NewService(d, bus, sessions.Options{Profile: home.Profile, SessionsDir: home.SessionsDir(), Logger: lg,
		Trash: watch.trash})
	rec := receipts.NewService(d, sess, cfg.ReceiptTTL())
	mcfg := maintenanceConfig(cfg)
	mcfg.Interactive = opts.Interactive
	mcfg.Current = func() maintenance.Config { return maintenanceConfig(watch.settled()) }
	maint := maintenance.NewService(d, sess, rec, mcfg, lg)
	st := &Stack{Home: home, Config: cfg, Warnings: warnings, DB: d, Bus: bus, Sessions: sess, Receipts: rec,
		Maintenance: maint, Runs: turns.NewRuns(filepath.Join(home.Dir, "run", "turns")),
		Standing: approvals.New(home), Processes: tools.NewProcesses(), log: lg, watch: watch, opts: opts,
		calls: newToolCallLog(home, lg)}
	fail := func(err error) (*Stack, error) {
		_ = d.Close()
		return nil, err
	}
	sum := st.summarizer()
	ccfg := compactionConfig(cfg.Compaction)
	ccfg.MemoryProvider = cfg.Memory.Provider
	st.Compaction = compaction.NewEngine(d, sess, bus, sum, ccfg)
	watch.onChange(func(cfg config.Config) {
		c := compactionConfig(cfg.Compaction)
		c.MemoryProvider = ccfg.MemoryProvider // memory.provider: at the next open
		st.Compaction.SetConfig(c)
	})
	// Built-in commands first, so no plugin can take their names.
	if err := st.Compaction.RegisterCommands(bus.Commands()); err != nil {
		return fail(err)
	}
	model := func() string {
		m, err := st.liveModel(ModelFlags{}).resolve()
		if err != nil {
			return "cannot be asked now (" + err.Error() + ")"
		}
		if m.Name == "" {
			return m.Provider.Name()
		}
		return m.Name
	}
	if err := turns.RegisterCommands(bus, sess, turns.CommandOptions{MemoryProvider: cfg.Memory.Provider, Model: model, SkillCommands: st.SkillCommands}); err != nil {
		return fail(err)
	}
	if opts.Register != nil {
		if err := opts.Register(st); err != nil {
			return fail(fmt.Errorf("register plugins: %w", err))
		}
	}
	if err := bus.Start(ctx); err != nil {
		return fail(err)
	}
	return st, nil
}

// OnClose runs fn after pending deliveries were waited for, before the store
// closes (the plugin host stops its children there).
func (s *Stack) OnClose(fn func(ctx context.Context) error) { s.closers = append(s.closers, fn) }

// Logger is the stack's logger.
func (s *Stack) Logger() *slog.Logger { return s.log }

// Close waits for pending hook deliveries, bounded by the hook timeout (or
// ctx), then closes the store.
func (s *Stack) Close(ctx context.Context) error {
	wait := s.Bus.Timeout()
	if wait <= 0 {
		wait = hooks.DefaultTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	s.Processes.Close() // before the hooks' last deliveries: nothing of theirs is the model's any more
	err := s.Bus.Close(cctx)
	for _, c := range s.closers {
		if cerr := c(cctx); err == nil {
			err = cerr
		}
	}
	if cerr := s.DB.Close(); err == nil {
		err = cerr
	}
	return err
}

// Resolver opens another profile's store for a move. The target gets no hook
// bus: adoption is silent.
func (s *Stack) Resolver() sessions.Resolver {
	return func(ctx context.Context, profile string) (*sessions.Service, func(), error) {
		h, err := s.Home.ForProfile(profile)
		if err != nil {
			return nil, nil, err
		}
		if err := h.Ensure(); err != nil {
			return nil, nil, err
		}
		cfg, _, err := config.Load(h.ConfigPath())
		if err != nil {
			return nil, nil, err
		}
		d, err := db.Open(ctx, h.StatePath(), db.Options{Synchronous: cfg.Storage.Synchronous, Clock: s.opts.Clock})
		if err != nil {
			return nil, nil, err
		}
		svc := sessions.NewService(d, nil, sessions.Options{Profile: profile, SessionsDir: h.SessionsDir(), Logger: s.log})
		return svc, func() { _ = d.Close() }, nil
	}
}
