package config

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml"
)

// KindOf is the kind of value config.yaml keeps at keys (a dotted key's
// parts), reflect.Invalid for a key Atrium does not know: a string, a
// number, a bool, a list or a mapping. `atrium config set` writes a word
// as text where text is wanted (approvals.mode off), as the familiar
// agent's loader reads it there.
func KindOf(keys []string) reflect.Kind {
	t := reflect.TypeOf(Config{})
	for _, k := range keys {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Struct:
			f, ok := fieldByTag(t, k)
			if !ok {
				return reflect.Invalid
			}
			t = f.Type
		case reflect.Map:
			t = t.Elem()
		default:
			return reflect.Invalid
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind()
}

// fieldByTag is t's field whose yaml name is name (inline structs
// included).
func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if strings.Contains(opts, "inline") && f.Type.Kind() == reflect.Struct {
			if g, ok := fieldByTag(f.Type, name); ok {
				return g, true
			}
			continue
		}
		if tag == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// yamlUnmarshaler is a type that reads its YAML itself (and may take any
// key): the walk of unknownKeys stops there.
type yamlUnmarshaler interface{ UnmarshalYAML(func(any) error) error }

var unmarshalerType = reflect.TypeOf((*yamlUnmarshaler)(nil)).Elem()

// fieldsType is a type that reads its YAML itself but whose mapping has
// only its fields' keys (Model): the walk goes on into it.
var fieldsType = reflect.TypeOf((*interface{ yamlFields() })(nil)).Elem()

// unknownKeys lists every key of the config text Atrium's settings do not
// have, as dotted paths (a list's entries by index), not descending into
// them: what a config.yaml brought from elsewhere sets that does nothing
// here. The strict decoder names only the first.
func unknownKeys(data []byte) []string {
	var doc yaml.MapSlice
	if yaml.UnmarshalWithOptions(data, &doc, yaml.UseOrderedMap()) != nil {
		return nil
	}
	var out []string
	walkKeys(reflect.TypeOf(Config{}), doc, "", &out)
	return out
}

func walkKeys(t reflect.Type, v any, path string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if (t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType)) && !t.Implements(fieldsType) {
		return
	}
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch t.Kind() {
	case reflect.Struct:
		m, _ := v.(yaml.MapSlice)
		for _, it := range m {
			k := fmt.Sprint(it.Key)
			f, ok := fieldByTag(t, k)
			if !ok {
				*out = append(*out, join(k))
				continue
			}
			walkKeys(f.Type, it.Value, join(k), out)
		}
	case reflect.Map:
		m, _ := v.(yaml.MapSlice)
		for _, it := range m {
			walkKeys(t.Elem(), it.Value, join(fmt.Sprint(it.Key)), out)
		}
	case reflect.Slice, reflect.Array:
		l, _ := v.([]any)
		for i, e := range l {
			walkKeys(t.Elem(), e, fmt.Sprintf("%s[%d]", path, i), out)
		}
	}
}

// plural is "1 setting is" or "3 settings are".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// listSome joins the first max of list, and says how many more there are.
func listSome(list []string, max int) string {
	if len(list) <= max {
		return strings.Join(list, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(list[:max], ", "), len(list)-max)
}
