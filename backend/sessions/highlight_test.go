package sessions

import (
	"slices"
	"testing"
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
