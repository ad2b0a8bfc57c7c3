package sessions

import (
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// The full-text tables are contentless, so FTS5's highlight() and snippet()
// cannot run; the ranges are found here instead, reading text the way the
// index's tokenizer (unicode61, remove_diacritics 2) does: a token is a run
// of letters and digits, compared without case and without diacritics, and
// the last word of a query also matches as a prefix.

// Range is a half-open byte range [Start, End) of a text.
type Range struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

type token struct {
	start, end int
	folded     string
}

func isTokenRune(r rune) bool {
	if r < utf8.RuneSelf { // the common case, without table lookups
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r) || unicode.Is(unicode.Mn, r)
}

// folders hold the diacritics-removing transform: a transform.Chain keeps
// state while it runs, and searches run at once (one chain shared by every
// goroutine raced, and could panic inside x/text).
var folders = sync.Pool{New: func() any { return transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC) }}

func fold(s string) string {
	// ASCII (most text) has no diacritics to remove: only lower it, without
	// the normalising transform and its allocations.
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			folder := folders.Get().(transform.Transformer)
			out, _, err := transform.String(folder, s)
			folders.Put(folder)
			if err != nil {
				out = s
			}
			return strings.ToLower(out)
		}
	}
	return strings.ToLower(s) // s itself when already lower case
}

// tokenize is every token of text, folded.
func tokenize(text string) []token {
	var out []token
	for i := 0; ; {
		start, end := nextToken(text, i)
		if start == len(text) {
			return out
		}
		out = append(out, token{start: start, end: end, folded: fold(text[start:end])})
		i = end
	}
}

// phrases are the query's words as token sequences (a word like
// "staging-endpoint" is the phrase "staging endpoint", as FTS5 reads it).
func phrases(q string) [][]string {
	var out [][]string
	for _, w := range strings.Fields(q) {
		var p []string
		for _, t := range tokenize(w) {
			p = append(p, t.folded)
		}
		if len(p) > 0 {
			out = append(out, p)
		}
	}
	return out
}

// Highlights are the byte ranges of text that match the words of query q,
// sorted and merged.
func Highlights(text, q string) []Range { return newMatcher(q).highlights(text) }

// highlights are the byte ranges of text that match m, sorted and merged.
func (m matcher) highlights(text string) []Range {
	var out []Range
	m.scan(text, 0, len(text), func(r Range) int {
		out = append(out, r)
		return len(text)
	})
	return merge(out)
}

// merge sorts ranges by their start and merges those that overlap or touch.
func merge(rs []Range) []Range {
	sort.Slice(rs, func(i, j int) bool { return rs[i].Start < rs[j].Start })
	merged := []Range{}
	for _, r := range rs {
		if n := len(merged); n > 0 && r.Start <= merged[n-1].End {
			merged[n-1].End = max(merged[n-1].End, r.End)
			continue
		}
		merged = append(merged, r)
	}
	return merged
}

// matcher finds a query's words in a text token by token, without reading
// more of the text than asked: a snippet of a long message (a tool's output
// of megabytes) reads up to its first match and the cut around it.
type matcher struct {
	ps     [][]string // the query's words as token sequences; the last word's last token matches as a prefix
	maxLen int        // tokens in the longest
}

func newMatcher(q string) matcher {
	m := matcher{ps: phrases(q)}
	for _, p := range m.ps {
		m.maxLen = max(m.maxLen, len(p))
	}
	return m
}

// nextToken is the first token of text at or after byte i ([len, len) when
// there is none).
func nextToken(text string, i int) (start, end int) {
	start = -1
	for j, r := range text[i:] {
		if isTokenRune(r) {
			if start < 0 {
				start = i + j
			}
			continue
		}
		if start >= 0 {
			return start, i + j
		}
	}
	if start < 0 {
		return len(text), len(text)
	}
	return start, len(text)
}

// scan reads the tokens of text from byte from (a token's start, or
// outside any token) and calls f with each match, in the order their last
// tokens are read. f returns stop: matches that start at or after it no
// longer matter, and scan ends once no match can start before it.
func (m matcher) scan(text string, from, stop int, f func(Range) int) {
	if len(m.ps) == 0 {
		return
	}
	ring := make([]token, 0, m.maxLen)
	past := 0 // tokens read that start at or after stop
	for i := from; i < len(text) && past < m.maxLen; {
		s, e := nextToken(text, i)
		if s == len(text) {
			return
		}
		i = e
		if s >= stop {
			past++
		}
		if len(ring) == m.maxLen {
			copy(ring, ring[1:])
			ring = ring[:len(ring)-1]
		}
		ring = append(ring, token{start: s, end: e, folded: fold(text[s:e])})
		for pi, p := range m.ps {
			if len(p) > len(ring) {
				continue
			}
			at := ring[len(ring)-len(p):]
			if at[0].start >= stop || !matches(at, p, pi == len(m.ps)-1) {
				continue
			}
			stop = f(Range{Start: at[0].start, End: at[len(at)-1].end})
		}
	}
}

// matches reports whether toks are the phrase p (its last token as a prefix
// when prefix is set).
func matches(toks []token, p []string, prefix bool) bool {
	for j, w := range p {
		got := toks[j].folded
		if prefix && j == len(p)-1 {
			if !strings.HasPrefix(got, w) {
				return false
			}
		} else if got != w {
			return false
		}
	}
	return true
}

// back is where to start scanning so that every match that ends at or
// after byte i is read: the start of the token i is in (or the one that ends
// right before it), then maxLen-1 tokens before it.
func (m matcher) back(text string, i int) int {
	i = backOver(text, i, true)
	for n := 1; n < m.maxLen && i > 0; n++ {
		i = backOver(text, backOver(text, i, false), true) // the gap before, then the token before it
	}
	return i
}

// backOver moves i back over the runes right before it that are token runes
// (tok) or are not.
func backOver(text string, i int, tok bool) int {
	for i > 0 {
		r, size := utf8.DecodeLastRuneInString(text[:i])
		if isTokenRune(r) != tok {
			break
		}
		i -= size
	}
	return i
}

// snippetAround cuts about width characters of text around its first match
// of q, and returns the cut with the match ranges inside it: the ranges of
// the whole text, clipped to the cut (a word the cut splits is not a new
// match, and a match the cut splits stays marked where it shows). It reads
// the text only up to the end of the cut (and a phrase's length past it).
func snippetAround(text, q string, width int) (string, []Range) {
	return newMatcher(q).snippet(text, width)
}

// snippet is snippetAround with the query's matcher.
func (m matcher) snippet(text string, width int) (string, []Range) {
	if runeOffset(text, 0, width) == len(text) {
		return text, m.highlights(text)
	}
	at := -1 // the first match's start
	m.scan(text, 0, len(text), func(r Range) int {
		if at < 0 || r.Start < at {
			at = r.Start
		}
		return at
	})
	start := 0
	if at > 0 {
		if pre := utf8.RuneCountInString(text[:at]); pre > width/3 {
			start = pre - width/3
		}
	}
	from := runeOffset(text, 0, start)
	to := runeOffset(text, from, width)
	var hs []Range
	m.scan(text, m.back(text, from), to, func(r Range) int {
		hs = append(hs, r)
		return to
	})
	var b strings.Builder
	b.Grow(to - from + 2*len(ellipsis))
	shift := -from
	if from > 0 {
		b.WriteString(ellipsis)
		shift += len(ellipsis)
	}
	b.WriteString(text[from:to])
	if to < len(text) {
		b.WriteString(ellipsis)
	}
	out := []Range{}
	for _, h := range merge(hs) {
		if s, e := max(h.Start, from), min(h.End, to); s < e {
			out = append(out, Range{Start: s + shift, End: e + shift})
		}
	}
	return b.String(), out
}

const ellipsis = "…"

// runeOffset is the byte offset of the n-th rune of text after byte offset
// from (len(text) when text has fewer).
func runeOffset(text string, from, n int) int {
	for i := range text[from:] {
		if n == 0 {
			return from + i
		}
		n--
	}
	return len(text)
}
