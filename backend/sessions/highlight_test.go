package sessions

import "testing"

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
