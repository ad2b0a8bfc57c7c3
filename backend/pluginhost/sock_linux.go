package pluginhost

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// maxSunPath is what fits in sockaddr_un.sun_path with its NUL.
const maxSunPath = 107

// withAddr calls fn with an address for path that fits sun_path: path
// itself, or, for a deep home, /proc/self/fd/N/NAME through a descriptor
// of its folder.
func withAddr(path string, fn func(addr string) error) error {
	if len(path) <= maxSunPath {
		return fn(path)
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return fn(fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), filepath.Base(path)))
}

func listenUnix(path string) (*net.UnixListener, error) {
	var ln *net.UnixListener
	err := withAddr(path, func(addr string) error {
		var err error
		ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
		return err
	})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(false) // removed by path, by the server
	return ln, nil
}

func dialUnix(path string) (*net.UnixConn, error) {
	var c *net.UnixConn
	err := withAddr(path, func(addr string) error {
		var err error
		c, err = net.DialUnix("unix", nil, &net.UnixAddr{Name: addr, Net: "unix"})
		return err
	})
	return c, err
}

// peerUID is the uid of the process at the other end of c.
func peerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	uid := -1
	var cerr error
	err = raw.Control(func(fd uintptr) {
		var cred *syscall.Ucred
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
		if cerr == nil {
			uid = int(cred.Uid)
		}
	})
	if err != nil {
		return -1, err
	}
	return uid, cerr
}
