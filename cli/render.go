package cli

import (
	"io"
	"os"

	"golang.org/x/term"

	"atrium/backend/markup"
)

// replyRenderer is how a terminal chat writes a model's reply: its Markdown
// in the terminal's styles (markup.Terminal), at a terminal that takes
// colour; nil otherwise (piped, or NO_COLOR set: the reply goes as the
// model wrote it, for the program or the person reading it).
func replyRenderer(out io.Writer) func(string) string {
	f, ok := out.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return nil
	}
	return markup.Terminal
}
