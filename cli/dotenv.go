package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"atrium/backend/apperr"
	"atrium/backend/config"
	"atrium/backend/dotenv"
	"atrium/backend/limits"
)

// loadDotenv gives this process the variables of the profile's .env that
// its environment does not have (the environment goes first), before the
// command runs: the model's key, a bot's token, a plugin's requires_env.
// Plugin processes and hooks get them as they get the environment. What
// the file says wrong is a warning; the command goes on.
func (r *runner) loadDotenv() {
	home, err := config.ResolveHome(r.g.home, r.g.profile)
	if err != nil {
		return // the command says so
	}
	rep, err := dotenv.Load(home.EnvPath(), nil, nil)
	if err != nil {
		fmt.Fprintf(r.env.Stderr, "atrium: warning: %s is not read: %s\n", home.EnvPath(), oneLine(err))
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(r.env.Stderr, "atrium: warning: %s\n", w)
	}
}

// envKey is the variable KEY names when `config set KEY` goes to .env, as
// the familiar agent decides it (config.SecretVariable; written
// upper-case), and, since no setting of Atrium's is written so, any
// upper-case variable name.
func envKey(key string) (string, bool) {
	if strings.Contains(key, ".") || !dotenv.ValidName(key) {
		return "", false
	}
	if config.SecretVariable(key) || envName.MatchString(key) {
		return strings.ToUpper(key), true
	}
	return "", false
}

func (r *runner) envPath() (string, error) {
	home, err := config.ResolveHome(r.g.home, r.g.profile)
	if err != nil {
		return "", err
	}
	return home.EnvPath(), nil
}

// setEnv writes NAME=value to the profile's .env. The value is a secret:
// it is never printed.
func (r *runner) setEnv(name, value string) error {
	home, err := config.ResolveHome(r.g.home, r.g.profile)
	if err != nil {
		return err
	}
	if err := home.SetSecret(name, value); err != nil {
		return err
	}
	shadowed := false
	if dotenv.Exported(name) {
		v, _ := os.LookupEnv(name)
		shadowed = v != value
	}
	path := home.EnvPath()
	return r.print(map[string]any{"key": name, "path": path, "environment_goes_first": shadowed}, func(w io.Writer) {
		fmt.Fprintf(w, "set %s in %s\n", name, path)
		if shadowed {
			fmt.Fprintf(w, "note: %s is also set, to another value, in the environment Atrium runs in, which goes first: unset it there for this one to be used\n", name)
		}
		fmt.Fprintln(w, "a running window, `atrium serve` or `atrium gateway run` uses it from its next turn; plugins get it when they start again (Reload, or `atrium plugins host stop`)")
	})
}

// unsetEnv removes NAME from the profile's .env.
func (r *runner) unsetEnv(name string) error {
	home, err := config.ResolveHome(r.g.home, r.g.profile)
	if err != nil {
		return err
	}
	removed, err := home.UnsetSecret(name)
	if err != nil {
		return err
	}
	inEnv, path := dotenv.Exported(name), home.EnvPath()
	return r.print(map[string]any{"key": name, "removed": removed, "path": path, "in_environment": inEnv}, func(w io.Writer) {
		sayUnset(w, name, path, removed)
		if inEnv {
			fmt.Fprintf(w, "note: %s is still set in the environment Atrium runs in\n", name)
		}
	})
}

// sayUnset says what `config unset KEY` did to the file at path.
func sayUnset(w io.Writer, key, path string, removed bool) {
	if removed {
		fmt.Fprintf(w, "unset %s in %s\n", key, path)
	} else {
		fmt.Fprintf(w, "%s was not set in %s\n", key, path)
	}
}

// getEnv says where NAME is set, never its value.
func (r *runner) getEnv(name string) error {
	home, err := config.ResolveHome(r.g.home, r.g.profile)
	if err != nil {
		return err
	}
	path := home.EnvPath()
	inFile, inEnv, err := home.SecretIn(name)
	if err != nil {
		return apperr.Wrap(apperr.Invalid, err, "read %s", path)
	}
	if !inFile && !inEnv {
		return apperr.New(apperr.NotFound, "%s is set neither in %s nor in the environment", limits.Echo(name), path)
	}
	source := "env_file"
	if inEnv {
		source = "environment"
	}
	return r.print(map[string]any{"key": name, "set": true, "source": source, "in_env_file": inFile, "path": path}, func(w io.Writer) {
		switch {
		case inEnv && inFile:
			fmt.Fprintf(w, "%s is set in the environment, which goes first, and in %s (the value is not shown)\n", name, path)
		case inEnv:
			fmt.Fprintf(w, "%s is set in the environment (the value is not shown)\n", name)
		default:
			fmt.Fprintf(w, "%s is set in %s (the value is not shown)\n", name, path)
		}
	})
}

// envFileSummary is what `config show` says of the .env: its names (never
// values), which of them the environment overrides, and its problems.
func (r *runner) envFileSummary() (map[string]any, func(w io.Writer)) {
	path, err := r.envPath()
	if err != nil {
		return nil, func(io.Writer) {}
	}
	text, exists, warnings, rerr := dotenv.Read(path)
	if rerr != nil {
		warnings = append(warnings, fmt.Sprintf("%s is not read: %s", path, oneLine(rerr)))
	}
	warnings = append(warnings, dotenv.Problems(path, dotenv.Parse(text))...)
	names := dotenv.Names(text)
	var shadowed []string
	for _, n := range names {
		if dotenv.Exported(n) {
			shadowed = append(shadowed, n)
		}
	}
	out := map[string]any{"path": path, "exists": exists, "names": nonNil(names), "environment_goes_first": nonNil(shadowed), "warnings": nonNil(warnings)}
	return out, func(w io.Writer) {
		switch {
		case !exists:
			fmt.Fprintf(w, "# %s: none (`atrium config set OPENAI_API_KEY ...` writes one)\n", path)
		case len(names) == 0:
			fmt.Fprintf(w, "# %s: sets nothing\n", path)
		default:
			fmt.Fprintf(w, "# %s sets (values not shown): %s\n", path, strings.Join(names, ", "))
		}
		if len(shadowed) > 0 {
			fmt.Fprintf(w, "# the environment goes first for: %s\n", strings.Join(shadowed, ", "))
		}
		for _, m := range warnings {
			fmt.Fprintf(w, "# warning: %s\n", m)
		}
	}
}
