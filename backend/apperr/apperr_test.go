package apperr

import (
	"errors"
	"fmt"
	"testing"
)

func TestCodeOfUnwrapsAndDefaultsToInternal(t *testing.T) {
	t.Parallel()
	base := New(NotFound, "session %s not found", "x")
	wrapped := fmt.Errorf("delete: %w", base)
	if got := CodeOf(wrapped); got != NotFound {
		t.Fatalf("CodeOf(wrapped) = %q", got)
	}
	if got := CodeOf(errors.New("boom")); got != Internal {
		t.Fatalf("CodeOf(plain) = %q", got)
	}
	if got := CodeOf(nil); got != "" {
		t.Fatalf("CodeOf(nil) = %q", got)
	}
	cause := errors.New("disk")
	w := Wrap(Internal, cause, "write")
	if !errors.Is(w, cause) || w.Error() != "write: disk" {
		t.Fatalf("Wrap lost its cause: %v", w)
	}
}
