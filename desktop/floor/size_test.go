package main

import (
	"testing"

	"atrium/desktop"
)

func TestTheFloorWindowIsAtriumsSize(t *testing.T) {
	if width != desktop.Width || height != desktop.Height || minWidth != desktop.MinWidth || minHeight != desktop.MinHeight {
		t.Fatalf("floor %dx%d (min %dx%d), Atrium %dx%d (min %dx%d)", width, height, minWidth, minHeight,
			desktop.Width, desktop.Height, desktop.MinWidth, desktop.MinHeight)
	}
}
