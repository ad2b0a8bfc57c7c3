package plugins

import (
	"fmt"
	"strconv"
	"strings"
)

// decodeManifest reads every known field from a decoded plugin.yaml. A
// field of the wrong shape is a warning and is ignored, as in the familiar
// Python plugin API: a manifest never fails because of a field Atrium
// could do without.
func decodeManifest(raw map[string]any) (Manifest, []string) {
	d := fieldDecoder{raw: raw}
	m := Manifest{
		Name:           d.str("name"),
		Runtime:        d.str("runtime"),
		Command:        d.strList("command"),
		Version:        d.scalar("version"),
		Description:    d.str("description"),
		Kind:           d.str("kind"),
		Label:          d.str("label"),
		License:        d.str("license"),
		Homepage:       d.str("homepage"),
		Tags:           d.strList("tags"),
		RequiresAtrium: d.scalar("requires_atrium"),
		RequiresHermes: d.scalar("requires_hermes"),
		ProvidesTools:  d.strList("provides_tools"),
		ProvidesHooks:  d.strList("provides_hooks"),
		Hooks:          d.strList("hooks"),
		Commands:       d.strList("commands"),
		Platforms:      d.strList("platforms"),
		ExternalDeps:   d.depList("external_dependencies"),
		PipDeps:        d.depList("pip_dependencies"),
		PythonDeps:     d.depList("python_dependencies"),
	}
	m.Author, m.AuthorInfo = d.author()
	m.RequiresEnv = d.envList("requires_env")
	m.OptionalEnv = d.envList("optional_env")
	m.RequiresPlugins = d.dependencies()
	m.ManifestVersion = 1
	if v, ok := raw["manifest_version"]; ok && v != nil {
		if n, ok := intOf(v); ok {
			m.ManifestVersion = n
		} else {
			d.warn("manifest_version %v is not an integer; treated as 1", v)
		}
	}
	if v, ok := raw["api_version"]; ok && v != nil {
		if n, ok := intOf(v); ok {
			m.APIVersion = &n
		} else {
			d.warn("api_version %v is not an integer (ignored)", v)
		}
	}
	if v, ok := raw["enabled_by_default"]; ok && v != nil {
		if b, ok := v.(bool); ok {
			m.EnabledByDefault = &b
		} else {
			d.warn("enabled_by_default must be true or false (ignored)")
		}
	}
	m.ConfigSchema = d.schema()
	for _, k := range reservedKeys {
		if v, ok := raw[k]; ok {
			if m.Reserved == nil {
				m.Reserved = map[string]any{}
			}
			m.Reserved[k] = v
		}
	}
	for _, k := range sortedKeys(raw) {
		if !contains(manifestKeys, k) {
			d.warn("unknown field %q (ignored)", k)
		}
	}
	return m, d.warnings
}

type fieldDecoder struct {
	raw      map[string]any
	warnings []string
}

func (d *fieldDecoder) warn(format string, args ...any) {
	d.warnings = append(d.warnings, fmt.Sprintf(format, args...))
}

// str reads a string field; anything else warns.
func (d *fieldDecoder) str(key string) string {
	v, ok := d.raw[key]
	if !ok || v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return strings.TrimSpace(s)
	}
	d.warn("%s must be a string (ignored)", key)
	return ""
}

// scalar reads a string, accepting a number written without quotes
// (version: 1.2 or requires_atrium: 1).
func (d *fieldDecoder) scalar(key string) string {
	switch v := d.raw[key].(type) {
	case nil:
		return ""
	case string:
		return strings.TrimSpace(v)
	case int, int64, uint64, float64:
		return fmt.Sprint(v)
	}
	d.warn("%s must be a string (ignored)", key)
	return ""
}

// strList reads a list of strings; a single string is a list of one.
func (d *fieldDecoder) strList(key string) []string {
	switch v := d.raw[key].(type) {
	case nil:
		return nil
	case string:
		if strings.TrimSpace(v) == "" {
			return nil
		}
		return []string{strings.TrimSpace(v)}
	case []any:
		var out []string
		for _, item := range v {
			switch s := item.(type) {
			case string:
				out = append(out, strings.TrimSpace(s))
			case int, int64, uint64, float64:
				out = append(out, fmt.Sprint(s))
			default:
				d.warn("%s: entry %v is not a string (ignored)", key, item)
			}
		}
		return out
	}
	d.warn("%s must be a list (ignored)", key)
	return nil
}

// depList reads a dependency list: strings, or mappings shown by their
// name (and version). They are shown, never installed.
func (d *fieldDecoder) depList(key string) []string {
	list, ok := d.raw[key].([]any)
	if !ok {
		if d.raw[key] != nil {
			d.warn("%s must be a list (ignored)", key)
		}
		return nil
	}
	var out []string
	for _, item := range list {
		switch s := item.(type) {
		case string:
			if strings.TrimSpace(s) != "" {
				out = append(out, strings.TrimSpace(s))
			}
		case map[string]any:
			name, _ := s["name"].(string)
			if name == "" {
				name, _ = s["package"].(string)
			}
			if name == "" {
				d.warn("%s: entry %v has no name (ignored)", key, item)
				continue
			}
			if v, ok := s["version"].(string); ok && v != "" {
				name += " " + v
			}
			out = append(out, name)
		default:
			d.warn("%s: entry %v is not a requirement (ignored)", key, item)
		}
	}
	return out
}

// author reads a string or a mapping of name, email and url.
func (d *fieldDecoder) author() (string, map[string]string) {
	switch v := d.raw["author"].(type) {
	case nil:
		return "", nil
	case string:
		return strings.TrimSpace(v), nil
	case map[string]any:
		info := map[string]string{}
		var parts []string
		for _, f := range []string{"name", "email", "url"} {
			if s, ok := v[f].(string); ok && s != "" {
				info[f] = s
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, ", "), info
	}
	d.warn("author must be a string or a mapping of name, email and url (ignored)")
	return "", nil
}

// envList reads requires_env or optional_env: names, or mappings
// {name, description, url, secret}.
func (d *fieldDecoder) envList(key string) []EnvVar {
	v := d.raw[key]
	if v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		d.warn("%s must be a list (ignored)", key)
		return nil
	}
	var out []EnvVar
	for _, item := range list {
		var e EnvVar
		switch x := item.(type) {
		case string:
			e.Name = strings.TrimSpace(x)
		case map[string]any:
			e.Name, _ = x["name"].(string)
			e.Description, _ = x["description"].(string)
			e.URL, _ = x["url"].(string)
			e.Secret, _ = x["secret"].(bool)
		default:
			d.warn("%s: entry %v is neither a name nor a mapping (ignored)", key, item)
			continue
		}
		if !envRe.MatchString(e.Name) {
			d.warn("%s: invalid variable name %q (ignored)", key, e.Name)
			continue
		}
		out = append(out, e)
	}
	return out
}

// dependencies reads requires_plugins: ids, or {id, version_range}.
func (d *fieldDecoder) dependencies() []Dependency {
	v := d.raw["requires_plugins"]
	if v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		d.warn("requires_plugins must be a list (ignored)")
		return nil
	}
	var out []Dependency
	for _, item := range list {
		switch x := item.(type) {
		case string:
			if x != "" {
				out = append(out, Dependency{ID: x})
			}
		case map[string]any:
			id, _ := x["id"].(string)
			if id == "" {
				d.warn("requires_plugins: entry %v has no id (ignored)", item)
				continue
			}
			dep := Dependency{ID: id}
			if r := x["version_range"]; r != nil {
				dep.VersionRange = fmt.Sprint(r)
			}
			out = append(out, dep)
		default:
			d.warn("requires_plugins: entry %v must be a plugin id or a {id, version_range} mapping (ignored)", item)
		}
	}
	return out
}

// schema reads config_schema: key -> {type, default, description,
// required}. An unknown type is a warning and that key is not type-checked.
func (d *fieldDecoder) schema() map[string]Setting {
	v := d.raw["config_schema"]
	if v == nil {
		return nil
	}
	raw, ok := v.(map[string]any)
	if !ok {
		d.warn("config_schema must be a mapping (ignored)")
		return nil
	}
	out := map[string]Setting{}
	for _, name := range sortedKeys(raw) {
		spec, ok := raw[name].(map[string]any)
		if !ok {
			d.warn("config_schema.%s must be a mapping such as {type: str} (ignored)", name)
			continue
		}
		var s Setting
		if t, present := spec["type"]; present && t != nil {
			ts := strings.ToLower(fmt.Sprint(t))
			if canon, known := typeAliases[ts]; known {
				s.Type = canon
			} else {
				d.warn("config_schema.%s: unknown type %q (str, int, float, bool, list or dict); not type-checked", name, ts)
			}
		}
		s.Default = spec["default"]
		s.Required, _ = spec["required"].(bool)
		s.Description, _ = spec["description"].(string)
		for _, k := range sortedKeys(spec) {
			if !contains(settingKeys, k) {
				d.warn("config_schema.%s: unknown field %q (ignored)", name, k)
			}
		}
		out[name] = s
	}
	return out
}

func intOf(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case uint64:
		return int(n), true
	case float64:
		if n == float64(int(n)) {
			return int(n), true
		}
	case string:
		i, err := strconv.Atoi(strings.TrimSpace(n))
		return i, err == nil
	}
	return 0, false
}
