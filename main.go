// Command atrium: the desktop home for AI-agent sessions. main only wires.
package main

import (
	"os"

	"atrium/backend/plugins/proc"
	"atrium/cli"
)

// version is set at build time: -ldflags "-X main.version=$(git describe --tags --always --dirty)".
var version = "dev"

func main() {
	// A plugin runs under this binary as its guard (no descendant outlives
	// the host): that re-execution stops here.
	if len(os.Args) > 1 && os.Args[1] == proc.GuardCommand {
		os.Exit(proc.Guard(os.Args[2:]))
	}
	if exe, err := os.Executable(); err == nil {
		proc.UseGuard(exe)
	}
	proc.AtriumVersion = version // told to plugins at the handshake
	os.Exit(cli.Main(os.Args[1:], cli.Env{Version: version, Stdout: os.Stdout, Stderr: os.Stderr}))
}
