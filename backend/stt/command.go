package stt

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"atrium/backend/cmdprovider"
	"atrium/backend/config"
)

// localIdle is how long the local whisper command, and ffmpeg converting
// for it, may go without output (the familiar agent gives them 300 s).
const localIdle = 300 * time.Second

// nativeFormats are what the local whisper command is given as they are;
// anything else is converted to WAV first, as the familiar agent does.
var nativeFormats = []string{".wav", ".aiff", ".aif"}

// viaLocal runs the local whisper command (template) on path and reads
// the .txt transcript it writes in {output_dir}.
func (t *Transcriber) viaLocal(ctx context.Context, template, path string) (string, error) {
	_, model, language := t.cfg.LocalCommand(t.getenv)
	dir, err := os.MkdirTemp("", "atrium-local-stt-")
	if err != nil {
		return "", fmt.Errorf("local transcription failed: %w", err)
	}
	defer os.RemoveAll(dir)
	input := path
	if !slices.Contains(nativeFormats, strings.ToLower(filepath.Ext(path))) {
		if input, err = t.toWAV(ctx, path, dir, "Local STT fallback requires ffmpeg for non-WAV inputs"); err != nil {
			return "", err
		}
	}
	cmd, unknown := cmdprovider.Render(template, map[string]string{"input_path": input, "output_dir": dir, "language": language, "model": model})
	if len(unknown) > 0 {
		return "", fmt.Errorf("invalid HERMES_LOCAL_STT_COMMAND template: {%s} is no placeholder (there are {input_path}, {output_dir}, {language} and {model})", unknown[0])
	}
	res := t.run(ctx, cmd, nil, localIdle)
	switch {
	case res.Err != nil:
		return "", fmt.Errorf("local transcription failed: %w", res.Err)
	case res.TimedOut:
		return "", fmt.Errorf("local transcription failed: the command gave no output for %s and was stopped", localIdle)
	case res.Code != 0:
		return "", fmt.Errorf("local STT failed (exit code %d): %s", res.Code, cmp.Or(res.Stderr, res.Stdout, "no output"))
	}
	txts, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
	sort.Strings(txts)
	if len(txts) == 0 {
		return "", errors.New("the local STT command completed but did not produce a .txt transcript")
	}
	b, err := os.ReadFile(txts[0])
	if err != nil {
		return "", fmt.Errorf("local transcription failed: %w", err)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), nil
}

// viaCommand runs a command provider on path: its transcript is the file
// it writes at {output_path}, else what it prints.
func (t *Transcriber) viaCommand(ctx context.Context, c config.STTCommandSpec, path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("STT command provider '%s' failed: %w", c.Name, err)
	}
	dir, err := os.MkdirTemp("", "atrium-stt-"+c.Name+"-")
	if err != nil {
		return "", fmt.Errorf("STT command provider '%s' failed: %w", c.Name, err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "transcript."+c.Format)
	cmd, _ := cmdprovider.Render(c.Command, map[string]string{"input_path": abs, "output_path": out, "output_dir": dir, "format": c.Format,
		"language": c.Language, "model": c.Model})
	res := t.run(ctx, cmd, c.Passthrough, c.IdleTimeout)
	switch {
	case res.Err != nil:
		return "", fmt.Errorf("STT command provider '%s' failed: %w", c.Name, res.Err)
	case res.TimedOut:
		return "", fmt.Errorf("STT command provider '%s' timed out after %gs without output", c.Name, c.IdleTimeout.Seconds())
	case res.Code != 0:
		return "", fmt.Errorf("STT command provider '%s' exited with code %d: %s", c.Name, res.Code, cmp.Or(res.Detail(), "no command output"))
	}
	if b, err := os.ReadFile(out); err == nil && len(bytes.TrimSpace(b)) > 0 {
		return strings.ToValidUTF8(string(b), "\uFFFD"), nil
	}
	if res.Stdout != "" {
		return res.Stdout, nil
	}
	return "", fmt.Errorf("STT command provider '%s' wrote no output file at %s and printed nothing", c.Name, out)
}

// toWAV converts path to a WAV file in dir with ffmpeg; missing says what
// needs it when ffmpeg is not found.
func (t *Transcriber) toWAV(ctx context.Context, path, dir, missing string) (string, error) {
	ffmpeg := t.machine.Find("ffmpeg")
	if ffmpeg == "" {
		return "", fmt.Errorf("%s, but ffmpeg was not found", missing)
	}
	stem := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	out := filepath.Join(dir, cmp.Or(stem, "audio")+".wav")
	res := t.run(ctx, cmdprovider.ShellQuote(ffmpeg)+" -nostdin -y -i "+cmdprovider.ShellQuote(path)+" "+cmdprovider.ShellQuote(out), nil, localIdle)
	switch {
	case res.Err != nil:
		return "", fmt.Errorf("failed to convert the audio: %w", res.Err)
	case res.TimedOut:
		return "", errors.New("the audio conversion timed out")
	case res.Code != 0:
		return "", fmt.Errorf("failed to convert the audio: %s", cmp.Or(res.Stderr, res.Stdout, fmt.Sprintf("ffmpeg exited with code %d", res.Code)))
	}
	return out, nil
}

// run runs script as cmdprovider.Run does, its environment this
// process's without the keys (but those passthrough names).
func (t *Transcriber) run(ctx context.Context, script string, passthrough []string, idle time.Duration) cmdprovider.Result {
	return cmdprovider.Run(ctx, script, config.CommandEnv(t.machine.Environ(), passthrough), idle)
}
