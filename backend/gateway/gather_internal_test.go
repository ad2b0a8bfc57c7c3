package gateway

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// After a part as long as a client splits a message at (counted in
// characters, not bytes), the next part is waited for longer; a split
// wait shorter than the wait is the wait.
func TestTextsWaitLongerAfterASplitPart(t *testing.T) {
	t.Parallel()
	tx := newTexts(func(Inbound) {}, TextBatch{Wait: time.Second, SplitWait: 3 * time.Second, SplitAt: 10})
	for text, want := range map[string]time.Duration{
		"short":                   time.Second,
		strings.Repeat("é", 9):    time.Second, // 18 bytes, 9 characters
		strings.Repeat("é", 10):   3 * time.Second,
		strings.Repeat("x", 4000): 3 * time.Second,
	} {
		if got := tx.waitAfter(text); got != want {
			t.Errorf("%d characters: %v, want %v", len([]rune(text)), got, want)
		}
	}
	if got := newTexts(func(Inbound) {}, TextBatch{Wait: time.Second, SplitWait: 0, SplitAt: 10}).waitAfter(strings.Repeat("x", 20)); got != time.Second {
		t.Errorf("a split wait under the wait: %v", got)
	}
}

// Whatever the timing, a person's messages are passed on in the order
// they came: a text still gathering goes before the file, tap or command
// that follows it, and what is passed at once never overtakes a gathering
// its timer just handed on.
func TestTextsKeepTheOrder(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	tx := newTexts(func(m Inbound) {
		mu.Lock()
		got = append(got, m.Text)
		mu.Unlock()
	}, TextBatch{Wait: time.Millisecond})
	const n = 300
	for i := range n {
		m := Inbound{ChatID: "c", UserID: "u", Text: "t"}
		if i%3 == 2 {
			m.Text = "/cmd"
		}
		tx.deliver(m)
		if i%7 == 0 {
			time.Sleep(time.Duration(i%3) * time.Millisecond) // let some timers fire, some not
		}
	}
	tx.flush()
	mu.Lock()
	defer mu.Unlock()
	// Every command comes after the two texts before it, gathered or not.
	texts := 0
	for _, s := range got {
		if s == "/cmd" {
			if texts != 2 {
				t.Fatalf("a command after %d texts, want 2: %q", texts, got)
			}
			texts = 0
			continue
		}
		texts += strings.Count(s, "t")
	}
	if texts != 0 {
		t.Fatalf("%d texts after the last command, want 0", texts)
	}
}
