package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"atrium/backend/apperr"
	"atrium/backend/gateway"
	"atrium/backend/hostlock"
	"atrium/backend/pluginhost"
	"atrium/backend/stack"
)

func (r *runner) gatewayCmd() *cobra.Command {
	c := &cobra.Command{Use: "gateway", Short: "Answer on chat platforms (Telegram, Slack, Discord, a signed webhook)"}
	var f stack.ModelFlags
	run := &cobra.Command{
		Use:   "run",
		Short: "Run the gateway and the scheduler in the foreground (for servers and systemd; --json logs one JSON object per line)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// It hosts the profile's plugins, like serve (taking over from a
			// background host), or is a client of the window or serve that
			// does and takes over when that one ends: gateway and cron turns
			// reach the profile's one instance of each plugin.
			r.host.kind = pluginhost.KindGateway
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error { return r.gatewayRun(ctx, st, f) })
		},
	}
	modelFlags(run, &f)
	status := &cobra.Command{
		Use:   "status",
		Short: "The configured adapters: state, last error, messages, deliveries waiting, who may talk, refused senders",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				rep, err := st.GatewayStatus(ctx)
				if err != nil {
					return err
				}
				return r.print(rep, func(w io.Writer) { printGateway(w, rep) })
			})
		},
	}
	retry := r.platformCountCmd("retry [PLATFORM]", "Send again the replies that were given up (all platforms, or one)", "requeued",
		"%d repl(ies) queued again; the running gateway sends them now\n", (*gateway.Store).Retry)
	c.AddCommand(run, status, retry)
	return c
}

// gatewayRun hosts the gateway and the scheduler until SIGINT/SIGTERM.
func (r *runner) gatewayRun(ctx context.Context, st *stack.Stack, f stack.ModelFlags) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var h slog.Handler = slog.NewTextHandler(r.env.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})
	if r.g.json {
		h = slog.NewJSONHandler(r.env.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})
	}
	lg := slog.New(h)
	host, err := st.Host(stack.HostOptions{Process: "atrium gateway run", Gateway: true, Flags: f, Logger: lg,
		OnHold: func(service string, holder hostlock.Holder) {
			lg.Info("standing by: another process runs it for this profile; taking over when it ends", "service", service, "holder", holder.String())
		}})
	if err != nil {
		return err
	}
	if err := host.GatewayError(); err != nil {
		return apperr.Wrap(apperr.Invalid, err, "gateway")
	}
	lg.Info("gateway starting", "profile", st.Home.Profile, "platforms", strings.Join(host.GatewayService().Platforms(), ","))
	r.pluginRole(ctx, st, lg)
	var wg sync.WaitGroup
	wg.Go(func() { st.Maintenance.Loop(ctx) })
	host.Run(ctx)
	wg.Wait()
	lg.Info("gateway stopped")
	return nil
}

func printGateway(w io.Writer, rep stack.GatewayReport) {
	switch {
	case len(rep.Adapters) == 0:
		fmt.Fprintln(w, "No gateway adapter is configured: add gateway.telegram, gateway.slack, gateway.discord or gateway.webhook to config.yaml, "+
			"or keep the familiar agent's TELEGRAM_BOT_TOKEN (or SLACK_BOT_TOKEN and SLACK_APP_TOKEN, or DISCORD_BOT_TOKEN) with its *_ALLOWED_USERS in the profile's .env (see the README).")
		return
	case rep.Running:
		fmt.Fprintf(w, "Running in %s\n", rep.Host)
	default:
		fmt.Fprintln(w, "Not running: start it with `atrium gateway run`, or set gateway.autostart: true for the window and atrium serve")
	}
	fmt.Fprintln(w, "PLATFORM\tSTATE\tDETAIL\tIN\tOUT\tWAITING\tFAILED\tALLOWED\tLAST ERROR")
	for _, a := range rep.Adapters {
		allowed := strings.Join(append(append(append([]string{}, a.AllowedUsers...), prefixed("chat ", a.AllowedChats)...), prefixed("role ", a.AllowedRoles)...), ", ")
		if allowed == "" {
			allowed = "nobody (deny by default)"
		}
		detail := a.Detail
		if len(a.MissingEnv) > 0 {
			detail = strings.TrimSpace(detail + " missing " + strings.Join(a.MissingEnv, ", "))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", a.Platform, a.State, dash(detail), a.Received, a.Sent, a.Pending, a.Failed,
			allowed, dash(clipText(a.LastError, 80)))
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if len(rep.Hooks)+len(rep.HookProblems) > 0 {
		fmt.Fprintln(w, "\nEVENT HOOK\tEVENTS")
		for _, h := range rep.Hooks {
			fmt.Fprintf(w, "%s\t%s\n", h.Folder, strings.Join(h.Events, ", "))
		}
		for _, p := range rep.HookProblems {
			fmt.Fprintf(w, "left out: %s\n", p)
		}
	}
	for _, a := range rep.Adapters {
		if a.HomeChannel != "" {
			fmt.Fprintf(w, "home channel on %s: %s (%s)\n", a.Platform, a.HomeChannel, a.HomeFrom)
		}
	}
	if len(rep.Refusals) > 0 {
		fmt.Fprintln(w, "\nREFUSED\tUSER\tNAME\tCHAT\tTIMES\tLAST")
		for _, x := range rep.Refusals {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\n", x.Platform, x.UserID, dash(x.UserName), dash(x.ChatID), x.Count, fmtTime(x.LastAt))
		}
	}
}

func prefixed(p string, xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = p + x
	}
	return out
}

func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// pluginRole tells where gateway run's plugins run: here (it is the
// profile's plugin host: it watches the plugin folders and config.yaml as
// serve does), or in the window or serve that hosts them (it forwards to
// it, and hosts once that one ends).
func (r *runner) pluginRole(ctx context.Context, st *stack.Stack, lg *slog.Logger) {
	switch r.host.mode {
	case modeHost:
		lg.Info("hosting the plugins of this profile")
		if r.runtime != nil {
			go r.runtime.Watch(ctx, 2*time.Second)
		}
	case modeClient:
		hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		in, err := r.host.client.Hello(hctx)
		cancel()
		if err == nil {
			lg.Info("the plugins run in another process; this one forwards to it and hosts them when it ends", "host", fmt.Sprintf("%s (pid %d)", in.Process, in.PID))
		}
		r.standBy(ctx, st)
	}
}

// services builds what a window or `atrium serve` hosts while open: the
// scheduler, and the gateway when gateway.autostart is true.
func (r *runner) services(st *stack.Stack, process string, f stack.ModelFlags) (*stack.Hosted, error) {
	h, err := st.Host(stack.HostOptions{Process: process, Gateway: st.Config.Gateway.Autostart, Flags: f, Logger: st.Logger()})
	if err != nil {
		return nil, err
	}
	if err := h.GatewayError(); err != nil {
		fmt.Fprintf(r.env.Stderr, "atrium: warning: gateway.autostart is on but %s\n", oneLine(err))
	}
	return h, nil
}

// platformCountCmd is a command on the gateway's store for one platform
// (its optional argument) or all, that says how many it changed.
func (r *runner) platformCountCmd(use, short, key, say string, op func(*gateway.Store, context.Context, string) (int64, error)) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				p := ""
				if len(args) == 1 {
					p = args[0]
				}
				n, err := op(gateway.NewStore(st.DB), ctx, p)
				if err != nil {
					return err
				}
				return r.print(map[string]int64{key: n}, func(w io.Writer) { fmt.Fprintf(w, say, n) })
			})
		},
	}
}
