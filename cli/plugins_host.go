package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"atrium/backend/config"
	"atrium/backend/pluginhost"
	"atrium/backend/stack"
)

// hostStatus is `atrium plugins host`.
type hostStatus struct {
	Profile     string          `json:"profile"`
	Mode        string          `json:"mode"` // "auto" (one host per profile) or "inline"
	Running     bool            `json:"running"`
	PID         int             `json:"pid,omitempty"`
	Kind        string          `json:"kind,omitempty"`
	Process     string          `json:"process,omitempty"`
	Since       *time.Time      `json:"since,omitempty"`
	IdleMinutes float64         `json:"idle_minutes,omitempty"`
	Socket      string          `json:"socket"`
	Head        int64           `json:"head"` // the newest event in the log
	Plugins     []hostPluginRow `json:"plugins"`
}

// hostPluginRow is one plugin: how the host runs it, and where it stands in
// the log (plugins that take no observer hook have no position).
type hostPluginRow struct {
	Name      string   `json:"name"`
	State     string   `json:"state"` // as the host runs it; "not running" without a host
	PID       int      `json:"pid,omitempty"`
	Restarts  int      `json:"restarts,omitempty"`
	Error     string   `json:"error,omitempty"`
	Hooks     []string `json:"hooks"`
	Position  *int64   `json:"position,omitempty"`
	Backlog   int64    `json:"backlog"`
	Active    bool     `json:"active"` // events wait for it
	LastError string   `json:"last_error,omitempty"`
}

func (r *runner) pluginsHostCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "host",
		Short: "Show the profile's plugin host: which process, since when, each plugin's position, backlog and last error",
		Long: "Each profile has one plugin host at a time: the desktop window, atrium serve, or a background host that\n" +
			"a command started (it exits after plugins.host_idle_minutes without work). It runs the one instance of\n" +
			"each enabled plugin and delivers every hook event from the log, whichever process committed it.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				s, err := r.hostStatus(ctx, st)
				if err != nil {
					return err
				}
				return r.print(s, func(w io.Writer) { printHostStatus(w, s) })
			})
		},
	}
	c.AddCommand(&cobra.Command{
		Use:   "stop",
		Short: "Stop the background plugin host (the window and atrium serve host until they close)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := config.ResolveHome(r.g.home, r.g.profile)
			if err != nil {
				return err
			}
			site := pluginhost.NewSite(home.Dir)
			cl := site.NewClient()
			ctx, cancel := context.WithTimeout(cmd.Context(), time.Minute)
			defer cancel()
			in, err := cl.Hello(ctx)
			if pluginhost.Unreachable(err) && !site.Held() {
				return r.print(map[string]any{"stopped": false, "running": false}, func(w io.Writer) {
					fmt.Fprintln(w, "no plugin host runs for this profile")
				})
			}
			if err == nil {
				err = cl.Stop(ctx)
			}
			if err != nil && !pluginhost.Unreachable(err) {
				return err
			}
			for site.Held() { // it finishes its deliveries, records positions, then exits
				select {
				case <-ctx.Done():
					return fmt.Errorf("the plugin host (pid %d) did not stop within a minute", in.PID)
				case <-time.After(20 * time.Millisecond):
				}
			}
			return r.print(map[string]any{"stopped": true, "pid": in.PID}, func(w io.Writer) {
				fmt.Fprintf(w, "stopped the plugin host (pid %d)\n", in.PID)
			})
		},
	})
	c.AddCommand(&cobra.Command{
		Use:    "run",
		Short:  "Host the profile's plugins in this process until idle (what a command starts in the background)",
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r.host.kind = pluginhost.KindBackground
			return r.with(cmd, r.runBackground)
		},
	})
	return c
}

// hostStatus asks the host (if one runs) and reads the positions.
func (r *runner) hostStatus(ctx context.Context, st *stack.Stack) (hostStatus, error) {
	cfg := st.Config
	s := hostStatus{Profile: st.Home.Profile, Mode: config.PluginHostAuto, Socket: r.host.site.SocketPath(), Plugins: []hostPluginRow{}}
	if cfg.InlinePlugins() {
		s.Mode = config.PluginHostInline
	}
	byName := map[string]int{}
	row := func(name string) *hostPluginRow {
		i, ok := byName[name]
		if !ok {
			i = len(s.Plugins)
			byName[name] = i
			s.Plugins = append(s.Plugins, hostPluginRow{Name: name, State: "not running", Hooks: []string{}})
		}
		return &s.Plugins[i] // used at once, before the next append
	}
	if r.host.client != nil {
		hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		hs, err := r.host.client.Status(hctx)
		cancel()
		if err == nil {
			since := hs.Since
			s.Running, s.PID, s.Kind, s.Process, s.Since, s.IdleMinutes = true, hs.PID, hs.Kind, hs.Process, &since, hs.IdleMinutes
			for _, p := range hs.Plugins {
				pr := row(p.Name)
				pr.State, pr.PID, pr.Restarts, pr.Error = p.State, p.PID, p.Restarts, p.Error
			}
		}
	}
	subs, err := st.Bus.SubscriberStates(ctx)
	if err != nil {
		return s, err
	}
	for _, sub := range subs {
		pr := row(sub.Name)
		pos := sub.Position
		pr.Hooks, pr.Position, pr.Backlog, pr.Active, pr.LastError = sub.Hooks, &pos, sub.Backlog, sub.Active, sub.LastError
	}
	s.Head, err = st.Bus.Head(ctx)
	return s, err
}

func printHostStatus(w io.Writer, s hostStatus) {
	switch {
	case s.Running && s.IdleMinutes > 0:
		fmt.Fprintf(w, "plugin host: pid %d, %s, since %s (exits after %s without work)\n", s.PID, s.Process, fmtTime(*s.Since), fmtMinutes(s.IdleMinutes))
	case s.Running:
		fmt.Fprintf(w, "plugin host: pid %d, %s, since %s\n", s.PID, s.Process, fmtTime(*s.Since))
	case s.Mode == config.PluginHostInline:
		fmt.Fprintln(w, "plugin host: none (plugins.host: inline: each command runs the plugins it needs)")
	default:
		fmt.Fprintln(w, "plugin host: none runs now (the next command that needs plugins starts one)")
	}
	fmt.Fprintf(w, "log head: seq %d\n\n", s.Head)
	fmt.Fprintln(w, "NAME\tSTATE\tPID\tPOSITION\tBACKLOG\tLAST ERROR")
	for _, p := range s.Plugins {
		pos, backlog := "-", "-"
		if p.Position != nil {
			pos, backlog = fmt.Sprint(*p.Position), fmt.Sprint(p.Backlog)
			if !p.Active {
				backlog += " (inactive)"
			}
		}
		pid := "-"
		if p.PID > 0 {
			pid = fmt.Sprint(p.PID)
		}
		last := p.LastError
		if last == "" {
			last = p.Error
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, p.State, pid, pos, backlog, dash(clip(strings.ReplaceAll(last, "\n", " "), 60)))
	}
}

func fmtMinutes(m float64) string {
	if m >= 1 && m == float64(int(m)) {
		return fmt.Sprintf("%d min", int(m))
	}
	return (time.Duration(m * float64(time.Minute))).Round(time.Second).String()
}
