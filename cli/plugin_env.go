package cli

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"

	"golang.org/x/term"

	"atrium/backend/config"
	"atrium/backend/plugins"
)

// askForEnv is the familiar agent's prompt after `plugins install`: at a
// terminal, each variable p requires and nobody set is asked for (what it
// is and where to get it, if the manifest says), the answer saved to the
// profile's .env, typed unseen for a secret; Enter skips one. Elsewhere,
// or for what was skipped, one line says how to set it. A variable that
// changes how programs start (config.ProgramVariable) is never asked for,
// whatever the manifest says. It returns what is still missing.
func (r *runner) askForEnv(p plugins.Plugin) []string {
	missing := p.Manifest.MissingEnv()
	if len(missing) == 0 {
		return nil
	}
	home, err := config.ResolveHome(r.g.home, r.g.profile)
	if err != nil {
		return names(missing)
	}
	path := home.EnvPath()
	var left []string
	interactive := !r.g.json && term.IsTerminal(int(os.Stdin.Fd()))
	in := bufio.NewReader(os.Stdin)
	// A manifest cannot have a person type code every program would run
	// (LD_PRELOAD, PATH, PYTHONPATH, ...).
	var refused []string
	missing = slices.DeleteFunc(missing, func(e plugins.EnvVar) bool {
		if config.ProgramVariable(e.Name) {
			refused = append(refused, e.Name)
			return true
		}
		return false
	})
	for _, n := range refused {
		fmt.Fprintf(r.env.Stderr, "atrium: note: plugin %s requires %s, which changes how every program starts: Atrium does not ask for it; set it yourself only if you mean it\n", p.Manifest.Name, n)
	}
	for i, e := range missing {
		if !interactive {
			left = append(left, e.Name)
			continue
		}
		fmt.Fprintf(r.env.Stderr, "%s needs %s", p.Manifest.Name, e.Name)
		if e.Description != "" {
			fmt.Fprintf(r.env.Stderr, ": %s", e.Description)
		}
		if e.URL != "" {
			fmt.Fprintf(r.env.Stderr, " (%s)", e.URL)
		}
		fmt.Fprintf(r.env.Stderr, "\n%s (Enter skips): ", e.Name)
		var value string
		var rerr error
		if e.Secret || config.SecretVariable(e.Name) {
			var b []byte
			b, rerr = term.ReadPassword(int(os.Stdin.Fd()))
			value = string(b)
			fmt.Fprintln(r.env.Stderr)
		} else {
			value, rerr = in.ReadString('\n')
			value = strings.TrimRight(value, "\r\n")
		}
		value = strings.TrimSpace(value)
		if rerr != nil && value == "" {
			// End of input: the rest are skipped.
			for _, rest := range missing[i:] {
				left = append(left, rest.Name)
			}
			break
		}
		if value == "" {
			left = append(left, e.Name)
			continue
		}
		if err := home.SetSecret(e.Name, value); err != nil {
			fmt.Fprintf(r.env.Stderr, "%s was not saved: %s\n", e.Name, oneLine(err))
			left = append(left, e.Name)
			continue
		}
		fmt.Fprintf(r.env.Stderr, "saved %s in %s\n", e.Name, path)
	}
	for _, n := range left {
		fmt.Fprintf(r.env.Stderr, "atrium: note: plugin %s requires %s, which is not set: `atrium config set %s VALUE` keeps it in %s\n", p.Manifest.Name, n, n, path)
	}
	return append(refused, left...)
}

func names(vs []plugins.EnvVar) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Name
	}
	return out
}
