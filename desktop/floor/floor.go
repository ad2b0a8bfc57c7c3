//go:build desktop

// Command floor is the launch floor of a Wails window on this machine: the
// same window options as Atrium's (size, background, Linux WebKit policy),
// a page of one paragraph and no Go bindings, its title set once the page
// is painted, as Atrium's list sets its own. `make bench-ui` builds it, and
// scripts/e2e-window.sh --bench times it beside Atrium's launch, run for
// run, so the launch figure has a baseline measured in the same sitting:
// what GTK, WebKit and Wails take before any of Atrium's work.
package main

import (
	"embed"
	"fmt"
	"io/fs"
	"os"

	"github.com/wailsapp/wails/v2"
	"github.com/wailsapp/wails/v2/pkg/options"
	"github.com/wailsapp/wails/v2/pkg/options/assetserver"
	"github.com/wailsapp/wails/v2/pkg/options/linux"
)

//go:embed page
var page embed.FS

func main() {
	assets, err := fs.Sub(page, "page")
	if err == nil {
		err = wails.Run(&options.App{
			Title:            "Wails floor",
			Width:            width,
			Height:           height,
			MinWidth:         minWidth,
			MinHeight:        minHeight,
			BackgroundColour: &options.RGBA{R: 250, G: 250, B: 250, A: 255},
			AssetServer:      &assetserver.Options{Assets: assets},
			Linux:            &linux.Options{WebviewGpuPolicy: linux.WebviewGpuPolicyNever, ProgramName: "wails-floor"},
		})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "wails-floor:", err)
		os.Exit(1)
	}
}
