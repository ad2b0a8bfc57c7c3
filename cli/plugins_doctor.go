package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

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
}

func (r *runner) pluginsDoctorCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "doctor NAME",
		Short: "Load one plugin, show its handshake and what it registered, and send it a dry event",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				found, err := plugins.NewManager(r.pluginOptions(st.Home)).Find(args[0])
				if err != nil {
					return err
				}
				p := &found
				d := r.doctor(ctx, st, found)
				return r.print(d, func(w io.Writer) {
					fmt.Fprintf(w, "plugin\t%s %s (%s, %s)\n", d.Plugin.Name, dash(d.Plugin.Version), d.Plugin.Source, p.Manifest.Runtime)
					fmt.Fprintf(w, "enabled\t%s\n", yesNo(d.Plugin.Enabled))
					fmt.Fprintf(w, "declares\thooks %s; commands %s\n", dash(strings.Join(p.Manifest.Hooks, ",")), dash(strings.Join(p.Manifest.Commands, ",")))
					fmt.Fprintf(w, "started\t%s (pid %d)\n", yesNo(d.Started), d.PID)
					fmt.Fprintf(w, "registered\thooks %s; commands %s\n", dash(strings.Join(d.Registered, ",")), dash(strings.Join(d.Commands, ",")))
					fmt.Fprintf(w, "dry run\t%s\n", d.DryRun)
					for _, pr := range d.Problems {
						fmt.Fprintf(w, "problem\t%s\n", pr)
					}
				})
			})
		},
	}
}

func (r *runner) doctor(ctx context.Context, st *stack.Stack, p plugins.Plugin) Doctor {
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
			d.Registered = append(d.Registered, p.Manifest.Hooks...)
		}
		d.DryRun = "not run: in-process plugins run inside every Atrium process"
		return d
	}
	spec, err := r.runtime.Spec(p, st.Config)
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
	d.Registered = append(d.Registered, info.Hooks...)
	for _, c := range info.Commands {
		d.Commands = append(d.Commands, c.Name)
	}
	_ = plugins.RecordStart(st.Home, p, info.Hooks, info.Commands, info.Extras)
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
		"deleted_ids": []string{}, "dry_run": true})
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
