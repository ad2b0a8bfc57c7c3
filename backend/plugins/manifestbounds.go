package plugins

import (
	"io"
	"io/fs"

	"atrium/backend/apperr"
	"atrium/backend/limits"
)

// readManifest reads a plugin.yaml from fsys within the manifest bounds
// (limits.ManifestBytes, limits.YAMLDepth): a file past them is an invalid
// error naming the bound, and the YAML library never sees its bytes. label
// names the file in errors.
func readManifest(fsys fs.FS, name, label string) ([]byte, error) {
	data, err := limits.ReadFS(fsys, name, label, limits.ManifestBytes, "a "+ManifestFile)
	if err != nil {
		return nil, err
	}
	return data, checkManifestBytes(data, label)
}

// readManifestFrom is readManifest for an open reader (an archive entry).
func readManifestFrom(r io.Reader, label string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limits.ManifestBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > limits.ManifestBytes {
		return nil, limits.TooLarge(label, -1, limits.ManifestBytes, "a "+ManifestFile)
	}
	return data, checkManifestBytes(data, label)
}

// checkManifestBytes is the bound every manifest passes before it is parsed.
func checkManifestBytes(data []byte, label string) error {
	if len(data) > limits.ManifestBytes {
		return limits.TooLarge(label, int64(len(data)), limits.ManifestBytes, "a "+ManifestFile)
	}
	return limits.CheckYAMLDepth(data, limits.YAMLDepth, label)
}

// parseManifest is ParseManifest for bytes that passed the bounds, with the
// YAML library's panics (goccy/go-yaml v1.19.2 dereferences nil on a tag
// with no value, "hooks: !x ") turned into an invalid error: a broken
// manifest is one error row, never a crash of every command.
func parseManifest(data []byte, file string) (m Manifest, warnings []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			m, warnings = Manifest{}, nil
			err = apperr.New(apperr.Invalid, "%s: the YAML parser could not read this file (%v)", file, r)
		}
	}()
	return ParseManifest(data, file)
}
