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
	"github.com/wailsapp/wails/v2/pkg/runtime"

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
	var (
		mu    sync.Mutex
		wctx  context.Context
		again atomic.Bool
	)
	act := func(name string) {
		mu.Lock()
		ctx := wctx
		mu.Unlock()
		if ctx == nil {
			return
		}
		switch name {
		case "retry":
			again.Store(true)
			runtime.Quit(ctx)
		case "quit":
			runtime.Quit(ctx)
		case "config":
			runtime.BrowserOpenURL(ctx, "file://"+home.ConfigPath())
		case "folder":
			runtime.BrowserOpenURL(ctx, "file://"+home.Dir)
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
			mu.Lock()
			wctx = ctx
			mu.Unlock()
		},
		// Launched again from the menu while it is up (nothing seemed to
		// happen the first time), the window comes to the front instead
		// of a second one.
		SingleInstanceLock: &options.SingleInstanceLock{
			UniqueId: UniqueID(home.Dir) + "_start",
			OnSecondInstanceLaunch: func(options.SecondInstanceData) {
				mu.Lock()
				ctx := wctx
				mu.Unlock()
				if ctx != nil {
					runtime.WindowUnminimise(ctx)
					runtime.WindowShow(ctx)
				}
			},
		},
		Linux: &linux.Options{WebviewGpuPolicy: linux.WebviewGpuPolicyNever, ProgramName: "atrium", Icon: build.Icon},
	})
	return again.Load()
}
