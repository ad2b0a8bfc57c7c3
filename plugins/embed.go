// Package plugins carries the bundled plugins inside the binary, so a copied
// atrium binary still has them. Each folder holds a plugin.yaml; package
// backend/plugins discovers them (ATRIUM_BUNDLED_PLUGINS overrides the tree
// with a folder on disk). Subfolders that hold Go code (plugins/whoami, ...)
// are separate packages.
package plugins

import "embed"

// Bundled is the tree of bundled plugins: <name>/plugin.yaml and its files.
//
//go:embed all:memory-rules all:session-index all:hook-audit
var Bundled embed.FS
