// Package yamledit changes keys of a YAML file's text in place: the lines of
// the key it sets and nothing else, so a file a person wrote keeps its blank
// lines, its quotes and flow lists, its indentation and every comment but
// those of a key it removes. It edits the block mappings config files are
// made of; a text of another shape (several documents, tabs, anchors on a
// key line, a sequence where a mapping should be) it declines, and the
// caller renders the whole document instead.
//
// Parse and Set never judge the result: a caller checks that the text reads
// as the document it meant (the YAML library's reading is the reference)
// before it keeps it.
package yamledit

import (
	"bytes"
	"reflect"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
)

// Doc is a YAML document's lines, edited in place.
type Doc struct {
	lines []string // without their line breaks
	step  int      // the file's indentation unit, for new nested keys
}

// Parse takes a YAML text whose top level is a block mapping (or nothing
// but comments and blank lines); ok is false for any other.
func Parse(text []byte) (d *Doc, ok bool) {
	s := string(text)
	if strings.ContainsFunc(s, func(r rune) bool { return r != '\n' && unicode.IsControl(r) }) || !utf8.ValidString(s) {
		return nil, false // tabs, carriage returns and other controls: not in the lines this package edits
	}
	if keepChomping.MatchString(s) {
		return nil, false // a block scalar whose final blank lines are its text
	}
	d = &Doc{step: 0}
	unended := s != "" && !strings.HasSuffix(s, "\n")
	if s = strings.TrimSuffix(s, "\n"); s != "" {
		d.lines = strings.Split(s, "\n")
	}
	first := true
	block, said := -1, false // the indentation of a block scalar's key while in its text; whether it has any
	cont := -1               // the indentation past which a line would go on an inline value
	for _, l := range d.lines {
		t := strings.TrimLeft(l, " ")
		in := len(l) - len(t)
		if block >= 0 && (t == "" || in > block) {
			said = said || t != ""
			continue // a block scalar's text, whatever it says
		}
		if block >= 0 && !said {
			return nil, false // an empty block scalar, which the library misreads before a key
		}
		block, said = -1, false
		if t == "" || t[0] == '#' {
			continue
		}
		if cont >= 0 && in > cont {
			return nil, false // a scalar or a flow collection over several lines
		}
		cont = -1
		if strings.HasPrefix(t, "---") || strings.HasPrefix(t, "...") {
			return nil, false // several documents
		}
		// The line past its sequence dashes.
		col, e := in, t
		for e == "-" || strings.HasPrefix(e, "- ") {
			n := strings.TrimLeft(e[1:], " ")
			col, e = col+len(e)-len(n), n
		}
		if e == "" || e[0] == '#' || strings.ContainsRune("!&*?|>%@`", rune(e[0])) {
			// An entry on the next line (which the library misreads
			// before a key); tags, anchors, aliases, complex keys,
			// directives, block scalars as entries.
			return nil, false
		}
		if _, after, ok := keyOf(e); ok {
			switch v, _ := splitComment(e[after:]); {
			case v == "":
			case v[0] == '|' || v[0] == '>':
				if unended {
					return nil, false // the line break Bytes ends the text with would be its text
				}
				block = col
			default:
				cont = col
			}
		} else if col > in {
			cont = in // a scalar entry
		} else {
			return nil, false // a scalar on the line after its key
		}
		if first {
			if col != 0 || in != 0 {
				return nil, false
			}
			first = false
		}
		if in > 0 && (d.step == 0 || in < d.step) {
			d.step = in
		}
	}
	if block >= 0 && !said {
		return nil, false
	}
	if d.step == 0 {
		d.step = 2
	}
	return d, true
}

// Bytes is the document's text.
func (d *Doc) Bytes() []byte {
	if len(d.lines) == 0 {
		return nil
	}
	return []byte(strings.Join(d.lines, "\n") + "\n")
}

// Set sets the value at keys (a nil value removes the key, and a section it
// leaves without keys; the mappings on the way are created), touching only
// that key's lines. old is the value
// the document holds there now (nil when none): a list edited by adding
// items at its end or by removing some keeps the lines of the others. ok is
// false when the text is beyond an in-place edit; d may be changed then
// and must not be used.
func (d *Doc) Set(keys []string, old, value any) (ok bool) {
	if len(keys) == 0 {
		return false
	}
	for _, k := range keys {
		if !utf8.ValidString(k) || strings.ContainsFunc(k, unicode.IsControl) || strings.Contains(k, "<<") {
			return false // not a key the library reads back as written
		}
	}
	ok, _ = d.setIn(0, len(d.lines), -1, keys, old, value)
	return ok
}

func indentOf(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

func isBlank(l string) bool { return strings.TrimSpace(l) == "" }

func isComment(l string) bool { return strings.HasPrefix(strings.TrimLeft(l, " "), "#") }

func isContent(l string) bool { return !isBlank(l) && !isComment(l) }

// isItem reports whether l is an entry of a block sequence.
func isItem(l string) bool {
	t := strings.TrimLeft(l, " ")
	return t == "-" || strings.HasPrefix(t, "- ")
}

// keyOf reads the line of a block mapping's key: the key, and the index in
// l just past its colon (where the value, if inline, starts).
func keyOf(l string) (key string, after int, ok bool) {
	in := indentOf(l)
	t := l[in:]
	if t == "" {
		return "", 0, false
	}
	var rest int // index in t past the key
	switch t[0] {
	case '"':
		j := 1
		for j < len(t) && t[j] != '"' {
			if t[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(t) {
			return "", 0, false
		}
		if err := yaml.Unmarshal([]byte(t[:j+1]), &key); err != nil {
			return "", 0, false
		}
		rest = j + 1
	case '\'':
		j := 1
		for ; j < len(t); j++ {
			if t[j] == '\'' {
				if j+1 < len(t) && t[j+1] == '\'' {
					j++
					continue
				}
				break
			}
		}
		if j >= len(t) {
			return "", 0, false
		}
		key, rest = strings.ReplaceAll(t[1:j], "''", "'"), j+1
	case '-', '[', '{', '?', '&', '*', '!', '|', '>', '@', '`', '%', '#', ':', ',':
		return "", 0, false
	default:
		p := -1
		for i := 0; i < len(t); i++ {
			if t[i] == '#' && i > 0 && t[i-1] == ' ' {
				return "", 0, false
			}
			if t[i] == ':' && (i+1 == len(t) || t[i+1] == ' ') {
				p = i
				break
			}
		}
		if p < 0 {
			return "", 0, false
		}
		key, rest = strings.TrimRight(t[:p], " "), p
		// A key that reads as a number, a bool or null is not the
		// string a caller names.
		if !plainWord(key) {
			var v any
			if err := yaml.Unmarshal([]byte(key), &v); err != nil {
				return "", 0, false
			}
			if _, ok := v.(string); !ok || strings.Contains(key, "<<") {
				return "", 0, false
			}
		}
	}
	for rest < len(t) && t[rest] == ' ' {
		rest++
	}
	if rest >= len(t) || t[rest] != ':' || (rest+1 < len(t) && t[rest+1] != ' ') {
		return "", 0, false
	}
	// An anchor, tag or alias after the key is more than this package
	// edits.
	if v, _ := splitComment(t[rest+1:]); v != "" && strings.ContainsAny(v[:1], "&*!") {
		return "", 0, false
	}
	return key, in + rest + 1, true
}

// plainWord reports whether key is a word of letters, digits, _ and -
// that starts with a letter and is no YAML bool or null: a string, as the
// keys of config files nearly all are, known without asking the library.
func plainWord(key string) bool {
	if key == "" || !(key[0] >= 'a' && key[0] <= 'z' || key[0] >= 'A' && key[0] <= 'Z') {
		return false
	}
	for i := 1; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	switch strings.ToLower(key) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null":
		return false
	}
	return true
}

// splitComment splits the inline part of a line after a key's colon into
// its value and its comment (with the spaces before it).
func splitComment(s string) (value, comment string) {
	v := strings.TrimLeft(s, " ")
	i := 0
	switch {
	case v == "":
		return "", ""
	case v[0] == '#':
		return "", s
	case v[0] == '"' || v[0] == '\'':
		i = quotedEnd(v, 0)
	case v[0] == '[' || v[0] == '{':
		for i < len(v) && !(v[i] == '#' && v[i-1] == ' ') {
			if v[i] == '"' || v[i] == '\'' {
				i = quotedEnd(v, i)
				continue
			}
			i++
		}
	}
	for ; i < len(v); i++ {
		if v[i] == '#' && i > 0 && v[i-1] == ' ' {
			break
		}
	}
	val := strings.TrimRight(v[:i], " ")
	return val, s[len(s)-len(v)+len(val):]
}

// quotedEnd is the index past the quoted scalar starting at v[i].
func quotedEnd(v string, i int) int {
	q := v[i]
	for j := i + 1; j < len(v); j++ {
		switch {
		case q == '"' && v[j] == '\\':
			j++
		case v[j] == q && q == '\'' && j+1 < len(v) && v[j+1] == '\'':
			j++
		case v[j] == q:
			return j + 1
		}
	}
	return len(v)
}

// entries lists the key lines of the block mapping made of lines [lo, hi)
// and its indentation (-1 when it has no key).
func (d *Doc) entries(lo, hi int) (idx []int, indent int, ok bool) {
	indent = -1
	for i := lo; i < hi; i++ {
		l := d.lines[i]
		if !isContent(l) {
			continue
		}
		in := indentOf(l)
		if indent < 0 {
			indent = in
		}
		switch {
		case in < indent:
			return nil, 0, false
		case in > indent:
			continue
		case isItem(l):
			if len(idx) == 0 {
				return nil, 0, false // a sequence, not a mapping
			}
			continue // a sequence at its key's indentation
		}
		if _, _, ok := keyOf(l); !ok {
			return nil, 0, false
		}
		idx = append(idx, i)
	}
	return idx, indent, true
}

// valueEnd is the end (exclusive) of the lines of the value of the key at
// line i, at indentation k, within lines up to hi: every line more
// indented, and a sequence's entries at k; not the blank lines and the
// comments at k or less after it, which come before the next key.
func (d *Doc) valueEnd(i, hi, k int) int {
	end := i + 1
	for j := i + 1; j < hi; j++ {
		l := d.lines[j]
		switch in := indentOf(l); {
		case isBlank(l):
		case isComment(l):
			if in > k {
				end = j + 1
			}
		case in > k || in == k && isItem(l):
			end = j + 1
		default:
			return end
		}
	}
	return end
}

// setIn sets keys in the mapping made of lines [lo, hi), the value of the
// key at line parent (-1: the document's top level). emptied reports that
// a removal left the mapping without keys: its key goes too, as the
// caller's document has it.
func (d *Doc) setIn(lo, hi, parent int, keys []string, old, value any) (ok, emptied bool) {
	idx, c, ok := d.entries(lo, hi)
	if !ok {
		return false, false
	}
	if c < 0 {
		c = 0
		if parent >= 0 {
			c = indentOf(d.lines[parent]) + d.step
		}
	}
	for _, i := range idx {
		k, after, _ := keyOf(d.lines[i])
		if k != keys[0] {
			continue
		}
		end := d.valueEnd(i, hi, c)
		if len(keys) == 1 {
			if value == nil {
				d.remove(i, end, c)
				return true, len(idx) == 1
			}
			return d.replace(i, after, end, c, old, value), false
		}
		if v, _ := splitComment(d.lines[i][after:]); v != "" {
			if v != "{}" && v != "~" && v != "null" {
				return false, false // a flow mapping or a scalar: not this package's
			}
			if value == nil {
				return true, false // nothing there to remove
			}
			d.setInline(i, "")
		}
		n := len(d.lines)
		ok, gone := d.setIn(i+1, end, i, keys[1:], old, value)
		if !ok || !gone {
			return ok, false
		}
		d.remove(i, d.valueEnd(i, hi+len(d.lines)-n, c), c)
		return true, len(idx) == 1
	}
	if value == nil {
		return true, false
	}
	var nested any = value
	for j := len(keys) - 1; j > 0; j-- {
		nested = yaml.MapSlice{{Key: keys[j], Value: nested}}
	}
	block, ok := d.render(keys[0], nested, c)
	if !ok {
		return false, false
	}
	at, sep := hi, false
	if parent < 0 {
		// A new top-level key goes last (after any blank lines at the
		// end, which may be a block scalar's), after a blank line when
		// the file's sections have one between them.
		if n := len(idx); n >= 2 && (at == 0 || !isBlank(d.lines[at-1])) {
			j := idx[n-1] - 1
			for j >= 0 && isComment(d.lines[j]) {
				j--
			}
			sep = j >= 0 && isBlank(d.lines[j])
		}
	} else if len(idx) > 0 {
		at = d.valueEnd(idx[len(idx)-1], hi, c)
	}
	if sep {
		block = append([]string{""}, block...)
	}
	if !d.fits(at, block) {
		return false, false
	}
	d.insert(at, block...)
	return true, false
}

// fits reports whether lines can go before line at: a block scalar among
// them would take in the lines of spaces after it as its own text.
func (d *Doc) fits(at int, lines []string) bool {
	spaces := false
	for j := at; j < len(d.lines) && isBlank(d.lines[j]); j++ {
		spaces = spaces || d.lines[j] != ""
	}
	if !spaces {
		return true
	}
	for _, l := range lines {
		if v, _ := splitComment(l); strings.HasSuffix(v, "|") || strings.HasSuffix(v, ">") || strings.HasSuffix(v, "|-") || strings.HasSuffix(v, ">-") {
			return false
		}
	}
	return true
}

// setInline puts v (empty: nothing) as the inline value of the key at line
// i, keeping its comment.
func (d *Doc) setInline(i int, v string) {
	_, after, _ := keyOf(d.lines[i])
	l := d.lines[i]
	_, comment := splitComment(l[after:])
	if v != "" {
		v = " " + v
	}
	d.lines[i] = l[:after] + v + comment
}

// remove takes out the key at line i (indentation k) with its value's
// lines up to end and the comments right above it, which describe it;
// comments that reach the top of the file above its first key head the
// file and stay.
func (d *Doc) remove(i, end, k int) {
	start := i
	for start > 0 && isComment(d.lines[start-1]) && indentOf(d.lines[start-1]) == k {
		start--
	}
	if start == 0 {
		start = i
	}
	d.lines = append(d.lines[:start], d.lines[end:]...)
	// One blank line where two would meet, none left at the end by the
	// last key going.
	if start < len(d.lines) && isBlank(d.lines[start]) && (start == 0 || isBlank(d.lines[start-1])) {
		d.lines = append(d.lines[:start], d.lines[start+1:]...)
	}
	if start == len(d.lines) {
		for len(d.lines) > 0 && isBlank(d.lines[len(d.lines)-1]) {
			d.lines = d.lines[:len(d.lines)-1]
		}
	}
}

func (d *Doc) insert(at int, lines ...string) {
	d.lines = append(d.lines[:at], append(lines, d.lines[at:]...)...)
}

// replace gives the key at line i (indentation k, value up to end) a new
// value: inline where the old one was inline (in its flow style when it
// was a flow list or mapping), keeping the line's comment.
func (d *Doc) replace(i, after, end, k int, old, value any) bool {
	l := d.lines[i]
	oldInline, comment := splitComment(l[after:])
	if oldInline == "" && d.editItems(i, end, old, value) {
		return true
	}
	if v, ok := editFlow(oldInline, old, value); ok {
		d.lines[i] = l[:after] + " " + v + comment
		return true
	}
	flow := oldInline != "" && (oldInline[0] == '[' || oldInline[0] == '{')
	inline, block, ok := d.renderValue(value, k, flow)
	if !ok {
		return false
	}
	first := l[:after] + comment
	if inline != "" {
		first = l[:after] + " " + inline + comment
	}
	// The comments below an inline value stay; a block value's lines go.
	last := i + 1
	for j := i + 1; j < end; j++ {
		if isContent(d.lines[j]) {
			last = j + 1
		}
	}
	lines := append([]string{first}, block...)
	if !d.fits(last, lines) {
		return false
	}
	d.lines = append(d.lines[:i], append(lines, d.lines[last:]...)...)
	return true
}

// render is key: value as block lines at indentation k.
func (d *Doc) render(key string, value any, k int) ([]string, bool) {
	out, ok := marshal(yaml.MapSlice{{Key: key, Value: value}}, yaml.IndentSequence(true), yaml.Indent(d.step))
	if !ok {
		return nil, false
	}
	lines := strings.Split(out, "\n")
	if got, _, ok := keyOf(lines[0]); !ok || got != key {
		return nil, false // a key this package would not find again
	}
	pad := strings.Repeat(" ", k)
	for j := range lines {
		lines[j] = pad + lines[j]
	}
	return lines, true
}

// renderValue is value as the inline part after a key's colon and the
// block lines below it (at indentation k plus the file's unit).
func (d *Doc) renderValue(value any, k int, flow bool) (inline string, block []string, ok bool) {
	if flow || scalar(value) {
		if s, ok := marshal(value, yaml.Flow(true)); ok && !strings.Contains(s, "\n") {
			return s, nil, true
		}
	}
	lines, ok := d.render("k", value, k)
	if !ok {
		return "", nil, false
	}
	head := strings.TrimSpace(strings.TrimPrefix(strings.TrimLeft(lines[0], " "), "k:"))
	return head, lines[1:], true
}

// marshal is v's YAML text without its last line break; false for a value
// the library cannot write, or writes as text that is not UTF-8 (which it
// would not read back as written), with characters Parse declines, or with
// a block scalar that keeps its final blank lines (it would take in the
// blank lines that follow it in the file).
func marshal(v any, opts ...yaml.EncodeOption) (string, bool) {
	out, err := yaml.MarshalWithOptions(v, opts...)
	if err != nil || !utf8.Valid(out) || bytes.ContainsAny(out, "\t\r\x00") || keepChomping.Match(out) {
		return "", false
	}
	return strings.TrimSuffix(string(out), "\n"), true
}

var keepChomping = regexp.MustCompile(`(?m)[|>][0-9]?\+[0-9]?$`)

func scalar(v any) bool {
	if v == nil {
		return true
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Slice, reflect.Array, reflect.Map, reflect.Struct, reflect.Pointer, reflect.Interface:
		return false
	}
	return true
}

// listChange is how a list of scalars became another: n entries, to which
// add (their texts) were added at the end, or of which those keep marks
// stay.
type listChange struct {
	n     int
	add   []string
	added []any // the values of add
	keep  []bool
}

func changeOf(old, value any) (listChange, bool) {
	was, ok1 := canonList(old)
	now, ok2 := canonList(value)
	if !ok1 || !ok2 || len(now) == 0 {
		return listChange{}, false
	}
	ch := listChange{n: len(was)}
	switch {
	case len(now) >= len(was) && reflect.DeepEqual(now[:len(was)], was):
		rv := reflect.ValueOf(value)
		for j := len(was); j < rv.Len(); j++ {
			text, ok := marshal(rv.Index(j).Interface(), yaml.Flow(true))
			if !ok || strings.Contains(text, "\n") {
				return listChange{}, false
			}
			ch.add = append(ch.add, text)
			ch.added = append(ch.added, rv.Index(j).Interface())
		}
		return ch, true
	case len(now) < len(was):
		ch.keep = make([]bool, len(was))
		n := 0
		for j, w := range was {
			if n < len(now) && now[n] == w {
				ch.keep[j] = true
				n++
			}
		}
		return ch, n == len(now)
	}
	return listChange{}, false
}

// editItems edits a block sequence of one-line scalar entries in place
// when the new list only adds entries at its end or only drops some: the
// other entries keep their lines, quotes and comments.
func (d *Doc) editItems(i, end int, old, value any) bool {
	ch, ok := changeOf(old, value)
	if !ok {
		return false
	}
	var items []int
	s := -1
	for j := i + 1; j < end; j++ {
		l := d.lines[j]
		if !isContent(l) {
			continue
		}
		if !isItem(l) || (s >= 0 && indentOf(l) != s) {
			return false // an entry of more than one line, or not a list
		}
		s = indentOf(l)
		items = append(items, j)
	}
	if len(items) != ch.n || len(items) == 0 {
		return false
	}
	if ch.keep == nil {
		var texts []string
		for _, j := range items {
			v, _ := splitComment(strings.TrimPrefix(strings.TrimLeft(d.lines[j], " "), "-"))
			texts = append(texts, v)
		}
		add := make([]string, len(ch.add))
		for j, text := range ch.add {
			add[j] = strings.Repeat(" ", s) + "- " + quotedAs(texts, text, ch.added[j])
		}
		d.insert(items[len(items)-1]+1, add...)
		return true
	}
	for j := len(items) - 1; j >= 0; j-- {
		if !ch.keep[j] {
			d.lines = append(d.lines[:items[j]], d.lines[items[j]+1:]...)
		}
	}
	return true
}

// editFlow is editItems for a flow list on one line: the entries that stay
// keep their text.
func editFlow(v string, old, value any) (string, bool) {
	ch, ok := changeOf(old, value)
	if !ok {
		return "", false
	}
	items, ok := flowItems(v)
	if !ok || len(items) != ch.n {
		return "", false
	}
	if ch.keep == nil {
		add := make([]string, len(ch.add))
		for j, text := range ch.add {
			add[j] = quotedAs(items, text, ch.added[j])
		}
		if len(items) == 0 {
			return "[" + strings.Join(add, ", ") + "]", true
		}
		return strings.TrimRight(v[:len(v)-1], " ") + ", " + strings.Join(add, ", ") + "]", true
	}
	var kept []string
	for j, it := range items {
		if ch.keep[j] {
			kept = append(kept, it)
		}
	}
	return "[" + strings.Join(kept, ", ") + "]", true
}

// flowItems are the entries' texts of a flow list of scalars.
func flowItems(v string) ([]string, bool) {
	if len(v) < 2 || v[0] != '[' || v[len(v)-1] != ']' {
		return nil, false
	}
	inner := v[1 : len(v)-1]
	if strings.TrimSpace(inner) == "" {
		return nil, true
	}
	var out []string
	from := 0
	for j := 0; j <= len(inner); {
		switch {
		case j == len(inner) || inner[j] == ',':
			it := strings.TrimSpace(inner[from:j])
			if it == "" {
				return nil, false
			}
			out = append(out, it)
			j++
			from = j
		case inner[j] == '"' || inner[j] == '\'':
			j = quotedEnd(inner, j)
		case strings.ContainsRune("[]{}#", rune(inner[j])):
			return nil, false
		default:
			j++
		}
	}
	return out, true
}

// quotedAs is text, a new entry of a list whose entries are written as
// others, in their quotes when every one of them is quoted alike ('a',
// 'b' gain 'c'): the library's own choice otherwise, or for a value that
// is not a string of one line.
func quotedAs(others []string, text string, value any) string {
	str, ok := value.(string)
	if !ok || len(others) == 0 || strings.ContainsFunc(str, unicode.IsControl) {
		return text
	}
	q := others[0][0]
	if q != '\'' && q != '"' {
		return text
	}
	for _, o := range others {
		if o == "" || o[0] != q {
			return text
		}
	}
	if q == '\'' {
		return "'" + strings.ReplaceAll(str, "'", "''") + "'"
	}
	if strings.HasPrefix(text, `"`) {
		return text
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(str) + `"`
}

// canonList is a list of scalars as their canonical YAML texts.
func canonList(v any) ([]string, bool) {
	if v == nil {
		return nil, false
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, false
	}
	out := make([]string, 0, rv.Len())
	for j := 0; j < rv.Len(); j++ {
		e := rv.Index(j).Interface()
		if !scalar(e) {
			return nil, false
		}
		b, err := yaml.Marshal(e)
		if err != nil {
			return nil, false
		}
		out = append(out, string(b))
	}
	return out, true
}
