// Package frontend embeds the built web UI (frontend/dist, made by `npm run
// build`), served by the window and by `atrium serve`. A clean clone holds
// only dist/.keep, so Go builds and tests work before the UI is built.
package frontend

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// Dist is the built UI, index.html at its root.
func Dist() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // "dist" is a valid path: cannot happen
	}
	return sub
}

// Built reports whether the UI was built into this binary.
func Built() bool {
	_, err := fs.Stat(Dist(), "index.html")
	return err == nil
}
