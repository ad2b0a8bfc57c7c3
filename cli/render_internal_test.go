package cli

import (
	"bytes"
	"os"
	"testing"
)

// A terminal chat styles the model's Markdown only at a terminal that
// takes colour: piped, or with NO_COLOR, the reply is the text the model
// wrote.
func TestReplyRendererOnlyAtATerminal(t *testing.T) {
	if replyRenderer(&bytes.Buffer{}) != nil {
		t.Fatal("a buffer is no terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if replyRenderer(f) != nil {
		t.Fatal("a file is no terminal")
	}
}
