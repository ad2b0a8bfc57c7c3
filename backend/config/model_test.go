package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"atrium/backend/config"
)

// The familiar agent's model block resolves to the API Atrium speaks, or
// to an error that says what to set.
func TestTheFamiliarAgentsModelBlock(t *testing.T) {
	t.Parallel()
	env := func(vars ...string) func(string) string {
		m := map[string]string{}
		for _, v := range vars {
			m[v] = "set"
		}
		return func(k string) string { return m[k] }
	}
	cases := []struct {
		name  string
		m     config.Model
		env   func(string) string
		want  config.Endpoint
		error string
	}{
		{"unset is offline", config.Model{}, env(), config.Endpoint{Provider: config.ProviderOffline}, ""},
		{"Atrium's openai as written", config.Model{Provider: "openai", BaseURL: "http://x/v1", Name: "m", APIKeyEnv: "K"}, env(),
			config.Endpoint{Provider: config.ProviderOpenAI, BaseURL: "http://x/v1", Name: "m", APIKeyEnv: "K"}, ""},
		{"auto finds OpenRouter's key", config.Model{Provider: "auto", Default: "anthropic/claude-opus-4.6"}, env("OPENROUTER_API_KEY"),
			config.Endpoint{Provider: config.ProviderOpenAI, BaseURL: config.OpenRouterURL, Name: "anthropic/claude-opus-4.6", APIKeyEnv: "OPENROUTER_API_KEY"}, ""},
		{"auto at OpenRouter's URL takes OPENAI_API_KEY too", config.Model{Provider: "auto", BaseURL: "https://openrouter.ai/api/v1", AltName: "x/y"}, env("OPENAI_API_KEY"),
			config.Endpoint{Provider: config.ProviderOpenAI, BaseURL: "https://openrouter.ai/api/v1", Name: "x/y", APIKeyEnv: "OPENAI_API_KEY"}, ""},
		{"auto at a local server", config.Model{Provider: "auto", BaseURL: "http://127.0.0.1:11434/v1", Default: "qwen", ContextLength: 32768}, env(),
			config.Endpoint{Provider: config.ProviderOpenAI, BaseURL: "http://127.0.0.1:11434/v1", Name: "qwen", ContextWindow: 32768}, ""},
		{"auto with nothing", config.Model{Provider: "auto"}, env(), config.Endpoint{}, "found no model"},
		{"openrouter, its key unset: named, so the provider says so", config.Model{Provider: "OpenRouter"}, env(),
			config.Endpoint{Provider: config.ProviderOpenAI, BaseURL: config.OpenRouterURL, APIKeyEnv: "OPENROUTER_API_KEY"}, ""},
		{"custom needs its URL", config.Model{Provider: "custom"}, env(), config.Endpoint{}, "needs model.base_url"},
		{"ollama is custom", config.Model{Provider: "ollama", BaseURL: "http://h/v1"}, env("OPENAI_API_KEY"),
			config.Endpoint{Provider: config.ProviderOpenAI, BaseURL: "http://h/v1", APIKeyEnv: "OPENAI_API_KEY"}, ""},
		{"lmstudio's own server", config.Model{Provider: "lmstudio"}, env(),
			config.Endpoint{Provider: config.ProviderOpenAI, BaseURL: config.LMStudioURL}, ""},
		{"api_key_env comes first", config.Model{Provider: "openrouter", APIKeyEnv: "MINE"}, env("OPENROUTER_API_KEY"),
			config.Endpoint{Provider: config.ProviderOpenAI, BaseURL: config.OpenRouterURL, APIKeyEnv: "MINE"}, ""},
		{"name comes before default", config.Model{Provider: "offline", Name: "a", Default: "b"}, env(),
			config.Endpoint{Provider: config.ProviderOffline, Name: "a"}, ""},
		{"a provider Atrium does not speak", config.Model{Provider: "anthropic"}, env("ANTHROPIC_API_KEY"), config.Endpoint{}, "set model.provider custom"},
		{"a typo", config.Model{Provider: "openrouterr"}, env(), config.Endpoint{}, "must be offline or openai"},
	}
	for _, c := range cases {
		got, err := c.m.Endpoint(c.env)
		switch {
		case c.error != "" && (err == nil || !strings.Contains(err.Error(), c.error)):
			t.Errorf("%s: %+v %v, want an error saying %q", c.name, got, err, c.error)
		case c.error == "" && (err != nil || got != c.want):
			t.Errorf("%s: %+v %v, want %+v", c.name, got, err, c.want)
		}
	}
}

// A config.yaml of the familiar agent's loads: its provider names are
// known (one Atrium does not speak is a warning, not a refusal); a name
// neither has is refused.
func TestAFamiliarConfigLoads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	load := func(text string) ([]string, error) {
		path := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, warnings, err := config.Load(path)
		return warnings, err
	}
	if w, err := load("model:\n  default: \"anthropic/claude-opus-4.6\"\n  provider: \"auto\"\n  base_url: \"https://openrouter.ai/api/v1\"\n"); err != nil || len(w) != 0 {
		t.Fatalf("auto: %q %v", w, err)
	}
	if w, err := load("model:\n  provider: anthropic\n"); err != nil || len(w) != 1 || !strings.Contains(w[0], "not an API Atrium speaks") {
		t.Fatalf("anthropic: %q %v", w, err)
	}
	if _, err := load("model:\n  provider: bogus\n"); err == nil || !strings.Contains(err.Error(), "one of the familiar agent's") {
		t.Fatalf("bogus: %v", err)
	}
	// Every setting that is not Atrium's is named, not only the first the
	// strict decoder meets; free-form sections (hooks:) are not judged.
	w, err := load("_config_version: 12\nterminal:\n  backend: local\n  docker_image: python:3.11\nsessions:\n  trash_days: 3\n  colour: red\nhooks:\n  pre_tool_call: []\n" +
		"model:\n  default: m\n  streaming: true\n")
	if err != nil || len(w) != 1 || !strings.HasSuffix(w[0], ": 4 settings are not Atrium's, ignored: _config_version, terminal.docker_image, sessions.colour, model.streaming") {
		t.Fatalf("unknown settings: %q %v", w, err)
	}
	// A key written in the file, as the familiar agent allows: said to be
	// unread, and where it belongs.
	w, _ = load("model:\n  provider: openrouter\n  api_key: sk-or-secret\n")
	if len(w) != 2 || !strings.Contains(w[1], "model.api_key is not read") || !strings.Contains(w[1], "model.api_key_env") || strings.Contains(strings.Join(w, " "), "sk-or-secret") {
		t.Fatalf("api_key: %q", w)
	}
	many := ""
	for i := range 14 {
		many += fmt.Sprintf("k%d: 1\n", i)
	}
	if w, _ := load(many); len(w) != 1 || !strings.HasSuffix(w[0], "k10, k11 and 2 more") {
		t.Fatalf("many: %q", w)
	}
}

func TestKindOf(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]reflect.Kind{
		"approvals.mode":                reflect.String,
		"sessions.trash_days":           reflect.Int,
		"plugins.enabled":               reflect.Slice,
		"compaction.rotate":             reflect.Bool,
		"plugins.hook_callback_timeout": reflect.Float64,
		"model.default":                 reflect.String,
		"no.such.key":                   reflect.Invalid,
		"approvals.mode.deeper":         reflect.Invalid,
	} {
		if got := config.KindOf(strings.Split(key, ".")); got != want {
			t.Errorf("%s: %v, want %v", key, got, want)
		}
	}
}

// The familiar agent's shorter form, the model's name alone, is its
// model.default; the block form still names every key it does not know.
func TestAModelGivenByNameAlone(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		text     string
		name     string
		scalar   bool
		warnsFor string
		fails    bool
	}{
		{text: "model: anthropic/claude-opus-4\n", name: "anthropic/claude-opus-4", scalar: true},
		{text: "model: \"qwen/qwen3-coder\"  # the model\n", name: "qwen/qwen3-coder", scalar: true},
		{text: "model:\n", name: ""},
		{text: "model:\n  default: qwen\n  provider: custom\n  base_url: http://x/v1\n  flavour: spicy\n", name: "qwen", warnsFor: "model.flavour"},
		{text: "model: [a, b]\n", fails: true},
	} {
		cfg, warnings, err := config.Parse([]byte(c.text), "config.yaml")
		if c.fails {
			if err == nil {
				t.Errorf("%q loads", c.text)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.text, err)
			continue
		}
		ep, err := cfg.Model.Endpoint(func(string) string { return "" })
		if c.name != "" && (err != nil || ep.Name != c.name) && cfg.Model.Default != c.name {
			t.Errorf("%q: the model is %+v (%v)", c.text, ep, err)
		}
		if cfg.Model.Scalar() != c.scalar {
			t.Errorf("%q: scalar %v", c.text, cfg.Model.Scalar())
		}
		if got := strings.Join(warnings, "\n"); (c.warnsFor == "") != (got == "") || !strings.Contains(got, c.warnsFor) {
			t.Errorf("%q: warnings %q, want one naming %q", c.text, got, c.warnsFor)
		}
	}
}
