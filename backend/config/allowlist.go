package config

import (
	"fmt"

	"github.com/goccy/go-yaml"
)

// Allowlist is config.yaml's command_allowlist: a list of strings. As the
// familiar agent does, a list an older version wrote as one string of YAML
// is read back; a list that is not of strings is kept aside as Err, not a
// config that fails to load: standing approvals that cannot be read allow
// nothing, and nothing is written over them.
type Allowlist struct {
	Keys []string
	Err  error
}

// UnmarshalYAML reads a list of strings, or a string holding one.
func (l *Allowlist) UnmarshalYAML(unmarshal func(any) error) error {
	var raw any
	if err := unmarshal(&raw); err != nil {
		return err
	}
	*l = ReadAllowlist(raw)
	return nil
}

// ReadAllowlist reads a command_allowlist value as decoded YAML (nil when
// there is none).
func ReadAllowlist(raw any) Allowlist {
	if s, ok := raw.(string); ok {
		var inner any
		if err := yaml.Unmarshal([]byte(s), &inner); err != nil {
			return Allowlist{Err: fmt.Errorf("command_allowlist is a string that is not a YAML list (%s): make it a list of strings", describe(err))}
		}
		if _, ok := inner.(string); ok {
			return Allowlist{Keys: []string{s}}
		}
		raw = inner
	}
	if raw == nil {
		return Allowlist{}
	}
	list, ok := raw.([]any)
	if !ok {
		return Allowlist{Err: fmt.Errorf("command_allowlist must be a list of strings, not %T", raw)}
	}
	out := make([]string, 0, len(list))
	for i, v := range list {
		s, ok := v.(string)
		if !ok || s == "" {
			return Allowlist{Err: fmt.Errorf("command_allowlist must be a list of strings; item %d is not one", i+1)}
		}
		out = append(out, s)
	}
	return Allowlist{Keys: out}
}
