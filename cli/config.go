package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"atrium/backend/apperr"
	"atrium/backend/config"
	"atrium/backend/limits"
	"atrium/backend/plugins"
)

// configCmd is the familiar agent's `hermes config`: the profile's
// config.yaml shown, read a key at a time, set, unset and edited. Every
// change touches only its key's lines and must load before it is written.
func (r *runner) configCmd() *cobra.Command {
	show := func(cmd *cobra.Command, _ []string) error { return r.showConfig() }
	c := &cobra.Command{Use: "config", Short: "The profile's config.yaml and .env: show them, get, set or unset a key (dotted: storage.synchronous; a key's variable, as OPENAI_API_KEY, goes to .env), edit config.yaml", Args: noArgs, RunE: show}
	c.AddCommand(&cobra.Command{
		Use:   "show",
		Short: "Show where config.yaml is, what it says, and what in it Atrium does not know",
		Args:  noArgs,
		RunE:  show,
	}, r.printPath("path", "Print the path of config.yaml", r.configPath),
		r.printPath("env-path", "Print the path of the profile's .env (keys and tokens, read when an Atrium process starts)", r.envPath),
		&cobra.Command{
			Use:   "get KEY",
			Short: "Print the value config.yaml gives KEY (dotted: sessions.trash_days); for a variable of .env (OPENAI_API_KEY), where it is set, never its value",
			Args:  exactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				if name, ok := envKey(args[0]); ok {
					return r.getEnv(name)
				}
				path, keys, err := r.configKey(args[0])
				if err != nil {
					return err
				}
				v, found, err := plugins.ConfigValue(path, keys)
				if err != nil {
					return err
				}
				if !found {
					return apperr.New(apperr.NotFound, "%s is not set in %s (its default applies)", args[0], path)
				}
				return r.print(map[string]any{"key": args[0], "value": jsonable(v)}, func(w io.Writer) {
					fmt.Fprintln(w, yamlText(v))
				})
			},
		}, &cobra.Command{
			Use:   "set KEY VALUE",
			Short: "Set KEY (dotted) in config.yaml: true/yes/on and false/no/off are booleans, numbers are numbers, [a, b] a list, anything else text; a key's or token's variable (OPENAI_API_KEY, TELEGRAM_BOT_TOKEN, any *_API_KEY, *_TOKEN, *_SECRET) goes to the profile's .env, private to you",
			Args:  exactArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error {
				if name, ok := envKey(args[0]); ok {
					return r.setEnv(name, args[1])
				}
				path, keys, err := r.configKey(args[0])
				if err != nil {
					return err
				}
				v, err := configValue(args[1])
				if err != nil {
					return err
				}
				if _, isText := v.(string); !isText && config.KindOf(keys) == reflect.String {
					v = args[1] // a word where text is wanted: approvals.mode off
				}
				if name, isText := v.(string); isText && len(keys) == 1 && keys[0] == "model" {
					// `config set model NAME`, as the familiar agent's
					// users type it: the model's name, in a block kept as
					// it is (else the short form, model: NAME).
					keys, v = modelNameKey(path), name
				}
				if err := plugins.EditConfigPath(path, keys, v); err != nil {
					return fmt.Errorf("%s = %s: config.yaml is unchanged: %w", args[0], limits.Echo(args[1]), err)
				}
				return r.print(map[string]any{"key": args[0], "value": jsonable(v), "path": path}, func(w io.Writer) {
					fmt.Fprintf(w, "set %s = %s in %s\n", args[0], yamlInline(v), path)
				})
			},
		}, &cobra.Command{
			Use:   "unset KEY",
			Short: "Remove KEY (dotted) from config.yaml, with the comments right above it: its default applies again; a variable (OPENAI_API_KEY) from the profile's .env",
			Args:  exactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				if name, ok := envKey(args[0]); ok {
					return r.unsetEnv(name)
				}
				path, keys, err := r.configKey(args[0])
				if err != nil {
					return err
				}
				_, found, err := plugins.ConfigValue(path, keys)
				if err != nil {
					return err
				}
				if found {
					if err := plugins.EditConfigPath(path, keys, nil); err != nil {
						return err
					}
				}
				return r.print(map[string]any{"key": args[0], "removed": found, "path": path}, func(w io.Writer) {
					sayUnset(w, args[0], path, found)
				})
			},
		}, &cobra.Command{
			Use:   "edit",
			Short: "Edit config.yaml in $VISUAL or $EDITOR: a copy, written back only when it loads (and nobody changed the file meanwhile)",
			Args:  noArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				path, err := r.configPath()
				if err != nil {
					return err
				}
				return r.editConfig(path)
			},
		})
	return c
}

// modelNameKey is where config.yaml names the model: the key its model
// block uses for it (config.Model.NameKey), or the short form when the file
// has no block.
func modelNameKey(path string) []string {
	block, found, err := plugins.ConfigValue(path, []string{"model"})
	if _, isBlock := block.(yaml.MapSlice); err != nil || !found || !isBlock {
		return []string{"model"}
	}
	cfg, _, err := config.Load(path)
	if err != nil {
		return []string{"model", "name"} // the set is checked against the file when it is written
	}
	key, _ := cfg.Model.NameKey()
	return []string{"model", key}
}

// printPath is a command that prints the path path gives.
func (r *runner) printPath(use, short string, path func() (string, error)) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: noArgs, RunE: func(*cobra.Command, []string) error {
		p, err := path()
		if err != nil {
			return err
		}
		return r.print(map[string]any{"path": p}, func(w io.Writer) { fmt.Fprintln(w, p) })
	}}
}

func (r *runner) configPath() (string, error) {
	home, err := config.ResolveHome(r.g.home, r.g.profile)
	if err != nil {
		return "", err
	}
	return home.ConfigPath(), nil
}

// envName is what a secret's environment variable looks like.
var envName = regexp.MustCompile(`^[A-Z][A-Z0-9]*_[A-Z0-9_]*$`)

// configKey is the path of config.yaml and KEY's parts.
func (r *runner) configKey(key string) (string, []string, error) {
	path, err := r.configPath()
	if err != nil {
		return "", nil, err
	}
	keys := strings.Split(key, ".")
	for _, k := range keys {
		if k == "" || strings.TrimSpace(k) != k {
			return "", nil, apperr.New(apperr.Invalid, "%s is not a key: dotted names, as storage.synchronous", limits.Echo(key))
		}
	}
	return path, keys, nil
}

var (
	intText   = regexp.MustCompile(`^-?[0-9]+$`)
	floatText = regexp.MustCompile(`^-?([0-9]+\.[0-9]*|\.[0-9]+)$`)
)

// configValue reads VALUE as the familiar agent's `config set` does (true,
// yes, on; false, no, off; whole and decimal numbers; the rest text), and
// a flow list or mapping ([a, b], {k: v}) as YAML. A key Atrium keeps as
// text takes the word as written (the caller's config.KindOf).
func configValue(s string) (any, error) {
	switch strings.ToLower(s) {
	case "true", "yes", "on":
		return true, nil
	case "false", "no", "off":
		return false, nil
	}
	switch {
	case intText.MatchString(s):
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, nil
		}
	case floatText.MatchString(s):
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f, nil
		}
	case strings.HasPrefix(s, "[") || strings.HasPrefix(s, "{"):
		var v any
		if err := yaml.Unmarshal([]byte(s), &v); err != nil {
			return nil, apperr.New(apperr.Invalid, "%s is not a YAML list or mapping", limits.Echo(s))
		}
		return v, nil
	}
	return s, nil
}

// yamlText is v as config.yaml would say it: a scalar alone, a list or a
// mapping as its lines.
func yamlText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := yaml.MarshalWithOptions(v, yaml.IndentSequence(true))
	if err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(string(b), "\n")
}

// yamlInline is v on one line.
func yamlInline(v any) string {
	b, err := yaml.MarshalWithOptions(v, yaml.Flow(true))
	if err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(string(b), "\n")
}

// jsonable is a value of the config file as JSON can carry it (the YAML
// library's ordered mappings as objects).
func jsonable(v any) any {
	switch x := v.(type) {
	case yaml.MapSlice:
		out := make(map[string]any, len(x))
		for _, it := range x {
			out[fmt.Sprint(it.Key)] = jsonable(it.Value)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonable(e)
		}
		return out
	}
	return v
}

// showConfig prints where config.yaml is, its text, and Load's warnings
// (keys Atrium does not know, values it will not use).
func (r *runner) showConfig() error {
	path, err := r.configPath()
	if err != nil {
		return err
	}
	_, warnings, err := config.Load(path)
	if err != nil {
		return err
	}
	text, err := os.ReadFile(path)
	exists := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return apperr.Wrap(apperr.Internal, err, "read config %s", path)
	}
	var settings any
	_ = yaml.UnmarshalWithOptions(text, &settings, yaml.UseOrderedMap())
	if warnings == nil {
		warnings = []string{}
	}
	envFile, showEnv := r.envFileSummary()
	return r.print(map[string]any{"path": path, "exists": exists, "settings": jsonable(settings), "warnings": warnings, "env_file": envFile}, func(w io.Writer) {
		fmt.Fprintf(w, "# %s\n", path)
		switch {
		case !exists:
			fmt.Fprintln(w, "# (no file: every setting has its default)")
		case len(bytes.TrimSpace(text)) == 0:
			fmt.Fprintln(w, "# (empty: every setting has its default)")
		default:
			_, _ = w.Write(text)
			if !bytes.HasSuffix(text, []byte("\n")) {
				fmt.Fprintln(w)
			}
		}
		for _, m := range warnings {
			fmt.Fprintf(w, "# warning: %s\n", m)
		}
		showEnv(w)
	})
}

// editConfig opens a copy of config.yaml in the person's editor and
// writes it back when it loads. A copy that does not load is offered
// again at a terminal, and kept (its path said) otherwise; a file another
// process changed meanwhile is not overwritten.
func (r *runner) editConfig(path string) error {
	editor, err := findEditor()
	if err != nil {
		return apperr.New(apperr.Invalid, "%v (config.yaml is at %s)", err, path)
	}
	was, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return apperr.Wrap(apperr.Internal, err, "read config %s", path)
	}
	dir, err := os.MkdirTemp("", "atrium-config-*")
	if err != nil {
		return apperr.Wrap(apperr.Internal, err, "a copy to edit")
	}
	tmp := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(tmp, was, 0o600); err != nil {
		os.RemoveAll(dir)
		return apperr.Wrap(apperr.Internal, err, "a copy to edit")
	}
	keep := false
	defer func() {
		if !keep {
			os.RemoveAll(dir)
		}
	}()
	interactive := term.IsTerminal(int(os.Stdin.Fd()))
	in := bufio.NewReader(os.Stdin)
	for {
		// Through the shell, as git does: EDITOR may carry arguments
		// ("code --wait").
		ed := exec.Command("sh", "-c", editor+` "$1"`, "sh", tmp)
		ed.Stdin, ed.Stdout, ed.Stderr = os.Stdin, os.Stdout, os.Stderr
		if err := ed.Run(); err != nil {
			return apperr.New(apperr.Invalid, "the editor (%s) failed: %v; config.yaml is unchanged", editor, err)
		}
		text, err := os.ReadFile(tmp)
		if err != nil {
			return apperr.Wrap(apperr.Internal, err, "read the edited copy")
		}
		if bytes.Equal(text, was) {
			fmt.Fprintf(r.env.Stdout, "no change to %s\n", path)
			return nil
		}
		_, warnings, perr := config.Parse(text, path)
		if perr == nil {
			if err := plugins.ReplaceConfig(path, was, text); err != nil {
				if apperr.CodeOf(err) == apperr.Conflict {
					keep = true
					return apperr.New(apperr.Conflict, "%s changed while you edited it (another process wrote it); nothing was written, your edit is at %s", path, tmp)
				}
				return err
			}
			fmt.Fprintf(r.env.Stdout, "saved %s\n", path)
			for _, m := range warnings {
				fmt.Fprintf(r.env.Stderr, "warning: %s\n", m)
			}
			return nil
		}
		fmt.Fprintf(r.env.Stderr, "the edit does not load: %v\n", perr)
		if !interactive {
			keep = true
			return apperr.New(apperr.Invalid, "config.yaml is unchanged; your edit is at %s", tmp)
		}
		fmt.Fprint(r.env.Stderr, "Edit again? [Y/n] ")
		answer, rerr := in.ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a == "n" || a == "no" || rerr != nil {
			keep = true
			return apperr.New(apperr.Invalid, "config.yaml is unchanged; your edit is at %s", tmp)
		}
	}
}

// findEditor is $VISUAL, $EDITOR, or the first of nano, vim and vi found.
func findEditor() (string, error) {
	for _, v := range []string{"VISUAL", "EDITOR"} {
		if e := strings.TrimSpace(os.Getenv(v)); e != "" {
			return e, nil
		}
	}
	for _, e := range []string{"nano", "vim", "vi"} {
		if p, err := exec.LookPath(e); err == nil {
			return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'", nil
		}
	}
	return "", errors.New("no editor: set VISUAL or EDITOR")
}
