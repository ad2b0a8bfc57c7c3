package config

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"atrium/backend/apperr"
)

// FuzzLoad: any bytes as config.yaml load or give an invalid error naming
// the file, with bounded memory and no panic.
func FuzzLoad(f *testing.F) {
	f.Add([]byte("storage:\n  synchronous: full\nsessions:\n  retention_days: 7\n"))
	f.Add([]byte("plugins:\n  entries:\n    x:\n      settings: {a: [1, 2, {b: c}]}\n"))
	f.Add([]byte("sessions: " + strings.Repeat("{a: ", 3000)))
	f.Add([]byte("\tbad"))
	f.Add([]byte("sessions: !x ")) // panicked inside goccy/go-yaml
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, _, err := Load(path)
		runtime.ReadMemStats(&after)
		if err != nil && (apperr.CodeOf(err) != apperr.Invalid || !strings.Contains(err.Error(), path)) {
			t.Fatalf("error %v (%s)", err, apperr.CodeOf(err))
		}
		if a := after.TotalAlloc - before.TotalAlloc; a > 64<<20 {
			t.Fatalf("%d bytes of config allocated %d MiB", len(data), a>>20)
		}
	})
}
