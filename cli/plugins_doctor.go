package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"atrium/backend/apperr"
	"atrium/backend/hooks"
	"atrium/backend/plugins"
	"atrium/backend/plugins/proc"
	"atrium/backend/stack"
)

// Doctor is what `plugins doctor` found.
type Doctor struct {
	Plugin     pluginRow `json:"plugin"`
	Started    bool      `json:"started"`
	PID        int       `json:"pid,omitempty"`
	Registered []string  `json:"registered_hooks"`
	Commands   []string  `json:"registered_commands"`
	DryRun     string    `json:"dry_run"` // ok, the error, or why none ran
	DryRunMS   float64   `json:"dry_run_ms,omitempty"`
	Problems   []string  `json:"problems"`
	// Extras are what it registered beyond hooks and commands, Inert what
	// Atrium accepted but never calls (see plugins list).
	Extras proc.Extras `json:"extras"`
}

func (r *runner) pluginsDoctorCmd() *cobra.Command {
	var dryEvent bool
	c := &cobra.Command{
		Use:   "doctor NAME",
		Short: "Load one plugin and show its handshake and what it registered (--dry-event also sends it a marked test event)",
		Long: "Load one plugin and show its handshake and what it registered. It exits non-zero when the plugin\n" +
			"does not start. With --dry-event it also sends the plugin one synthetic event marked dry_run: true\n" +
			"(a delete of a session that never existed): a plugin is never fed a fake record unless you ask.",
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				found, err := plugins.NewManager(r.pluginOptions(st.Home)).Find(args[0])
				if err != nil {
					return err
				}
				p := &found
				d := r.doctor(ctx, st, found, dryEvent)
				err = r.print(d, func(w io.Writer) {
					fmt.Fprintf(w, "plugin\t%s %s (%s, %s)\n", d.Plugin.Name, dash(d.Plugin.Version), d.Plugin.Source, p.Manifest.Runtime)
					fmt.Fprintf(w, "enabled\t%s\n", yesNo(d.Plugin.Enabled))
					fmt.Fprintf(w, "declares\thooks %s; commands %s\n", dash(strings.Join(p.Manifest.DeclaredHooks(), ",")), dash(strings.Join(p.Manifest.Commands, ",")))
					fmt.Fprintf(w, "started\t%s (pid %d)\n", yesNo(d.Started), d.PID)
					fmt.Fprintf(w, "registered\thooks %s; commands %s\n", dash(strings.Join(d.Registered, ",")), dash(strings.Join(d.Commands, ",")))
					fmt.Fprintf(w, "dry run\t%s\n", d.DryRun)
					for _, l := range extrasLines(d.Extras) {
						fmt.Fprintf(w, "also\t%s\n", l)
					}
					for _, pr := range d.Problems {
						fmt.Fprintf(w, "problem\t%s\n", pr)
					}
				})
				if err != nil {
					return err
				}
				if !d.Started {
					return apperr.New(apperr.Rejected, "plugin %s did not start", d.Plugin.Name)
				}
				return nil
			})
		},
	}
	c.Flags().BoolVar(&dryEvent, "dry-event", false, "also send the plugin one synthetic event, marked dry_run: true")
	return c
}

func (r *runner) doctor(ctx context.Context, st *stack.Stack, p plugins.Plugin, dryEvent bool) Doctor {
	d := Doctor{Plugin: toRow(p), Registered: []string{}, Commands: []string{}, Problems: append([]string{}, p.Warnings...)}
	if p.State == plugins.StateError {
		d.Problems = append(d.Problems, p.Err)
		d.DryRun = "not run: the manifest is broken"
		return d
	}
	if p.Manifest.Runtime == plugins.RuntimeGo {
		if _, ok := goPlugins[p.Name()]; !ok {
			d.Problems = append(d.Problems, "no in-process implementation in this build")
		} else {
			d.Started = true
			d.Registered = append(d.Registered, p.Manifest.DeclaredHooks()...)
		}
		d.DryRun = "not run: in-process plugins run inside every Atrium process"
		return d
	}
	// The spec as the profile's host would run it; doctor starts its own
	// copy, outside the host, and sends it the dry event directly.
	rt := r.runtime
	if rt == nil {
		rt = plugins.NewRuntime(plugins.RuntimeOptions{Discover: r.pluginOptions(st.Home), Bus: st.Bus, Logger: st.Logger()})
	}
	spec, err := rt.Spec(p, st.Config)
	if err != nil {
		d.Problems = append(d.Problems, err.Error())
		d.DryRun = "not run"
		return d
	}
	host := proc.NewHost(st.Bus, st.Logger())
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = host.Stop(sctx)
	}()
	info, err := host.Start(ctx, spec)
	d.PID = info.PID
	if err != nil {
		d.Problems = append(d.Problems, err.Error())
		d.DryRun = "not run: the plugin did not start"
		_ = plugins.RecordFailure(st.Home, p, err.Error())
		return d
	}
	d.Started = true
	d.Extras = info.Extras
	d.Registered = append(d.Registered, info.Hooks...)
	for _, c := range info.Commands {
		d.Commands = append(d.Commands, c.Name)
	}
	_ = plugins.RecordStart(st.Home, p, info.Hooks, info.Commands, info.Extras)
	if !dryEvent {
		d.DryRun = "not run (add --dry-event to send one marked dry_run: true)"
		return d
	}
	// The dry event is the most harmless one the plugin takes: a delete of
	// a session that never existed comes first.
	hook := ""
	for _, want := range []string{hooks.OnSessionDelete, hooks.PostCompaction, hooks.OnSessionEnd, hooks.PostLLMCall} {
		for _, h := range info.Hooks {
			if h == want && hook == "" {
				hook = h
			}
		}
	}
	for _, h := range info.Hooks {
		if k, _ := hooks.Lookup(h); k == hooks.Observer && hook == "" {
			hook = h
		}
	}
	if hook == "" {
		d.DryRun = "not run: the plugin registered no observer hook"
		return d
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	took, err := host.DryRun(dctx, p.Name(), hook, map[string]any{"session_id": "doctor-dry-run", "reason": "delete",
		"deleted_ids": []string{}, "profile": st.Home.Profile, "dry_run": true, "telemetry_schema_version": hooks.TelemetrySchemaVersion})
	d.DryRunMS = float64(took.Microseconds()) / 1000
	if err != nil {
		d.DryRun = fmt.Sprintf("%s failed: %s", hook, oneLine(err))
	} else {
		d.DryRun = fmt.Sprintf("%s ok in %.1f ms", hook, d.DryRunMS)
	}
	return d
}

func (r *runner) pluginsReloadCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "reload",
		Short: "Write the bundled plugins out again from this binary, rediscover every plugin, and have running windows and dashboards restart theirs",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := r.plugins()
			if err != nil {
				return err
			}
			list, err := m.Reload(cmd.Context())
			if err != nil {
				return err
			}
			rows := make([]pluginRow, 0, len(list))
			for _, p := range list {
				rows = append(rows, toRow(p))
			}
			return r.print(rows, func(w io.Writer) {
				fmt.Fprintf(w, "reloaded %d plugin(s); a running window or dashboard restarts its plugins within seconds:\n", len(rows))
				for _, p := range rows {
					fmt.Fprintf(w, "%s\t%s\n", p.Name, withReason(p))
				}
			})
		},
	}
}
