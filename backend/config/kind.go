package config

import (
	"reflect"
	"strings"
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
