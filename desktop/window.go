//go:build desktop

package desktop

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/wailsapp/wails/v2"
	"github.com/wailsapp/wails/v2/pkg/menu"
	"github.com/wailsapp/wails/v2/pkg/menu/keys"
	"github.com/wailsapp/wails/v2/pkg/options"
	"github.com/wailsapp/wails/v2/pkg/options/assetserver"
	"github.com/wailsapp/wails/v2/pkg/options/linux"
	"github.com/wailsapp/wails/v2/pkg/runtime"

	"atrium/app"
	"atrium/backend/stack"
	"atrium/build"
	"atrium/frontend"
)

// Available reports whether this build has the window.
const Available = true

// Run opens the window on st and blocks until it is closed. The window runs
// the automatic maintenance and pushes hook activity to the UI.
func Run(ctx context.Context, st *stack.Stack, o Options) error {
	if handOff(UniqueID(st.Home.Dir)) {
		return nil // the open window has our arguments and shows itself
	}
	hold, err := CheckDisplay(os.Getenv)
	if err != nil {
		return err // GTK would abort with a trace
	}
	var release sync.Once
	letGo := func() { release.Do(func() { hold.Close() }) }
	defer letGo()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	emit := &lateEmitter{}
	wr := &wailsRuntime{}
	var readyOnce sync.Once
	ready := func() {
		if o.Ready != nil {
			readyOnce.Do(o.Ready)
		}
	}
	a := app.New(ctx, st, o.Loop, o.Plugins, app.Options{Platform: app.PlatformDesktop, Version: o.Version,
		Emitter: emit, Picker: wr, Saver: wr, Opener: wr, Ready: ready, Cron: o.Cron, Approvals: o.Approvals, Clarify: o.Clarify})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	running := make(chan struct{})
	var runningOnce sync.Once
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	wg.Go(func() { quitOnSignal(ctx, sigs, running, wr.quit, os.Exit) })

	quit := menu.NewMenu()
	file := quit.AddSubmenu("File")
	file.AddText("Quit", keys.CmdOrCtrl("q"), func(*menu.CallbackData) { wr.quit() })

	return runWails(&options.App{
		Title:            "Atrium",
		Width:            Width,
		Height:           Height,
		MinWidth:         MinWidth,
		MinHeight:        MinHeight,
		BackgroundColour: &options.RGBA{R: 250, G: 250, B: 250, A: 255},
		AssetServer:      &assetserver.Options{Assets: frontend.Dist()},
		Menu:             quit,
		Bind:             a.Bindings(),
		ErrorFormatter:   a.ErrorFormatter,
		OnStartup: func(wctx context.Context) {
			letGo() // GTK has its own connection to the display now
			wr.set(wctx)
			emit.set(func(name string, data any) { runtime.EventsEmit(wctx, name, data) })
			wg.Go(func() { a.Run(ctx) })
			wg.Go(func() { st.Maintenance.Loop(ctx) })
		},
		OnDomReady: func(context.Context) {
			runningOnce.Do(func() { close(running) }) // the main loop runs
			time.AfterFunc(readyAfter, ready)
			if o.Open != "" {
				a.OpenSession(o.Open)
			}
		},
		OnShutdown: func(context.Context) {
			cancel()
			fctx, done := context.WithTimeout(context.Background(), closeWait)
			defer done()
			_ = st.Bus.Flush(fctx) // pending hook deliveries, bounded
		},
		SingleInstanceLock: &options.SingleInstanceLock{
			UniqueId: UniqueID(st.Home.Dir),
			OnSecondInstanceLaunch: func(d options.SecondInstanceData) {
				wr.show()
				if id := OpenArg(d.Args); id != "" {
					a.OpenSession(id)
				}
			},
		},
		Linux: &linux.Options{
			// Never: the GPU path painted blank pages under Xvfb.
			WebviewGpuPolicy: linux.WebviewGpuPolicyNever,
			ProgramName:      "atrium",
			Icon:             build.Icon,
		},
	})
}

// wailsRuntime implements app's Picker and Opener with the Wails runtime;
// every call needs the ctx Wails gave OnStartup.
type wailsRuntime struct {
	mu  sync.Mutex
	ctx context.Context
}

func (w *wailsRuntime) set(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ctx = ctx
}

func (w *wailsRuntime) get() context.Context {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ctx
}

func (w *wailsRuntime) PickPluginSource(zip bool) (string, error) {
	ctx := w.get()
	if zip {
		return runtime.OpenFileDialog(ctx, runtime.OpenDialogOptions{Title: "Install a plugin archive",
			Filters: []runtime.FileFilter{{DisplayName: "Plugin archives (*.zip)", Pattern: "*.zip"}}})
	}
	return runtime.OpenDirectoryDialog(ctx, runtime.OpenDialogOptions{Title: "Install a plugin folder"})
}

// SaveFile opens in the user's downloads folder (XDG_DOWNLOAD_DIR, else
// ~/Downloads, else home), not in whatever folder the window was started from.
func (w *wailsRuntime) SaveFile(title, filename string) (string, error) {
	return runtime.SaveFileDialog(w.get(), runtime.SaveDialogOptions{Title: title, DefaultFilename: filename,
		DefaultDirectory: downloadsDir(), CanCreateDirectories: true})
}

func downloadsDir() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	for _, d := range []string{os.Getenv("XDG_DOWNLOAD_DIR"), filepath.Join(home, "Downloads")} {
		if st, err := os.Stat(d); d != "" && err == nil && st.IsDir() {
			return d
		}
	}
	return home
}

func (w *wailsRuntime) OpenFolder(path string) error {
	runtime.BrowserOpenURL(w.get(), "file://"+path)
	return nil
}

func (w *wailsRuntime) show() {
	if ctx := w.get(); ctx != nil {
		runtime.WindowUnminimise(ctx)
		runtime.WindowShow(ctx)
	}
}

func (w *wailsRuntime) quit() {
	if ctx := w.get(); ctx != nil {
		runtime.Quit(ctx)
	}
}

// runWails runs the window. Wails panics when GTK cannot initialise (the
// display went away, or refused GTK's own connection, between CheckDisplay
// and GTK's start): that becomes the same one-line error as no display at
// all, not a goroutine dump.
func runWails(o *options.App) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if e, ok := r.(error); ok && e.Error() == "failed to init GTK" {
			err = noDisplay(fmt.Sprintf("GTK could not open the display %s", os.Getenv("DISPLAY")))
			return
		}
		panic(r)
	}()
	return wails.Run(o)
}
