// Package tts speaks text into an audio file as the familiar agent's
// text_to_speech tool does: with the provider config.yaml's tts block
// chooses (OpenAI or ElevenLabs over their APIs, or a command of the
// person's own), Ogg/Opus for a platform whose voice messages are Ogg/Opus
// (Telegram) and MP3 elsewhere, a text longer than a provider takes in one
// request spoken in parts, in order, none of it dropped.
package tts

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"atrium/backend/cmdprovider"
	"atrium/backend/config"
)

// ErrUnavailable is the error of speech no provider can make: the one
// chosen is not one Atrium has, or lacks its key.
var ErrUnavailable = errors.New("no text-to-speech provider is available")

// opusPlatforms are the platforms whose voice messages must be Ogg/Opus
// (an MP3 shows there as a broken voice message), as the familiar agent
// has them.
var opusPlatforms = []string{"telegram", "matrix", "feishu", "whatsapp", "signal"}

// Speaker speaks with config.yaml's tts block as it was when it was made,
// and the environment getenv reads (the profile's .env in it).
type Speaker struct {
	cfg    config.TTS
	dir    string // where audio goes when no path is given
	getenv func(string) string
	// machine is where commands run and ffmpeg is found; apiBase
	// overrides an API's base URL (tests).
	machine cmdprovider.Machine
	client  *http.Client
	apiBase map[string]string
	now     func() time.Time
}

// New is a Speaker of cfg that keeps its audio in dir (AudioDir), its
// variables read with getenv.
func New(cfg config.TTS, dir string, getenv func(string) string) *Speaker {
	return &Speaker{cfg: cfg, dir: dir, getenv: getenv, machine: cmdprovider.Local(), client: http.DefaultClient, now: time.Now}
}

// AudioDir is where a profile (its folder) keeps the audio it speaks, as
// the familiar agent keeps it: audio_cache when the profile has one (an
// install brought from there), else cache/audio.
func AudioDir(profile string) string {
	if fi, err := os.Stat(filepath.Join(profile, "audio_cache")); err == nil && fi.IsDir() {
		return filepath.Join(profile, "audio_cache")
	}
	return filepath.Join(profile, "cache", "audio")
}

// Request is what to speak, and how.
type Request struct {
	Text string
	// OutputPath is where the audio goes (absolute; "": a new file in the
	// audio folder). A command provider's format decides its extension.
	OutputPath string
	// Provider is the provider the call names ("": tts.provider).
	Provider string
	// Speed is the call's speed (0: as config.yaml says).
	Speed float64
	// Instructions is how to speak (OpenAI's voice design; the others
	// have none).
	Instructions string
	// Platform is the conversation's platform: telegram and the others of
	// opusPlatforms take a voice message only as Ogg/Opus.
	Platform string
	// Check refuses a path audio may not be written to (nil: any).
	Check func(path string) error
}

// Result is the audio spoken.
type Result struct {
	// Path is the audio's file; Paths every file when a long text was
	// spoken in parts (Path first).
	Path     string
	Paths    []string
	Provider string
	// VoiceCompatible says the audio may go as a voice message: Ogg/Opus,
	// made for a platform that wants it.
	VoiceCompatible bool
	// Chunks is how many requests the text took.
	Chunks   int
	Delivery Delivery
}

// Delivery is the most a platform takes of a bot's audio file, as the
// familiar agent has it, and the size it aims below.
type Delivery struct {
	Platform        string
	MaxFileBytes    int64
	TargetFileBytes int64
}

// deliveryOf is platform's Delivery.
func deliveryOf(platform string) Delivery {
	d := Delivery{Platform: strings.ToLower(strings.TrimSpace(platform)), MaxFileBytes: 10 << 20}
	switch d.Platform {
	case "telegram":
		d.MaxFileBytes = 50 << 20
	case "discord":
	default:
		d.Platform = "default"
	}
	d.TargetFileBytes = d.MaxFileBytes * 85 / 100
	return d
}

// provider is the one chosen: an API or a command provider.
type provider struct {
	name string
	api  *config.TTSAPI
	cmd  *config.TTSCommandSpec
}

// maxText is how much text one request takes.
func (p provider) maxText() int {
	if p.api != nil {
		return p.api.MaxText
	}
	return p.cmd.MaxText
}

// Problem says why name (the call's provider; "": tts.provider) cannot
// speak here ("" when it can), as the familiar agent checks before it
// offers text_to_speech.
func (s *Speaker) Problem(name string) string {
	if _, err := s.choose(name, 0); err != nil {
		return err.Error()
	}
	return ""
}

// choose is the provider name names ("": tts.provider): the familiar
// agent takes the one named, never another in its place.
func (s *Speaker) choose(name string, speed float64) (provider, error) {
	chosen := s.cfg.Chosen(name)
	if a, ok := s.cfg.API(chosen, speed, s.getenv); ok {
		if base := s.apiBase[chosen]; base != "" {
			a.BaseURL = base
		}
		if a.Key == "" {
			return provider{}, fmt.Errorf("%w: the TTS provider is %s, but %s (in the environment or the profile's .env)", ErrUnavailable, chosen, config.Unset(a.KeyVars))
		}
		return provider{name: chosen, api: &a}, nil
	}
	if config.TTSFamiliarOnly(chosen) {
		what := "the familiar agent's"
		if chosen == config.TTSEdge {
			what = "the familiar agent's default (Microsoft Edge's online voices, through a Python package)"
		}
		return provider{}, fmt.Errorf("%w: the TTS provider is %s, %s, which Atrium does not have: set tts.provider to openai (with VOICE_TOOLS_OPENAI_KEY or OPENAI_API_KEY), "+
			"elevenlabs (with ELEVENLABS_API_KEY) or the name of a command provider under tts.providers", ErrUnavailable, chosen, what)
	}
	if c, ok := s.cfg.CommandProvider(chosen, speed); ok {
		return provider{name: c.Name, cmd: &c}, nil
	}
	return provider{}, fmt.Errorf("%w: no TTS provider is named %q: the built-in ones are openai and elevenlabs; a command provider is declared under tts.providers.%s.command",
		ErrUnavailable, chosen, chosen)
}

// Speak speaks req.Text into an audio file. A text longer than the
// provider takes is spoken in parts, each its own file. Its error says
// what went wrong in words a person can act on (a key never in them), and
// no file of a failed call is left behind.
func (s *Speaker) Speak(ctx context.Context, req Request) (Result, error) {
	if strings.TrimSpace(req.Text) == "" {
		return Result{}, errors.New("Text is required")
	}
	p, err := s.choose(req.Provider, req.Speed)
	if err != nil {
		return Result{}, err
	}
	chunks := Split(req.Text, p.maxText())
	wantOpus := slices.Contains(opusPlatforms, strings.ToLower(strings.TrimSpace(req.Platform)))
	base, reserved, err := s.outputBase(req.OutputPath, p, wantOpus)
	if err != nil {
		return Result{}, err
	}
	check := func(path string) error {
		if req.Check == nil {
			return nil
		}
		return req.Check(path)
	}
	var made []string // every file written, removed unless delivered
	keep := map[string]bool{}
	defer func() {
		for _, f := range append(made, reserved) {
			if f != "" && !keep[f] {
				_ = os.Remove(f)
			}
		}
	}()
	res := Result{Provider: p.name, Chunks: len(chunks), Delivery: deliveryOf(req.Platform), VoiceCompatible: true}
	var paths []string
	for i, chunk := range chunks {
		path := base
		if len(chunks) > 1 {
			path = numbered(base, "chunk", i+1, 3)
		}
		if err := check(path); err != nil {
			return Result{}, err
		}
		out, voice, err := s.speakOne(ctx, p, chunk, path, req.Instructions, wantOpus)
		if err != nil {
			if len(chunks) > 1 {
				return Result{}, fmt.Errorf("TTS chunk %d failed (%s): %w", i+1, p.name, err)
			}
			return Result{}, fmt.Errorf("TTS generation failed (%s): %w", p.name, err)
		}
		made, paths = append(made, out), append(paths, out)
		res.VoiceCompatible = res.VoiceCompatible && voice
	}
	// Each part is a file of its own (the familiar agent joins them with
	// ffmpeg; Atrium sends them one after the other), none larger than
	// the platform takes.
	for i, path := range paths {
		fi, err := os.Stat(path)
		if err != nil {
			return Result{}, fmt.Errorf("TTS audio is gone: %w", err)
		}
		if fi.Size() > res.Delivery.MaxFileBytes {
			return Result{}, fmt.Errorf("the TTS audio %s is %d bytes, more than %s takes (%d bytes): it was not kept", filepath.Base(path), fi.Size(),
				res.Delivery.Platform, res.Delivery.MaxFileBytes)
		}
		if len(paths) > 1 {
			part := numbered(base, "part", i+1, 2)
			part = strings.TrimSuffix(part, filepath.Ext(part)) + filepath.Ext(path)
			if err := check(part); err != nil {
				return Result{}, err
			}
			if err := os.Rename(path, part); err != nil {
				return Result{}, fmt.Errorf("cannot keep the TTS audio: %w", err)
			}
			made, paths[i] = append(made, part), part
		}
	}
	for _, p := range paths {
		keep[p] = true
	}
	res.Path, res.Paths = paths[0], paths
	return res, nil
}

// speakOne speaks text into path: the file it ends in (a mislabelled or
// converted one has another name) and whether it may go as a voice
// message. Failing, it leaves path as it was.
func (s *Speaker) speakOne(ctx context.Context, p provider, text, path, instructions string, wantOpus bool) (string, bool, error) {
	var err error
	if p.cmd != nil {
		err = s.viaCommand(ctx, *p.cmd, text, path)
	} else {
		err = s.viaAPI(ctx, *p.api, text, path, instructions)
	}
	if err != nil {
		return path, false, err
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		_ = os.Remove(path)
		return path, false, fmt.Errorf("TTS generation produced no output (provider: %s)", p.name)
	}
	// MP3 or WAV bytes under .ogg play as a 0-second voice message:
	// transcoded, else renamed to what they are.
	path = s.repairOgg(ctx, path)
	if p.cmd != nil {
		if !p.cmd.VoiceCompatible {
			return path, false, nil
		}
		if !strings.HasSuffix(path, ".ogg") {
			if ogg, err := s.toOpus(ctx, path); err == nil {
				_ = os.Remove(path)
				path = ogg
			}
		}
		return path, strings.HasSuffix(path, ".ogg"), nil
	}
	return path, wantOpus && strings.HasSuffix(path, ".ogg"), nil
}

// outputBase is the file the audio goes to: the path asked for (a command
// provider's format its extension), else a new file of the audio folder,
// tts_<time>.<ext>: the command provider's format, Ogg/Opus for a
// platform that wants it, else MP3. reserved is a file made to hold the
// name, removed if nothing is kept.
func (s *Speaker) outputBase(asked string, p provider, wantOpus bool) (base, reserved string, err error) {
	if asked != "" {
		base = filepath.Clean(asked)
		if p.cmd != nil {
			base = strings.TrimSuffix(base, filepath.Ext(base)) + "." + p.cmd.Format
		}
		if fi, err := os.Stat(base); err == nil && fi.IsDir() {
			return "", "", fmt.Errorf("output_path %s is a folder: name a file", base)
		}
		if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
			return "", "", fmt.Errorf("cannot make the folder for %s: %w", base, err)
		}
		return base, "", nil
	}
	ext := "mp3"
	switch {
	case p.cmd != nil:
		ext = p.cmd.Format
	case wantOpus:
		ext = "ogg"
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return "", "", fmt.Errorf("cannot make the audio folder %s: %w", s.dir, err)
	}
	now := s.now()
	stamp := fmt.Sprintf("%s_%06d", now.Format("20060102_150405"), now.Nanosecond()/1000)
	for n := 1; ; n++ {
		name := "tts_" + stamp
		if n > 1 {
			name += fmt.Sprintf("_%d", n)
		}
		base = filepath.Join(s.dir, name+"."+ext)
		f, err := os.OpenFile(base, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) && n < 1000 {
			continue
		}
		if err != nil {
			return "", "", fmt.Errorf("cannot write in the audio folder %s: %w", s.dir, err)
		}
		f.Close()
		return base, base, nil
	}
}

// numbered is base with .<what>NNN before its extension.
func numbered(base, what string, n, digits int) string {
	ext := filepath.Ext(base)
	return fmt.Sprintf("%s.%s%0*d%s", strings.TrimSuffix(base, ext), what, digits, n, ext)
}

// Split cuts text into parts of at most max characters, as the familiar
// agent does, none of it dropped: its white space made single spaces,
// parts ending at a sentence's (or a clause's) end where they can, else
// between words, else anywhere.
func Split(text string, max int) []string {
	normalized := strings.Join(strings.Fields(text), " ")
	if normalized == "" {
		return nil
	}
	if max <= 0 {
		max = 4000
	}
	if runes(normalized) <= max {
		return []string{normalized}
	}
	var pieces []string
	for _, sentence := range sentences(normalized) {
		if sentence = strings.TrimSpace(sentence); sentence == "" {
			continue
		}
		if runes(sentence) <= max {
			pieces = append(pieces, sentence)
			continue
		}
		pieces = append(pieces, pack(strings.Fields(sentence), max, true)...)
	}
	return pack(pieces, max, false)
}

// sentenceEnd is a sentence's or a clause's end and the space after it.
var sentenceEnd = regexp.MustCompile(`[.!?;:,]\s+`)

// sentences cuts text after each sentenceEnd's mark (the mark kept).
func sentences(text string) []string {
	var out []string
	start := 0
	for _, m := range sentenceEnd.FindAllStringIndex(text, -1) {
		out = append(out, text[start:m[0]+1])
		start = m[1]
	}
	return append(out, text[start:])
}

// pack joins pieces with spaces into parts of at most max characters;
// with slice, a piece longer than max is cut into parts of its own.
func pack(pieces []string, max int, slice bool) []string {
	var out []string
	current := ""
	for _, piece := range pieces {
		if slice && runes(piece) > max {
			if current != "" {
				out = append(out, current)
				current = ""
			}
			r := []rune(piece)
			for i := 0; i < len(r); i += max {
				out = append(out, string(r[i:min(i+max, len(r))]))
			}
			continue
		}
		candidate := strings.TrimSpace(current + " " + piece)
		if current != "" && runes(candidate) > max {
			out = append(out, current)
			current = piece
		} else {
			current = candidate
		}
	}
	if current != "" {
		out = append(out, current)
	}
	return out
}

func runes(s string) int { return len([]rune(s)) }
