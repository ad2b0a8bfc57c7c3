package plugins_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"atrium/backend/plugins"
)

// handWritten is a config.yaml of n sections as a person writes them:
// comments, blank lines, flow lists.
func handWritten(n int) string {
	var b strings.Builder
	b.WriteString("# my atrium\n\n")
	for i := range n {
		fmt.Fprintf(&b, "# section %d\nplugins_%d:\n  enabled: [a, \"b\"]   # mine\n  # a note\n  hook_callback_timeout: %d\n\n", i, i, i+1)
	}
	b.WriteString("plugins:\n  enabled:\n    - memory\n")
	return b.String()
}

// BenchmarkEditConfig: one "always" (an entry added to command_allowlist)
// in a config of 60 sections (~370 lines), edited in place, and the same
// file with an anchor (which the in-place editor declines) written whole.
func BenchmarkEditConfig(b *testing.B) {
	for _, c := range []struct{ name, extra string }{
		{"in-place", "command_allowlist:\n  - plugin_rule:x\n"},
		{"whole", "command_allowlist:\n  - &r plugin_rule:x\n"},
	} {
		b.Run(c.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "config.yaml")
			text := []byte(handWritten(60) + c.extra)
			for b.Loop() {
				b.StopTimer()
				if err := os.WriteFile(path, text, 0o600); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				err := plugins.UpdateConfigPath(path, []string{"command_allowlist"}, func(cur any) (any, error) {
					return append(cur.([]any), "plugin_rule:y"), nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
