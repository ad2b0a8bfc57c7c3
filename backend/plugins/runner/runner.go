// Package runner embeds Atrium's Python plugin runner, which loads a plugin's
// __init__.py, calls its register(ctx) and speaks docs/plugin-protocol.md.
package runner

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
)

//go:embed atrium_runner.py
var source []byte

// FileName is the runner's file name once written out.
const FileName = "atrium_runner.py"

// Source returns the runner's text.
func Source() []byte { return append([]byte(nil), source...) }

// WriteTo writes the runner into dir (created if missing) and returns its
// path: run it as `python3 PATH PLUGIN_DIR`.
func WriteTo(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("plugin runner folder: %w", err)
	}
	path := filepath.Join(dir, FileName)
	tmp, err := os.CreateTemp(dir, ".runner-*")
	if err != nil {
		return "", fmt.Errorf("write plugin runner: %w", err)
	}
	if _, err := tmp.Write(source); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", fmt.Errorf("write plugin runner: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("write plugin runner: %w", err)
	}
	return path, nil
}
