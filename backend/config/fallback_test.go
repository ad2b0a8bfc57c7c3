package config

import (
	"slices"
	"strings"
	"testing"
)

// fallback_providers and fallback_model are read as the familiar agent
// writes them, merged with the list first, and each entry resolves as the
// main model does.
func TestFallbackChain(t *testing.T) {
	text := `agent:
  api_max_retries: 5
fallback_providers:
  - provider: openrouter
    model: anthropic/claude-sonnet-4
  - provider: custom
    model: qwen3-coder
    base_url: http://127.0.0.1:8000/v1
    key_env: LOCAL_KEY
    context_length: 131072
    api_mode: chat_completions
  - provider: anthropic
    model: claude-sonnet-4-6
  - provider: openrouter
fallback_model:
  provider: openrouter
  model: anthropic/claude-sonnet-4
`
	cfg, warnings, err := Parse([]byte(text), "config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if n := cfg.Agent.APIMaxRetries(); n != 5 {
		t.Fatalf("api_max_retries = %d", n)
	}
	chain := cfg.FallbackChain()
	labels := []string{}
	for _, f := range chain {
		labels = append(labels, f.Label())
	}
	if want := []string{"anthropic/claude-sonnet-4 via openrouter", "qwen3-coder via custom", "claude-sonnet-4-6 via anthropic"}; !slices.Equal(labels, want) {
		t.Fatalf("chain = %q, want %q", labels, want)
	}
	want := []string{
		"config config.yaml: fallback_providers[2]: provider anthropic is the familiar agent's and not an API Atrium speaks: a turn passes over it (custom with base_url, or openrouter, can serve it)",
		"config config.yaml: fallback_providers[3] needs both provider and model: ignored",
	}
	if !slices.Equal(warnings, want) {
		t.Fatalf("warnings:\n%q\nwant\n%q", warnings, want)
	}
	env := map[string]string{"OPENROUTER_API_KEY": "k1", "LOCAL_KEY": "k2"}
	getenv := func(k string) string { return env[k] }
	if ep, err := chain[0].Endpoint(getenv); err != nil || ep != (Endpoint{Provider: ProviderOpenAI, BaseURL: OpenRouterURL, Name: "anthropic/claude-sonnet-4", APIKeyEnv: "OPENROUTER_API_KEY"}) {
		t.Fatalf("openrouter: %+v %v", ep, err)
	}
	if ep, err := chain[1].Endpoint(getenv); err != nil || ep != (Endpoint{Provider: ProviderOpenAI, BaseURL: "http://127.0.0.1:8000/v1", Name: "qwen3-coder", APIKeyEnv: "LOCAL_KEY", ContextWindow: 131072}) {
		t.Fatalf("custom: %+v %v", ep, err)
	}
	if _, err := chain[2].Endpoint(getenv); err == nil || !strings.Contains(err.Error(), "not an API Atrium speaks") {
		t.Fatalf("anthropic: %v", err)
	}

	// The older single key alone is a chain of one; no key, none.
	cfg, _, err = Parse([]byte("fallback_model:\n  provider: lmstudio\n  model: local\n"), "config.yaml")
	if err != nil || len(cfg.FallbackChain()) != 1 || cfg.FallbackChain()[0].Label() != "local via lmstudio" {
		t.Fatalf("fallback_model: %+v %v", cfg.FallbackChain(), err)
	}
	cfg, _, err = Parse(nil, "config.yaml")
	if err != nil || cfg.FallbackChain() != nil || cfg.Agent.APIMaxRetries() != DefaultAPIMaxRetries {
		t.Fatalf("defaults: %+v %d %v", cfg.FallbackChain(), cfg.Agent.APIMaxRetries(), err)
	}
	if cfg, err := loadYAML(t, "agent:\n  api_max_retries: 0\n"); err != nil || cfg.Agent.APIMaxRetries() != 0 {
		t.Fatalf("0 retries: %v", err)
	}
}

// What no turn could use is refused, naming the key.
func TestFallbackRefused(t *testing.T) {
	for text, want := range map[string]string{
		"agent:\n  api_max_retries: -1\n":                                                       "agent.api_max_retries must be 0 (one attempt) to 20, not -1",
		"agent:\n  api_max_retries: 21\n":                                                       "agent.api_max_retries must be 0 (one attempt) to 20, not 21",
		"fallback_providers:\n  - provider: openruoter\n    model: m\n":                         `fallback_providers[0].provider: model.provider must be offline or openai`,
		"fallback_providers:\n  - provider: custom\n    model: m\n":                             "fallback_providers[0]: provider custom needs base_url",
		"fallback_model:\n  provider: offline\n  model: m\n":                                    "fallback_model: provider offline is no fallback",
		"fallback_model:\n  provider: openrouter\n  model: m\n  api_mode: anthropic_messages\n": `fallback_model.api_mode must be chat_completions (the API Atrium speaks), not "anthropic_messages"`,
		"fallback_providers:\n  - provider: openrouter\n    model: m\n    context_length: -5\n": "fallback_providers[0].context_length must be positive, not -5",
	} {
		if _, err := loadYAML(t, text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
}

// auxiliary.approval names a reviewer of its own as the familiar agent
// does: a base_url (a custom server, $OPENAI_API_KEY unless api_key_env
// names another) wins over provider; auto and main are the main model's.
func TestAuxiliaryApprovalEndpoint(t *testing.T) {
	env := map[string]string{"OPENAI_API_KEY": "k0", "OPENROUTER_API_KEY": "k1", "GUARD_KEY": "k2"}
	getenv := func(k string) string { return env[k] }
	for text, want := range map[string]Endpoint{
		"auxiliary:\n  approval:\n    provider: openrouter\n    model: google/gemini-flash\n": {Provider: ProviderOpenAI, BaseURL: OpenRouterURL,
			Name: "google/gemini-flash", APIKeyEnv: "OPENROUTER_API_KEY"},
		"auxiliary:\n  approval:\n    provider: openrouter\n    base_url: http://127.0.0.1:9/v1\n    model: small\n": {Provider: ProviderOpenAI,
			BaseURL: "http://127.0.0.1:9/v1", Name: "small", APIKeyEnv: "OPENAI_API_KEY"},
		"auxiliary:\n  approval:\n    base_url: http://127.0.0.1:9/v1\n    model: small\n    api_key_env: GUARD_KEY\n": {Provider: ProviderOpenAI,
			BaseURL: "http://127.0.0.1:9/v1", Name: "small", APIKeyEnv: "GUARD_KEY"},
	} {
		cfg, err := loadYAML(t, text)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		a := cfg.Auxiliary.Approval
		if ep, err := a.Endpoint(getenv); !a.Own() || err != nil || ep != want {
			t.Errorf("%q: own %v, %+v %v; want %+v", text, a.Own(), ep, err, want)
		}
	}
	for _, text := range []string{"", "auxiliary:\n  approval:\n    provider: main\n    model: m\n", "auxiliary:\n  approval:\n    provider: auto\n"} {
		if cfg, err := loadYAML(t, text); err != nil || cfg.Auxiliary.Approval.Own() {
			t.Errorf("%q: the main model's, not %+v (%v)", text, cfg.Auxiliary.Approval, err)
		}
	}
	for text, want := range map[string]string{
		"auxiliary:\n  approval:\n    provider: openrouter\n":                         "auxiliary.approval.model must name the model to ask of provider openrouter",
		"auxiliary:\n  approval:\n    base_url: http://127.0.0.1:9/v1\n":              "auxiliary.approval.model must name the model to ask of its base_url",
		"auxiliary:\n  approval:\n    provider: custom\n    model: m\n":               "auxiliary.approval.provider custom needs auxiliary.approval.base_url",
		"auxiliary:\n  approval:\n    provider: openruoter\n    model: m\n":           "auxiliary.approval.provider must be auto, main, or one of model.provider's",
		"auxiliary:\n  approval:\n    provider: offline\n    model: m\n":              "auxiliary.approval.provider offline is no model to ask",
		"auxiliary:\n  approval:\n    base_url: ftp://x\n    model: m\n":              "auxiliary.approval.base_url must be an http(s) URL",
		"auxiliary:\n  approval:\n    api_key_env: sk-pasted-key-123\n    model: m\n": "auxiliary.approval.api_key_env must name an environment variable",
	} {
		if _, err := loadYAML(t, text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
}
