package yamledit

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
)

// A file as a person writes it: a title, blank lines between sections,
// comments above and beside keys, quotes, a flow list, a literal block.
const written = `# my atrium

storage:
  synchronous: NORMAL   # durability

# Sessions
sessions:
  trash_days: 30

  # keep at least this many
  retention_days: 90

plugins:
  enabled:
    - "memory"   # the one I rely on
    - 'notes'
  disabled: [a, "b c"]

system_prompt: |
  Be brief.
  Say when you are unsure.
`

func TestSetTouchesOnlyItsKey(t *testing.T) {
	cases := []struct {
		name  string
		keys  []string
		old   any
		value any
		want  string // the text of written after the edit: a replacement of its lines
	}{
		{"a scalar keeps its comment", []string{"storage", "synchronous"}, "NORMAL", "FULL",
			strings.Replace(written, "synchronous: NORMAL   #", "synchronous: FULL   #", 1)},
		{"a string that needs quotes", []string{"sessions", "trash_days"}, 30, "30",
			strings.Replace(written, "trash_days: 30", `trash_days: "30"`, 1)},
		{"a key goes with the comments right above it", []string{"sessions", "retention_days"}, 90, nil,
			strings.Replace(written, "  trash_days: 30\n\n  # keep at least this many\n  retention_days: 90\n", "  trash_days: 30\n", 1)},
		{"a new key of a section goes last in it", []string{"sessions", "keep_last"}, nil, 5,
			strings.Replace(written, "  retention_days: 90\n", "  retention_days: 90\n  keep_last: 5\n", 1)},
		{"a new section goes last, set apart as the others", []string{"approvals", "mode"}, nil, "off",
			written + "\napprovals:\n  mode: \"off\"\n"},
		{"an entry added to a list", []string{"plugins", "enabled"}, []any{"memory", "notes"}, []string{"memory", "notes", "web"},
			strings.Replace(written, "    - 'notes'\n", "    - 'notes'\n    - web\n", 1)},
		{"an entry taken from a list", []string{"plugins", "enabled"}, []any{"memory", "notes"}, []string{"notes"},
			strings.Replace(written, "    - \"memory\"   # the one I rely on\n", "", 1)},
		{"a flow list stays a flow list", []string{"plugins", "disabled"}, []any{"a", "b c"}, []string{"b c", "d"},
			strings.Replace(written, `[a, "b c"]`, `[b c, d]`, 1)},
		{"a list rewritten", []string{"plugins", "enabled"}, []any{"memory", "notes"}, []string{"web"},
			strings.Replace(written, "    - \"memory\"   # the one I rely on\n    - 'notes'\n", "    - web\n", 1)},
		{"a literal block replaced", []string{"system_prompt"}, "Be brief.\nSay when you are unsure.\n", "One line.",
			strings.Replace(written, "system_prompt: |\n  Be brief.\n  Say when you are unsure.\n", "system_prompt: One line.\n", 1)},
		{"a top-level key removed", []string{"system_prompt"}, "x", nil,
			strings.TrimSuffix(strings.Replace(written, "system_prompt: |\n  Be brief.\n  Say when you are unsure.\n", "", 1), "\n")},
		{"the last key of a section takes the section with it", []string{"storage", "synchronous"}, "NORMAL", nil,
			strings.Replace(written, "storage:\n  synchronous: NORMAL   # durability\n\n", "", 1)},
		{"a key of a missing section removed: nothing", []string{"approvals", "timeout"}, nil, nil, written},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, ok := Parse([]byte(written))
			if !ok {
				t.Fatal("declined")
			}
			if !d.Set(c.keys, c.old, c.value) {
				t.Fatal("Set declined")
			}
			if got := string(d.Bytes()); got != c.want {
				t.Fatalf("got\n%s\nwant\n%s", got, c.want)
			}
			readBack(t, d.Bytes(), c.keys, c.value)
		})
	}
}

func TestSetInFilesOfOtherShapes(t *testing.T) {
	set := func(text string, keys []string, old, value any) (string, bool) {
		t.Helper()
		d, ok := Parse([]byte(text))
		if !ok {
			return "", false
		}
		if !d.Set(keys, old, value) {
			return "", false
		}
		return string(d.Bytes()), true
	}
	// Four spaces: new nested keys follow the file's unit.
	if got, _ := set("a:\n    b: 1\n", []string{"c", "d", "e"}, nil, 1); got != "a:\n    b: 1\nc:\n    d:\n        e: 1\n" {
		t.Errorf("four spaces: %q", got)
	}
	// A file of comments alone gains its first key below them.
	if got, _ := set("# nothing yet\n\n# a: 1\n", []string{"a"}, nil, 2); got != "# nothing yet\n\n# a: 1\na: 2\n" {
		t.Errorf("comments only: %q", got)
	}
	// An empty file.
	if got, _ := set("", []string{"a", "b"}, nil, true); got != "a:\n  b: true\n" {
		t.Errorf("empty: %q", got)
	}
	// The file's title stays when its first key goes; a key's own comment
	// (set apart from the title) goes with it.
	if got, _ := set("# title\na: 1\nb: 2\n", []string{"a"}, 1, nil); got != "# title\nb: 2\n" {
		t.Errorf("title: %q", got)
	}
	if got, _ := set("# title\n\n# about a\na: 1\nb: 2\n", []string{"a"}, 1, nil); got != "# title\n\nb: 2\n" {
		t.Errorf("title and a's comment: %q", got)
	}
	// Empty and null sections take keys; their comment stays.
	if got, _ := set("a: {}  # later\n", []string{"a", "b"}, nil, 1); got != "a:  # later\n  b: 1\n" {
		t.Errorf("empty section: %q", got)
	}
	if got, _ := set("a:\n  # b: 0\nc: 1\n", []string{"a", "b"}, nil, 1); got != "a:\n  # b: 0\n  b: 1\nc: 1\n" {
		t.Errorf("a section of comments: %q", got)
	}
	// A removal that empties sections takes them too; an empty section
	// stays as it is when nothing is removed from it.
	if got, _ := set("# about a\na:\n  b:\n    c: 1\nd: 2\n", []string{"a", "b", "c"}, 1, nil); got != "# about a\nd: 2\n" {
		t.Errorf("emptied sections: %q", got)
	}
	if got, _ := set("x: 1\n\n# about a\na:\n  b:\n    c: 1\n  e: 2\n", []string{"a", "b", "c"}, 1, nil); got != "x: 1\n\n# about a\na:\n  e: 2\n" {
		t.Errorf("a section with a key left: %q", got)
	}
	if got, _ := set("a: {}  # later\n", []string{"a", "b"}, nil, nil); got != "a: {}  # later\n" {
		t.Errorf("nothing removed from an empty section: %q", got)
	}
	// A sequence at its key's indentation is the key's value.
	if got, _ := set("a:\n- x\n- y\nb: 1\n", []string{"a"}, []any{"x", "y"}, []string{"x", "y", "z"}); got != "a:\n- x\n- y\n- z\nb: 1\n" {
		t.Errorf("unindented list: %q", got)
	}
	// New entries take the quotes every entry has.
	if got, _ := set("a:\n  - 'x'\nb: ['y']\nc: [\"z\"]\n", []string{"a"}, []any{"x"}, []any{"x", "it's", 3}); got != "a:\n  - 'x'\n  - 'it''s'\n  - 3\nb: ['y']\nc: [\"z\"]\n" {
		t.Errorf("single quotes: %q", got)
	}
	if got, _ := set("b: ['y']\nc: [\"z\"]\n", []string{"c"}, []any{"z"}, []string{"z", `say "hi"`}); got != "b: ['y']\nc: [\"z\", \"say \\\"hi\\\"\"]\n" {
		t.Errorf("double quotes: %q", got)
	}
	// Quoted keys are found by their value.
	if got, _ := set("\"a b\": 1\n'c''d': 2\n", []string{"c'd"}, 2, 3); got != "\"a b\": 1\n'c''d': 3\n" {
		t.Errorf("quoted keys: %q", got)
	}
	// A quoted value with a # inside keeps its real comment.
	if got, _ := set("a: \"x # y\"  # z\n", []string{"a"}, "x # y", "w"); got != "a: w  # z\n" {
		t.Errorf("quoted value: %q", got)
	}
	// Declined: shapes this package does not edit.
	for _, text := range []string{
		"---\na: 1\n",
		"a:\n\tb: 1\n",
		"- a\n- b\n",
		"{a: 1}\n",
		"a: &x 1\nb: *x\n",
		"a: {b: 1}\n",
		"a:\r\n  b: 1\r\n",
		"? a\n: 1\n",
	} {
		if got, ok := set(text, []string{"a", "c"}, nil, 1); ok && !strings.HasPrefix(text, "a: &x") {
			t.Errorf("%q was edited: %q", text, got)
		}
	}
}

// readBack checks that text reads as YAML with value at keys.
func readBack(t *testing.T, text []byte, keys []string, value any) {
	t.Helper()
	var doc yaml.MapSlice
	if err := yaml.UnmarshalWithOptions(text, &doc, yaml.UseOrderedMap()); err != nil {
		t.Fatalf("the edit does not read: %v\n%s", err, text)
	}
	got, found := lookup(doc, keys)
	if value == nil {
		if found {
			t.Fatalf("%v still there: %v", keys, got)
		}
		return
	}
	a, _ := yaml.Marshal(got)
	b, _ := yaml.Marshal(value)
	if !bytes.Equal(a, b) {
		t.Fatalf("%v reads %s, want %s", keys, a, b)
	}
}

// roundTrips reports whether the YAML library reads v back as it writes it.
func roundTrips(v any) bool {
	out, err := yaml.Marshal(yaml.MapSlice{{Key: "k", Value: v}})
	var m yaml.MapSlice
	if err != nil || yaml.UnmarshalWithOptions(out, &m, yaml.UseOrderedMap()) != nil || len(m) != 1 {
		return false
	}
	a, _ := yaml.Marshal(m[0].Value)
	b, _ := yaml.Marshal(v)
	return bytes.Equal(a, b)
}

func lookup(m yaml.MapSlice, keys []string) (any, bool) {
	for _, it := range m {
		if k, _ := it.Key.(string); k == keys[0] {
			if len(keys) == 1 {
				return it.Value, true
			}
			sub, _ := it.Value.(yaml.MapSlice)
			return lookup(sub, keys[1:])
		}
	}
	return nil, false
}

// FuzzSet: whatever the text, Set never panics, and an edit it makes that
// reads has the value at its key and every other top-level key as it was.
func FuzzSet(f *testing.F) {
	f.Add([]byte(written), "plugins.enabled", "web")
	f.Add([]byte("a:\n  b: 1\n"), "a.b", "")
	f.Add([]byte("# c\n\na: [1, 2]  # x\n"), "a", "z")
	f.Add([]byte("a: |\n  x\n  y\nb:\n- 1\n"), "b", "q")
	f.Fuzz(func(t *testing.T, text []byte, path, value string) {
		if len(text) > 4096 || path == "" || !utf8.ValidString(value) {
			return // the library writes such a string as another (the caller's check declines it)
		}
		var before yaml.MapSlice
		if err := yaml.UnmarshalWithOptions(text, &before, yaml.UseOrderedMap()); err != nil {
			return
		}
		keys := strings.Split(path, ".")
		for _, k := range keys {
			if k == "" {
				return
			}
		}
		var v any = value
		if value == "" {
			v = nil
		} else if strings.HasPrefix(value, "[") {
			v = strings.Split(value[1:], ",")
		}
		if !roundTrips(v) {
			return // the library itself writes such a value as another
		}
		old, _ := lookup(before, keys)
		d, ok := Parse(text)
		if !ok || !d.Set(keys, old, v) {
			return
		}
		out := d.Bytes()
		var after yaml.MapSlice
		if err := yaml.UnmarshalWithOptions(out, &after, yaml.UseOrderedMap()); err != nil {
			// The library reads some texts it would not read with a line
			// more (a block scalar's header of a kind it does not know at
			// the end of the file): the caller's check declines the edit
			// and renders the document whole.
			return
		}
		if v != nil {
			if _, isMap := old.(yaml.MapSlice); !isMap {
				readBack(t, out, keys, v)
			}
		}
		for _, it := range before {
			k, _ := it.Key.(string)
			if k == keys[0] {
				continue
			}
			got, _ := lookup(after, []string{k})
			a, _ := yaml.Marshal(got)
			b, _ := yaml.Marshal(it.Value)
			if !bytes.Equal(a, b) {
				t.Fatalf("%q edited to %q: %s changed", text, out, k)
			}
		}
	})
}
