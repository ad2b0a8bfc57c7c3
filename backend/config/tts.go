package config

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"atrium/backend/limits"
)

// TTS is the familiar agent's tts block: how the text_to_speech tool
// speaks. The person chooses the provider and the voice; the model only
// sends text. Keys are read from the environment (or the profile's .env),
// never from here.
type TTS struct {
	// Provider is tts.provider: openai, elevenlabs, or the name of a
	// command provider of Providers. Unset, it is the familiar agent's
	// default, edge (Microsoft Edge's online voices, through a Python
	// package), which Atrium does not have: a paid provider is never
	// chosen because its key happens to be set.
	Provider string `yaml:"provider"`
	// Speed is tts.speed: how fast every provider speaks (1.0; 0.25 to 4)
	// unless its own section says.
	Speed      any                  `yaml:"speed"`
	OpenAI     TTSOpenAISection     `yaml:"openai"`
	ElevenLabs TTSElevenLabsSection `yaml:"elevenlabs"`
	// Providers are tts.providers: commands that speak (type: command),
	// by the name tts.provider gives them.
	Providers map[string]TTSCommand `yaml:"providers"`
}

// TTSOpenAISection is tts.openai: the model, the voice, another OpenAI-compatible
// server (base_url), its speed, and the longest text one request takes
// (longer text is spoken in parts).
type TTSOpenAISection struct {
	Model         string `yaml:"model"`
	Voice         string `yaml:"voice"`
	BaseURL       string `yaml:"base_url"`
	Speed         any    `yaml:"speed"`
	MaxTextLength any    `yaml:"max_text_length"`
}

// TTSElevenLabsSection is tts.elevenlabs: the voice and model ids, another
// server (base_url), and the longest text one request takes.
type TTSElevenLabsSection struct {
	VoiceID       string `yaml:"voice_id"`
	ModelID       string `yaml:"model_id"`
	BaseURL       string `yaml:"base_url"`
	MaxTextLength any    `yaml:"max_text_length"`
}

// TTSCommand is a command provider, tts.providers.<name>, in the familiar
// agent's keys: a shell command with placeholders ({input_path} or
// {text_path}, the text's file; {output_path}; {format}; {voice};
// {model}; {speed}; {{ and }} are braces) that writes the audio to
// {output_path}.
type TTSCommand struct {
	Type    string `yaml:"type"` // command (or unset)
	Command string `yaml:"command"`
	// Timeout (or timeout_seconds) is how many seconds the command may go
	// without printing anything before it is killed (default 120).
	Timeout        any `yaml:"timeout"`
	TimeoutSeconds any `yaml:"timeout_seconds"`
	// Format (or output_format) is the audio it writes: mp3 (the
	// default), wav, ogg, flac, m4a, aac, amr or opus.
	Format       string `yaml:"format"`
	OutputFormat string `yaml:"output_format"`
	Voice        string `yaml:"voice"`
	Model        string `yaml:"model"`
	Speed        any    `yaml:"speed"` // default: tts.speed
	// EnvPassthrough names the keys' and tokens' variables the command
	// gets all the same (the others are left out of its environment).
	EnvPassthrough []string `yaml:"env_passthrough"`
	// VoiceCompatible says its audio may go as a voice message (Ogg/Opus,
	// or converted to it with ffmpeg); off, it goes as an audio file.
	VoiceCompatible any `yaml:"voice_compatible"`
	// MaxTextLength is the longest text one run is given (5,000).
	MaxTextLength any `yaml:"max_text_length"`
}

// The built-in providers of tts.provider Atrium speaks.
const (
	TTSOpenAI     = "openai"
	TTSElevenLabs = "elevenlabs"
	// TTSEdge is the familiar agent's default provider.
	TTSEdge = "edge"
)

// ttsBuiltIn are Atrium's built-in providers; ttsFamiliarOnly the familiar
// agent's that Atrium does not speak (nous is its managed OpenAI audio).
// No command provider may take one of their names.
var (
	ttsBuiltIn      = []string{TTSOpenAI, TTSElevenLabs}
	ttsFamiliarOnly = []string{TTSEdge, "minimax", "xai", "mistral", "gemini", "neutts", "kittentts", "piper", "deepinfra", "nous"}
)

// The familiar defaults.
const (
	DefaultTTSCommandTimeout   = 120 * time.Second
	defaultTTSCommandFormat    = "mp3"
	defaultTTSCommandMaxLength = 5000
	defaultOpenAITTSModel      = "gpt-4o-mini-tts"
	defaultOpenAITTSVoice      = "alloy"
	defaultOpenAITTSBase       = "https://api.openai.com/v1"
	defaultOpenAITTSMaxLength  = 4096
	defaultElevenLabsVoiceID   = "pNInz6obpgDQGcFmaJgB" // Adam
	defaultElevenLabsModelID   = "eleven_multilingual_v2"
	defaultElevenLabsBase      = "https://api.elevenlabs.io"
	defaultElevenLabsMaxLength = 10000
)

// ttsFormats are the formats a command provider may write.
var ttsFormats = []string{"mp3", "wav", "ogg", "flac", "m4a", "aac", "amr", "opus"}

// ttsKnown says name is a provider of the familiar tts block (Atrium's or
// not): no command provider's name.
func ttsKnown(name string) bool { return TTSBuiltIn(name) || TTSFamiliarOnly(name) }

// ttsCommands are the rules of tts.providers.
var ttsCommands = commandRules{block: "tts", builtIn: ttsKnown, formats: ttsFormats, def: defaultTTSCommandFormat,
	formatsSaid: "one of " + strings.Join(ttsFormats, ", "), does: "the shell command that speaks the text of {input_path} into {output_path}",
	timeout: DefaultTTSCommandTimeout}

// common is what c shares with every command provider.
func (c TTSCommand) common() commandCommon {
	return commandCommon{c.Type, c.Command, c.Timeout, c.TimeoutSeconds, c.Format, c.OutputFormat, c.EnvPassthrough}
}

// elevenLabsMaxLength is how much text each ElevenLabs model takes in one
// request, as the familiar agent has it.
var elevenLabsMaxLength = map[string]int{
	"eleven_v3": 5000, "eleven_ttv_v3": 5000,
	"eleven_multilingual_v2": 10000, "eleven_multilingual_v1": 10000,
	"eleven_english_sts_v2": 10000, "eleven_english_sts_v1": 10000,
	"eleven_flash_v2": 30000, "eleven_flash_v2_5": 40000,
}

// Chosen is the provider a call uses: name (the tool's provider
// argument) when given, else tts.provider, else edge; in lower case.
func (t TTS) Chosen(name string) string {
	return strings.ToLower(strings.TrimSpace(cmp.Or(strings.TrimSpace(name), strings.TrimSpace(t.Provider), TTSEdge)))
}

// TTSBuiltIn reports whether name is a built-in provider Atrium speaks.
func TTSBuiltIn(name string) bool { return named(ttsBuiltIn, name) }

// TTSFamiliarOnly reports whether name is a provider of the familiar
// agent's that Atrium does not speak.
func TTSFamiliarOnly(name string) bool { return named(ttsFamiliarOnly, name) }

// TTSAPI is a speech API as config.yaml and the environment give it.
type TTSAPI struct {
	Provider string
	BaseURL  string
	Model    string // OpenAI's model, ElevenLabs' model_id
	Voice    string // OpenAI's voice, ElevenLabs' voice_id
	Speed    float64
	// MaxText is the most characters one request is given.
	MaxText int
	KeyVars []string
	Key     string // "" when none of KeyVars is set
	KeyVar  string // the one of KeyVars Key was read from
}

// API is the speech API provider (openai or elevenlabs) as it is now,
// speed the call's own (0: tts.speed); false for another provider.
func (t TTS) API(provider string, speed float64, getenv func(string) string) (TTSAPI, bool) {
	var a TTSAPI
	switch provider {
	case TTSOpenAI:
		o := t.OpenAI
		a = TTSAPI{BaseURL: cmp.Or(strings.TrimSpace(o.BaseURL), defaultOpenAITTSBase), Model: cmp.Or(strings.TrimSpace(o.Model), defaultOpenAITTSModel),
			Voice: cmp.Or(strings.TrimSpace(o.Voice), defaultOpenAITTSVoice), KeyVars: []string{"VOICE_TOOLS_OPENAI_KEY", "OPENAI_API_KEY"},
			MaxText: cmp.Or(positiveInt(o.MaxTextLength), defaultOpenAITTSMaxLength)}
		// The section's speed, else the call's, else tts.speed.
		a.Speed = 1
		if s, ok := speedOf(o.Speed); ok {
			a.Speed = s
		} else if speed > 0 {
			a.Speed = speed
		} else if s, ok := speedOf(t.Speed); ok {
			a.Speed = s
		}
		a.Speed = max(0.25, min(4, a.Speed))
	case TTSElevenLabs:
		e := t.ElevenLabs
		a = TTSAPI{BaseURL: cmp.Or(strings.TrimSpace(e.BaseURL), defaultElevenLabsBase), Model: cmp.Or(strings.TrimSpace(e.ModelID), defaultElevenLabsModelID),
			Voice: cmp.Or(strings.TrimSpace(e.VoiceID), defaultElevenLabsVoiceID), KeyVars: []string{"ELEVENLABS_API_KEY"}, Speed: 1}
		a.MaxText = cmp.Or(positiveInt(e.MaxTextLength), elevenLabsMaxLength[a.Model], defaultElevenLabsMaxLength)
	default:
		return TTSAPI{}, false
	}
	a.Provider = provider
	a.BaseURL = strings.TrimRight(a.BaseURL, "/")
	a.Key, a.KeyVar = FirstSet(a.KeyVars, getenv)
	return a, true
}

// TTSCommandSpec is a command provider as it runs.
type TTSCommandSpec struct {
	Name            string
	Command         string
	IdleTimeout     time.Duration // killed after this long without output
	Format          string        // one of ttsFormats
	Passthrough     []string
	Voice, Model    string
	Speed           string // "" when neither it nor tts.speed says
	VoiceCompatible bool
	MaxText         int
}

// CommandProvider is the command provider tts.providers names name (any
// case), speed the call's own (0: the provider's, else tts.speed); false
// when there is none.
func (t TTS) CommandProvider(name string, speed float64) (TTSCommandSpec, bool) {
	key, c, ok := commandNamed(t.Providers, name)
	if !ok {
		return TTSCommandSpec{}, false
	}
	command, timeout, format, ok := ttsCommands.resolve(key, c.common())
	if !ok {
		return TTSCommandSpec{}, false
	}
	spec := TTSCommandSpec{Name: key, Command: command, IdleTimeout: timeout, Format: format, Passthrough: c.EnvPassthrough,
		Voice: strings.TrimSpace(c.Voice), Model: strings.TrimSpace(c.Model), MaxText: cmp.Or(positiveInt(c.MaxTextLength), defaultTTSCommandMaxLength)}
	spec.VoiceCompatible, _ = switchOf(c.VoiceCompatible)
	// The provider's speed, else the call's, else tts.speed, as the
	// familiar agent fills {speed}.
	if s, ok := speedOf(c.Speed); ok {
		spec.Speed = formatSpeed(s)
	} else if speed > 0 {
		spec.Speed = formatSpeed(speed)
	} else if s, ok := speedOf(t.Speed); ok {
		spec.Speed = formatSpeed(s)
	}
	return spec, true
}

// TTSFormats are the formats a command provider may write.
func TTSFormats() []string { return slices.Clone(ttsFormats) }

// speedOf reads a speed (a number, or its text); false when unset or no
// number.
func speedOf(v any) (float64, bool) {
	if s, ok := v.(string); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	f, ok := limits.YAMLNumber(v)
	return f, ok && !math.IsNaN(f) && !math.IsInf(f, 0)
}

func formatSpeed(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// positiveInt is v when it is a whole number above 0 (0 otherwise).
func positiveInt(v any) int {
	f, ok := limits.YAMLNumber(v)
	if !ok || f <= 0 || f != math.Trunc(f) || f > math.MaxInt32 {
		return 0
	}
	return int(f)
}

// switchOf reads a true/false setting (a YAML switch or its text); ok is
// false when it is neither.
func switchOf(v any) (on, ok bool) {
	switch v := v.(type) {
	case nil:
		return false, true
	case bool:
		return v, true
	case string:
		if strings.TrimSpace(v) == "" {
			return false, true
		}
		return yesNo(v)
	}
	return false, false
}

// validate checks the tts block.
func (t TTS) validate() error {
	for _, s := range []struct {
		key string
		v   any
	}{{"tts.speed", t.Speed}, {"tts.openai.speed", t.OpenAI.Speed}} {
		if err := checkSpeed(s.key, s.v); err != nil {
			return err
		}
	}
	for _, l := range []struct {
		key string
		v   any
	}{{"tts.openai.max_text_length", t.OpenAI.MaxTextLength}, {"tts.elevenlabs.max_text_length", t.ElevenLabs.MaxTextLength}} {
		if l.v != nil && positiveInt(l.v) == 0 {
			return fmt.Errorf("%s must be a whole number of characters above 0, not %v", l.key, l.v)
		}
	}
	if err := checkURL("tts.openai.base_url", strings.TrimSpace(t.OpenAI.BaseURL)); err != nil {
		return err
	}
	if err := checkURL("tts.elevenlabs.base_url", strings.TrimSpace(t.ElevenLabs.BaseURL)); err != nil {
		return err
	}
	if err := checkCommands(ttsCommands, t.Providers, TTSCommand.common, func(key string, c TTSCommand) error {
		if err := checkSpeed(key+".speed", c.Speed); err != nil {
			return err
		}
		if _, ok := switchOf(c.VoiceCompatible); !ok {
			return fmt.Errorf("%s.voice_compatible must be true or false, not %v", key, c.VoiceCompatible)
		}
		if c.MaxTextLength != nil && positiveInt(c.MaxTextLength) == 0 {
			return fmt.Errorf("%s.max_text_length must be a whole number of characters above 0, not %v", key, c.MaxTextLength)
		}
		return nil
	}); err != nil {
		return err
	}
	return checkChosen(ttsCommands, t.Provider, t.Chosen(""), ttsKnown, ttsBuiltIn, t.Providers)
}

// checkSpeed checks a speed setting: unset, or a number from 0.25 to 4.
func checkSpeed(key string, v any) error {
	if v == nil {
		return nil
	}
	if f, ok := speedOf(v); !ok || f < 0.25 || f > 4 {
		return fmt.Errorf("%s must be a number from 0.25 to 4 (1 is normal), not %v", key, v)
	}
	return nil
}

// ttsWarnings say what of the tts block Atrium will not do.
func (t TTS) ttsWarnings(path string) []string {
	if strings.TrimSpace(t.Provider) == "" {
		return nil // the familiar default: text_to_speech says why it is not offered
	}
	if name := t.Chosen(""); TTSFamiliarOnly(name) {
		return []string{fmt.Sprintf("config %s: tts.provider %s is the familiar agent's and not one Atrium speaks: text_to_speech is not offered until it is openai, elevenlabs or a command provider of tts.providers", path, name)}
	}
	return nil
}
