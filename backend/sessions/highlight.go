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

func tokenize(text string) []token {
	var out []token
	start := -1
	for i, r := range text {
		if isTokenRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, token{start: start, end: i, folded: fold(text[start:i])})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, token{start: start, end: len(text), folded: fold(text[start:])})
	}
	return out
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
func Highlights(text, q string) []Range {
	ps := phrases(q)
	if len(ps) == 0 || text == "" {
		return []Range{}
	}
	toks := tokenize(text)
	var out []Range
	for pi, p := range ps {
		last := pi == len(ps)-1
		for i := 0; i+len(p) <= len(toks); i++ {
			ok := true
			for j, w := range p {
				got := toks[i+j].folded
				if last && j == len(p)-1 {
					ok = strings.HasPrefix(got, w)
				} else {
					ok = got == w
				}
				if !ok {
					break
				}
			}
			if ok {
				out = append(out, Range{Start: toks[i].start, End: toks[i+len(p)-1].end})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	merged := []Range{}
	for _, r := range out {
		if n := len(merged); n > 0 && r.Start <= merged[n-1].End {
			merged[n-1].End = max(merged[n-1].End, r.End)
			continue
		}
		merged = append(merged, r)
	}
	return merged
}

// snippetAround cuts about width characters of text around its first match
// of q, and returns the cut with the match ranges inside it: the ranges of
// the whole text, clipped to the cut (a word the cut splits is not a new
// match, and a match the cut splits stays marked where it shows).
func snippetAround(text, q string, width int) (string, []Range) {
	hs := Highlights(text, q)
	n := utf8.RuneCountInString(text)
	if n <= width {
		return text, hs
	}
	at := 0
	if len(hs) > 0 {
		at = hs[0].Start
	}
	start := 0
	if pre := utf8.RuneCountInString(text[:at]); pre > width/3 {
		start = pre - width/3
	}
	end := min(start+width, n)
	from := runeOffset(text, 0, start)
	to := runeOffset(text, from, end-start)
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
	for _, h := range hs {
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
