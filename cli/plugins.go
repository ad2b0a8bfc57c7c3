package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"atrium/backend/config"
	"atrium/backend/plugins"
	"atrium/backend/plugins/proc"
)

// pluginRow is one line of `plugins list`.
type pluginRow struct {
	Name     string   `json:"name"`
	Version  string   `json:"version"`
	Source   string   `json:"source"`
	Runtime  string   `json:"runtime"`
	Enabled  bool     `json:"enabled"`
	State    string   `json:"state"`
	Reason   string   `json:"reason,omitempty"`
	Hooks    []string `json:"hooks"`
	Commands []string `json:"commands"`
	// Registered: Hooks and Commands come from the plugin's last handshake,
	// not only its manifest.
	Registered bool     `json:"registered"`
	PID        int      `json:"pid,omitempty"`
	Process    string   `json:"process,omitempty"`
	Restarts   int      `json:"restarts,omitempty"`
	Dir        string   `json:"dir,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
	// What the plugin registered beyond hooks and commands at its last
	// start, and what Atrium accepted but never calls (inert), with why.
	Extras proc.Extras `json:"extras"`
	// MissingEnv: what its manifest requires (requires_env) that is set
	// neither in the environment nor in the profile's .env.
	MissingEnv []string `json:"missing_env,omitempty"`
}

// toRow is one plugin as the Manager lists it (its status applied: hooks
// and commands from the last handshake, else the manifest).
func toRow(p plugins.Plugin) pluginRow {
	return pluginRow{
		Name: p.Manifest.Name, Version: p.Manifest.Version, Source: p.Source, Runtime: p.Manifest.Runtime,
		Enabled: p.Enabled, State: p.State, Reason: p.Err,
		Hooks: nonNil(p.Hooks), Commands: nonNil(p.Commands), Registered: p.Registered,
		PID: p.PID, Process: p.Process, Restarts: p.Restarts, Dir: p.Dir, Warnings: p.Warnings, Extras: p.Extras,
		MissingEnv: names(p.Manifest.MissingEnv()),
	}
}

// extrasLines describes what a plugin registered beyond hooks and commands,
// one line per kind, and each inert registration with why.
func extrasLines(x proc.Extras) []string {
	var out []string
	list := func(label string, names []string) {
		if len(names) > 0 {
			out = append(out, label+": "+strings.Join(names, ", "))
		}
	}
	var tools, cli, mem, eng, sec []string
	for _, t := range x.Tools {
		tools = append(tools, t.Name)
	}
	for _, c := range x.CLICommands {
		cli = append(cli, "atrium "+c.Name)
	}
	for _, m := range x.Memory {
		mem = append(mem, m.Name)
	}
	for _, e := range x.Engines {
		eng = append(eng, e.Name)
	}
	for _, s := range x.Sections {
		sec = append(sec, s.ID)
	}
	list("tools", tools)
	list("command line", cli)
	list("memory providers (memory.provider)", mem)
	list("context engine", eng)
	list("middleware", x.Middleware)
	list("system prompt sections", sec)
	list("subscribes to", x.Subscriptions)
	list("unknown hooks (kept, never called)", x.UnknownHooks)
	for _, i := range x.Inert {
		out = append(out, fmt.Sprintf("inert %s %s: registered; %s", i.Kind, i.Name, i.Reason))
	}
	return out
}

// nonNil is s, or an empty list for none (JSON [] rather than null).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// plugins opens the profile's plugin manager (no store is opened).
func (r *runner) plugins() (*plugins.Manager, error) {
	home, err := config.ResolveHome(r.g.home, r.g.profile)
	if err != nil {
		return nil, err
	}
	return plugins.NewManager(r.pluginOptions(home)), nil
}

func (r *runner) pluginsCmd() *cobra.Command {
	c := &cobra.Command{Use: "plugins", Short: "List, enable, disable, install and remove plugins"}
	c.AddCommand(r.pluginsListCmd(), r.pluginsToggleCmd(true), r.pluginsToggleCmd(false), r.pluginsInstallCmd(), r.pluginsRemoveCmd(),
		r.pluginsDoctorCmd(), r.pluginsReloadCmd(), r.pluginsHostCmd())
	return c
}

func (r *runner) pluginsListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List bundled, user and project plugins with their state",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := r.plugins()
			if err != nil {
				return err
			}
			all, err := m.List()
			if err != nil {
				return err
			}
			rows := make([]pluginRow, 0, len(all))
			for _, p := range all {
				rows = append(rows, toRow(p))
				for _, w := range p.Warnings {
					fmt.Fprintf(r.env.Stderr, "atrium: warning: plugin %s: %s\n", p.Manifest.Name, w)
				}
			}
			return r.print(rows, func(w io.Writer) {
				fmt.Fprintln(w, "NAME\tVERSION\tSOURCE\tENABLED\tSTATE\tHOOKS\tCOMMANDS")
				for _, p := range rows {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, dash(p.Version), p.Source, yesNo(p.Enabled), withReason(p),
						dash(clip(strings.Join(p.Hooks, ","), 60)), dash(clip(strings.Join(p.Commands, ","), 40)))
				}
				fmt.Fprintln(w, "(hooks and commands: registered at the last start; declared in plugin.yaml for plugins never started)")
				for _, p := range rows {
					for _, l := range extrasLines(p.Extras) {
						fmt.Fprintf(w, "%s: %s\n", p.Name, l)
					}
					if len(p.MissingEnv) > 0 {
						fmt.Fprintf(w, "%s: requires %s, not set (atrium config set NAME VALUE keeps one in .env)\n", p.Name, strings.Join(p.MissingEnv, ", "))
					}
				}
			})
		},
	}
}

func (r *runner) pluginsToggleCmd(on bool) *cobra.Command {
	use, short := "disable NAME", "Disable a plugin (adds it to plugins.disabled in config.yaml)"
	if on {
		use, short = "enable NAME", "Enable a plugin (adds it to plugins.enabled in config.yaml)"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long:  short + ".\nconfig.yaml is rewritten keeping its other settings and its comments.\nA running window or dashboard of the profile applies the change within seconds.",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := r.plugins()
			if err != nil {
				return err
			}
			var p plugins.Plugin
			if on {
				p, err = m.Enable(cmd.Context(), args[0])
			} else {
				p, err = m.Disable(cmd.Context(), args[0])
			}
			if err != nil {
				return err
			}
			if on {
				r.askForEnv(p)
			}
			row := toRow(p)
			return r.print(row, func(w io.Writer) {
				verb := "disabled"
				if on {
					verb = "enabled"
				}
				fmt.Fprintf(w, "%s %s (state: %s)\n", verb, row.Name, withReason(row))
			})
		},
	}
}

func (r *runner) pluginsInstallCmd() *cobra.Command {
	var force bool
	c := &cobra.Command{
		Use:   "install PATH",
		Short: "Install a plugin folder or .zip into the user plugins folder (not enabled until you enable it)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := r.plugins()
			if err != nil {
				return err
			}
			p, err := m.Install(cmd.Context(), args[0], force)
			if err != nil {
				return err
			}
			r.askForEnv(p)
			row := toRow(p)
			return r.print(row, func(w io.Writer) {
				fmt.Fprintf(w, "installed %s %s in %s (state: %s)\n", row.Name, dash(row.Version), row.Dir, withReason(row))
			})
		},
	}
	c.Flags().BoolVar(&force, "force", false, "replace an installed plugin of the same name")
	return c
}

func (r *runner) pluginsRemoveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a user plugin (bundled plugins can only be disabled)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := r.plugins()
			if err != nil {
				return err
			}
			if err := m.Remove(cmd.Context(), args[0]); err != nil {
				return err
			}
			return r.print(map[string]string{"removed": args[0]}, func(w io.Writer) { fmt.Fprintf(w, "removed %s\n", args[0]) })
		},
	}
}

// withReason is the state with where it runs, or why it does not.
func withReason(p pluginRow) string {
	s := p.State
	if p.State == plugins.StateRunning && p.Process != "" {
		s += fmt.Sprintf(" (pid %d, in %s)", p.PID, p.Process)
	}
	if p.Reason != "" {
		s += ": " + firstAndLast(p.Reason)
	}
	return s
}

// firstAndLast keeps a table row on one line: a reason of several lines (a
// Python traceback) is its first line and its last, where the exception
// is; `plugins list --json` and `plugins doctor` have it whole.
func firstAndLast(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	first, last := strings.TrimSpace(lines[0]), strings.TrimSpace(lines[len(lines)-1])
	if len(lines) == 1 || last == first {
		return first
	}
	return first + " … " + last
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
