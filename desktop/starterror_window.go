//go:build desktop

package desktop

import (
	"context"
	"os"
	"sync"
	"sync/atomic"

	"github.com/wailsapp/wails/v2/pkg/options"
	"github.com/wailsapp/wails/v2/pkg/options/assetserver"
	"github.com/wailsapp/wails/v2/pkg/options/linux"

	"atrium/backend/config"
	"atrium/build"
)

// ShowStartError shows, in a window of its own, why the profile at home
// could not be opened (cause), until the person asks to try again (retry)
// or closes it. Without a display it shows nothing and says no.
func ShowStartError(home config.Home, cause error) (retry bool) {
	hold, err := CheckDisplay(os.Getenv)
	if err != nil {
		return false
	}
	var release sync.Once
	letGo := func() { release.Do(func() { hold.Close() }) }
	defer letGo()
	wr := &wailsRuntime{}
	var again atomic.Bool
	// The page's buttons come once the window has started (wr is set).
	act := func(name string) {
		switch name {
		case "retry":
			again.Store(true)
			wr.quit()
		case "quit":
			wr.quit()
		case "config":
			_ = wr.OpenFolder(home.ConfigPath()) // a file:// URL: the file opens in its application
		case "folder":
			_ = wr.OpenFolder(home.Dir)
		}
	}
	_ = runWails(&options.App{
		Title:            StartErrorTitle,
		Width:            760,
		Height:           460,
		MinWidth:         520,
		MinHeight:        360,
		BackgroundColour: &options.RGBA{R: 250, G: 250, B: 250, A: 255},
		AssetServer:      &assetserver.Options{Handler: startPage{home: home, err: cause, act: act}},
		OnStartup: func(ctx context.Context) {
			letGo()
			wr.set(ctx)
		},
		// Launched again from the menu while it is up (nothing seemed to
		// happen the first time), the window comes to the front instead
		// of a second one.
		SingleInstanceLock: &options.SingleInstanceLock{
			UniqueId:               UniqueID(home.Dir) + "_start",
			OnSecondInstanceLaunch: func(options.SecondInstanceData) { wr.show() },
		},
		Linux: &linux.Options{WebviewGpuPolicy: linux.WebviewGpuPolicyNever, ProgramName: "atrium", Icon: build.Icon},
	})
	return again.Load()
}
