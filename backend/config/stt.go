package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// STT is the familiar agent's stt block: how the voice messages people send
// on the chat platforms are transcribed before the agent reads them. Keys
// are read from the environment (or the profile's .env), never from here.
type STT struct {
	// Enabled is stt.enabled: true (the default), or "true"/"yes"/"on"/"1"
	// and their opposites. Off, a voice message reaches the agent as a
	// note naming the saved file.
	Enabled any `yaml:"enabled"`
	// Provider is stt.provider: local (a whisper command on this machine),
	// local_command, openai, groq, mistral, or the name of a command
	// provider of Providers. Unset, the first available is used: a local
	// whisper command, then Groq, OpenAI and Mistral by the key that is
	// set, as the familiar agent chooses.
	Provider string `yaml:"provider"`
	// Language is stt.language: the language hint of every provider whose
	// own section names none (an ISO 639-1 code; "": detected).
	Language string    `yaml:"language"`
	Local    STTEngine `yaml:"local"`
	OpenAI   STTEngine `yaml:"openai"`
	Groq     STTEngine `yaml:"groq"`
	Mistral  STTEngine `yaml:"mistral"`
	// Providers are stt.providers: commands that transcribe (type:
	// command), by the name stt.provider gives them.
	Providers map[string]STTCommand `yaml:"providers"`
}

// STTEngine is a built-in provider's section: its model and language hint
// ("": the provider's default, and stt.language).
type STTEngine struct {
	Model    string `yaml:"model"`
	Language string `yaml:"language"`
}

// STTCommand is a command provider, stt.providers.<name>, in the familiar
// agent's keys: a shell command with placeholders ({input_path},
// {output_path}, {output_dir}, {format}, {language}, {model}; {{ and }}
// are braces) that writes the transcript to {output_path} or prints it.
type STTCommand struct {
	Type    string `yaml:"type"` // command (or unset)
	Command string `yaml:"command"`
	// Timeout (or timeout_seconds) is how many seconds the command may go
	// without printing anything before it is killed (default 300).
	Timeout        any `yaml:"timeout"`
	TimeoutSeconds any `yaml:"timeout_seconds"`
	// Format (or output_format) is what it writes: txt (the default),
	// json, srt or vtt.
	Format       string `yaml:"format"`
	OutputFormat string `yaml:"output_format"`
	// EnvPassthrough names the keys' and tokens' variables the command
	// gets all the same (the others are left out of its environment).
	EnvPassthrough []string `yaml:"env_passthrough"`
	Language       string   `yaml:"language"` // default: stt.language, else en
	Model          string   `yaml:"model"`
}

// The built-in providers of stt.provider.
const (
	STTLocal        = "local"
	STTLocalCommand = "local_command"
	STTOpenAI       = "openai"
	STTGroq         = "groq"
	STTMistral      = "mistral"
)

// sttBuiltIn are Atrium's built-in providers; sttFamiliarOnly the familiar
// agent's that Atrium does not speak (nous is its managed OpenAI audio).
var (
	sttBuiltIn      = []string{STTLocal, STTLocalCommand, STTOpenAI, STTGroq, STTMistral}
	sttFamiliarOnly = []string{"xai", "elevenlabs", "deepinfra", "nous"}
)

// The familiar defaults.
const (
	DefaultSTTCommandTimeout = 300 * time.Second
	defaultLocalSTTModel     = "base"
	defaultCommandLanguage   = "en"
)

// sttFormats are the formats a command provider may write.
var sttFormats = []string{"txt", "json", "srt", "vtt"}

// sttCommands are the rules of stt.providers.
var sttCommands = commandRules{block: "stt", builtIn: STTBuiltIn, formats: sttFormats, def: "txt", formatsSaid: "txt, json, srt or vtt",
	does: "the shell command that transcribes {input_path} (writing {output_path}, or printing the text)", timeout: DefaultSTTCommandTimeout}

// common is what c shares with every command provider.
func (c STTCommand) common() commandCommon {
	return commandCommon{c.Type, c.Command, c.Timeout, c.TimeoutSeconds, c.Format, c.OutputFormat, c.EnvPassthrough}
}

// On reports stt.enabled (default true).
func (s STT) On() bool {
	switch v := s.Enabled.(type) {
	case nil:
		return true
	case bool:
		return v
	case string:
		on, ok := yesNo(v)
		return !ok || on
	}
	return true
}

// yesNo reads a switch written as text; ok is false when it is neither.
func yesNo(s string) (on, ok bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "1", "true", "yes", "on":
		return true, true
	case "0", "false", "no", "off":
		return false, true
	}
	return false, false
}

// Chosen is stt.provider in lower case, and whether it is set: unset, the
// first available provider is taken.
func (s STT) Chosen() (name string, explicit bool) {
	name = strings.ToLower(strings.TrimSpace(s.Provider))
	return name, name != ""
}

// STTBuiltIn reports whether name is a built-in provider (any case).
func STTBuiltIn(name string) bool { return named(sttBuiltIn, name) }

// STTFamiliarOnly reports whether name is a provider of the familiar
// agent's that Atrium does not speak.
func STTFamiliarOnly(name string) bool { return named(sttFamiliarOnly, name) }

// named reports whether name, in any case, is one of list.
func named(list []string, name string) bool {
	return slices.Contains(list, strings.ToLower(strings.TrimSpace(name)))
}

// FirstSet is the value of the first of vars getenv has set (trimmed),
// and its name; "" and "" when none is.
func FirstSet(vars []string, getenv func(string) string) (value, name string) {
	for _, v := range vars {
		if value = strings.TrimSpace(getenv(v)); value != "" {
			return value, v
		}
	}
	return "", ""
}

// Unset says that none of vars is set: "X is not set", "neither X nor Y
// is set".
func Unset(vars []string) string {
	if len(vars) == 1 {
		return vars[0] + " is not set"
	}
	return "neither " + strings.Join(vars, " nor ") + " is set"
}

// STTAPI is a transcription API as config.yaml and the environment give
// it: where to post, the model, the language hint ("": detected), and the
// key with the variables it is read from.
type STTAPI struct {
	Provider string
	BaseURL  string
	Model    string
	Language string
	KeyVars  []string
	Key      string // "" when none of KeyVars is set
	KeyVar   string // the one of KeyVars Key was read from
}

// The familiar agent's models of each API, when neither its section nor
// its variable names one, and the models it moves from one API to the
// other.
var (
	openAISTTModels = []string{"whisper-1", "gpt-4o-mini-transcribe", "gpt-4o-transcribe", "gpt-transcribe"}
	groqSTTModels   = []string{"whisper-large-v3", "whisper-large-v3-turbo", "distil-whisper-large-v3-en"}
)

// API is the transcription API provider (openai, groq or mistral) as it
// is now: false for another provider.
func (s STT) API(provider string, getenv func(string) string) (STTAPI, bool) {
	env := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	var a STTAPI
	var sec STTEngine
	switch provider {
	case STTOpenAI:
		sec = s.OpenAI
		a = STTAPI{BaseURL: env("STT_OPENAI_BASE_URL", "https://api.openai.com/v1"), KeyVars: []string{"VOICE_TOOLS_OPENAI_KEY", "OPENAI_API_KEY"}}
		a.Model = cmp.Or(sec.Model, env("STT_OPENAI_MODEL", "whisper-1"))
		if slices.Contains(groqSTTModels, a.Model) { // Groq's, as the familiar agent corrects it
			a.Model = env("STT_OPENAI_MODEL", "whisper-1")
		}
	case STTGroq:
		sec = s.Groq
		a = STTAPI{BaseURL: env("GROQ_BASE_URL", "https://api.groq.com/openai/v1"), KeyVars: []string{"GROQ_API_KEY"}}
		a.Model = cmp.Or(sec.Model, env("STT_GROQ_MODEL", "whisper-large-v3-turbo"))
		if slices.Contains(openAISTTModels, a.Model) {
			a.Model = env("STT_GROQ_MODEL", "whisper-large-v3-turbo")
		}
	case STTMistral:
		sec = s.Mistral
		a = STTAPI{BaseURL: "https://api.mistral.ai/v1", KeyVars: []string{"MISTRAL_API_KEY"}}
		a.Model = cmp.Or(sec.Model, env("STT_MISTRAL_MODEL", "voxtral-mini-latest"))
	default:
		return STTAPI{}, false
	}
	a.Provider = provider
	a.BaseURL = strings.TrimRight(a.BaseURL, "/")
	a.Language = s.language(sec.Language, getenv)
	a.Key, a.KeyVar = FirstSet(a.KeyVars, getenv)
	return a, true
}

// LocalCommand is the local provider's command: HERMES_LOCAL_STT_COMMAND
// ("" when unset: a whisper program found on this machine is run
// instead), with stt.local's model (base, when unset or one only an API
// serves) and language (en, when neither it, stt.language nor
// HERMES_LOCAL_STT_LANGUAGE names one).
func (s STT) LocalCommand(getenv func(string) string) (command, model, language string) {
	model = strings.TrimSpace(s.Local.Model)
	if model == "" || slices.Contains(openAISTTModels, model) || slices.Contains(groqSTTModels, model) {
		model = defaultLocalSTTModel
	}
	language = cmp.Or(s.language(s.Local.Language, getenv), defaultCommandLanguage)
	return strings.TrimSpace(getenv("HERMES_LOCAL_STT_COMMAND")), model, language
}

// STTCommandSpec is a command provider as it runs.
type STTCommandSpec struct {
	Name        string
	Command     string
	IdleTimeout time.Duration // killed after this long without output
	Format      string        // txt, json, srt or vtt
	Passthrough []string
	Language    string
	Model       string
}

// CommandProvider is the command provider stt.providers names name (any
// case); false when there is none.
func (s STT) CommandProvider(name string, getenv func(string) string) (STTCommandSpec, bool) {
	key, c, ok := commandNamed(s.Providers, name)
	if !ok {
		return STTCommandSpec{}, false
	}
	command, timeout, format, ok := sttCommands.resolve(key, c.common())
	if !ok {
		return STTCommandSpec{}, false
	}
	return STTCommandSpec{Name: key, Command: command, IdleTimeout: timeout, Format: format,
		Passthrough: c.EnvPassthrough, Language: cmp.Or(strings.TrimSpace(c.Language), s.language("", getenv), defaultCommandLanguage),
		Model: strings.TrimSpace(c.Model)}, true
}

// language is a provider's language hint: its own, else stt.language,
// else HERMES_LOCAL_STT_LANGUAGE ("": none).
func (s STT) language(own string, getenv func(string) string) string {
	return cmp.Or(strings.TrimSpace(own), strings.TrimSpace(s.Language), strings.TrimSpace(getenv("HERMES_LOCAL_STT_LANGUAGE")))
}

// validate checks the stt block.
func (s STT) validate() error {
	switch v := s.Enabled.(type) {
	case nil, bool:
	case string:
		if _, ok := yesNo(v); !ok {
			return fmt.Errorf("stt.enabled must be true or false, not %q", v)
		}
	default:
		return fmt.Errorf("stt.enabled must be true or false, not %v", v)
	}
	if err := checkCommands(sttCommands, s.Providers, STTCommand.common, nil); err != nil {
		return err
	}
	name, explicit := s.Chosen()
	if !explicit {
		return nil
	}
	return checkChosen(sttCommands, s.Provider, name, func(n string) bool { return STTBuiltIn(n) || STTFamiliarOnly(n) }, sttBuiltIn, s.Providers)
}

// sttWarnings say what of the stt block Atrium will not do.
func (s STT) sttWarnings(path string) []string {
	if name, _ := s.Chosen(); STTFamiliarOnly(name) {
		return []string{fmt.Sprintf("config %s: stt.provider %s is the familiar agent's and not one Atrium speaks: voice messages will not be transcribed until it is local, openai, groq, mistral or a command provider", path, name)}
	}
	return nil
}
