// Package plugins discovers Atrium's plugins (bundled, user and project),
// validates their plugin.yaml, decides which are enabled, builds the
// proc.Spec an out-of-process plugin runs with, and manages them (enable,
// disable, install, remove). It starts nothing itself: the process host
// (package proc) and the in-process registrations do.
package plugins

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"

	"atrium/backend/apperr"
	"atrium/backend/hooks"
)

// ManifestFile is the name of a plugin's manifest inside its folder;
// ManifestFileAlt is accepted too.
const (
	ManifestFile    = "plugin.yaml"
	ManifestFileAlt = "plugin.yml"
	// PythonPackageFile marks a folder as a Python plugin when its manifest
	// has no runtime line, as in the familiar Python plugin API.
	PythonPackageFile = "__init__.py"
)

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

// Setting types of a config_schema (each also has an alias: str, integer,
// number, boolean, array, object).
const (
	TypeString = "string"
	TypeInt    = "int"
	TypeFloat  = "float"
	TypeBool   = "bool"
	TypeList   = "list"
	TypeDict   = "dict"
)

// Plugin kinds: standalone (the default), backend, exclusive (one active
// provider per category, e.g. a memory provider chosen by memory.provider),
// platform (a gateway adapter), model-provider.
const (
	KindStandalone    = "standalone"
	KindBackend       = "backend"
	KindExclusive     = "exclusive"
	KindPlatform      = "platform"
	KindModelProvider = "model-provider"
)

// SupportedManifestVersion is the newest manifest_version this Atrium reads;
// a newer one loads with a warning.
const SupportedManifestVersion = 2

// Manifest is a plugin's plugin.yaml: Atrium's own fields (runtime, command,
// commands, enabled_by_default, requires_atrium) and every field of the
// familiar Python plugin API's manifest. Fields of the wrong shape are
// warnings and are ignored; only what Atrium cannot run without is an error.
type Manifest struct {
	Name             string             `json:"name"`
	Runtime          string             `json:"runtime"` // "" in the file: python when the folder is a Python package
	Command          []string           `json:"command,omitempty"`
	Version          string             `json:"version,omitempty"`
	Description      string             `json:"description,omitempty"`
	Author           string             `json:"author,omitempty"` // a mapping is shown as "name, email, url"
	AuthorInfo       map[string]string  `json:"author_info,omitempty"`
	Kind             string             `json:"kind"`
	Label            string             `json:"label,omitempty"`
	License          string             `json:"license,omitempty"`
	Homepage         string             `json:"homepage,omitempty"`
	Tags             []string           `json:"tags,omitempty"`
	RequiresAtrium   string             `json:"requires_atrium,omitempty"`
	RequiresHermes   string             `json:"requires_hermes,omitempty"`
	RequiresEnv      []EnvVar           `json:"requires_env,omitempty"`
	OptionalEnv      []EnvVar           `json:"optional_env,omitempty"`
	RequiresPlugins  []Dependency       `json:"requires_plugins,omitempty"`
	ProvidesTools    []string           `json:"provides_tools,omitempty"`
	ProvidesHooks    []string           `json:"provides_hooks,omitempty"`
	Hooks            []string           `json:"hooks,omitempty"`
	Commands         []string           `json:"commands,omitempty"`
	Platforms        []string           `json:"platforms,omitempty"`
	ExternalDeps     []string           `json:"external_dependencies,omitempty"`
	PipDeps          []string           `json:"pip_dependencies,omitempty"`
	PythonDeps       []string           `json:"python_dependencies,omitempty"`
	ManifestVersion  int                `json:"manifest_version"`
	APIVersion       *int               `json:"api_version,omitempty"`
	ConfigSchema     map[string]Setting `json:"config_schema,omitempty"`
	EnabledByDefault *bool              `json:"enabled_by_default,omitempty"`
	// Reserved by the familiar API (capabilities, emits, listens, depends):
	// kept as written, unused.
	Reserved map[string]any `json:"reserved,omitempty"`
}

// EnvVar is one entry of requires_env or optional_env: a bare name, or a
// mapping {name, description, url, secret}.
type EnvVar struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	URL         string `json:"url,omitempty"`
	Secret      bool   `json:"secret,omitempty"`
}

// MissingEnv is what m requires (requires_env) that this process's
// environment, the profile's .env included once read, does not have or has
// blank: the plugin goes without it until it is set.
func (m Manifest) MissingEnv() []EnvVar {
	var out []EnvVar
	for _, e := range m.RequiresEnv {
		if v, ok := os.LookupEnv(e.Name); !ok || strings.TrimSpace(v) == "" {
			out = append(out, e)
		}
	}
	return out
}

// Dependency is one entry of requires_plugins: a plugin id, or a mapping
// {id, version_range}.
type Dependency struct {
	ID           string `json:"id"`
	VersionRange string `json:"version_range,omitempty"`
}

// Setting is one entry of a config_schema. Type is canonical ("string",
// "int", ...) or "" when the schema gives none or one Atrium does not know
// (no type check then).
type Setting struct {
	Type        string `json:"type"`
	Default     any    `json:"default,omitempty"`
	Required    bool   `json:"required,omitempty"`
	Description string `json:"description,omitempty"`
}

var (
	// manifestKeys are the fields Atrium reads; anything else is a warning.
	manifestKeys = []string{
		"name", "runtime", "command", "version", "description", "author", "kind", "label", "license", "homepage",
		"tags", "requires_atrium", "requires_hermes", "requires_env", "optional_env", "requires_plugins",
		"provides_tools", "provides_hooks", "provides_browser_providers", "provides_web_providers", "hooks",
		"commands", "platforms", "external_dependencies", "pip_dependencies", "python_dependencies",
		"manifest_version", "api_version", "config_schema", "enabled_by_default",
		"capabilities", "emits", "listens", "depends", "hermes",
	}
	reservedKeys = []string{"capabilities", "emits", "listens", "depends", "hermes"}
	settingKeys  = []string{"type", "default", "required", "description", "secret", "choices", "env_var", "url"}
	kinds        = []string{KindStandalone, KindBackend, KindExclusive, KindPlatform, KindModelProvider}
	typeAliases  = map[string]string{
		"str": TypeString, "string": TypeString, "int": TypeInt, "integer": TypeInt, "float": TypeFloat,
		"number": TypeFloat, "bool": TypeBool, "boolean": TypeBool, "list": TypeList, "array": TypeList,
		"dict": TypeDict, "object": TypeDict,
	}
	nameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	envRe  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// reservedEnv are set by Atrium itself; a manifest cannot ask for them.
	reservedEnv = []string{"PATH", "HOME", "LANG", "TZ", "ATRIUM_PLUGIN_NAME", "ATRIUM_PLUGIN_DIR", "ATRIUM_HOME",
		"HERMES_HOME", "HERMES_SESSION_KEY"}
)

// ValidName reports whether s is a valid plugin name: lower-case letters,
// digits, '-' and '_', starting with a letter or digit, at most 64 long.
func ValidName(s string) bool { return nameRe.MatchString(s) }

// ValidKey reports whether s names a plugin: a valid name, or
// "category/name" for a plugin found one level down in a category folder.
func ValidKey(s string) bool {
	cat, name, ok := strings.Cut(s, "/")
	if !ok {
		return ValidName(s)
	}
	return ValidName(cat) && ValidName(name)
}

// ParseManifest decodes and validates a plugin.yaml; file names it in
// errors ("file:line:col: message" for YAML errors). Unknown fields, fields
// of the wrong shape and unknown hook names are warnings, never errors. On
// error the manifest holds whatever decoded. A missing runtime is left ""
// (see ResolveRuntime: the folder decides).
func ParseManifest(data []byte, file string) (Manifest, []string, error) {
	var raw map[string]any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return Manifest{}, nil, apperr.New(apperr.Invalid, "%s:%s", file, describe(err))
	}
	m, warnings := decodeManifest(raw)
	for i := range warnings {
		warnings[i] = file + ": " + warnings[i]
	}
	w, err := m.Validate()
	for _, x := range w {
		warnings = append(warnings, file+": "+x)
	}
	if err != nil {
		return m, warnings, apperr.Wrap(apperr.Invalid, err, "%s", file)
	}
	return m, dedupe(warnings), nil
}

// ResolveRuntime fills in a missing runtime: a folder that is a Python
// package (it has __init__.py) is a Python plugin, as in the familiar
// Python plugin API, whose manifests have no runtime line.
func (m *Manifest) ResolveRuntime(hasPythonPackage bool) error {
	if m.Runtime != "" {
		return nil
	}
	if hasPythonPackage {
		m.Runtime = RuntimePython
		return nil
	}
	return apperr.New(apperr.Invalid, "runtime is required (go, python or command) unless the folder is a Python package with %s", PythonPackageFile)
}

// Validate checks the manifest's values; it returns warnings for things
// that are odd but harmless. Only what makes the plugin impossible to run is
// an error: no name, an unknown runtime, a command runtime without a
// command, a version range that does not parse.
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
	if _, err := ParseRange(m.RequiresHermes); err != nil {
		return nil, fmt.Errorf("requires_hermes: %w", err)
	}
	if m.Kind == "" {
		m.Kind = KindStandalone
	} else if !contains(kinds, m.Kind) {
		warnings = append(warnings, fmt.Sprintf("unknown kind %q (one of %s); treated as standalone", m.Kind, strings.Join(kinds, ", ")))
		m.Kind = KindStandalone
	}
	if m.ManifestVersion > SupportedManifestVersion {
		warnings = append(warnings, fmt.Sprintf("manifest_version %d is newer than this Atrium reads (%d); loading anyway", m.ManifestVersion, SupportedManifestVersion))
	}
	for _, list := range [][]EnvVar{m.RequiresEnv, m.OptionalEnv} {
		for _, e := range list {
			if contains(reservedEnv, e.Name) {
				warnings = append(warnings, fmt.Sprintf("requires_env: %s is set by Atrium (ignored)", e.Name))
			}
		}
	}
	for _, field := range []struct {
		name string
		list []string
	}{{"hooks", m.Hooks}, {"provides_hooks", m.ProvidesHooks}} {
		for _, h := range field.list {
			if !hooks.Known(h) {
				warnings = append(warnings, fmt.Sprintf("%s: unknown hook %q (ignored; Atrium knows %s)", field.name, h, strings.Join(hooks.Names(), ", ")))
			}
		}
	}
	cmds := m.Commands[:0:0]
	for _, c := range m.Commands {
		c = strings.TrimPrefix(c, "/")
		if c == "" || strings.ContainsAny(c, " \t\n/") {
			warnings = append(warnings, fmt.Sprintf("commands: invalid command name %q (ignored)", c))
			continue
		}
		cmds = append(cmds, c)
	}
	m.Commands = cmds
	for _, name := range sortedKeys(m.ConfigSchema) {
		s := m.ConfigSchema[name]
		if s.Default != nil && s.Type != "" {
			if v, err := coerce(s.Type, s.Default); err != nil {
				warnings = append(warnings, fmt.Sprintf("config_schema.%s: default: %v", name, err))
			} else {
				s.Default = v
				m.ConfigSchema[name] = s
			}
		}
	}
	return warnings, nil
}

// Settings validates a plugin's entry in config.yaml (plugins.entries.<id>:
// its settings, or config in older files, and the per-plugin gates) against
// the schema and fills in the defaults. As in the familiar plugin API, a
// mismatch never stops a plugin: a value of the wrong type is a warning and
// is passed on as written, a missing required setting is a warning. Only an
// entry that is not a mapping at all is an error.
func (m Manifest) Settings(entry any) (map[string]any, []string, error) {
	var warnings []string
	var given map[string]any
	if entry != nil {
		e, ok := entry.(map[string]any)
		if !ok {
			return nil, nil, apperr.New(apperr.Invalid, "plugins.entries.%s must be a mapping", m.Name)
		}
		for _, k := range sortedKeys(e) {
			if !contains(entryKeys, k) {
				warnings = append(warnings, fmt.Sprintf("plugins.entries.%s: unknown key %q (ignored)", m.Name, k))
			}
		}
		for _, key := range []string{"config", "settings"} { // settings wins over the older config
			s, present := e[key]
			if !present || s == nil {
				continue
			}
			sm, ok := s.(map[string]any)
			if !ok {
				return nil, nil, apperr.New(apperr.Invalid, "plugins.entries.%s.%s must be a mapping", m.Name, key)
			}
			if given == nil {
				given = map[string]any{}
			}
			for k, v := range sm {
				given[k] = v
			}
		}
	}
	out := map[string]any{}
	for _, k := range sortedKeys(given) {
		if _, ok := m.ConfigSchema[k]; !ok {
			if len(m.ConfigSchema) > 0 {
				warnings = append(warnings, fmt.Sprintf("plugins.entries.%s.settings: setting %q is not in the plugin's config_schema (passed on)", m.Name, k))
			}
			out[k] = given[k]
		}
	}
	for _, name := range sortedKeys(m.ConfigSchema) {
		s := m.ConfigSchema[name]
		v, present := given[name]
		if !present || v == nil {
			if s.Required && s.Default == nil {
				warnings = append(warnings, fmt.Sprintf("plugins.entries.%s.settings.%s is required by the plugin's config_schema but is not set", m.Name, name))
			}
			if s.Default != nil {
				out[name] = s.Default
			}
			continue
		}
		if s.Type == "" {
			out[name] = v
			continue
		}
		cv, err := coerce(s.Type, v)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("plugins.entries.%s.settings.%s should be %s (%v; passed on as written)", m.Name, name, s.Type, err))
			out[name] = v
			continue
		}
		out[name] = cv
	}
	return out, warnings, nil
}

// entryKeys are the keys of plugins.entries.<id> Atrium reads: the settings
// (config in older files) and the per-plugin gates of the familiar API.
var entryKeys = []string{"settings", "config", "allow_tool_override", "allow_gateway_injection", "granted_capabilities",
	"llm", "mcp_allowlist", "allow_platform_actions"}

// Gates are the per-plugin permissions of plugins.entries.<id>.
type Gates struct {
	AllowToolOverride     bool     `json:"allow_tool_override"`
	AllowGatewayInjection bool     `json:"allow_gateway_injection"`
	GrantedCapabilities   []string `json:"granted_capabilities,omitempty"`
}

// GatesOf reads the gates of a plugin's config entry (false when unset).
// granted_capabilities "tools.override" also allows tool overrides.
func GatesOf(entry any) Gates {
	e, _ := entry.(map[string]any)
	var g Gates
	g.AllowToolOverride, _ = e["allow_tool_override"].(bool)
	g.AllowGatewayInjection, _ = e["allow_gateway_injection"].(bool)
	if list, ok := e["granted_capabilities"].([]any); ok {
		for _, c := range list {
			if s, ok := c.(string); ok {
				g.GrantedCapabilities = append(g.GrantedCapabilities, s)
				if s == "tools.override" {
					g.AllowToolOverride = true
				}
			}
		}
	}
	return g
}

// coerce checks v against a setting type and normalises it (int, float64,
// string, bool, []any, map[string]any). A bool never satisfies an int.
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
	case TypeDict:
		if d, ok := v.(map[string]any); ok {
			return d, nil
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
	case nil:
		return "nothing"
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

func dedupe(list []string) []string {
	var out []string
	for _, s := range list {
		if !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// DeclaredHooks are the hooks Atrium fires that the manifest names, in
// hooks: and in the familiar provides_hooks:, each once, in that order: what
// is shown for a plugin until its first start says what it registered (a
// name Atrium does not fire is a warning of the manifest).
func (m Manifest) DeclaredHooks() []string {
	out := make([]string, 0, len(m.Hooks)+len(m.ProvidesHooks))
	for _, h := range slices.Concat(m.Hooks, m.ProvidesHooks) {
		if hooks.Known(h) && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}
