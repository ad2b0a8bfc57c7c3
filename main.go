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
	proc.AtriumVersion = version // told to plugins at the handshake
	os.Exit(cli.Main(os.Args[1:], cli.Env{Version: version, Stdout: os.Stdout, Stderr: os.Stderr}))
}
