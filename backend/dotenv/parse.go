// Package dotenv reads and edits a .env file as the familiar agent's
// Python tooling (python-dotenv) reads it, so one file serves both: KEY=value
// lines, an optional "export " prefix, '#' comments, single- and
// double-quoted values that may span lines, backslash escapes in quotes, and
// ${NAME} / ${NAME:-default} expansion. It knows nothing of Atrium.
package dotenv

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Binding is one statement of the file.
type Binding struct {
	Key string // "" for a comment, a blank tail or a statement that does not parse
	// Value is nil for a key without '=' (python-dotenv gives it None and
	// sets nothing).
	Value *string
	// Err is true for a statement that does not parse; like python-dotenv,
	// the reader skips the rest of its line and goes on.
	Err bool
	// Line is the 1-based line the statement starts on (after blank lines).
	Line int
	// Start and End are the statement's bytes in the text: from its first
	// character to the end of its last line, newline included.
	Start, End int
}

// Parse splits text into its statements, as python-dotenv's parser does.
func Parse(text string) []Binding {
	p := &parser{s: text, line: 1}
	var out []Binding
	for p.pos < len(p.s) {
		b := p.binding()
		if b.Key != "" || b.Err {
			out = append(out, b)
		}
	}
	return out
}

type parser struct {
	s    string
	pos  int
	line int
}

// pySpace is Python's \s on text: Unicode white space and the four
// separator controls str.isspace counts.
func pySpace(r rune) bool { return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f }

// inlineSpace is [^\S\r\n]: white space that does not end a line.
func inlineSpace(r rune) bool { return r != '\r' && r != '\n' && pySpace(r) }

func (p *parser) peek() (rune, int) {
	if p.pos >= len(p.s) {
		return 0, 0
	}
	return utf8.DecodeRuneInString(p.s[p.pos:])
}

// advance moves to i, counting the lines passed (\r\n, \n or \r).
func (p *parser) advance(i int) {
	for j := p.pos; j < i; j++ {
		switch p.s[j] {
		case '\n':
			p.line++
		case '\r':
			if j+1 >= len(p.s) || p.s[j+1] != '\n' {
				p.line++
			}
		}
	}
	p.pos = i
}

// skip passes the runes that match.
func (p *parser) skip(match func(rune) bool) {
	i := p.pos
	for i < len(p.s) {
		r, n := utf8.DecodeRuneInString(p.s[i:])
		if !match(r) {
			break
		}
		i += n
	}
	p.advance(i)
}

type parseError struct{}

func (p *parser) binding() (b Binding) {
	p.skip(pySpace)
	if p.pos >= len(p.s) {
		return Binding{}
	}
	b.Start, b.Line = p.pos, p.line
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(parseError); !ok {
				panic(r)
			}
			// python-dotenv: the rest of the line where reading stopped.
			i := p.pos
			for i < len(p.s) && p.s[i] != '\r' && p.s[i] != '\n' {
				i++
			}
			i = lineEnd(p.s, i)
			p.advance(i)
			b = Binding{Err: true, Line: b.Line, Start: b.Start, End: p.pos}
		}
	}()
	if strings.HasPrefix(p.s[p.pos:], "export") {
		i := p.pos + len("export")
		j := i
		for j < len(p.s) {
			r, n := utf8.DecodeRuneInString(p.s[j:])
			if !inlineSpace(r) {
				break
			}
			j += n
		}
		if j > i {
			p.advance(j)
		}
	}
	b.Key = p.key()
	p.skip(inlineSpace)
	if r, _ := p.peek(); r == '=' && p.pos < len(p.s) {
		p.advance(p.pos + 1)
		p.skip(inlineSpace)
		v := p.value()
		b.Value = &v
	}
	// An optional comment, then the end of the line.
	save := p.pos
	p.skip(inlineSpace)
	if r, _ := p.peek(); r == '#' && p.pos < len(p.s) {
		for p.pos < len(p.s) && p.s[p.pos] != '\r' && p.s[p.pos] != '\n' {
			p.pos++
		}
	} else {
		p.pos = save
	}
	p.skip(inlineSpace)
	if p.pos < len(p.s) && p.s[p.pos] != '\r' && p.s[p.pos] != '\n' {
		panic(parseError{})
	}
	p.advance(lineEnd(p.s, p.pos))
	b.End = p.pos
	return b
}

// lineEnd is i past the line break at i, if there is one.
func lineEnd(s string, i int) int {
	switch {
	case strings.HasPrefix(s[i:], "\r\n"):
		return i + 2
	case i < len(s) && (s[i] == '\n' || s[i] == '\r'):
		return i + 1
	}
	return i
}

// key is a comment (""), a single-quoted key or a bare one ([^=#\s]+).
func (p *parser) key() string {
	r, _ := p.peek()
	switch {
	case r == '#':
		return ""
	case r == '\'':
		end := strings.IndexByte(p.s[p.pos+1:], '\'')
		if end <= 0 { // no closing quote, or '' (an empty key)
			panic(parseError{})
		}
		k := p.s[p.pos+1 : p.pos+1+end]
		p.advance(p.pos + end + 2)
		return k
	}
	i := p.pos
	for i < len(p.s) {
		r, n := utf8.DecodeRuneInString(p.s[i:])
		if r == '=' || r == '#' || pySpace(r) {
			break
		}
		i += n
	}
	if i == p.pos {
		panic(parseError{})
	}
	k := p.s[p.pos:i]
	p.advance(i)
	return k
}

func (p *parser) value() string {
	r, _ := p.peek()
	switch {
	case p.pos >= len(p.s) || r == '\n' || r == '\r':
		return ""
	case r == '\'' || r == '"':
		body := p.quoted(byte(r))
		if r == '\'' {
			return unescape(body, `\'`)
		}
		return unescape(body, `\'"abfnrtv`)
	}
	i := p.pos
	for i < len(p.s) && p.s[i] != '\r' && p.s[i] != '\n' {
		i++
	}
	part := p.s[p.pos:i]
	p.advance(i)
	return strings.TrimRightFunc(cutComment(part), pySpace)
}

// quoted reads a value in quotes q: its body ends at the first q that no
// backslash escapes; without one, at the last escaped q (the regular
// expression python-dotenv uses backtracks there); without that either,
// the statement does not parse.
func (p *parser) quoted(q byte) string {
	start := p.pos + 1
	lastEscaped := -1
	for i := start; i < len(p.s); i++ {
		switch p.s[i] {
		case '\\':
			if i+1 < len(p.s) && p.s[i+1] == q {
				lastEscaped = i + 1
				i++
			}
		case q:
			body := p.s[start:i]
			p.advance(i + 1)
			return body
		}
	}
	if lastEscaped < 0 {
		panic(parseError{})
	}
	body := p.s[start:lastEscaped] // its backslash is a character then
	p.advance(lastEscaped + 1)
	return body
}

// cutComment drops an unquoted value's comment: white space then '#' and
// the rest (re.sub(r"\s+#.*", "", part)).
func cutComment(s string) string {
	for i, r := range s {
		if !pySpace(r) {
			continue
		}
		j := i
		for j < len(s) {
			r2, n := utf8.DecodeRuneInString(s[j:])
			if !pySpace(r2) {
				break
			}
			j += n
		}
		if j < len(s) && s[j] == '#' {
			return s[:i]
		}
	}
	return s
}

// unescape decodes a backslash followed by one of chars, as Python's
// unicode-escape decodes it.
func unescape(s, chars string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) && (s[i+1] == '\\' || strings.IndexByte(chars, s[i+1]) >= 0) {
			i++
			switch s[i] {
			case 'a':
				c = '\a'
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'v':
				c = '\v'
			default:
				c = s[i]
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Values are the file's variables, with ${NAME} and ${NAME:-default}
// expanded, as python-dotenv's load_dotenv (without override) computes
// them: NAME from lookup (the environment) first, then from the file's
// earlier statements, else the default, else "". A later statement of a key
// replaces an earlier one; a key without '=' unsets what the file gave it
// before (python-dotenv's None). order lists the keys set, first statement
// first.
func Values(bs []Binding, lookup func(string) (string, bool)) (order []string, vals map[string]string) {
	file := map[string]*string{}
	for _, b := range bs {
		if b.Err || b.Key == "" {
			continue
		}
		if _, seen := file[b.Key]; !seen {
			order = append(order, b.Key)
		}
		if b.Value == nil {
			file[b.Key] = nil
			continue
		}
		v := expand(*b.Value, func(name string) (string, bool) {
			if lookup != nil {
				if v, ok := lookup(name); ok {
					return v, true
				}
			}
			v, ok := file[name]
			if ok && v == nil {
				return "", true // None in the file: "" rather than the default
			}
			if ok {
				return *v, true
			}
			return "", false
		})
		file[b.Key] = &v
	}
	vals = map[string]string{}
	kept := order[:0]
	for _, k := range order {
		if v := file[k]; v != nil {
			vals[k] = *v
			kept = append(kept, k)
		}
	}
	return kept, vals
}

// expand replaces ${NAME} and ${NAME:-default} (NAME without '}' or ':').
func expand(s string, get func(string) (string, bool)) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		name, def, n, ok := variable(s[i:])
		if !ok {
			b.WriteString(s[:i+2])
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		if v, found := get(name); found {
			b.WriteString(v)
		} else if def != nil {
			b.WriteString(*def)
		}
		s = s[i+n:]
	}
}

// variable reads ${NAME} or ${NAME:-default} at the start of s.
func variable(s string) (name string, def *string, n int, ok bool) {
	end := strings.IndexByte(s, '}')
	if end < 0 {
		return "", nil, 0, false
	}
	inner := s[2:end]
	if c := strings.IndexByte(inner, ':'); c >= 0 {
		if !strings.HasPrefix(inner[c:], ":-") {
			return "", nil, 0, false
		}
		d := inner[c+2:]
		return inner[:c], &d, end + 1, true
	}
	return inner, nil, end + 1, true
}
