package plugins

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"atrium/backend/apperr"
)

// allocatedBy runs fn and returns the bytes it allocated.
func allocatedBy(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// FuzzManifest: any bytes as a plugin.yaml cost bounded memory and give a
// manifest or a coded error, never a panic.
func FuzzManifest(f *testing.F) {
	f.Add([]byte("name: a\nruntime: python\nhooks: [on_session_delete]\n"))
	f.Add([]byte("name: c\nruntime: command\ncommand: [./run, --x]\nconfig_schema:\n  n: {type: int, default: 2}\n"))
	f.Add([]byte("config_schema: " + strings.Repeat("[", 5000)))
	f.Add([]byte("a: &a [x, x]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b]\n"))
	f.Add([]byte("name: a\nruntime: python\nhooks: !x ")) // panicked inside goccy/go-yaml
	f.Fuzz(func(t *testing.T, data []byte) {
		var err error
		alloc := allocatedBy(func() {
			if _, err = readManifestFrom(bytes.NewReader(data), "plugin.yaml"); err == nil {
				_, _, err = parseManifest(data, "plugin.yaml")
			}
		})
		if err != nil && apperr.CodeOf(err) == apperr.Internal {
			t.Fatalf("uncoded error: %v", err)
		}
		if alloc > 64<<20 {
			t.Fatalf("%d bytes of manifest allocated %d MiB", len(data), alloc>>20)
		}
	})
}

// FuzzInstallZip: any bytes as a .zip install a plugin or are refused as
// invalid input, never write outside the plugins folder, never panic.
func FuzzInstallZip(f *testing.F) {
	f.Add([]byte("PK\x05\x06" + strings.Repeat("\x00", 18)))
	f.Add([]byte("not a zip"))
	f.Fuzz(func(t *testing.T, data []byte) {
		root := t.TempDir()
		src := filepath.Join(root, "in.zip")
		if err := os.WriteFile(src, data, 0o600); err != nil {
			t.Fatal(err)
		}
		plugins := filepath.Join(root, "home", "plugins")
		var err error
		alloc := allocatedBy(func() { _, err = install(context.Background(), src, plugins, "v0.5.0", false) })
		if err != nil && apperr.CodeOf(err) == apperr.Internal {
			t.Fatalf("internal error for an archive: %v", err)
		}
		if alloc > 64<<20 {
			t.Fatalf("a %d-byte archive allocated %d MiB", len(data), alloc>>20)
		}
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if e.Name() != "in.zip" && e.Name() != "home" {
				t.Fatalf("the install wrote %s outside the plugins folder", e.Name())
			}
		}
	})
}
