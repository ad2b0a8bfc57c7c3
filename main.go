// Command atrium: the desktop home for AI-agent sessions. main only wires.
//
// `make build` writes two binaries side by side: atrium (every command,
// without the window) and atrium-window (the same program with the Wails
// window). Terminal commands run the first and never load GTK and WebKit
// (about 150 ms of dynamic linking before main, for every command); `atrium`
// with no command runs atrium-window in its place.
package main

import (
	"os"
	"path/filepath"
	"syscall"

	"atrium/backend/apperr"
	"atrium/backend/dotenv"
	"atrium/backend/plugins/proc"
	"atrium/cli"
	"atrium/desktop"
)

// version is set at build time: -ldflags "-X main.version=$(git describe --tags --always --dirty)".
var version = "dev"

// The two binaries of a build.
const (
	cliName    = "atrium"
	windowName = "atrium-window"
)

func main() {
	// A plugin runs under this binary as its guard (no descendant outlives
	// the host): that re-execution stops here.
	if len(os.Args) > 1 && os.Args[1] == proc.GuardCommand {
		os.Exit(proc.Guard(os.Args[2:]))
	}
	env := cli.Env{Version: version, Stdout: os.Stdout, Stderr: os.Stderr}
	if exe, err := os.Executable(); err == nil {
		guard := exe
		if desktop.Available {
			// The window's plugins start under the light binary when it is
			// there: a guard is one more start per plugin.
			if c := sibling(exe, cliName); c != "" {
				guard = c
			}
		} else if w := sibling(exe, windowName); w != "" {
			env.Window = func() error { return runWindow(w) }
		}
		proc.UseGuard(guard)
	}
	proc.AtriumVersion = version // told to plugins at the handshake
	os.Exit(cli.Main(os.Args[1:], env))
}

// sibling is the executable name beside exe, if it is there and is not exe
// itself.
func sibling(exe, name string) string {
	p := filepath.Join(filepath.Dir(exe), name)
	if p == exe {
		return ""
	}
	if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return ""
	}
	return p
}

// runWindow runs the window binary in this process's place (same pid, same
// arguments, same environment but what the profile's .env gave this one:
// the window reads it itself); it returns only if that failed.
func runWindow(path string) error {
	err := syscall.Exec(path, append([]string{path}, os.Args[1:]...), dotenv.Environ())
	return apperr.Wrap(apperr.Internal, err, "start the window (%s)", path)
}
