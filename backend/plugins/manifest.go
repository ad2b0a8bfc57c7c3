// Package plugins discovers Atrium's plugins (bundled, user and project),
// validates their plugin.yaml, decides which are enabled, builds the
// proc.Spec an out-of-process plugin runs with, and manages them (enable,
// disable, install, remove). It starts nothing itself: the process host
// (package proc) and the in-process registrations do.
package plugins

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"

	"atrium/backend/apperr"
	"atrium/backend/hooks"
)

// ManifestFile is the name of a plugin's manifest inside its folder.
const ManifestFile = "plugin.yaml"

// Runtimes.
const (
	RuntimeGo      = "go"      // bundled, in-process
	RuntimePython  = "python"  // the Python runner loads the folder
	RuntimeCommand = "command" // any program speaking the protocol
)

// Sources, in precedence order (a later one wins on the same name).
const (
	SourceBundled = "bundled"
	SourceUser    = "user"
	SourceProject = "project"
)

// States.
const (
	StateStopped = "stopped"
	StateRunning = "running"
	// StateStarting: its process is starting (registered from its last
	// handshake, events wait for it).
	StateStarting = "starting"
	// StateRestarting: its process exited and a restart is scheduled.
	StateRestarting = "restarting"
	StateError      = "error"
	StateDisabled   = "disabled"
)

// Setting types of a config_schema.
const (
	TypeString = "string"
	TypeInt    = "int"
	TypeFloat  = "float"
	TypeBool   = "bool"
	TypeList   = "list"
)

// Manifest is a plugin's plugin.yaml.
type Manifest struct {
	Name             string             `yaml:"name" json:"name"`
	Runtime          string             `yaml:"runtime" json:"runtime"`
	Command          []string           `yaml:"command" json:"command,omitempty"`
	Version          string             `yaml:"version" json:"version,omitempty"`
	Description      string             `yaml:"description" json:"description,omitempty"`
	Author           string             `yaml:"author" json:"author,omitempty"`
	RequiresAtrium   string             `yaml:"requires_atrium" json:"requires_atrium,omitempty"`
	RequiresEnv      []string           `yaml:"requires_env" json:"requires_env,omitempty"`
	ConfigSchema     map[string]Setting `yaml:"config_schema" json:"config_schema,omitempty"`
	EnabledByDefault *bool              `yaml:"enabled_by_default" json:"enabled_by_default,omitempty"`
	Hooks            []string           `yaml:"hooks" json:"hooks,omitempty"`
	Commands         []string           `yaml:"commands" json:"commands,omitempty"`
}

// Setting is one typed entry of a config_schema.
type Setting struct {
	Type        string `yaml:"type" json:"type"`
	Default     any    `yaml:"default" json:"default,omitempty"`
	Required    bool   `yaml:"required" json:"required,omitempty"`
	Description string `yaml:"description" json:"description,omitempty"`
}

var (
	manifestKeys = []string{"name", "runtime", "command", "version", "description", "author", "requires_atrium",
		"requires_env", "config_schema", "enabled_by_default", "hooks", "commands"}
	settingKeys = []string{"type", "default", "required", "description"}
	nameRe      = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	envRe       = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// reservedEnv are set by Atrium itself; a manifest cannot ask for them.
	reservedEnv = []string{"PATH", "HOME", "LANG", "TZ", "ATRIUM_PLUGIN_NAME", "ATRIUM_PLUGIN_DIR", "ATRIUM_HOME"}
)

// ValidName reports whether s is a valid plugin name: lower-case letters,
// digits, '-' and '_', starting with a letter or digit, at most 64 long.
func ValidName(s string) bool { return nameRe.MatchString(s) }

// ParseManifest decodes and validates a plugin.yaml; file names it in
// errors ("file:line:col: message" for YAML errors). Unknown fields are
// warnings, never errors. On error the manifest holds whatever decoded.
func ParseManifest(data []byte, file string) (Manifest, []string, error) {
	var m Manifest
	if err := yaml.Unmarshal(data, &m); err != nil {
		return m, nil, apperr.New(apperr.Invalid, "%s:%s", file, describe(err))
	}
	warnings := unknownFields(data, file)
	w, err := m.Validate()
	warnings = append(warnings, w...)
	if err != nil {
		return m, warnings, apperr.Wrap(apperr.Invalid, err, "%s", file)
	}
	return m, warnings, nil
}

// unknownFields lists top-level and config_schema keys the manifest does not know.
func unknownFields(data []byte, file string) []string {
	var raw map[string]any
	if yaml.Unmarshal(data, &raw) != nil {
		return nil
	}
	var out []string
	for _, k := range sortedKeys(raw) {
		if !contains(manifestKeys, k) {
			out = append(out, fmt.Sprintf("%s: unknown field %q (ignored)", file, k))
		}
	}
	schema, _ := raw["config_schema"].(map[string]any)
	for _, name := range sortedKeys(schema) {
		s, _ := schema[name].(map[string]any)
		for _, k := range sortedKeys(s) {
			if !contains(settingKeys, k) {
				out = append(out, fmt.Sprintf("%s: config_schema.%s: unknown field %q (ignored)", file, name, k))
			}
		}
	}
	return out
}

// Validate checks the manifest's values; it returns warnings for things
// that are odd but harmless.
func (m *Manifest) Validate() ([]string, error) {
	var warnings []string
	switch {
	case m.Name == "":
		return nil, fmt.Errorf("name is required")
	case !ValidName(m.Name):
		return nil, fmt.Errorf("invalid name %q: use lower-case letters, digits, '-' and '_' (at most 64)", m.Name)
	}
	switch m.Runtime {
	case "":
		return nil, fmt.Errorf("runtime is required (go, python or command)")
	case RuntimeGo, RuntimePython:
		if len(m.Command) > 0 {
			warnings = append(warnings, fmt.Sprintf("command is only used by runtime command (ignored for runtime %s)", m.Runtime))
		}
	case RuntimeCommand:
		if len(m.Command) == 0 || strings.TrimSpace(m.Command[0]) == "" {
			return nil, fmt.Errorf("runtime command needs command: [program, args...]")
		}
	default:
		return nil, fmt.Errorf("unknown runtime %q (go, python or command)", m.Runtime)
	}
	if _, err := ParseRange(m.RequiresAtrium); err != nil {
		return nil, fmt.Errorf("requires_atrium: %w", err)
	}
	for _, e := range m.RequiresEnv {
		if !envRe.MatchString(e) {
			return nil, fmt.Errorf("requires_env: invalid variable name %q", e)
		}
		if contains(reservedEnv, e) {
			warnings = append(warnings, fmt.Sprintf("requires_env: %s is set by Atrium (ignored)", e))
		}
	}
	for _, h := range m.Hooks {
		if _, err := hooks.Lookup(h); err != nil {
			return nil, fmt.Errorf("hooks: %w", err)
		}
	}
	for _, c := range m.Commands {
		c = strings.TrimPrefix(c, "/")
		if c == "" || strings.ContainsAny(c, " \t\n/") {
			return nil, fmt.Errorf("commands: invalid command name %q", c)
		}
	}
	for _, name := range sortedKeys(m.ConfigSchema) {
		s := m.ConfigSchema[name]
		switch s.Type {
		case TypeString, TypeInt, TypeFloat, TypeBool, TypeList:
		case "":
			return nil, fmt.Errorf("config_schema.%s: type is required (string, int, float, bool or list)", name)
		default:
			return nil, fmt.Errorf("config_schema.%s: unknown type %q (string, int, float, bool or list)", name, s.Type)
		}
		if s.Default != nil {
			v, err := coerce(s.Type, s.Default)
			if err != nil {
				return nil, fmt.Errorf("config_schema.%s: default: %w", name, err)
			}
			s.Default = v
			m.ConfigSchema[name] = s
		}
	}
	return warnings, nil
}

// Settings validates a plugin's entry in config.yaml (plugins.entries.<name>,
// whose settings key holds the values) against the schema and fills in the
// defaults. Settings the schema does not know are warnings.
func (m Manifest) Settings(entry any) (map[string]any, []string, error) {
	var warnings []string
	var given map[string]any
	if entry != nil {
		e, ok := entry.(map[string]any)
		if !ok {
			return nil, nil, apperr.New(apperr.Invalid, "plugins.entries.%s must be a mapping", m.Name)
		}
		for _, k := range sortedKeys(e) {
			if k != "settings" {
				warnings = append(warnings, fmt.Sprintf("plugins.entries.%s: unknown key %q (ignored)", m.Name, k))
			}
		}
		if s, present := e["settings"]; present && s != nil {
			if given, ok = s.(map[string]any); !ok {
				return nil, nil, apperr.New(apperr.Invalid, "plugins.entries.%s.settings must be a mapping", m.Name)
			}
		}
	}
	out := map[string]any{}
	for _, k := range sortedKeys(given) {
		if _, ok := m.ConfigSchema[k]; !ok {
			warnings = append(warnings, fmt.Sprintf("plugins.entries.%s.settings: unknown setting %q (ignored)", m.Name, k))
		}
	}
	for _, name := range sortedKeys(m.ConfigSchema) {
		s := m.ConfigSchema[name]
		v, present := given[name]
		if !present || v == nil {
			if s.Required {
				return nil, warnings, apperr.New(apperr.Invalid, "plugins.entries.%s.settings.%s is required (%s)", m.Name, name, s.Type)
			}
			if s.Default != nil {
				out[name] = s.Default
			}
			continue
		}
		cv, err := coerce(s.Type, v)
		if err != nil {
			return nil, warnings, apperr.Wrap(apperr.Invalid, err, "plugins.entries.%s.settings.%s", m.Name, name)
		}
		out[name] = cv
	}
	return out, warnings, nil
}

// coerce checks v against a setting type and normalises it (int, float64,
// string, bool, []any).
func coerce(typ string, v any) (any, error) {
	switch typ {
	case TypeString:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case TypeBool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case TypeInt:
		switch n := v.(type) {
		case int:
			return n, nil
		case int64:
			return int(n), nil
		case uint64:
			return int(n), nil
		case float64:
			if n == float64(int(n)) {
				return int(n), nil
			}
		}
	case TypeFloat:
		switch n := v.(type) {
		case int:
			return float64(n), nil
		case int64:
			return float64(n), nil
		case uint64:
			return float64(n), nil
		case float64:
			return n, nil
		}
	case TypeList:
		if l, ok := v.([]any); ok {
			return l, nil
		}
	}
	return nil, fmt.Errorf("want %s, got %s", typ, kindOf(v))
}

func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "string " + fmt.Sprintf("%q", v)
	case bool:
		return "bool"
	case int, int64, uint64:
		return "int"
	case float64:
		return "float"
	case []any:
		return "list"
	case map[string]any:
		return "mapping"
	}
	return fmt.Sprintf("%T", v)
}

// describe renders a YAML error as "LINE:COL: message" on one line.
func describe(err error) string {
	msg := yaml.FormatError(err, false, false)
	first, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
	if strings.HasPrefix(first, "[") {
		if pos, rest, ok := strings.Cut(first[1:], "]"); ok {
			return pos + ":" + rest
		}
	}
	return " " + first
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
