package cli

import "testing"

// A reason of several lines (a Python traceback) keeps the plugins table
// on one line: its first line and its last, where the exception is.
func TestPluginsTableReasonOnOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"handshake failed":   "handshake failed",
		"handshake failed\n": "handshake failed",
		"handshake: the plugin exited\nTraceback (most recent call last):\n  File \"x.py\", line 3, in <module>\nRuntimeError: no register(ctx)\n": "handshake: the plugin exited … RuntimeError: no register(ctx)",
	} {
		if got := firstAndLast(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
