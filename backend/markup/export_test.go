package markup

import "github.com/yuin/goldmark"

// Parser is the Markdown reader the writers use, for the tests.
func Parser() goldmark.Markdown { return markdown }
