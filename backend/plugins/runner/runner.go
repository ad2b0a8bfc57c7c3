// Package runner embeds Atrium's Python plugin runner, which loads a plugin's
// __init__.py, calls its register(ctx) and speaks docs/plugin-protocol.md,
// and the host modules it ships beside it (hostlib/: agent.memory_provider,
// agent.context_engine, agent.context_compressor, hermes_cli.profiles,
// hermes_cli.config, hermes_constants, plugins.plugin_storage,
// tools.registry), which plugins written for the
// familiar Python plugin API import by name. (Files named _* are not
// embedded: the packages are namespace packages.)
package runner

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"atrium/backend/atomicfile"
)

// A folder pattern leaves out files whose names begin with "_": the
// packages' __init__.py are named, so that they are regular packages, which
// a pip-installed package of the same name cannot shadow (a user who also
// runs the familiar agent has its agent, gateway, hermes_cli and tools).
//
//go:embed atrium_runner.py hostlib hostlib/*/__init__.py
var files embed.FS

// FileName is the runner's file name once written out.
const FileName = "atrium_runner.py"

// Source returns the runner's text.
func Source() []byte {
	b, _ := files.ReadFile(FileName)
	return b
}

// WriteTo writes the runner and its host modules into dir (created if
// missing) and returns the runner's path: run it as `python3 PATH
// PLUGIN_DIR`. Each file is replaced atomically, so a plugin starting
// meanwhile reads the old file or the new one.
func WriteTo(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("plugin runner folder: %w", err)
	}
	err := fs.WalkDir(files, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || path.Ext(name) != ".py" {
			return nil
		}
		data, err := files.ReadFile(name)
		if err != nil {
			return err
		}
		return writeAtomic(filepath.Join(dir, filepath.FromSlash(name)), data)
	})
	if err != nil {
		return "", fmt.Errorf("write plugin runner: %w", err)
	}
	return filepath.Join(dir, FileName), nil
}

func writeAtomic(target string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(target, data, 0o644, nil)
}
