package desktop

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestQuitOnSignal(t *testing.T) {
	run := func(t *testing.T, script func(sigs chan os.Signal, running chan struct{})) (quits, exits int) {
		t.Helper()
		sigs, running := make(chan os.Signal, 2), make(chan struct{})
		var q, e int
		done := make(chan struct{})
		go func() {
			defer close(done)
			quitOnSignal(context.Background(), sigs, running, func() { q++ }, func(int) { e++ })
		}()
		script(sigs, running)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("quitOnSignal did not return")
		}
		return q, e
	}
	t.Run("a signal during the launch quits once the main loop runs", func(t *testing.T) {
		q, e := run(t, func(sigs chan os.Signal, running chan struct{}) {
			sigs <- syscall.SIGTERM
			for len(sigs) > 0 { // taken while the main loop does not run yet
				time.Sleep(time.Millisecond)
			}
			close(running)
		})
		if q != 1 || e != 0 {
			t.Fatalf("quits %d exits %d", q, e)
		}
	})
	t.Run("a second signal while waiting exits", func(t *testing.T) {
		q, e := run(t, func(sigs chan os.Signal, running chan struct{}) {
			sigs <- os.Interrupt
			sigs <- os.Interrupt
		})
		if q != 0 || e != 1 {
			t.Fatalf("quits %d exits %d", q, e)
		}
	})
	t.Run("after the main loop runs, signals are Wails' own", func(t *testing.T) {
		q, e := run(t, func(sigs chan os.Signal, running chan struct{}) {
			close(running)
		})
		if q != 0 || e != 0 {
			t.Fatalf("quits %d exits %d", q, e)
		}
	})
	t.Run("a window that closes first leaves nothing behind", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		sigs := make(chan os.Signal, 1)
		sigs <- syscall.SIGTERM
		done := make(chan struct{})
		go func() {
			defer close(done)
			quitOnSignal(ctx, sigs, make(chan struct{}), func() { t.Error("quit") }, func(int) { t.Error("exit") })
		}()
		cancel()
		<-done
	})
}
