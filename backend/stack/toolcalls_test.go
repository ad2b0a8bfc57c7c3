package stack

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"atrium/backend/config"
	"atrium/backend/turns"
)

// display.tool_progress: log writes a line for each tool call, the values
// of keys taken out, and keeps the file to 5 MB, three old ones kept.
func TestTheToolCallLog(t *testing.T) {
	home := config.Home{Root: t.TempDir(), Profile: "default"}
	home.Dir = home.Root
	l := newToolCallLog(home, slog.New(slog.NewTextHandler(io.Discard, nil)))
	l.secrets = []string{"sk-very-secret"}
	l.write("telegram", "s1", turns.ToolStart{Name: "terminal", Args: map[string]any{"command": "curl -H 'Bearer sk-very-secret' x"}})
	b, err := os.ReadFile(filepath.Join(home.Dir, "logs", "tool_calls.log"))
	if err != nil {
		t.Fatal(err)
	}
	line := string(b)
	if !strings.HasSuffix(line, " telegram s1 terminal {\"command\":\"curl -H 'Bearer ***' x\"}\n") || strings.Contains(line, "sk-very") {
		t.Fatalf("the line: %q", line)
	}
	// Past 5 MB the file is rotated; three old ones are kept.
	big := turns.ToolStart{Name: "write_file", Args: map[string]any{"content": strings.Repeat("x", 3<<20)}}
	for range 8 {
		l.write("slack", "s2", big)
	}
	for _, name := range []string{"tool_calls.log", "tool_calls.log.1", "tool_calls.log.2", "tool_calls.log.3"} {
		fi, err := os.Stat(filepath.Join(home.Dir, "logs", name))
		if err != nil || fi.Size() > toolCallLogBytes {
			t.Fatalf("%s: %v %v", name, fi, err)
		}
	}
	if _, err := os.Stat(filepath.Join(home.Dir, "logs", "tool_calls.log.4")); !os.IsNotExist(err) {
		t.Fatalf("a fourth old file: %v", err)
	}
}
