package config

import (
	"errors"
	"fmt"
	"os"

	"atrium/backend/apperr"
	"atrium/backend/limits"
)

// PluginView is config.yaml as a plugin written for the familiar Python API
// reads it (hermes_cli.config.load_config): the file's own keys, as plain
// JSON-able values, with
//   - no other plugin's entry under plugins.entries (one plugin never reads
//     another's settings), and the plugin's own settings also at
//     plugins.<id>, where that API's plugins look for them;
//   - model.default naming the model (model.name), as that API calls it.
//
// A missing file is an empty view. The file holds no secrets (tokens and
// keys are named by environment variable, never written in it).
func PluginView(path, plugin string) (map[string]any, error) {
	data, err := limits.ReadFile(path, limits.ConfigBytes, "a config file")
	if errors.Is(err, os.ErrNotExist) {
		return map[string]any{}, nil
	}
	if err != nil {
		return nil, apperr.Wrap(apperr.Invalid, err, "cannot read config %s", path)
	}
	if err := limits.CheckYAMLDepth(data, limits.YAMLDepth, "config "+path); err != nil {
		return nil, err
	}
	var raw any
	if err := unmarshal(data, &raw); err != nil {
		return nil, apperr.New(apperr.Invalid, "config %s:%s", path, describe(err))
	}
	view, _ := plainJSON(raw).(map[string]any)
	if view == nil {
		view = map[string]any{}
	}
	if ps, ok := view["plugins"].(map[string]any); ok {
		if entries, ok := ps["entries"].(map[string]any); ok {
			own, has := entries[plugin]
			ps["entries"] = map[string]any{}
			if has {
				ps["entries"].(map[string]any)[plugin] = own
				if e, ok := own.(map[string]any); ok {
					settings, ok := e["settings"]
					if !ok {
						settings, ok = e["config"] // the older name
					}
					if _, taken := ps[plugin]; ok && !taken {
						ps[plugin] = settings
					}
				}
			}
		}
	}
	if m, ok := view["model"].(map[string]any); ok {
		if _, has := m["default"]; !has && m["name"] != nil {
			m["default"] = m["name"]
		}
	}
	return view, nil
}

// plainJSON turns what the YAML decoder gives into values encoding/json
// takes: maps keyed by strings all the way down.
func plainJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = plainJSON(e)
		}
		return x
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = plainJSON(e)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = plainJSON(e)
		}
		return x
	}
	return v
}
