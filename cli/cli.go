// Package cli is Atrium's command line. Each command opens the profile's
// stack, makes one backend call and prints either a table for people or, with
// --json, one JSON document for scripts. Errors are one line on stderr and a
// non-zero exit code that says the error's class.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"atrium/backend/apperr"
	"atrium/backend/config"
	"atrium/backend/hooks"
	"atrium/backend/plugins"
	"atrium/backend/stack"
)

// Exit codes by error class.
const (
	ExitOK       = 0
	ExitInternal = 1
	ExitInvalid  = 2
	ExitNotFound = 3
	ExitConflict = 4
	ExitRejected = 5
)

// Env is what a command runs with.
type Env struct {
	Version string
	Stdout  io.Writer
	Stderr  io.Writer
	// Clock overrides time for tests; nil means time.Now.
	Clock func() time.Time
	// Open overrides how a stack is opened (tests, future plugin wiring).
	Open func(ctx context.Context, home config.Home) (*stack.Stack, error)
	// HostExe and HostEnv start a background plugin host (atrium plugins
	// host run); by default this executable with this environment.
	HostExe string
	HostEnv []string
	// Window, when this build has no window, opens it another way (main:
	// the atrium-window binary beside this one, run in this process's
	// place); it returns only on failure. Nil: `atrium` prints the help.
	Window func() error
}

type globals struct {
	home    string
	profile string
	json    bool
}

// Main runs the command line and returns the process exit code.
func Main(args []string, env Env) int {
	root := NewRoot(env)
	if name, g, rest, ok := pluginCommandLine(root, args); ok {
		// `atrium NAME ...` where NAME is no command of Atrium's own: a
		// plugin's command line command (register_cli_command).
		code, err := runPluginCLI(env, g, name, rest)
		if err != nil {
			fmt.Fprintf(env.Stderr, "atrium: %s\n", oneLine(err))
			return exitCode(err)
		}
		return code
	}
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(env.Stderr, "atrium: %s\n", oneLine(err))
	return exitCode(err)
}

func oneLine(err error) string {
	return strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", " ")
}

func exitCode(err error) int {
	var usage usageError
	if errors.As(err, &usage) {
		return ExitInvalid
	}
	switch apperr.CodeOf(err) {
	case apperr.Invalid:
		return ExitInvalid
	case apperr.NotFound:
		return ExitNotFound
	case apperr.Conflict:
		return ExitConflict
	case apperr.Rejected:
		return ExitRejected
	}
	return ExitInternal
}

type usageError struct{ error }

// NewRoot builds the command tree.
func NewRoot(env Env) *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "atrium",
		Short:         "Atrium keeps your AI-agent sessions and runs their plugins",
		Long:          "Atrium keeps your AI-agent sessions in a local SQLite store and fires lifecycle hooks to plugins.\nData lives in $ATRIUM_HOME (default ~/.local/share/atrium).",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       env.Version, // --version, as every tool has it
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&g.home, "home", "", "data home (default $ATRIUM_HOME, then ~/.local/share/atrium)")
	pf.StringVar(&g.profile, "profile", "", "profile to use (default: the one chosen in the desktop settings, else \"default\")")
	pf.BoolVar(&g.json, "json", false, "print one JSON document for scripts")

	r := &runner{env: env, g: g}
	root.PersistentPreRun = func(*cobra.Command, []string) { r.loadDotenv() }
	pf.BoolVar(&r.noWait, "no-wait", false, "return once the change is committed, without waiting for the plugin host to deliver its hook events")
	pf.BoolVar(&r.acceptHooks, "accept-hooks", false, "approve every shell hook of config.yaml's hooks: without asking (also ATRIUM_ACCEPT_HOOKS=1)")
	r.window(root)
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the Atrium version",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.print(map[string]string{"version": env.Version}, func(w io.Writer) { fmt.Fprintln(w, env.Version) })
		},
	})
	root.AddCommand(r.sessionsCmd(), r.messagesCmd(), r.eventsCmd(), r.maintenanceCmd(), r.storageCmd(), r.chatCmd(), r.sendCmd(), r.compactCmd(), r.pluginsCmd(), r.hooksCmd(), r.approvalsCmd(), r.memoryCmd(), r.skillsCmd(), r.toolsCmd(), r.configCmd(), r.serveCmd(), r.gatewayCmd(), r.pairingCmd(), r.cronCmd(), r.devCmd())
	return root
}

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("%s takes no arguments, got %q", cmd.CommandPath(), args[0])}
	}
	return nil
}

func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError{fmt.Errorf("%s takes %d argument(s), got %d (see --help)", cmd.CommandPath(), n, len(args))}
		}
		return nil
	}
}

func minArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return usageError{fmt.Errorf("%s needs at least %d argument(s) (see --help)", cmd.CommandPath(), n)}
		}
		return nil
	}
}

type runner struct {
	env Env
	g   *globals
	// processPlugins is set for the commands that can fire hooks: only they
	// start out-of-process plugins, and only those subscribed to pluginHooks
	// (all of them when pluginHooks is nil).
	processPlugins bool
	pluginHooks    []string
	pluginCLI      string           // a plugin's command line command this process runs
	pluginCaps     []string         // capability kinds this command calls (usesCapabilities)
	cmdPath        string           // the running command ("atrium sessions delete")
	profile        string           // the profile of the running command
	runtime        *plugins.Runtime // this process's plugins, once the stack is open (host or inline)
	noWait         bool             // --no-wait
	acceptHooks    bool             // --accept-hooks
	host           hosting          // this process's part in the profile's plugin hosting
}

// firesHooks lists the commands whose work can fire hooks, with the hooks
// they can fire (nil: any hook, and slash commands too). Only plugins that
// subscribe to one of them are started: they have something to receive.
var firesHooks = map[string][]string{
	"atrium sessions delete":           {hooks.OnSessionDelete},
	"atrium sessions archive":          {hooks.OnSessionDelete},
	"atrium sessions unarchive":        {hooks.OnSessionRestore},
	"atrium sessions trash restore":    {hooks.OnSessionRestore},
	"atrium sessions trash empty":      {hooks.OnSessionDelete},
	"atrium sessions undo":             {hooks.OnSessionDelete, hooks.OnSessionRestore},
	"atrium sessions sweep-empty":      {hooks.OnSessionDelete},
	"atrium sessions prune":            {hooks.OnSessionDelete},
	"atrium sessions prune-ghosts":     {hooks.OnSessionDelete},
	"atrium sessions move":             {hooks.OnSessionDelete},
	"atrium sessions repair-profile":   {hooks.OnSessionDelete},
	"atrium maintenance run":           {hooks.OnSessionDelete},
	"atrium storage confirm-retention": {hooks.OnSessionDelete},
	"atrium sessions end":              {hooks.OnSessionFinalize, hooks.SubagentStop},
	"atrium chat":                      nil,
	"atrium send":                      nil,
	"atrium serve":                     nil,
	"atrium":                           nil, // the window
	"atrium compact":                   {hooks.PreCompaction, hooks.PostCompaction},
	"atrium gateway run":               nil,
	"atrium cron run":                  nil,
}

// firesHooksWith lists commands that fire hooks only with a flag's value:
// `sessions create --relation delegate` starts a subagent (subagent_start);
// any other create fires nothing, and starts no plugin.
var firesHooksWith = map[string]struct {
	flag, value string
	hooks       []string
}{
	"atrium sessions create": {"relation", "delegate", []string{hooks.SubagentStart}},
}

// usesCapabilities lists the commands that call plugin capabilities beyond
// hooks: the plugins that registered one of those kinds start too.
var usesCapabilities = map[string][]string{
	"atrium compact": {hooks.CapContextEngine, hooks.CapMemoryProvider},
}

// with opens the stack for one command and closes it (waiting for hook
// deliveries) afterwards.
func (r *runner) with(cmd *cobra.Command, fn func(ctx context.Context, st *stack.Stack) error) error {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	home, err := config.ResolveHome(r.g.home, r.g.profile)
	if err != nil {
		return err
	}
	r.cmdPath = cmd.CommandPath()
	r.profile = home.Profile
	r.pluginHooks, r.processPlugins = firesHooks[r.cmdPath]
	if w, ok := firesHooksWith[r.cmdPath]; ok {
		if v, err := cmd.Flags().GetString(w.flag); err == nil && v == w.value {
			r.pluginHooks, r.processPlugins = w.hooks, true
		}
	}
	r.pluginCaps = usesCapabilities[r.cmdPath]
	var st *stack.Stack
	if r.env.Open != nil {
		st, err = r.env.Open(ctx, home)
	} else {
		if r.processPlugins {
			r.consentHooks(cmd, home)
		}
		if err := r.planPlugins(ctx, home); err != nil {
			if errors.Is(err, errHosted) {
				return nil // `plugins host run` while another process hosts
			}
			return err
		}
		opts := stack.Options{Clock: r.env.Clock, Register: r.registerPlugins, Interactive: r.cmdPath == "atrium"}
		if r.cmdPath == "atrium plugins host run" {
			// The background host's only output is logs/host.log, where a
			// plugin author looks for their plugin's print() and logging
			// lines (rate-limited by the host): it logs from Info.
			opts.Logger = slog.New(slog.NewTextHandler(r.env.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
		}
		st, err = stack.Open(ctx, home, opts)
	}
	if err != nil {
		_ = r.stopHosting(nil)
		return err
	}
	for _, w := range st.Warnings {
		fmt.Fprintf(r.env.Stderr, "atrium: warning: %s\n", w)
	}
	if err := r.startHosting(st); err != nil {
		_ = r.stopHosting(st)
		return err
	}
	runErr := fn(ctx, st)
	if cerr := r.stopHosting(st); cerr != nil && runErr == nil {
		fmt.Fprintf(r.env.Stderr, "atrium: warning: %s\n", oneLine(cerr))
	}
	return runErr
}

// print writes v as JSON with --json, otherwise runs table.
func (r *runner) print(v any, table func(w io.Writer)) error {
	if r.g.json {
		enc := json.NewEncoder(r.env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(r.env.Stdout, 2, 4, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

// progress returns a progress printer when stderr is a terminal.
func (r *runner) progress(verb string) func(done, total int) {
	f, ok := r.env.Stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return func(done, total int) {
		fmt.Fprintf(f, "\r%s %d/%d", verb, done, total)
		if done == total {
			fmt.Fprint(f, "\r\033[K")
		}
	}
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04")
}
