package hostlock_test

import (
	"errors"
	"path/filepath"
	"testing"

	"atrium/backend/hostlock"
)

func TestOneHolderAtATime(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "run", "gateway.lock")
	a, _, err := hostlock.Try(path, hostlock.Holder{Process: "the desktop window"})
	if err != nil {
		t.Fatal(err)
	}
	if _, h, err := hostlock.Try(path, hostlock.Holder{Process: "atrium gateway run"}); !errors.Is(err, hostlock.ErrHeld) || h.Process != "the desktop window" {
		t.Fatalf("second taker: %v, holder %+v", err, h)
	}
	if h, held := hostlock.Holding(path); !held || h.Process != "the desktop window" {
		t.Fatalf("holding: %+v %v", h, held)
	}
	a.Release()
	b, _, err := hostlock.Try(path, hostlock.Holder{Process: "atrium gateway run"})
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	b.Release()
	if _, held := hostlock.Holding(path); held {
		t.Fatal("still held")
	}
}
