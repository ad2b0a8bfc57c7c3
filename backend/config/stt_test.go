package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func loadText(t *testing.T, text string) (Config, []string, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return Load(p)
}

func envOf(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

// The familiar agent's stt block loads as it is, every key read; with
// nothing set, STT is on, the provider chosen by what is available, and
// transcripts echoed.
func TestSTTBlockOfTheFamiliarAgent(t *testing.T) {
	t.Parallel()
	c, w, err := loadText(t, "")
	if err != nil || !c.STT.On() || c.STT.Provider != "" || !c.Gateway.EchoTranscripts() {
		t.Fatalf("defaults: %+v %v %v", c.STT, w, err)
	}
	c, w, err = loadText(t, `stt:
  enabled: true
  provider: whisper_cli
  language: de
  local: {model: small, language: fr}
  openai: {model: gpt-4o-mini-transcribe, language: en}
  groq: {model: whisper-large-v3}
  mistral: {model: voxtral-small-latest}
  providers:
    whisper_cli:
      type: command
      command: whisper {input_path} --output_dir {output_dir} --language {language}
      timeout: 45
      format: srt
      env_passthrough: [HF_TOKEN]
      language: it
      model: tiny
gateway:
  stt_echo_transcripts: false
`)
	if err != nil || len(w) != 0 {
		t.Fatalf("load: %v %v", w, err)
	}
	if name, explicit := c.STT.Chosen(); name != "whisper_cli" || !explicit || c.Gateway.EchoTranscripts() {
		t.Fatalf("chosen %q %v, echo %v", name, explicit, c.Gateway.EchoTranscripts())
	}
	spec, ok := c.STT.CommandProvider("Whisper_CLI", envOf(nil))
	want := STTCommandSpec{Name: "whisper_cli", Command: "whisper {input_path} --output_dir {output_dir} --language {language}",
		IdleTimeout: 45 * time.Second, Format: "srt", Passthrough: []string{"HF_TOKEN"}, Language: "it", Model: "tiny"}
	if !ok || !reflect.DeepEqual(spec, want) {
		t.Fatalf("command provider %+v, want %+v", spec, want)
	}
	if _, ok := c.STT.CommandProvider("openai", envOf(nil)); ok {
		t.Fatal("a built-in name is a command provider")
	}

	// enabled as text, timeout_seconds and output_format as the familiar
	// agent also reads them, the defaults of a command provider.
	c, _, err = loadText(t, "stt:\n  enabled: \"off\"\n  language: pt\n  providers:\n    a: {command: x, timeout_seconds: \"2.5\", output_format: .json}\n    b: {command: y}\n")
	if err != nil || c.STT.On() {
		t.Fatalf("off: %+v %v", c.STT, err)
	}
	if a, _ := c.STT.CommandProvider("a", envOf(nil)); a.IdleTimeout != 2500*time.Millisecond || a.Format != "json" || a.Language != "pt" {
		t.Fatalf("a: %+v", a)
	}
	if b, _ := c.STT.CommandProvider("b", envOf(map[string]string{"HERMES_LOCAL_STT_LANGUAGE": "nl"})); b.IdleTimeout != DefaultSTTCommandTimeout || b.Format != "txt" || b.Language != "pt" {
		t.Fatalf("b: %+v", b)
	}
	c, _, _ = loadText(t, "stt:\n  providers:\n    b: {command: y}\n")
	if b, _ := c.STT.CommandProvider("b", envOf(nil)); b.Language != "en" {
		t.Fatalf("a command provider's language without any set: %q", b.Language)
	}
}

// The APIs' endpoints, models, language hints and keys, as the familiar
// agent resolves them from config.yaml and its variables.
func TestSTTAPIs(t *testing.T) {
	t.Parallel()
	var none STT
	for _, c := range []struct {
		name string
		stt  STT
		env  map[string]string
		want STTAPI
	}{
		{"openai defaults", none, nil, STTAPI{Provider: "openai", BaseURL: "https://api.openai.com/v1", Model: "whisper-1",
			KeyVars: []string{"VOICE_TOOLS_OPENAI_KEY", "OPENAI_API_KEY"}}},
		{"openai: the voice key first", none, map[string]string{"VOICE_TOOLS_OPENAI_KEY": " sk-voice ", "OPENAI_API_KEY": "sk-main"},
			STTAPI{Provider: "openai", BaseURL: "https://api.openai.com/v1", Model: "whisper-1", KeyVars: []string{"VOICE_TOOLS_OPENAI_KEY", "OPENAI_API_KEY"}, Key: "sk-voice", KeyVar: "VOICE_TOOLS_OPENAI_KEY"}},
		{"openai: the main key else, its variables", none, map[string]string{"OPENAI_API_KEY": "sk-main", "STT_OPENAI_BASE_URL": "http://127.0.0.1:9/v1/",
			"STT_OPENAI_MODEL": "gpt-4o-transcribe", "HERMES_LOCAL_STT_LANGUAGE": "es"},
			STTAPI{Provider: "openai", BaseURL: "http://127.0.0.1:9/v1", Model: "gpt-4o-transcribe", Language: "es", KeyVars: []string{"VOICE_TOOLS_OPENAI_KEY", "OPENAI_API_KEY"}, Key: "sk-main", KeyVar: "OPENAI_API_KEY"}},
		{"openai: a Groq model is corrected", STT{OpenAI: STTEngine{Model: "whisper-large-v3", Language: "fr"}, Language: "de"}, nil,
			STTAPI{Provider: "openai", BaseURL: "https://api.openai.com/v1", Model: "whisper-1", Language: "fr", KeyVars: []string{"VOICE_TOOLS_OPENAI_KEY", "OPENAI_API_KEY"}}},
		{"groq defaults", STT{Language: "de"}, map[string]string{"GROQ_API_KEY": "gsk"},
			STTAPI{Provider: "groq", BaseURL: "https://api.groq.com/openai/v1", Model: "whisper-large-v3-turbo", Language: "de", KeyVars: []string{"GROQ_API_KEY"}, Key: "gsk", KeyVar: "GROQ_API_KEY"}},
		{"groq: an OpenAI model is corrected, its variables", STT{Groq: STTEngine{Model: "whisper-1"}},
			map[string]string{"GROQ_BASE_URL": "http://g/v1", "STT_GROQ_MODEL": "distil-whisper-large-v3-en"},
			STTAPI{Provider: "groq", BaseURL: "http://g/v1", Model: "distil-whisper-large-v3-en", KeyVars: []string{"GROQ_API_KEY"}}},
		{"mistral", STT{Mistral: STTEngine{Language: "it"}}, map[string]string{"MISTRAL_API_KEY": "m", "STT_MISTRAL_MODEL": "voxtral-small-latest"},
			STTAPI{Provider: "mistral", BaseURL: "https://api.mistral.ai/v1", Model: "voxtral-small-latest", Language: "it", KeyVars: []string{"MISTRAL_API_KEY"}, Key: "m", KeyVar: "MISTRAL_API_KEY"}},
		{"mistral defaults", none, nil, STTAPI{Provider: "mistral", BaseURL: "https://api.mistral.ai/v1", Model: "voxtral-mini-latest", KeyVars: []string{"MISTRAL_API_KEY"}}},
	} {
		provider := strings.Fields(c.name)[0]
		provider = strings.TrimSuffix(provider, ":")
		got, ok := c.stt.API(provider, envOf(c.env))
		if !ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	if _, ok := none.API("local", envOf(nil)); ok {
		t.Fatal("local is an API")
	}
}

// The local provider: HERMES_LOCAL_STT_COMMAND, stt.local's model (base
// for a name only an API serves) and language (en at last).
func TestSTTLocalCommand(t *testing.T) {
	t.Parallel()
	cmd, model, lang := STT{}.LocalCommand(envOf(nil))
	if cmd != "" || model != "base" || lang != "en" {
		t.Fatalf("defaults: %q %q %q", cmd, model, lang)
	}
	cmd, model, lang = STT{Local: STTEngine{Model: "whisper-1"}, Language: "ja"}.LocalCommand(envOf(map[string]string{"HERMES_LOCAL_STT_COMMAND": " my-whisper {input_path} "}))
	if cmd != "my-whisper {input_path}" || model != "base" || lang != "ja" {
		t.Fatalf("env: %q %q %q", cmd, model, lang)
	}
	_, model, lang = STT{Local: STTEngine{Model: "large-v3", Language: "ko"}, Language: "ja"}.LocalCommand(envOf(map[string]string{"HERMES_LOCAL_STT_LANGUAGE": "zh"}))
	if model != "large-v3" || lang != "ko" {
		t.Fatalf("own: %q %q", model, lang)
	}
	_, _, lang = STT{}.LocalCommand(envOf(map[string]string{"HERMES_LOCAL_STT_LANGUAGE": "zh"}))
	if lang != "zh" {
		t.Fatalf("the variable's language: %q", lang)
	}
}

// What is wrong with an stt block is said, naming the key.
func TestSTTValidation(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ text, want string }{
		{"stt:\n  provider: whisperx\n", `stt.provider "whisperx" is neither a built-in provider (local, local_command, openai, groq, mistral) nor a command provider declared under stt.providers.whisperx`},
		{"stt:\n  provider: mine\n  providers:\n    mine: {type: command}\n", "stt.providers.mine.command is missing"},
		{"stt:\n  providers:\n    mine: {command: x, timeout: 0}\n", "stt.providers.mine.timeout must be more than 0 and at most 86400 seconds, not 0"},
		{"stt:\n  providers:\n    mine: {command: x, timeout: soon}\n", `stt.providers.mine.timeout "soon" is not a number of seconds`},
		{"stt:\n  providers:\n    mine: {command: x, timeout: -3}\n", "stt.providers.mine.timeout must be more than 0"},
		{"stt:\n  providers:\n    mine: {command: x, format: mp3}\n", `stt.providers.mine.format must be txt, json, srt or vtt, not "mp3"`},
		{"stt:\n  providers:\n    mine: {type: plugin, command: x}\n", `stt.providers.mine.type must be command, not "plugin"`},
		{"stt:\n  providers:\n    groq: {command: x}\n", "stt.providers.groq: groq is a built-in provider"},
		{"stt:\n  providers:\n    mine: {command: x, env_passthrough: [\"sk-abcdefgh\"]}\n", `stt.providers.mine.env_passthrough: "sk-…" is not the name`},
		{"stt:\n  enabled: maybe\n", `stt.enabled must be true or false, not "maybe"`},
		{"stt:\n  providers:\n    \"../x\": {command: x}\n", `stt.providers: "../x" is no name for a provider`},
	} {
		_, _, err := loadText(t, c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.text, err, c.want)
		}
	}
	// A provider of the familiar agent's Atrium does not speak loads, and
	// is said.
	c, w, err := loadText(t, "stt:\n  provider: xai\n")
	if err != nil || len(w) != 1 || !strings.Contains(w[0], "stt.provider xai is the familiar agent's and not one Atrium speaks") || c.STT.Provider != "xai" {
		t.Fatalf("xai: %v %v", w, err)
	}
	// An stt key Atrium does not read is said, as any other.
	_, w, err = loadText(t, "stt:\n  local:\n    device: cuda\n")
	if err != nil || len(w) != 1 || !strings.Contains(w[0], "stt.local.device") {
		t.Fatalf("unknown key: %v %v", w, err)
	}
}

// A command gets this process's environment without the keys' and
// tokens' variables, but for those it names.
func TestCommandEnv(t *testing.T) {
	t.Parallel()
	got := CommandEnv([]string{"PATH=/bin", "OPENAI_API_KEY=sk-1", "GROQ_API_KEY=g", "HF_TOKEN=hf", "LANG=C"}, []string{" hf_token "})
	if want := []string{"PATH=/bin", "HF_TOKEN=hf", "LANG=C"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("%q, want %q", got, want)
	}
}
