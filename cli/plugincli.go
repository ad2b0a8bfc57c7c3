package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"atrium/backend/apperr"
	"atrium/backend/config"
	"atrium/backend/hooks"
	"atrium/backend/plugins"
	"atrium/backend/stack"
)

// pluginCommandLine recognizes `atrium [--home H] [--profile P] [--json]
// NAME ARGS...` where NAME is none of Atrium's own commands: it returns
// NAME, the global flags given before it and the arguments after it (which
// belong to the plugin's own parser).
func pluginCommandLine(root *cobra.Command, args []string) (string, globals, []string, bool) {
	var g globals
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--json":
			g.json = true
		case a == "--home" || a == "--profile":
			if i+1 >= len(args) {
				return "", g, nil, false
			}
			if a == "--home" {
				g.home = args[i+1]
			} else {
				g.profile = args[i+1]
			}
			i++
		case strings.HasPrefix(a, "--home="):
			g.home = strings.TrimPrefix(a, "--home=")
		case strings.HasPrefix(a, "--profile="):
			g.profile = strings.TrimPrefix(a, "--profile=")
		case strings.HasPrefix(a, "-"):
			return "", g, nil, false // a flag of the window's, or a mistake: cobra says
		default:
			for _, c := range root.Commands() {
				if c.Name() == a || slices.Contains(c.Aliases, a) {
					return "", g, nil, false
				}
			}
			if a == "help" || a == "completion" || a == "__complete" {
				return "", g, nil, false
			}
			// --home and --profile are Atrium's wherever they stand (as for
			// every command); the rest is the plugin's.
			var rest []string
			tail := args[i+1:]
			for j := 0; j < len(tail); j++ {
				switch t := tail[j]; {
				case (t == "--home" || t == "--profile") && j+1 < len(tail):
					if t == "--home" {
						g.home = tail[j+1]
					} else {
						g.profile = tail[j+1]
					}
					j++
				case strings.HasPrefix(t, "--home="):
					g.home = strings.TrimPrefix(t, "--home=")
				case strings.HasPrefix(t, "--profile="):
					g.profile = strings.TrimPrefix(t, "--profile=")
				default:
					rest = append(rest, t)
				}
			}
			return a, g, rest, true
		}
	}
	return "", g, nil, false
}

// runPluginCLI runs a plugin's command line command: the plugins that
// registered it are started, the arguments are parsed by the plugin's own
// argparse setup in its process, its output printed, its exit code
// returned.
func runPluginCLI(env Env, g globals, name string, argv []string) (int, error) {
	r := &runner{env: env, g: &g}
	home, err := config.ResolveHome(g.home, g.profile)
	if err != nil {
		return ExitInvalid, err
	}
	r.loadDotenv()
	r.cmdPath = "atrium " + name
	r.profile = home.Profile
	r.processPlugins, r.pluginHooks, r.pluginCLI = true, []string{}, name
	var st *stack.Stack
	if env.Open != nil {
		st, err = env.Open(context.Background(), home)
	} else {
		// The plugin runs in the profile's host (started if none runs).
		if err := r.planPlugins(context.Background(), home); err != nil {
			return ExitInternal, err
		}
		st, err = stack.Open(context.Background(), home, stack.Options{Clock: env.Clock, Register: r.registerPlugins})
	}
	if err != nil {
		_ = r.stopHosting(nil)
		return ExitInternal, err
	}
	defer func() { _ = r.stopHosting(st) }()
	var found *hooks.Capability
	for _, c := range st.Bus.Capabilities(hooks.CapCLICommand) {
		if c.Name == name && found == nil {
			found = &c
		}
	}
	if found == nil {
		var known []string
		if list, err := plugins.NewManager(r.pluginOptions(home)).List(); err == nil {
			for _, p := range list {
				for _, c := range p.Extras.CLICommands {
					known = append(known, c.Name)
				}
			}
		}
		msg := fmt.Sprintf("unknown command %q for \"atrium\" (see atrium --help)", name)
		if len(known) > 0 {
			msg += "; plugins add: " + strings.Join(known, ", ")
		}
		return ExitInvalid, usageError{fmt.Errorf("%s", msg)}
	}
	raw, err := st.Bus.CallCapability(context.Background(), found.Plugin, hooks.CapCLICommand, name, "run",
		map[string]any{"argv": nonNil(argv), "prog": "atrium " + name})
	if err != nil {
		return ExitInternal, apperr.Wrap(apperr.Internal, err, "plugin %s: atrium %s", found.Plugin, name)
	}
	var out struct {
		ExitCode int    `json:"exit_code"`
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return ExitInternal, fmt.Errorf("plugin %s: atrium %s: malformed answer: %w", found.Plugin, name, err)
	}
	fmt.Fprint(env.Stdout, out.Stdout)
	fmt.Fprint(env.Stderr, out.Stderr)
	return out.ExitCode, nil
}
