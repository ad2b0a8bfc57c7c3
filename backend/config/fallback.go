package config

import (
	"fmt"
	"slices"
	"strings"
)

// DefaultAPIMaxRetries is agent.api_max_retries unset: a model call that
// failed for a reason that may pass (a rate limit, an overloaded or failing
// server, no answer) is tried three more times, as the familiar agent does.
const DefaultAPIMaxRetries = 3

// MaxAPIRetries bounds agent.api_max_retries: past it, a turn would wait
// on a provider for most of an hour.
const MaxAPIRetries = 20

// APIMaxRetries is agent.api_max_retries, or its default.
func (a Agent) APIMaxRetries() int {
	if a.MaxRetries == nil {
		return DefaultAPIMaxRetries
	}
	return *a.MaxRetries
}

// Fallback is one entry of the familiar agent's fallback_providers (or its
// older single fallback_model): a model of another provider a turn turns
// to when its own fails.
type Fallback struct {
	Provider string `yaml:"provider"`
	Model    string `yaml:"model"`
	BaseURL  string `yaml:"base_url"`
	// KeyEnv is the familiar agent's key_env, APIKeyEnv Atrium's
	// model.api_key_env: the environment variable that holds the key.
	KeyEnv        string `yaml:"key_env"`
	APIKeyEnv     string `yaml:"api_key_env"`
	ContextLength int    `yaml:"context_length"`
	// APIMode is the familiar agent's api_mode: Atrium speaks
	// chat_completions alone.
	APIMode string `yaml:"api_mode"`
}

// Label names f for people: "anthropic/claude-sonnet-4 via openrouter".
func (f Fallback) Label() string {
	return fmt.Sprintf("%s via %s", f.Model, f.Provider)
}

// complete reports whether f names both a provider and a model (the
// familiar agent ignores an entry without either).
func (f Fallback) complete() bool {
	return strings.TrimSpace(f.Provider) != "" && strings.TrimSpace(f.Model) != ""
}

// Endpoint resolves f as model.provider resolves the main model (getenv
// tells which credentials are there).
func (f Fallback) Endpoint(getenv func(string) string) (Endpoint, error) {
	key := f.APIKeyEnv
	if key == "" {
		key = f.KeyEnv
	}
	return Model{Provider: f.Provider, BaseURL: f.BaseURL, Name: f.Model, APIKeyEnv: key, ContextLength: f.ContextLength}.Endpoint(getenv)
}

// FallbackChain is the models a turn turns to, in order: fallback_providers,
// then fallback_model unless the list has it already, as the familiar agent
// merges them. An entry without a provider or a model is left out (Parse
// warned of it).
func (c Config) FallbackChain() []Fallback {
	var out []Fallback
	add := func(f Fallback) {
		if f.complete() && !slices.ContainsFunc(out, func(g Fallback) bool {
			return strings.EqualFold(g.Provider, f.Provider) && g.Model == f.Model && g.BaseURL == f.BaseURL
		}) {
			out = append(out, f)
		}
	}
	for _, f := range c.FallbackProviders {
		add(f)
	}
	if c.FallbackModel != nil {
		add(*c.FallbackModel)
	}
	return out
}

// fallbackEntries are fallback_providers' entries and fallback_model, each
// with the key that names it.
func (c Config) fallbackEntries() (keys []string, entries []Fallback) {
	for i, f := range c.FallbackProviders {
		keys, entries = append(keys, fmt.Sprintf("fallback_providers[%d]", i)), append(entries, f)
	}
	if c.FallbackModel != nil {
		keys, entries = append(keys, "fallback_model"), append(entries, *c.FallbackModel)
	}
	return keys, entries
}

// validateFallbacks refuses what no turn could use: a provider neither
// Atrium nor the familiar agent has, a custom server without its address,
// an api_mode other than chat_completions.
func (c Config) validateFallbacks() error {
	if n := c.Agent.MaxRetries; n != nil && (*n < 0 || *n > MaxAPIRetries) {
		return fmt.Errorf("agent.api_max_retries must be 0 (one attempt) to %d, not %d", MaxAPIRetries, *n)
	}
	keys, entries := c.fallbackEntries()
	for i, f := range entries {
		if err := CheckProvider(f.Provider); err != nil {
			return fmt.Errorf("%s.provider: %w", keys[i], err)
		}
		switch p := strings.ToLower(f.Provider); {
		case f.complete() && f.BaseURL == "" && needsBaseURL(p):
			return fmt.Errorf("%s: provider %s needs base_url: the OpenAI-compatible server's API root, as http://127.0.0.1:8000/v1", keys[i], p)
		case p == ProviderOffline && f.complete():
			return fmt.Errorf("%s: provider offline is no fallback (it answers without a model)", keys[i])
		}
		switch strings.ToLower(f.APIMode) {
		case "", "chat_completions":
		default:
			return fmt.Errorf("%s.api_mode must be chat_completions (the API Atrium speaks), not %q", keys[i], f.APIMode)
		}
		if f.ContextLength < 0 {
			return fmt.Errorf("%s.context_length must be positive, not %d", keys[i], f.ContextLength)
		}
	}
	return nil
}

// fallbackWarnings are the entries a turn will pass over: one without a
// provider or a model (as the familiar agent ignores it), one whose
// provider is not an API Atrium speaks.
func (c Config) fallbackWarnings(path string) []string {
	var out []string
	keys, entries := c.fallbackEntries()
	for i, f := range entries {
		switch p := strings.ToLower(f.Provider); {
		case !f.complete():
			out = append(out, fmt.Sprintf("config %s: %s needs both provider and model: ignored", path, keys[i]))
		case slices.Contains(familiarOther, p):
			out = append(out, fmt.Sprintf("config %s: %s: provider %s is the familiar agent's and not an API Atrium speaks: a turn passes over it (custom with base_url, or openrouter, can serve it)", path, keys[i], p))
		}
	}
	return out
}
