package cli

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"golang.org/x/term"

	"atrium/backend/config"
	"atrium/backend/dotenv"
	"atrium/backend/plugins"
)

// missingEnv is what p's manifest requires (requires_env) that this
// process's environment, the profile's .env included, does not have.
func missingEnv(p plugins.Plugin) []plugins.EnvVar {
	var out []plugins.EnvVar
	for _, e := range p.Manifest.RequiresEnv {
		if v, ok := os.LookupEnv(e.Name); !ok || strings.TrimSpace(v) == "" {
			out = append(out, e)
		}
	}
	return out
}

// askForEnv is the familiar agent's prompt after `plugins install`: at a
// terminal, each variable p requires and nobody set is asked for (what it
// is and where to get it, if the manifest says), the answer saved to the
// profile's .env, typed unseen for a secret; Enter skips one. Elsewhere,
// or for what was skipped, one line says how to set it. It returns what is
// still missing.
func (r *runner) askForEnv(p plugins.Plugin) []string {
	missing := missingEnv(p)
	if len(missing) == 0 {
		return nil
	}
	path, err := r.envPath()
	if err != nil {
		return names(missing)
	}
	var left []string
	interactive := !r.g.json && term.IsTerminal(int(os.Stdin.Fd()))
	in := bufio.NewReader(os.Stdin)
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
		err := dotenv.Update(path, func(text string) (string, error) { return dotenv.Set(text, e.Name, value) })
		if err != nil {
			fmt.Fprintf(r.env.Stderr, "%s was not saved: %s\n", e.Name, oneLine(err))
			left = append(left, e.Name)
			continue
		}
		_ = os.Setenv(e.Name, value) // this process has it too, as .env's
		fmt.Fprintf(r.env.Stderr, "saved %s in %s\n", e.Name, path)
	}
	for _, n := range left {
		fmt.Fprintf(r.env.Stderr, "atrium: note: plugin %s requires %s, which is not set: `atrium config set %s VALUE` keeps it in %s\n", p.Manifest.Name, n, n, path)
	}
	return left
}

func names(vs []plugins.EnvVar) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Name
	}
	return out
}
