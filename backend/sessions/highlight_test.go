package sessions

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// Searches run at once (the window, the dashboard, a gateway chat): folding
// shares no state between them (the normalising transform is stateful, and
// one shared by every goroutine raced and panicked in x/text).
func TestFoldIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	done := make(chan string)
	for g := 0; g < 8; g++ {
		go func() {
			var bad string
			for i := 0; i < 2000 && bad == ""; i++ {
				if got := fold("Café Naïve Straße"); got != "cafe naive straße" {
					bad = got
				}
			}
			done <- bad
		}()
	}
	for g := 0; g < 8; g++ {
		if bad := <-done; bad != "" {
			t.Fatalf("fold under concurrent use gave %q", bad)
		}
	}
}

// A snippet is a cut of the text around its first match, with the whole
// text's matches clipped to the cut: a word the cut splits is no new match,
// a match it splits stays marked, and offsets count bytes of the cut
// (ellipses and multi-byte letters included).
func TestSnippetAroundClipsTheTextsMatches(t *testing.T) {
	marked := func(s string, rs []Range) []string {
		out := []string{}
		for _, r := range rs {
			out = append(out, s[r.Start:r.End])
		}
		return out
	}
	for _, c := range []struct {
		name, text, q string
		width         int
		snip          string
		want          []string
	}{
		{"short text whole", "déjà vu in Zürich", "zur", 40, "déjà vu in Zürich", []string{"Zürich"}},
		{"cut on both sides", "aaaa bbbb naïve cccc dddd eeee", "naive", 10, "…bb naïve c…", []string{"naïve"}},
		{"a word the cut splits is not a match", "xnaive naive tail tail tail", "naive", 18, "…naive naive tail t…", []string{"naive"}},
		{"a match the cut splits stays marked", "ab naive cd naive", "naive", 6, "…b naiv…", []string{"naiv"}},
		{"no match: the start", "one two three four", "zzz", 7, "one two…", []string{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			snip, rs := snippetAround(c.text, c.q, c.width)
			if snip != c.snip {
				t.Fatalf("snippet = %q, want %q", snip, c.snip)
			}
			if got := marked(snip, rs); !slices.Equal(got, c.want) {
				t.Fatalf("marked %q, want %q (ranges %v)", got, c.want, rs)
			}
		})
	}
}

// highlightsRef is Highlights as it was: every token of the text, then
// every phrase at every token.
func highlightsRef(text, q string) []Range {
	ps := phrases(q)
	if len(ps) == 0 || text == "" {
		return []Range{}
	}
	toks := tokenize(text)
	var out []Range
	for pi, p := range ps {
		for i := 0; i+len(p) <= len(toks); i++ {
			if matches(toks[i:i+len(p)], p, pi == len(ps)-1) {
				out = append(out, Range{Start: toks[i].start, End: toks[i+len(p)-1].end})
			}
		}
	}
	return merge(out)
}

// snippetRef is snippetAround over the whole text's matches.
func snippetRef(text, q string, width int) (string, []Range) {
	hs := highlightsRef(text, q)
	r := []rune(text)
	if len(r) <= width {
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
	end := min(start+width, len(r))
	from, to := len(string(r[:start])), len(string(r[:end]))
	out := text[from:to]
	shift := -from
	if from > 0 {
		out, shift = ellipsis+out, shift+len(ellipsis)
	}
	if to < len(text) {
		out += ellipsis
	}
	rs := []Range{}
	for _, h := range hs {
		if s, e := max(h.Start, from), min(h.End, to); s < e {
			rs = append(rs, Range{s + shift, e + shift})
		}
	}
	return out, rs
}

// The matcher reads a text token by token and stops after the cut: on
// random texts and queries (phrases, prefixes, diacritics, cuts inside
// words and phrases) it finds what reading every token finds.
func TestMatcherFindsWhatReadingEveryTokenFinds(t *testing.T) {
	t.Parallel()
	words := []string{"naïve", "naive", "staging", "endpoint", "Zürich", "zur", "a", "ab", "x", "db", "DB", "e2e", "a", "x", "ab"}
	seps := []string{" ", "-", ", ", "\n", "…", " — ", "", "/"}
	queries := []string{"naive", "na", "staging-endpoint", "endpoint staging", "zur", "a b", "db e2e", "x-x-x", "NAÏVE", "é", "--", "staging endpoint na",
		"endpoint staging-endpoint-naive-zur", "a x-a-ab-a", "ab-x-a-ab-x a", "db-e2e-x-a b"}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for n := rng.IntN(60); n > 0; n-- {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteString(seps[rng.IntN(len(seps))])
		}
		text, q, width := b.String(), queries[rng.IntN(len(queries))], 1+rng.IntN(60)
		if got, want := Highlights(text, q), highlightsRef(text, q); !slices.Equal(got, want) {
			t.Fatalf("Highlights(%q, %q) = %v, want %v", text, q, got, want)
		}
		gs, gr := snippetAround(text, q, width)
		ws, wr := snippetRef(text, q, width)
		if gs != ws || !slices.Equal(gr, wr) {
			t.Fatalf("snippetAround(%q, %q, %d) = %q %v, want %q %v", text, q, width, gs, gr, ws, wr)
		}
	}
}

// A snippet of a long text reads only up to its cut: a match near the
// start of 4 MB costs what it costs in 4 kB.
func BenchmarkSnippetOfALongText(b *testing.B) {
	long := "the build log says roufeazoupo failed here " + strings.Repeat("line of tool output with words 0123 ", 110000)
	for b.Loop() {
		if _, rs := snippetAround(long, "roufeazoupo", 120); len(rs) != 1 {
			b.Fatal(rs)
		}
	}
}
