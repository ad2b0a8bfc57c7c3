package main

// The window's size, as Atrium's (desktop.Width and the rest; a test keeps
// them equal).
const (
	width     = 1280
	height    = 800
	minWidth  = 800
	minHeight = 600
)
