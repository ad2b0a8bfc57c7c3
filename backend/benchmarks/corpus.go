// Package benchmarks compares Atrium's session store and hook bus with the
// same work done through raw SQLite (database/sql + mattn/go-sqlite3, same
// schema, same DSN options). The benchmarks live in bench_test.go; this file
// builds the deterministic data set they share. See docs/benchmarks.md.
package benchmarks

import (
	"fmt"
	"math/rand"
	"strings"
	"time"
)

// Shape of the shared store.
const (
	NumSessions    = 10000
	MsgsPerSession = 20
	NumOld         = 3300 // sessions last active before the retention cutoff
	RetentionDays  = 90
	NumDelete      = 1000
	NumLive        = 50 // newest sessions, never ended (append targets)
	searchTargetDF = 1000
)

// Now is the fixed clock of every store the benchmarks open.
var Now = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// SessionSpec is one session row of the corpus.
type SessionSpec struct {
	ID, Title, Source string
	StartedAt         int64 // Unix ms
	LastActivityAt    int64
	EndedAt           int64 // 0: live
	Archived, Pinned  bool
	ArchivedAt        int64
	Tokens            int64
}

// MessageSpec is one message of the corpus.
type MessageSpec struct {
	Role, Content, ToolName string
	CreatedAt, Tokens       int64
}

// Corpus is the deterministic data set: 10,000 sessions x 20 messages of
// ~200 bytes of Zipf-distributed pseudo-words.
type Corpus struct {
	Sessions   []SessionSpec
	Messages   [][]MessageSpec // per session
	DeleteIDs  []string        // 1,000 ended sessions spread over the store
	LiveIDs    []string
	SearchWord string // a word in about searchTargetDF messages
	SearchDF   int    // messages containing SearchWord
	PruneCount int    // sessions Prune(RetentionDays) removes
	Extra      []MessageSpec
}

// Text makes deterministic, varied prose from a Zipf-distributed vocabulary.
type Text struct {
	r     *rand.Rand
	zipf  *rand.Zipf
	Vocab []string
}

// NewText seeds a generator; the vocabulary depends only on the seed.
func NewText(seed int64, vocabSize int) *Text {
	r := rand.New(rand.NewSource(seed))
	cons := []string{"b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "br", "ch", "st", "tr", "pl", "sh"}
	vows := []string{"a", "e", "i", "o", "u", "ai", "ea", "ou", "y"}
	seen := map[string]bool{}
	var vocab []string
	for len(vocab) < vocabSize {
		n := 1 + r.Intn(4)
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(cons[r.Intn(len(cons))])
			b.WriteString(vows[r.Intn(len(vows))])
		}
		if r.Intn(3) == 0 {
			b.WriteString(cons[r.Intn(len(cons))])
		}
		w := b.String()
		if !seen[w] {
			seen[w] = true
			vocab = append(vocab, w)
		}
	}
	return &Text{r: r, zipf: rand.NewZipf(r, 1.1, 2, uint64(vocabSize-1)), Vocab: vocab}
}

// Word draws one word.
func (t *Text) Word() string { return t.Vocab[t.zipf.Uint64()] }

// Sentence returns about n bytes of text: capitalised sentences of 5-14
// words, commas, the occasional number.
func (t *Text) Sentence(n int) string {
	var b strings.Builder
	b.Grow(n + 32)
	start := true
	left := 0
	for b.Len() < n {
		if start {
			left = 5 + t.r.Intn(10)
		}
		w := t.Word()
		if t.r.Intn(40) == 0 {
			w = fmt.Sprint(t.r.Intn(10000))
		}
		if start {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
		left--
		start = left == 0
		switch {
		case start:
			b.WriteByte('.')
		case t.r.Intn(12) == 0:
			b.WriteByte(',')
		}
	}
	return b.String()
}

func uuid7(r *rand.Rand, ms int64) string {
	var u [16]byte
	for i := 0; i < 6; i++ {
		u[i] = byte(ms >> (8 * (5 - i)))
	}
	x, y := r.Uint64(), r.Uint64()
	for i := 6; i < 16; i++ {
		if i < 11 {
			u[i] = byte(x >> (8 * (i - 6)))
		} else {
			u[i] = byte(y >> (8 * (i - 11)))
		}
	}
	u[6] = 0x70 | u[6]&0x0f
	u[8] = 0x80 | u[8]&0x3f
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

func estimateTokens(s string) int64 {
	if s == "" {
		return 0
	}
	return int64(len(s)+3) / 4
}

// BuildCorpus makes the data set. It is deterministic.
func BuildCorpus() *Corpus {
	t := NewText(20260601, 6000)
	r := rand.New(rand.NewSource(7))
	c := &Corpus{}
	nowMs := Now.UnixMilli()
	day := int64(24 * time.Hour / time.Millisecond)
	oldSpan := 274 * day // [now-365d, now-91d)
	newSpan := 89*day - int64(time.Hour/time.Millisecond)
	sources := []string{"cli", "cli", "cli", "cli", "cli", "cli", "cli", "desktop", "desktop", "gateway"}
	df := map[string]int{}
	for i := 0; i < NumSessions; i++ {
		var start int64
		if i < NumOld {
			start = nowMs - 365*day + int64(i)*oldSpan/NumOld
		} else {
			start = nowMs - 89*day + int64(i-NumOld)*newSpan/(NumSessions-NumOld)
		}
		s := SessionSpec{ID: uuid7(r, start), Source: sources[r.Intn(len(sources))], StartedAt: start}
		s.Title = t.Sentence(18 + r.Intn(30))
		s.Title = strings.TrimSuffix(s.Title, ".")
		msgs := make([]MessageSpec, MsgsPerSession)
		for k := range msgs {
			m := MessageSpec{Content: t.Sentence(160 + r.Intn(80)), CreatedAt: start + int64(k)*30_000}
			switch {
			case k%5 == 4:
				m.Role, m.ToolName = "tool", "shell"
			case k%2 == 1:
				m.Role = "assistant"
			default:
				m.Role = "user"
			}
			m.Tokens = estimateTokens(m.Content)
			s.Tokens += m.Tokens
			msgs[k] = m
			words := map[string]bool{}
			for _, w := range strings.FieldsFunc(strings.ToLower(m.Content), func(r rune) bool { return r == ' ' || r == '.' || r == ',' }) {
				words[w] = true
			}
			for w := range words {
				df[w]++
			}
		}
		s.LastActivityAt = msgs[MsgsPerSession-1].CreatedAt
		old := i < NumOld
		switch {
		case old && i%22 == 11: // abandoned, never ended: spared by retention
		case !old && i >= NumSessions-NumLive:
			c.LiveIDs = append(c.LiveIDs, s.ID)
		default:
			s.EndedAt = s.LastActivityAt + 60_000
		}
		if old && i%22 == 0 {
			s.Pinned = true
		}
		if s.EndedAt != 0 && !s.Pinned && i%25 == 5 {
			s.Archived, s.ArchivedAt = true, s.EndedAt+day
		}
		if old && s.EndedAt != 0 && !s.Pinned {
			c.PruneCount++
		}
		c.Sessions = append(c.Sessions, s)
		c.Messages = append(c.Messages, msgs)
	}
	for i := NumOld + 1; len(c.DeleteIDs) < NumDelete; i += 6 {
		c.DeleteIDs = append(c.DeleteIDs, c.Sessions[i].ID)
	}
	// The search word: document frequency closest to the target, and no
	// other vocabulary word starting with it (Search matches the last word
	// as a prefix).
	best := -1
	for _, w := range t.Vocab {
		n := df[w]
		if n == 0 {
			continue
		}
		prefix := false
		for _, o := range t.Vocab {
			if o != w && strings.HasPrefix(o, w) {
				prefix = true
				break
			}
		}
		if prefix {
			continue
		}
		if best < 0 || abs(n-searchTargetDF) < abs(best-searchTargetDF) {
			best, c.SearchWord = n, w
		}
	}
	c.SearchDF = best
	// Messages appended by the append benchmark.
	for k := 0; k < 4096; k++ {
		m := MessageSpec{Content: t.Sentence(160 + r.Intn(80)), Role: []string{"user", "assistant"}[k%2]}
		m.Tokens = estimateTokens(m.Content)
		c.Extra = append(c.Extra, m)
	}
	return c
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
