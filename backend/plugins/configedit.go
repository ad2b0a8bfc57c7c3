package plugins

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml"

	"atrium/backend/apperr"
	"atrium/backend/atomicfile"
	"atrium/backend/config"
	"atrium/backend/yamledit"
)

// ConfigEdit sets Section.Key to Value; a nil Value removes the key.
type ConfigEdit struct {
	Section string
	Key     string // "": the section itself is set to Value
	Value   any
	// Path, when set, is the whole key path instead (a key deeper than a
	// section's: auxiliary.approval.model).
	Path []string
}

// EditConfig applies edits to the config file at path in one rewrite that
// changes only the lines of the keys it sets (rewriteConfig), as
// Enable/Disable rewrite the plugin lists. The result must load
// (config.Parse) before it atomically replaces the file, so an invalid
// value changes nothing.
func EditConfig(path string, edits ...ConfigEdit) error {
	return rewriteConfig(path, func(yaml.MapSlice) ([]pathEdit, error) {
		out := make([]pathEdit, len(edits))
		for i, e := range edits {
			out[i] = pathEdit{keys: []string{e.Section, e.Key}, value: e.Value}
			switch {
			case len(e.Path) > 0:
				out[i].keys = e.Path
			case e.Key == "":
				out[i].keys = []string{e.Section} // the section whole
			}
		}
		return out, nil
	})
}

// pathEdit sets the value at a key path; nil removes the key.
type pathEdit struct {
	keys  []string
	value any
}

// rewriteConfig reads the config file under the file's lock (processes
// rewriting it go one at a time, so each one's change counts), asks change
// for the edits to make (it may read the document, not change it), and
// writes the result. The file's text is edited in place where it can be
// (yamledit): a person's blank lines, quotes, flow lists and comments stay
// as they wrote them. A text beyond that, or one whose edit would not read
// back as the edited document, is written whole from the document instead
// (writeConfig), keeping the keys' order and their comments. An error from
// change writes nothing.
func rewriteConfig(path string, change func(yaml.MapSlice) ([]pathEdit, error)) error {
	unlock, err := lockConfig(path)
	if err != nil {
		return err
	}
	defer unlock()
	data, doc, comments, head, err := readConfigDoc(path)
	if err != nil {
		return err
	}
	first := ""
	if len(doc) > 0 {
		first, _ = doc[0].Key.(string)
	}
	edits, err := change(doc)
	if err != nil {
		return err
	}
	text, inPlace := yamledit.Parse(data)
	for _, e := range edits {
		if inPlace {
			inPlace = text.Set(e.keys, getPath(doc, e.keys), e.value)
		}
		if doc, err = setPath(path, doc, e.keys, e.value); err != nil {
			return err
		}
	}
	if inPlace {
		if out := text.Bytes(); readsAs(out, doc) {
			return checkAndWrite(path, out)
		}
	}
	if first != "" && getPath(doc, []string{first}) == nil {
		head = keepFileHead(doc, comments, first, head)
	}
	return writeConfig(path, doc, comments, head)
}

// lockConfig takes the config file's lock: processes writing it go one at
// a time.
func lockConfig(path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, apperr.Wrap(apperr.Internal, err, "lock config %s", path)
	}
	unlock, err = atomicfile.Lock(path)
	if err != nil {
		return nil, apperr.Wrap(apperr.Internal, err, "lock config %s", path)
	}
	return unlock, nil
}

// readsAs reports whether text reads as doc.
func readsAs(text []byte, doc yaml.MapSlice) bool {
	var got yaml.MapSlice
	if err := yaml.UnmarshalWithOptions(text, &got, yaml.UseOrderedMap()); err != nil {
		return false
	}
	if len(got) == 0 && len(doc) == 0 {
		return true
	}
	a, errA := yaml.Marshal(got)
	b, errB := yaml.Marshal(doc)
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

// keepFileHead keeps the comments above the file's first key, removed:
// they head the file (a title, a note) more than they describe the key, so
// they go to the key first now, or stay as the file's text when no key is
// left.
func keepFileHead(doc yaml.MapSlice, comments yaml.CommentMap, removed string, head []byte) []byte {
	var texts []string
	for _, c := range comments[keyPath(removed)] {
		if c.Position == yaml.CommentHeadPosition {
			texts = append(texts, c.Texts...)
		}
	}
	if len(texts) == 0 {
		return head
	}
	if len(doc) == 0 {
		for _, t := range texts {
			head = append(head, "#"+t+"\n"...)
		}
		return head
	}
	k, _ := doc[0].Key.(string)
	p := keyPath(k)
	for _, c := range comments[p] {
		if c.Position == yaml.CommentHeadPosition {
			c.Texts = append(texts, c.Texts...)
			return head
		}
	}
	comments[p] = append(comments[p], yaml.HeadComment(texts...))
	return head
}

// keyPath is the comment map's path of a top-level key.
func keyPath(key string) string {
	return (&yaml.PathBuilder{}).Root().Child(key).Build().String()
}

func setValue(s yaml.MapSlice, key string, value any) yaml.MapSlice {
	for i, it := range s {
		if k, _ := it.Key.(string); k == key {
			if value == nil {
				return append(s[:i], s[i+1:]...)
			}
			s[i].Value = value
			return s
		}
	}
	if value == nil {
		return s
	}
	return append(s, yaml.MapItem{Key: key, Value: value})
}

// writeConfig encodes doc whole and writes it (checkAndWrite).
func writeConfig(path string, doc yaml.MapSlice, comments yaml.CommentMap, head []byte) error {
	out, err := yaml.MarshalWithOptions(doc, yaml.WithComment(comments), yaml.IndentSequence(true))
	if err != nil {
		return apperr.Wrap(apperr.Internal, err, "encode config %s", path)
	}
	if len(head) > 0 {
		if len(doc) == 0 {
			out = nil
		}
		out = append(head, out...)
	}
	return checkAndWrite(path, out)
}

// checkAndWrite checks that out loads as config.yaml and renames it over
// path. A config.yaml that is a link (into a dotfiles repository) stays
// one: the file it names is replaced, with its permissions.
func checkAndWrite(path string, out []byte) error {
	if _, _, err := config.Parse(out, path); err != nil {
		return apperr.Wrap(apperr.Invalid, err, "rewritten config does not load")
	}
	if err := atomicfile.Replace(path, out, 0o600); err != nil {
		return apperr.Wrap(apperr.Internal, err, "write config %s", path)
	}
	return nil
}

// EditConfigPath sets the value at a nested key path (plugins, entries, ID,
// settings, ...) in the config file, creating the mappings on the way and
// keeping everything else, its order and its comments. A nil value removes
// the key. The result must load before it replaces the file.
func EditConfigPath(path string, keys []string, value any) error {
	return UpdateConfigPath(path, keys, func(any) (any, error) { return value, nil })
}

// UpdateConfigPath is EditConfigPath with the new value computed from the
// one the file holds now (nil when the key is missing), under the config
// file's lock: two processes changing one list both count. An error from
// change writes nothing.
func UpdateConfigPath(path string, keys []string, change func(current any) (any, error)) error {
	if len(keys) == 0 {
		return apperr.New(apperr.Invalid, "edit config %s: empty key path", path)
	}
	return rewriteConfig(path, func(doc yaml.MapSlice) ([]pathEdit, error) {
		value, err := change(getPath(doc, keys))
		if err != nil {
			return nil, err
		}
		return []pathEdit{{keys: keys, value: value}}, nil
	})
}

// getPath is the value at keys in m, nil when any is missing.
func getPath(m yaml.MapSlice, keys []string) any {
	v, _ := lookupPath(m, keys)
	return v
}

// lookupPath is the value at keys in m; found is false when a key on the
// way is missing (or is not a mapping).
func lookupPath(m yaml.MapSlice, keys []string) (value any, found bool) {
	for _, it := range m {
		if k, _ := it.Key.(string); k != keys[0] {
			continue
		}
		if len(keys) == 1 {
			return it.Value, true
		}
		sub, _ := it.Value.(yaml.MapSlice)
		return lookupPath(sub, keys[1:])
	}
	return nil, false
}

func setPath(file string, m yaml.MapSlice, keys []string, value any) (yaml.MapSlice, error) {
	if len(keys) == 1 {
		return setValue(m, keys[0], value), nil
	}
	for i, it := range m {
		if k, _ := it.Key.(string); k != keys[0] {
			continue
		}
		var sub yaml.MapSlice
		if it.Value != nil {
			var ok bool
			if sub, ok = it.Value.(yaml.MapSlice); !ok {
				return nil, apperr.New(apperr.Invalid, "config %s: %s is not a mapping", file, keys[0])
			}
		}
		n := len(sub)
		sub, err := setPath(file, sub, keys[1:], value)
		if err != nil {
			return nil, err
		}
		if value == nil && n > 0 && len(sub) == 0 {
			return append(m[:i], m[i+1:]...), nil // its last key removed: the section goes too
		}
		m[i].Value = sub
		return m, nil
	}
	if value == nil {
		return m, nil
	}
	sub, err := setPath(file, nil, keys[1:], value)
	if err != nil {
		return nil, err
	}
	return append(m, yaml.MapItem{Key: keys[0], Value: sub}), nil
}

// SetPluginSetting writes plugins.entries.<id>.settings.<key> (a dotted key
// is nested) in the profile's config.yaml: ctx.set_config.
func SetPluginSetting(home config.Home, id, key string, value any) error {
	keys := append([]string{"plugins", "entries", id, "settings"}, strings.Split(key, ".")...)
	return EditConfigPath(home.ConfigPath(), keys, value)
}

// readConfigDoc reads the config file as an ordered document with its
// comments; it must load first (a missing file is an empty document). A
// file of comments alone (a template with every key commented out) has no
// key to carry them: head is its text then, written back above the keys.
func readConfigDoc(path string) (data []byte, doc yaml.MapSlice, comments yaml.CommentMap, head []byte, err error) {
	// Load first: it bounds the file's size and nesting before any parse.
	if _, _, err := config.Load(path); err != nil {
		return nil, nil, nil, nil, err
	}
	data, err = os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, nil, nil, nil, apperr.Wrap(apperr.Invalid, err, "cannot read config %s", path)
	}
	comments = yaml.CommentMap{}
	if err := yaml.UnmarshalWithOptions(data, &doc, yaml.UseOrderedMap(), yaml.CommentToMap(comments)); err != nil {
		return nil, nil, nil, nil, apperr.New(apperr.Invalid, "config %s:%s", path, describe(err))
	}
	if len(doc) == 0 && commentsOnly(data) {
		head = data
		if !strings.HasSuffix(string(head), "\n") {
			head = append(head, '\n')
		}
	}
	return data, doc, comments, head, nil
}

// commentsOnly reports whether text has a comment and nothing but
// comments and blank lines.
func commentsOnly(text []byte) bool {
	seen := false
	for line := range strings.Lines(string(text)) {
		switch t := strings.TrimSpace(line); {
		case t == "":
		case strings.HasPrefix(t, "#"):
			seen = true
		default:
			return false
		}
	}
	return seen
}

// ConfigValue is the value at keys in the config file; found is false when
// a key on the way is missing.
func ConfigValue(path string, keys []string) (value any, found bool, err error) {
	_, doc, _, _, err := readConfigDoc(path)
	if err != nil {
		return nil, false, err
	}
	value, found = lookupPath(doc, keys)
	return value, found, nil
}

// ReplaceConfig writes text as the config file, under its lock, when it
// loads and the file still holds was (the text an editor started from): a
// file changed meanwhile by another process is not overwritten.
func ReplaceConfig(path string, was, text []byte) error {
	unlock, err := lockConfig(path)
	if err != nil {
		return err
	}
	defer unlock()
	now, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return apperr.Wrap(apperr.Internal, err, "read config %s", path)
	}
	if !bytes.Equal(now, was) {
		return apperr.New(apperr.Conflict, "config %s changed while it was being edited", path)
	}
	return checkAndWrite(path, text)
}
