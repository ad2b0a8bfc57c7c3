package turns

import (
	"fmt"
	"testing"
	"time"

	"atrium/backend/llm"
)

// The backoff doubles from 2 s up to a minute, with up to half of it
// again at random; the provider's Retry-After, when it gave one, wins.
func TestRetryWait(t *testing.T) {
	plain := fmt.Errorf("openai: %w", &llm.APIError{StatusCode: 503})
	for attempt, base := range map[int]time.Duration{1: 2 * time.Second, 2: 4 * time.Second, 3: 8 * time.Second,
		5: 32 * time.Second, 6: time.Minute, 9: time.Minute, 70: time.Minute} {
		seen := map[bool]bool{}
		for range 200 {
			d := retryWait(plain, attempt)
			if d < base || d > base+base/2 {
				t.Fatalf("attempt %d: %v, want %v to %v", attempt, d, base, base+base/2)
			}
			seen[d == base] = true
		}
		if !seen[false] {
			t.Errorf("attempt %d: never any jitter", attempt)
		}
	}
	asked := fmt.Errorf("openai: %w", &llm.APIError{StatusCode: 429, RetryAfter: 90 * time.Second, HasRetryAfter: true})
	if d := retryWait(asked, 1); d != 90*time.Second {
		t.Fatalf("Retry-After: %v", d)
	}
	if d := retryWait(&llm.TransportError{Msg: "refused"}, 1); d < 2*time.Second || d > 3*time.Second {
		t.Fatalf("no answer: %v", d)
	}
}
