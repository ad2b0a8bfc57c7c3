// Package proc hosts out-of-process plugins: one long-lived child process
// per plugin, speaking JSON-RPC 2.0 over its stdin and stdout (see
// docs/plugin-protocol.md), bridged onto the hook bus.
package proc

import "time"

// Spec says how to run one plugin. Discovery (package plugins) builds it
// from a validated manifest; proc knows nothing of manifests.
type Spec struct {
	Name     string         // the plugin's name (unique)
	Dir      string         // the plugin's folder (read-only to the host)
	Argv     []string       // the command to start: for runtime python, the runner and the folder
	Env      []string       // KEY=VALUE: the minimal environment the child gets, already filtered
	WorkDir  string         // the child's own working folder (created if missing)
	Settings map[string]any // the plugin's validated settings, sent at the handshake
	// Hooks and Commands the manifest says the plugin expects to register;
	// informational: what the plugin registers at its handshake is what counts.
	Hooks    []string
	Commands []string
	// Timeout bounds each callback and request (plugins.hook_callback_timeout; 0 = none).
	Timeout time.Duration
}
