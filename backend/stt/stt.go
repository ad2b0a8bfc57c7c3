// Package stt transcribes audio files (the voice messages people send on
// the chat platforms) as the familiar agent's transcription tool does: with
// the provider config.yaml's stt block chooses, or the first one this
// machine and its keys make available: a whisper command here, Groq,
// OpenAI or Mistral over their APIs, or a command of the person's own.
package stt

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"atrium/backend/cmdprovider"
	"atrium/backend/config"
)

// MaxUploadBytes is the largest file sent to a provider that is not a
// local command (the familiar agent's cap, the APIs' own).
const MaxUploadBytes = 25 << 20

// SupportedFormats are the audio files a provider is given, by extension.
var SupportedFormats = []string{".aac", ".caf", ".flac", ".m4a", ".mp3", ".mp4", ".mpeg", ".mpga", ".oga", ".ogg", ".opus", ".wav", ".webm"}

// ErrUnavailable is the error of a transcription no provider can make:
// none is configured, or the one configured lacks its command or key.
var ErrUnavailable = errors.New("no speech-to-text provider is available")

// ErrNoSpeech is the error of a transcription that came back empty.
var ErrNoSpeech = errors.New("the provider heard no speech in the audio")

// Transcriber transcribes with config.yaml's stt block as it was when it
// was made, and the environment getenv reads (the profile's .env in it).
type Transcriber struct {
	cfg    config.STT
	getenv func(string) string
	// machine is where commands run and whisper and ffmpeg are found;
	// apiBase overrides an API's base URL (tests).
	machine cmdprovider.Machine
	client  *http.Client
	apiBase map[string]string
}

// New is a Transcriber of cfg, its variables read with getenv.
func New(cfg config.STT, getenv func(string) string) *Transcriber {
	return &Transcriber{cfg: cfg, getenv: getenv, machine: cmdprovider.Local(), client: http.DefaultClient}
}

// Transcribe is the text spoken in the audio file at path. Its error says
// what went wrong in words a person can act on (a key never in them);
// errors.Is(err, ErrUnavailable) when no provider could be asked.
func (t *Transcriber) Transcribe(ctx context.Context, path string) (string, error) {
	size, err := checkAudio(path)
	if err != nil {
		return "", err
	}
	p, err := t.choose()
	if err != nil {
		return "", err
	}
	if !p.local() && size > MaxUploadBytes {
		return "", fmt.Errorf("the audio file is %.1f MB; %s takes at most %d MB: it was not sent", float64(size)/(1<<20), p.name, MaxUploadBytes>>20)
	}
	var text string
	switch {
	case p.api != nil:
		text, err = t.viaAPI(ctx, *p.api, path)
	case p.cmd != nil:
		text, err = t.viaCommand(ctx, *p.cmd, path)
	default:
		text, err = t.viaLocal(ctx, p.localCmd, path)
	}
	if err != nil {
		return "", err
	}
	if text = strings.TrimSpace(text); text == "" {
		return "", fmt.Errorf("%s: %w", p.name, ErrNoSpeech)
	}
	return text, nil
}

// provider is the one chosen: a local whisper command (localCmd), an API
// or a command provider.
type provider struct {
	name     string
	localCmd string
	api      *config.STTAPI
	cmd      *config.STTCommandSpec
}

// local reports whether the audio stays on this machine as it is: the
// familiar agent spares only its local providers the upload cap.
func (p provider) local() bool { return p.api == nil && p.cmd == nil }

// choose picks the provider as the familiar agent's _get_provider does:
// the one stt.provider names, with no other in its place; unset, a local
// whisper command, else Groq, OpenAI, Mistral, whichever has its key.
func (t *Transcriber) choose() (provider, error) {
	name, explicit := t.cfg.Chosen()
	if !explicit {
		if cmd, ok := t.localTemplate(); ok {
			return provider{name: config.STTLocalCommand, localCmd: cmd}, nil
		}
		for _, n := range []string{config.STTGroq, config.STTOpenAI, config.STTMistral} {
			if a, _ := t.apiOf(n); a.Key != "" {
				return provider{name: n, api: &a}, nil
			}
		}
		return provider{}, fmt.Errorf("%w: set HERMES_LOCAL_STT_COMMAND or install the whisper command (openai-whisper) for free local transcription, "+
			"or set GROQ_API_KEY (Groq Whisper), VOICE_TOOLS_OPENAI_KEY or OPENAI_API_KEY (OpenAI), or MISTRAL_API_KEY (Mistral Voxtral) "+
			"in the profile's .env, or name a command provider in stt.provider", ErrUnavailable)
	}
	switch {
	case name == config.STTLocal || name == config.STTLocalCommand:
		if cmd, ok := t.localTemplate(); ok {
			return provider{name: config.STTLocalCommand, localCmd: cmd}, nil
		}
		return provider{}, fmt.Errorf("%w: stt.provider is %s, but HERMES_LOCAL_STT_COMMAND is not set and no whisper command was found "+
			"(on PATH, in /opt/homebrew/bin or /usr/local/bin): install openai-whisper, or set HERMES_LOCAL_STT_COMMAND", ErrUnavailable, name)
	case config.STTFamiliarOnly(name):
		return provider{}, fmt.Errorf("%w: stt.provider %s is the familiar agent's, and not one Atrium speaks (local, openai, groq, mistral, or a command provider)", ErrUnavailable, name)
	}
	if a, ok := t.apiOf(name); ok {
		if a.Key == "" {
			return provider{}, fmt.Errorf("%w: stt.provider is %s, but %s (in the environment or the profile's .env)", ErrUnavailable, name, config.Unset(a.KeyVars))
		}
		return provider{name: name, api: &a}, nil
	}
	if c, ok := t.cfg.CommandProvider(name, t.getenv); ok {
		return provider{name: c.Name, cmd: &c}, nil
	}
	return provider{}, fmt.Errorf("%w: stt.provider %q is set, but no built-in or command provider has that name: declare its command under stt.providers.%s.command",
		ErrUnavailable, t.cfg.Provider, name)
}

// apiOf is the API provider name as it is now (false: name is none).
func (t *Transcriber) apiOf(name string) (config.STTAPI, bool) {
	a, ok := t.cfg.API(name, t.getenv)
	if base := t.apiBase[name]; ok && base != "" {
		a.BaseURL = base
	}
	return a, ok
}

// localTemplate is the local provider's command template:
// HERMES_LOCAL_STT_COMMAND, else the familiar agent's for a whisper
// command found on this machine.
func (t *Transcriber) localTemplate() (string, bool) {
	if cmd, _, _ := t.cfg.LocalCommand(t.getenv); cmd != "" {
		return cmd, true
	}
	if bin := t.machine.Find("whisper"); bin != "" {
		return cmdprovider.ShellQuote(bin) + " {input_path} --model {model} --output_format txt --output_dir {output_dir} --language {language}", true
	}
	return "", false
}

// checkAudio refuses what is not an audio file a provider may be given
// (a link, a folder, a format none takes), and returns its size.
func checkAudio(path string) (int64, error) {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return 0, fmt.Errorf("audio file not found: %s", path)
	case err != nil:
		return 0, fmt.Errorf("cannot read the audio file: %w", err)
	case fi.Mode()&os.ModeSymlink != 0:
		return 0, fmt.Errorf("the audio file %s is a symbolic link: refused", path)
	case !fi.Mode().IsRegular():
		return 0, fmt.Errorf("%s is not a file", path)
	}
	if ext := strings.ToLower(filepath.Ext(path)); !slices.Contains(SupportedFormats, ext) {
		return 0, fmt.Errorf("unsupported audio format %q; supported: %s", ext, strings.Join(SupportedFormats, ", "))
	}
	return fi.Size(), nil
}
