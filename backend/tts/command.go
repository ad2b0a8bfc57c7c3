package tts

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"atrium/backend/cmdprovider"
	"atrium/backend/config"
)

// viaCommand runs a command provider: it is given the text in a file
// ({input_path}, or {text_path}) and writes the audio at {output_path}, a
// file beside path that takes path's place once the command succeeds (so
// a failure leaves what was there).
func (s *Speaker) viaCommand(ctx context.Context, c config.TTSCommandSpec, text, path string) error {
	dir, err := os.MkdirTemp("", "atrium-tts-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	input := filepath.Join(dir, "input.txt")
	if err := os.WriteFile(input, []byte(text), 0o600); err != nil {
		return err
	}
	ext := filepath.Ext(path)
	out := filepath.Join(filepath.Dir(path), "."+strings.TrimSuffix(filepath.Base(path), ext)+"."+idempotencyKey()[:12]+ext)
	defer os.Remove(out)
	cmd, _ := cmdprovider.Render(c.Command, map[string]string{"input_path": input, "text_path": input, "output_path": out,
		"format": formatOf(path, c.Format), "voice": c.Voice, "model": c.Model, "speed": c.Speed})
	res := cmdprovider.Run(ctx, cmd, config.CommandEnv(s.machine.Environ(), c.Passthrough), c.IdleTimeout)
	switch {
	case res.Err != nil:
		return fmt.Errorf("TTS provider '%s' failed: %w", c.Name, res.Err)
	case res.TimedOut:
		return fmt.Errorf("TTS provider '%s' timed out after %gs without output", c.Name, c.IdleTimeout.Seconds())
	case res.Code != 0:
		return fmt.Errorf("TTS provider '%s' exited with code %d: %s", c.Name, res.Code, cmp.Or(res.Detail(), "no command output"))
	}
	if fi, err := os.Lstat(out); err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
		return fmt.Errorf("TTS provider '%s' produced no output at %s", c.Name, out)
	}
	if err := os.Rename(out, path); err != nil {
		return fmt.Errorf("cannot keep the audio: %w", err)
	}
	return nil
}

// formatOf is {format}: the output's extension when it is a format a
// command provider writes, else its own.
func formatOf(path, own string) string {
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	for _, f := range config.TTSFormats() {
		if f == ext {
			return ext
		}
	}
	return own
}

// ffmpegIdle is how long ffmpeg may go quiet while it converts (the
// familiar agent gives it 30 s).
const ffmpegIdle = 30 * time.Second

// toOpus converts path to Ogg/Opus beside it, with the familiar agent's
// voice-message settings (ffmpeg; an error when there is none).
func (s *Speaker) toOpus(ctx context.Context, path string) (string, error) {
	out := strings.TrimSuffix(path, filepath.Ext(path)) + ".ogg"
	if out == path {
		out = strings.TrimSuffix(path, ".ogg") + ".opus.ogg"
	}
	if err := s.ffmpeg(ctx, path, out); err != nil {
		return "", err
	}
	return out, nil
}

// ffmpeg converts in to Ogg/Opus at out, whole or not at all.
func (s *Speaker) ffmpeg(ctx context.Context, in, out string) error {
	bin := s.machine.Find("ffmpeg")
	if bin == "" {
		return errors.New("ffmpeg was not found")
	}
	tmp := filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".converting.ogg")
	defer os.Remove(tmp)
	args := []string{bin, "-nostdin", "-y", "-loglevel", "error", "-i", in, "-acodec", "libopus", "-ac", "1", "-b:a", "48k", "-vbr", "on",
		"-application", "voip", "-compression_level", "10", tmp}
	for i := range args {
		args[i] = cmdprovider.ShellQuote(args[i])
	}
	res := cmdprovider.Run(ctx, strings.Join(args, " "), config.CommandEnv(s.machine.Environ(), nil), ffmpegIdle)
	switch {
	case res.Err != nil:
		return res.Err
	case res.TimedOut:
		return errors.New("ffmpeg timed out")
	case res.Code != 0:
		return fmt.Errorf("ffmpeg failed: %s", cmp.Or(res.Stderr, res.Stdout, fmt.Sprintf("exit code %d", res.Code)))
	}
	if fi, err := os.Stat(tmp); err != nil || fi.Size() == 0 {
		return errors.New("ffmpeg wrote nothing")
	}
	return os.Rename(tmp, out)
}

// repairOgg makes a .ogg file hold Ogg, as the familiar agent does: a
// provider that wrote MP3 or WAV there is transcoded, else the file is
// renamed to what it holds. Any other file is as it was.
func (s *Speaker) repairOgg(ctx context.Context, path string) string {
	if !strings.HasSuffix(path, ".ogg") {
		return path
	}
	kind := sniff(path)
	if kind == "ogg" || kind == "" {
		return path
	}
	tmp := strings.TrimSuffix(path, ".ogg") + ".source." + kind
	if os.Rename(path, tmp) != nil {
		return path
	}
	if s.ffmpeg(ctx, tmp, path) == nil {
		_ = os.Remove(tmp)
		return path
	}
	honest := strings.TrimSuffix(path, ".ogg") + "." + kind
	if os.Rename(tmp, honest) != nil {
		_ = os.Rename(tmp, path)
		return path
	}
	return honest
}

// sniff is the audio container a file holds by its first bytes: ogg, mp3,
// wav, flac ("" when it is none of them).
func sniff(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 12)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte("OggS")):
		return "ogg"
	case bytes.HasPrefix(head, []byte("ID3")), len(head) >= 2 && head[0] == 0xFF && head[1]&0xE0 == 0xE0:
		return "mp3"
	case len(head) >= 12 && bytes.HasPrefix(head, []byte("RIFF")) && string(head[8:12]) == "WAVE":
		return "wav"
	case bytes.HasPrefix(head, []byte("fLaC")):
		return "flac"
	}
	return ""
}
