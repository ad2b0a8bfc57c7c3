// Package build holds the desktop build's assets: the window and launcher
// icon (appicon.png) and the Linux .desktop entry (linux/atrium.desktop).
// The binary goes to build/bin/.
package build

import _ "embed"

// Icon is the application icon, a 256x256 PNG.
//
//go:embed appicon.png
var Icon []byte
