package desktop

import (
	"context"
	"os"
)

// quitOnSignal closes the window on the first SIGINT or SIGTERM that
// arrives before GTK's main loop runs (running is closed from then on).
//
// Wails quits on those signals itself, by calling gtk_main_quit, which does
// nothing before the main loop has started; and Wails listens only once.
// A Ctrl+C or TERM during the window's launch was therefore lost, and the
// window ignored every later one until a SIGKILL. Here such a signal waits
// for the main loop and quits then; a second signal while waiting exits at
// once (a window whose page never loads can still be stopped). A signal
// after the main loop runs is Wails' to handle.
func quitOnSignal(ctx context.Context, sigs <-chan os.Signal, running <-chan struct{}, quit func(), exit func(int)) {
	select {
	case <-running:
		return
	case <-ctx.Done():
		return
	case <-sigs:
	}
	select {
	case <-running:
		quit()
	case <-ctx.Done():
	case <-sigs:
		exit(1)
	}
}
