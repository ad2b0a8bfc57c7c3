package plugins_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"atrium/backend/apperr"
	"atrium/backend/limits"
	"atrium/backend/plugins"
)

// deepManifest nests n flow sequences: a few hundred KB that the YAML
// library would parse in time and memory growing with n².
func deepManifest(n int) string {
	return "name: deep\nruntime: python\nconfig_schema: " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n"
}

// allocated runs fn and returns the bytes it allocated.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// leastAllocated is the least of three allocated(fn): the counter is the
// whole process's, so whatever else runs meanwhile only adds to it (a CI
// run saw 16 MB charged to one refused install). fn must be repeatable.
func leastAllocated(fn func()) uint64 {
	least := allocated(fn)
	for i := 0; i < 2; i++ {
		least = min(least, allocated(fn))
	}
	return least
}

func TestHostileManifestsAreOneErrorRowEach(t *testing.T) {
	e := newEnv(t)
	MustWrite(t, e.home.PluginsDir(), "good", py("good"))
	baseline := allocated(func() { e.discover() })

	MustWrite(t, e.home.PluginsDir(), "deep", deepManifest(100_000))      // 200 KB: over the size cap
	MustWrite(t, e.home.PluginsDir(), "deep-small", deepManifest(20_000)) // 40 KB: under it, caught by depth
	block := &strings.Builder{}
	block.WriteString("name: block\nruntime: python\n")
	for i := range 100 {
		block.WriteString(strings.Repeat(" ", i) + "k:\n")
	}
	MustWrite(t, e.home.PluginsDir(), "block", block.String())
	huge := MustWrite(t, e.home.PluginsDir(), "huge", "")
	f, err := os.Create(filepath.Join(huge, plugins.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	line := []byte("- an entry of a very long list\n")
	chunk := bytes.Repeat(line, (1<<20)/len(line))
	for range 64 {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()

	var got map[string]plugins.Plugin
	extra := allocated(func() { got = e.discover() })
	if extra > baseline+2<<20 {
		t.Errorf("discovery with hostile manifests allocated %d bytes, %d without", extra, baseline)
	}
	if got["good"].State == plugins.StateError {
		t.Fatalf("a good plugin beside hostile ones: %q", got["good"].Err)
	}
	want := map[string]string{
		"deep":       "over the 64 KiB limit for a plugin.yaml",
		"deep-small": "nested deeper than 32 levels",
		"block":      "nested deeper than 32 levels",
		"huge":       "over the 64 KiB limit for a plugin.yaml",
	}
	for name, msg := range want {
		if got[name].State != plugins.StateError || !strings.Contains(got[name].Err, msg) || !strings.Contains(got[name].Err, filepath.Join(name, plugins.ManifestFile)) {
			t.Errorf("%s: error %q, want it to name the file and say %q", name, got[name].Err, msg)
		}
	}
}

// rawZip writes entries as stored (uncompressed) with headers as given: a
// size or CRC may lie.
type rawEntry struct {
	name   string
	data   string
	size   uint64 // 0: the real size
	method uint16 // 0: stored
}

func rawZip(t *testing.T, path string, entries ...rawEntry) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, en := range entries {
		size := en.size
		if size == 0 {
			size = uint64(len(en.data))
		}
		h := &zip.FileHeader{Name: en.name, Method: en.method, CRC32: crc32.ChecksumIEEE([]byte(en.data)),
			CompressedSize64: uint64(len(en.data)), UncompressedSize64: size}
		h.SetMode(0o644)
		w, err := zw.CreateRaw(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(en.data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// headerPastEnd rewrites the zip at path so that its last central
// directory entry's local header offset points past the end of the file.
func headerPastEnd(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.LastIndex(data, []byte("PK\x01\x02"))
	if at < 0 {
		t.Fatal("no central directory entry")
	}
	binary.LittleEndian.PutUint32(data[at+42:], uint32(len(data)+1000))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Not parallel: it bounds what an install allocates, and the counter
// is the process's.
func TestInstallRefusesHostileArchivesAsInvalidInput(t *testing.T) {
	e := newEnv(t)
	m, rec := e.manager()
	ctx := context.Background()
	tmp := t.TempDir()
	manifest := py("evil")
	scenarios := []struct {
		name string
		zip  string
		say  string
	}{
		{"deep manifest", MustZip(t, filepath.Join(tmp, "deep.zip"), "plugin.yaml", deepManifest(100_000)), "over the 64 KiB limit"},
		{"deep small manifest", MustZip(t, filepath.Join(tmp, "deep2.zip"), "plugin.yaml", deepManifest(20_000)), "nested deeper than 32 levels"},
		{"duplicate entries", rawZip(t, filepath.Join(tmp, "dup.zip"), rawEntry{name: "plugin.yaml", data: manifest},
			rawEntry{name: "main.py", data: "a"}, rawEntry{name: "main.py", data: "b"}), "appears twice"},
		{"duplicate via clean", rawZip(t, filepath.Join(tmp, "dup2.zip"), rawEntry{name: "plugin.yaml", data: manifest},
			rawEntry{name: "a/main.py", data: "a"}, rawEntry{name: "a//main.py", data: "b"}), "appears twice"},
		{"file and folder", rawZip(t, filepath.Join(tmp, "filedir.zip"), rawEntry{name: "plugin.yaml", data: manifest},
			rawEntry{name: "a", data: "a"}, rawEntry{name: "a/b", data: "b"}), "is a file and the folder of"},
		{"size header too small", rawZip(t, filepath.Join(tmp, "small.zip"), rawEntry{name: "plugin.yaml", data: manifest},
			rawEntry{name: "main.py", data: "print('hello world')", size: 3}), "does not match its header"},
		{"size header too large", rawZip(t, filepath.Join(tmp, "large.zip"), rawEntry{name: "plugin.yaml", data: manifest},
			rawEntry{name: "main.py", data: "print('hello world')", size: 4000}), "does not match its header"},
		{"manifest header lies", rawZip(t, filepath.Join(tmp, "mlies.zip"), rawEntry{name: "plugin.yaml", data: manifest, size: 2}), "plugin.yaml"},
		// 7-Zip and others can write zstd (93) or LZMA (14) entries; Go's
		// archive/zip reads neither (found by FuzzInstallZip).
		{"zstd entry", rawZip(t, filepath.Join(tmp, "zstd.zip"), rawEntry{name: "plugin.yaml", data: manifest},
			rawEntry{name: "main.py", data: "x", method: 93}), "compressed with method 93"},
		// The central directory points an entry's local header past the
		// end of the file (found by FuzzInstallZip: it was an internal error).
		{"local header past the end", headerPastEnd(t, rawZip(t, filepath.Join(tmp, "past.zip"),
			rawEntry{name: "plugin.yaml", data: manifest}, rawEntry{name: "main.py", data: "x"})), "does not match its header"},
		// A name no file system takes (a component over 255 bytes).
		{"name too long", rawZip(t, filepath.Join(tmp, "long.zip"), rawEntry{name: "plugin.yaml", data: manifest},
			rawEntry{name: strings.Repeat("n", 300) + ".py", data: "x"}), "too long"},
	}
	for _, sc := range scenarios {
		var err error
		alloc := leastAllocated(func() { _, err = m.Install(ctx, sc.zip, true) })
		if apperr.CodeOf(err) != apperr.Invalid || !strings.Contains(err.Error(), sc.say) {
			t.Errorf("%s: %v (%s), want invalid saying %q", sc.name, err, apperr.CodeOf(err), sc.say)
		}
		if alloc > 8<<20 {
			t.Errorf("%s: install allocated %d bytes", sc.name, alloc)
		}
	}
	if entries, _ := os.ReadDir(e.home.PluginsDir()); len(entries) != 0 {
		t.Fatalf("something was left in plugins/: %v", entries)
	}
	if len(rec.got()) != 0 {
		t.Fatalf("observer fired: %q", rec.got())
	}
	// A 10 KB plugin name (a dashboard path) is not echoed whole.
	if _, err := m.Find(strings.Repeat("n", 10_000)); apperr.CodeOf(err) != apperr.NotFound || len(err.Error()) > 200 {
		t.Fatalf("find a 10 KB name: %d-byte error", len(err.Error()))
	}
}

func TestYAMLDepthCheck(t *testing.T) {
	t.Parallel()
	ok := []string{
		"name: a\nruntime: python\nhooks: [on_session_delete, post_compaction]\n",
		"config_schema:\n  rules:\n    type: list\n    default: [a, [b, {c: d}]]\n",
		"description: a text with [brackets [inside [a [plain [scalar [that [is [not [flow" + strings.Repeat("[", 40) + "\n",
		"description: '" + strings.Repeat("[", 40) + "'\n",
		"description: \"" + strings.Repeat("{", 40) + "\\\"\"\n",
		"description: |\n" + strings.Repeat("  [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n", 3) + "name: x\n",
		"# " + strings.Repeat("[", 100) + "\nname: x # " + strings.Repeat("{", 100) + "\n",
		"- - - - a\n",
	}
	for _, s := range ok {
		if err := limits.CheckYAMLDepth([]byte(s), limits.YAMLDepth, "t.yaml"); err != nil {
			t.Errorf("refused %q: %v", s, err)
		}
	}
	bad := []string{
		strings.Repeat("[", 33),
		"a: " + strings.Repeat("{a: ", 40) + "b" + strings.Repeat("}", 40),
		strings.Repeat("- ", 40) + "x\n",
		"a:\n" + strings.Repeat("  [\n", 40),
	}
	for _, s := range bad {
		if err := limits.CheckYAMLDepth([]byte(s), limits.YAMLDepth, "t.yaml"); apperr.CodeOf(err) != apperr.Invalid {
			t.Errorf("accepted %.60q: %v", s, err)
		}
	}
}
