package dotenv

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"unicode/utf8"
)

// nameRE is a variable name the familiar agent writes (and a shell takes).
var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidName reports whether name may be written as a variable.
func ValidName(name string) bool { return nameRE.MatchString(name) }

// bare is a value written without quotes: nothing python-dotenv would cut,
// unescape or expand.
var bare = regexp.MustCompile(`^[A-Za-z0-9_./:@+,%=~!^*?&\\-]+$`)

// CheckValue says why value cannot be written so that it reads back as it
// is. It never quotes the value (it is a secret).
func CheckValue(value string) error {
	if !utf8.ValidString(value) {
		return errors.New("the value is not UTF-8 text")
	}
	for i, r := range value {
		switch {
		case r == '\n' || r == '\r':
			return errors.New("the value spans lines; a key or token is one line")
		case r < 0x20 && r != '\t' || r == 0x7f:
			return fmt.Errorf("the value holds a control character (U+%04X at position %d)", r, i)
		case r > 0x7e:
			// As the familiar agent warns: a key copied from a PDF or a
			// rich-text page carries look-alike quotes and dashes that no
			// API accepts.
			return fmt.Errorf("the value holds a character that is not ASCII (U+%04X at position %d), which keys and tokens never do: copy it again from where it was issued", r, i)
		}
	}
	if strings.Contains(value, "${") {
		return errors.New("the value holds \"${\", which the .env format always expands (it has no escape for it)")
	}
	return nil
}

// Quote is value as a .env statement's right-hand side that reads back as
// value: bare when nothing in it is special, in single quotes, or in
// double quotes with backslashes and double quotes escaped.
func Quote(value string) (string, error) {
	if err := CheckValue(value); err != nil {
		return "", err
	}
	switch {
	case bare.MatchString(value):
		return value, nil
	case strings.HasSuffix(value, `\`):
		// In quotes the last backslash would escape the closing quote.
		return "", errors.New("the value ends with a backslash and needs quotes, which the .env format cannot then close")
	case !strings.ContainsAny(value, `'\`):
		return "'" + value + "'", nil
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(value) + `"`, nil
}

// Set gives key the value in text: the key's first statement is rewritten
// in place (keeping an "export " before it), later statements of the key
// are removed (they would win), and a key the file does not have is added
// at its end. Every other line stays as it is. The result is checked: it
// must read as text did with only key changed.
func Set(text, key, value string) (string, error) {
	if !ValidName(key) {
		return "", fmt.Errorf("%q is not a variable name (letters, digits and _, not starting with a digit)", key)
	}
	q, err := Quote(value)
	if err != nil {
		return "", err
	}
	bs := Parse(text)
	var b strings.Builder
	at, done := 0, false
	for _, s := range bs {
		if s.Err || s.Key != key {
			continue
		}
		b.WriteString(text[at:s.Start])
		if !done {
			prefix := ""
			if strings.HasPrefix(text[s.Start:s.End], "export") && len(text[s.Start:s.End]) > 6 && inlineSpace(rune(text[s.Start+6])) {
				prefix = "export "
			}
			b.WriteString(prefix + key + "=" + q + "\n")
			done = true
		}
		at = s.End
	}
	b.WriteString(text[at:])
	out := b.String()
	if !done {
		if out != "" && !strings.HasSuffix(out, "\n") && !strings.HasSuffix(out, "\r") {
			out += "\n"
		}
		out += key + "=" + q + "\n"
	}
	if err := readsAsWith(text, out, key, &value); err != nil {
		return "", err
	}
	return out, nil
}

// Unset removes every statement of key from text; removed says whether
// there was one.
func Unset(text, key string) (out string, removed bool, err error) {
	var b strings.Builder
	at := 0
	for _, s := range Parse(text) {
		if s.Err || s.Key != key {
			continue
		}
		b.WriteString(text[at:s.Start])
		at, removed = s.End, true
	}
	if !removed {
		return text, false, nil
	}
	b.WriteString(text[at:])
	out = b.String()
	if err := readsAsWith(text, out, key, nil); err != nil {
		return "", false, err
	}
	return out, true, nil
}

// readsAsWith checks that after says what before says with key set to
// value (nil: unset) and nothing else changed. Values are compared as the
// file writes them, unexpanded.
func readsAsWith(before, after, key string, value *string) error {
	want := written(Parse(before))
	if value == nil {
		delete(want, key)
	} else {
		want[key] = value
	}
	got := written(Parse(after))
	if !maps.EqualFunc(want, got, func(a, b *string) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }) {
		// A statement of another key read differently once this one
		// changed (a quote left open above it): write nothing.
		return errors.New("the file would read differently beyond this key (a statement near it may not parse); edit it by hand")
	}
	return nil
}

// written is each key's last statement as written (nil: no '=').
func written(bs []Binding) map[string]*string {
	out := map[string]*string{}
	for _, b := range bs {
		if !b.Err && b.Key != "" {
			out[b.Key] = b.Value
		}
	}
	return out
}
