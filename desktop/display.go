package desktop

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"atrium/backend/apperr"
)

// CheckDisplay tells, before GTK is started (it aborts the process with a
// trace when it cannot open a display), whether a window can be shown: a
// Wayland socket that accepts a connection, or an X display that accepts
// one (the X11 connection setup, with the cookie from XAUTHORITY when there
// is one). getenv is os.Getenv outside tests.
//
// On an X display the checking connection is handed back open, and the
// caller closes it once GTK has its own: an X server with no client left
// resets itself (Xvfb and a bare Xorg do, unless started with -noreset),
// and a GTK connecting during that reset fails to initialise. Closing the
// check's connection first made that reset: 2 of 36 windows started on a
// fresh Xvfb died in GTK's init.
func CheckDisplay(getenv func(string) string) (io.Closer, error) {
	wayland, x := getenv("WAYLAND_DISPLAY"), getenv("DISPLAY")
	if wayland == "" && x == "" {
		return nil, noDisplay("no display: neither DISPLAY nor WAYLAND_DISPLAY is set")
	}
	var why []string
	if wayland != "" {
		sock := wayland
		if !filepath.IsAbs(sock) {
			sock = filepath.Join(getenv("XDG_RUNTIME_DIR"), wayland)
		}
		c, err := net.DialTimeout("unix", sock, 2*time.Second)
		if err == nil {
			c.Close() // a Wayland compositor does not reset when its clients go
			return io.NopCloser(nil), nil
		}
		why = append(why, fmt.Sprintf("the Wayland display %s does not answer (%v)", wayland, err))
	}
	if x != "" {
		c, err := checkX(x, getenv("XAUTHORITY"), getenv("HOME"))
		if err == nil {
			return c, nil
		}
		why = append(why, fmt.Sprintf("the X display %s refused the connection (%v)", x, err))
	}
	return nil, noDisplay(strings.Join(why, "; "))
}

func noDisplay(why string) error {
	return apperr.New(apperr.Rejected, "cannot open the window: %s; on a machine without a desktop, run `atrium serve` and open the dashboard in a browser", why)
}

// checkX connects to the X display and runs the connection setup; on
// success the connection is returned open.
func checkX(display, xauth, home string) (net.Conn, error) {
	host, num, err := parseDisplay(display)
	if err != nil {
		return nil, err
	}
	var c net.Conn
	if host == "" || host == "unix" {
		sock := "/tmp/.X11-unix/X" + num
		c, err = net.DialTimeout("unix", sock, 2*time.Second)
		if err != nil {
			c, err = net.DialTimeout("unix", "@"+sock, 2*time.Second) // the abstract socket
		}
	} else {
		n, _ := strconv.Atoi(num)
		c, err = net.DialTimeout("tcp", net.JoinHostPort(host, strconv.Itoa(6000+n)), 2*time.Second)
	}
	if err != nil {
		return nil, err
	}
	if err := setup(c, xauth, home, num); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// setup runs the X11 connection setup on c.
func setup(c net.Conn, xauth, home, num string) error {
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	name, data := cookie(xauth, home, num)
	pad := func(n int) int { return (4 - n%4) % 4 }
	req := []byte{'l', 0, 11, 0, 0, 0}
	req = binary.LittleEndian.AppendUint16(req, uint16(len(name)))
	req = binary.LittleEndian.AppendUint16(req, uint16(len(data)))
	req = append(req, 0, 0)
	req = append(append(req, name...), make([]byte, pad(len(name)))...)
	req = append(append(req, data...), make([]byte, pad(len(data)))...)
	if _, err := c.Write(req); err != nil {
		return err
	}
	head := make([]byte, 8)
	if _, err := io.ReadFull(c, head); err != nil {
		return fmt.Errorf("no answer to the connection setup: %w", err)
	}
	switch head[0] {
	case 1:
		return nil
	case 0:
		reason := make([]byte, int(head[1]))
		_, _ = io.ReadFull(c, reason)
		return errors.New(strings.TrimSpace(string(reason)))
	}
	return errors.New("the server asks for an authentication Atrium does not speak")
}

// parseDisplay splits "host:N.S" (host may be empty or "unix").
func parseDisplay(d string) (host, num string, err error) {
	i := strings.LastIndexByte(d, ':')
	if i < 0 {
		return "", "", fmt.Errorf("%q is not a display name", d)
	}
	host, num = d[:i], d[i+1:]
	num, _, _ = strings.Cut(num, ".")
	if _, err := strconv.Atoi(num); err != nil {
		return "", "", fmt.Errorf("%q is not a display name", d)
	}
	return host, num, nil
}

// cookie finds the MIT-MAGIC-COOKIE-1 of display number num in the
// Xauthority file (none: connect without one).
func cookie(xauth, home, num string) (name, data []byte) {
	if xauth == "" && home != "" {
		xauth = filepath.Join(home, ".Xauthority")
	}
	f, err := os.Open(xauth)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	r := bufio.NewReader(io.LimitReader(f, 1<<20))
	field := func() ([]byte, bool) {
		var n uint16
		if binary.Read(r, binary.BigEndian, &n) != nil {
			return nil, false
		}
		b := make([]byte, n)
		_, err := io.ReadFull(r, b)
		return b, err == nil
	}
	for {
		var family uint16
		if binary.Read(r, binary.BigEndian, &family) != nil {
			return nil, nil
		}
		_, ok1 := field() // address
		n, ok2 := field()
		nm, ok3 := field()
		d, ok4 := field()
		if !(ok1 && ok2 && ok3 && ok4) {
			return nil, nil
		}
		if (string(n) == num || len(n) == 0) && string(nm) == "MIT-MAGIC-COOKIE-1" {
			return nm, d
		}
	}
}
