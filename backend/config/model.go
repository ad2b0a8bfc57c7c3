package config

import (
	"fmt"
	"slices"
	"strings"

	"atrium/backend/apperr"
)

// Providers: Atrium's two, and the familiar agent's names it resolves to
// them (a config.yaml brought from there loads, and its model answers where
// it is an OpenAI-compatible API).
const (
	ProviderOffline = "offline" // canned replies, no network: the default
	ProviderOpenAI  = "openai"  // any OpenAI-compatible chat completions API at model.base_url
)

// familiarOpenAI are the familiar agent's providers that are an
// OpenAI-compatible API Atrium speaks: auto, openrouter, custom and its
// aliases, lmstudio.
var familiarOpenAI = []string{"auto", "openrouter", "custom", "ollama", "vllm", "llamacpp", "lmstudio"}

// familiarOther are the familiar agent's providers Atrium does not speak
// (their own APIs, OAuth, or endpoints it does not know): a config naming
// one loads, and a turn says what to set instead.
var familiarOther = []string{"nous", "nous-api", "anthropic", "openai-codex", "copilot", "gemini", "zai", "kimi-coding",
	"minimax", "minimax-cn", "huggingface", "nvidia", "xiaomi", "arcee", "ollama-cloud", "deepinfra", "kilocode",
	"ai-gateway", "azure-foundry"}

// needsBaseURL reports whether provider p is a server that only its
// base_url locates: Atrium's openai, and custom and its aliases.
func needsBaseURL(p string) bool {
	return slices.Contains([]string{ProviderOpenAI, "custom", "ollama", "vllm", "llamacpp"}, strings.ToLower(strings.TrimSpace(p)))
}

// OpenRouterURL is OpenRouter's OpenAI-compatible API root.
const OpenRouterURL = "https://openrouter.ai/api/v1"

// LMStudioURL is LM Studio's local server, as the familiar agent defaults it.
const LMStudioURL = "http://127.0.0.1:1234/v1"

// CheckProvider refuses a provider name neither Atrium nor the familiar
// agent has (a typo, most likely).
func CheckProvider(p string) error {
	switch p = strings.ToLower(p); {
	case p == "", p == ProviderOffline, p == ProviderOpenAI, slices.Contains(familiarOpenAI, p), slices.Contains(familiarOther, p):
		return nil
	}
	return fmt.Errorf("model.provider must be offline or openai (any OpenAI-compatible API at model.base_url), or one of the familiar agent's (%s), not %q",
		strings.Join(familiarOpenAI, ", "), p)
}

// NameKey is the key the model block names the model by, and the name: name
// (Atrium's), else the familiar agent's default, else its model; name when
// none is set.
func (m Model) NameKey() (key, name string) {
	switch {
	case m.Name == "" && m.Default != "":
		return "default", m.Default
	case m.Name == "" && m.AltName != "":
		return "model", m.AltName
	}
	return "name", m.Name
}

// WindowKey is the key the model block gives the context window by, and
// the window: context_window (Atrium's), else the familiar agent's
// context_length.
func (m Model) WindowKey() (key string, window int) {
	if m.ContextWindow == 0 && m.ContextLength != 0 {
		return "context_length", m.ContextLength
	}
	return "context_window", m.ContextWindow
}

// Endpoint is where turns and model summaries go.
type Endpoint struct {
	Provider      string // ProviderOffline or ProviderOpenAI
	BaseURL       string
	Name          string // the model name sent
	APIKeyEnv     string // "" for a server without keys
	ContextWindow int
}

// Endpoint resolves model: as Atrium writes it or as the familiar agent
// does (getenv tells which credentials are there): openrouter is
// OpenRouter with $OPENROUTER_API_KEY (else $OPENAI_API_KEY); custom (and
// ollama, vllm, llamacpp) the server at model.base_url, with
// $OPENAI_API_KEY when it is set; lmstudio LM Studio's local server; auto
// the server at model.base_url, else OpenRouter when its key is set. A
// provider Atrium does not speak is an error that says what to set.
func (m Model) Endpoint(getenv func(string) string) (Endpoint, error) {
	if err := CheckProvider(m.Provider); err != nil {
		return Endpoint{}, apperr.Wrap(apperr.Invalid, err, "model")
	}
	_, name := m.NameKey()
	_, window := m.WindowKey()
	ep := Endpoint{Provider: ProviderOpenAI, BaseURL: m.BaseURL, Name: name, APIKeyEnv: m.APIKeyEnv, ContextWindow: window}
	// keyFrom names the first of vars that is set, unless api_key_env
	// names one.
	keyFrom := func(vars ...string) {
		for _, v := range vars {
			if ep.APIKeyEnv == "" && getenv(v) != "" {
				ep.APIKeyEnv = v
			}
		}
	}
	p := strings.ToLower(m.Provider)
	if p == "auto" {
		switch {
		case strings.Contains(m.BaseURL, "openrouter.ai"):
			p = "openrouter"
		case m.BaseURL != "":
			p = "custom"
		case getenv("OPENROUTER_API_KEY") != "":
			p = "openrouter"
		default:
			return Endpoint{}, apperr.New(apperr.Invalid, "model.provider auto found no model: set OPENROUTER_API_KEY (exported, or `atrium config set OPENROUTER_API_KEY ...` for the profile's .env), or set model.base_url to an OpenAI-compatible server (model.provider offline answers without one)")
		}
	}
	switch p {
	case "", ProviderOffline:
		return Endpoint{Provider: ProviderOffline, Name: ep.Name, ContextWindow: ep.ContextWindow}, nil
	case ProviderOpenAI:
	case "openrouter":
		if ep.BaseURL == "" {
			ep.BaseURL = OpenRouterURL
		}
		keyFrom("OPENROUTER_API_KEY", "OPENAI_API_KEY")
		if ep.APIKeyEnv == "" {
			ep.APIKeyEnv = "OPENROUTER_API_KEY" // unset: the provider says so
		}
	case "custom", "ollama", "vllm", "llamacpp":
		if ep.BaseURL == "" {
			return Endpoint{}, apperr.New(apperr.Invalid, "model.provider %s needs model.base_url: the OpenAI-compatible server's API root, as http://127.0.0.1:11434/v1", p)
		}
		keyFrom("OPENAI_API_KEY")
	case "lmstudio":
		if ep.BaseURL == "" {
			ep.BaseURL = LMStudioURL
		}
		keyFrom("LM_API_KEY")
	default:
		return Endpoint{}, apperr.New(apperr.Invalid, "model.provider %s is the familiar agent's and not an API Atrium speaks: Atrium talks to OpenAI-compatible APIs; set model.provider custom with model.base_url (and model.api_key_env naming the key's variable), or openrouter", p)
	}
	return ep, nil
}
