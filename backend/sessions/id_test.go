package sessions

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// wellFormedID accepts exactly what the regular expression it replaced
// accepted, with ".." refused and the length bound applied.
func TestWellFormedIDMatchesItsDefinition(t *testing.T) {
	t.Parallel()
	def := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	want := func(id string, maxLen int) bool {
		return def.MatchString(id) && !strings.Contains(id, "..") && len(id) <= maxLen
	}
	cases := []string{"", "a", ".", "-a", "_a", "a.", "a..", "a.b.c", "a..b", "0", "x-_.y", "é", "a/b", "a\\b", "a b", "a\x00",
		"01a23cb6-74e5-724e-804a-877b891fa127", strings.Repeat("x", 128), strings.Repeat("x", 129), strings.Repeat("x", 64), strings.Repeat("x", 65)}
	alphabet := []byte("aZ09_.-/ \x00\xc3\xa9")
	r := rand.New(rand.NewPCG(1, 2))
	for range 50000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, id := range cases {
		for _, maxLen := range []int{64, 128} {
			if got := wellFormedID(id, maxLen); got != want(id, maxLen) {
				t.Fatalf("wellFormedID(%q, %d) = %v, want %v", id, maxLen, got, want(id, maxLen))
			}
		}
	}
}
