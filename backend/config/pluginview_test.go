package config

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"atrium/backend/apperr"
)

func TestPluginViewShowsAPluginItsOwnPart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	if v, err := PluginView(path, "a"); err != nil || len(v) != 0 {
		t.Fatalf("a missing file: %v %v", v, err)
	}
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`model:
  name: m1
memory:
  provider: recall
plugins:
  enabled: [a, b, c]
  c: kept as written
  entries:
    a:
      settings: {level: 3, tags: [x, y]}
    b:
      settings: {token: secret-of-b}
    c:
      config: {old: true}
`)
	want := map[string]any{
		"model":  map[string]any{"name": "m1", "default": "m1"},
		"memory": map[string]any{"provider": "recall"},
		"plugins": map[string]any{
			"enabled": []any{"a", "b", "c"},
			"c":       "kept as written",
			"entries": map[string]any{"a": map[string]any{"settings": map[string]any{"level": uint64(3), "tags": []any{"x", "y"}}}},
			"a":       map[string]any{"level": uint64(3), "tags": []any{"x", "y"}},
		},
	}
	got, err := PluginView(path, "a")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("plugin a sees\n%#v\nwant\n%#v", got, want)
	}
	// The older "config" name; a plugins.<id> key already written wins.
	got, _ = PluginView(path, "c")
	ps := got["plugins"].(map[string]any)
	if ps["c"] != "kept as written" || len(ps["entries"].(map[string]any)) != 1 {
		t.Fatalf("plugin c sees %#v", ps)
	}
	write("model:\n  name: m1\n  default: m2\n")
	if got, _ := PluginView(path, "a"); got["model"].(map[string]any)["default"] != "m2" {
		t.Fatalf("model.default as written: %#v", got)
	}
	write("model: [unclosed\n")
	if _, err := PluginView(path, "a"); !apperr.Is(err, apperr.Invalid) {
		t.Fatalf("a broken file: %v", err)
	}
}
