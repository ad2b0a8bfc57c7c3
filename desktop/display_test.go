package desktop

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"atrium/backend/apperr"
)

// fakeX listens where display 127.0.0.1:N would and answers the connection
// setup with status (1 success, 0 failed); it then waits for the client to
// hang up and sends on closed (when not nil).
func fakeX(t *testing.T, status byte, closed chan<- struct{}) string {
	t.Helper()
	for n := 40; n < 90; n++ {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(6000+n))
		if err != nil {
			continue
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				buf := make([]byte, 12)
				_, _ = c.Read(buf)
				reason := "No protocol specified"
				if status == 1 {
					reason = ""
				}
				_, _ = c.Write(append([]byte{status, byte(len(reason)), 11, 0, 0, 0, 0, 0}, reason...))
				_, _ = c.Read(buf) // until the client hangs up
				c.Close()
				if closed != nil {
					closed <- struct{}{}
				}
			}
		}()
		return "127.0.0.1:" + strconv.Itoa(n)
	}
	t.Skip("no free port for a fake X display")
	return ""
}

func TestCheckDisplay(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	ok := fakeX(t, 1, nil)
	refusing := fakeX(t, 0, nil)
	scenarios := []struct {
		name string
		env  func(string) string
		say  string // "" = a window can open
	}{
		{"no display at all", env(), "neither DISPLAY nor WAYLAND_DISPLAY is set"},
		{"X display with no server", env("DISPLAY", ":987"), "the X display :987 refused the connection"},
		{"X display that refuses", env("DISPLAY", refusing, "HOME", t.TempDir()), "No protocol specified"},
		{"not a display name", env("DISPLAY", "nonsense"), "is not a display name"},
		{"wayland without its socket", env("WAYLAND_DISPLAY", "wayland-9", "XDG_RUNTIME_DIR", t.TempDir()), "Wayland display wayland-9 does not answer"},
		{"X display that accepts", env("DISPLAY", ok, "HOME", t.TempDir()), ""},
		{"dead wayland, working X", env("WAYLAND_DISPLAY", "wayland-9", "XDG_RUNTIME_DIR", t.TempDir(), "DISPLAY", ok), ""},
	}
	for _, sc := range scenarios {
		hold, err := CheckDisplay(sc.env)
		if sc.say == "" {
			if err != nil {
				t.Errorf("%s: %v", sc.name, err)
			} else {
				hold.Close()
			}
			continue
		}
		if apperr.CodeOf(err) != apperr.Rejected || !strings.Contains(err.Error(), sc.say) ||
			!strings.Contains(err.Error(), "atrium serve") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v", sc.name, err)
		}
	}
}

// The check's connection to an X display stays open until the caller lets
// go: an X server left with no client resets, and a GTK connecting during
// the reset fails to start.
func TestCheckDisplayHoldsTheXConnection(t *testing.T) {
	closed := make(chan struct{}, 1)
	display := fakeX(t, 1, closed)
	hold, err := CheckDisplay(func(k string) string {
		return map[string]string{"DISPLAY": display, "HOME": t.TempDir()}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
		t.Fatal("the checking connection was closed before the caller let go")
	case <-time.After(200 * time.Millisecond):
	}
	hold.Close()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("closing the hold did not close the connection")
	}
}
