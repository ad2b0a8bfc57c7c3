// Package markup writes the Markdown a model writes in another markup: a
// chat platform's (Telegram's HTML, Slack's mrkdwn), a terminal's (ANSI
// styles). Knows nothing of Atrium.
package markup

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Models write standard Markdown; a chat platform shows its own markup, or
// the asterisks and hashes as they are, and so does a terminal. A reply is
// read as Markdown (by goldmark: CommonMark and ~~strikethrough~~) and
// written again in the platform's markup, as the familiar gateway converts
// it: Telegram's HTML (bold, italic, strikethrough, code, code blocks,
// links, quotes; a heading as bold), Slack's mrkdwn, a terminal's ANSI
// styles. What none has (tables, images) stays text a person reads; a list
// keeps its bullets and numbers.

// markup is one platform's way of writing what Markdown says.
type markup struct {
	escape                     func(string) string // text as the platform shows it literally
	bold, italic, strike, code func(inner string) string
	pre                        func(lang, code string) string // code unescaped
	link                       func(href, label string) string
	quote                      func(inner string) string
	bullet                     string
}

// htmlText and htmlAttr escape for Telegram's HTML, which reads &lt;,
// &gt;, &amp; and &quot;.
var (
	htmlText = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace
	htmlAttr = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace
)

var telegramMarkup = markup{
	escape: htmlText,
	bold:   func(s string) string { return "<b>" + s + "</b>" },
	italic: func(s string) string { return "<i>" + s + "</i>" },
	strike: func(s string) string { return "<s>" + s + "</s>" },
	code:   func(s string) string { return "<code>" + s + "</code>" },
	pre: func(lang, code string) string {
		code = htmlText(strings.TrimSuffix(code, "\n"))
		if lang != "" {
			return fmt.Sprintf(`<pre><code class="language-%s">%s</code></pre>`, htmlAttr(lang), code)
		}
		return "<pre>" + code + "</pre>"
	},
	link:   func(href, label string) string { return `<a href="` + htmlAttr(href) + `">` + label + "</a>" },
	quote:  func(s string) string { return "<blockquote>" + s + "</blockquote>" },
	bullet: "•",
}

// slackEscape is Slack's escaping: &, < and > only.
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace

var slackMarkup = markup{
	escape: slackEscape,
	bold:   func(s string) string { return "*" + s + "*" },
	italic: func(s string) string { return "_" + s + "_" },
	strike: func(s string) string { return "~" + s + "~" },
	code:   func(s string) string { return "`" + s + "`" },
	pre:    func(_, code string) string { return "```\n" + slackEscape(strings.TrimSuffix(code, "\n")) + "\n```" },
	link: func(href, label string) string {
		if href = slackEscape(href); label == href {
			return "<" + href + ">"
		}
		return "<" + href + "|" + label + ">"
	},
	quote:  prefixLines("> "),
	bullet: "•",
}

// prefixLines starts each line of a text with prefix (a quote's mark).
func prefixLines(prefix string) func(string) string {
	return func(s string) string {
		return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
	}
}

// terminalText is text as a terminal shows it literally: without the
// control characters (escape sequences, bells, carriage returns) a
// hostile text could move the cursor or retitle the window with; tabs and
// line breaks kept.
func terminalText(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsControl(r) {
			return r
		}
		return -1
	}, s)
}

// sgr wraps s in an ANSI style and its own reset (so styles nest).
func sgr(on, off string) func(string) string {
	return func(s string) string { return "\x1b[" + on + "m" + s + "\x1b[" + off + "m" }
}

var terminalMarkup = markup{
	escape: terminalText,
	bold:   sgr("1", "22"),
	italic: sgr("3", "23"),
	strike: sgr("9", "29"),
	code:   sgr("36", "39"),
	pre: func(_, code string) string {
		lines := strings.Split(strings.TrimSuffix(terminalText(code), "\n"), "\n")
		for i, l := range lines {
			lines[i] = "    " + l
		}
		return sgr("36", "39")(strings.Join(lines, "\n"))
	},
	link: func(href, label string) string {
		if label == terminalText(href) {
			return sgr("4", "24")(label)
		}
		return label + " (" + sgr("4", "24")(terminalText(href)) + ")"
	},
	quote:  prefixLines("\x1b[2m│\x1b[22m "),
	bullet: "•",
}

// markdown is CommonMark with ~~strikethrough~~ (GFM's, one or two
// tildes). The strikethrough is parsed here rather than by goldmark's
// extension package, whose package start compiles every extension's
// patterns (0.6 to 1 ms of every Atrium process's start); TestStrikethrough
// holds the two to the same trees.
var markdown = goldmark.New(goldmark.WithParserOptions(parser.WithInlineParsers(util.Prioritized(strikeParser{}, 500))))

// strikeParser reads ~text~ and ~~text~~ as struck through.
type strikeParser struct{}

func (strikeParser) Trigger() []byte { return []byte{'~'} }

func (strikeParser) Parse(_ ast.Node, block text.Reader, pc parser.Context) ast.Node {
	before := block.PrecendingCharacter()
	line, segment := block.PeekLine()
	d := parser.ScanDelimiter(line, before, 1, strikeDelimiter{})
	if d == nil || d.OriginalLength > 2 || before == '~' {
		return nil
	}
	d.Segment = segment.WithStop(segment.Start + d.OriginalLength)
	block.Advance(d.OriginalLength)
	pc.PushDelimiter(d)
	return d
}

func (strikeParser) CloseBlock(ast.Node, parser.Context) {}

// strikeDelimiter pairs tildes: a run closes one of the same length.
type strikeDelimiter struct{}

func (strikeDelimiter) IsDelimiter(b byte) bool { return b == '~' }

func (strikeDelimiter) CanOpenCloser(opener, closer *parser.Delimiter) bool {
	return opener.Char == closer.Char
}

func (strikeDelimiter) OnMatch(int) ast.Node { return east.NewStrikethrough() }

// TelegramHTML is md in the HTML Telegram's Bot API reads (parse_mode
// HTML).
func TelegramHTML(md string) string { return telegramMarkup.render(md) }

// SlackMrkdwn is md in Slack's mrkdwn.
func SlackMrkdwn(md string) string { return slackMarkup.render(md) }

// Terminal is md in a terminal's ANSI styles (bold, italic, struck, code
// in cyan, a code block indented, a quote barred, a link's address after
// its text), its control characters left out.
func Terminal(md string) string { return terminalMarkup.render(md) }

// maxMarkup is the longest text written in a platform's markup; a longer
// one (never a Telegram message's part, at most 4,096) goes as it is: a
// hostile text's nesting costs the parser time that grows faster than its
// length.
const maxMarkup = 16_000

// maxIndent is the deepest list nesting that is indented further.
const maxIndent = 8

func (m markup) render(md string) string {
	if len(md) > maxMarkup {
		return m.escape(md)
	}
	src := []byte(md)
	doc := markdown.Parser().Parse(text.NewReader(src))
	w := &markupWriter{m: m, src: src}
	return strings.TrimSpace(w.blocks(doc))
}

type markupWriter struct {
	m       markup
	src     []byte
	quoted  bool // inside a quote: neither platform nests them
	nesting int  // lists around the one written
}

// blocks writes n's block children one after another, a blank line
// between paragraphs (a tight list item's on lines of their own).
func (w *markupWriter) blocks(n ast.Node) string {
	var parts []string
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if s := w.block(c); s != "" {
			parts = append(parts, s)
		}
	}
	sep := "\n\n"
	if l, ok := n.(*ast.ListItem); ok && l.Parent() != nil && l.Parent().(*ast.List).IsTight {
		sep = "\n"
	}
	return strings.Join(parts, sep)
}

func (w *markupWriter) block(n ast.Node) string {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		return w.inlines(n)
	case *ast.Heading:
		return w.m.bold(w.inlines(n))
	case *ast.ThematicBreak:
		return "———"
	case *ast.FencedCodeBlock:
		return w.m.pre(string(n.Language(w.src)), w.lines(n))
	case *ast.CodeBlock:
		return w.m.pre("", w.lines(n))
	case *ast.HTMLBlock:
		s := w.lines(n)
		if n.HasClosure() {
			s += string(n.ClosureLine.Value(w.src))
		}
		return w.m.escape(strings.TrimRight(s, "\n"))
	case *ast.Blockquote:
		if w.quoted {
			return w.blocks(n)
		}
		w.quoted = true
		defer func() { w.quoted = false }()
		return w.m.quote(w.blocks(n))
	case *ast.List:
		var items []string
		num := n.Start
		indent := "   "
		if w.nesting >= maxIndent {
			indent = ""
		}
		w.nesting++
		defer func() { w.nesting-- }()
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			mark := w.m.bullet
			if n.IsOrdered() {
				mark = fmt.Sprintf("%d.", num)
				num++
			}
			// A nested list, or an item's second paragraph, under its text.
			body := strings.ReplaceAll(w.blocks(c), "\n", "\n"+indent)
			items = append(items, mark+" "+body)
		}
		sep := "\n"
		if !n.IsTight {
			sep = "\n\n"
		}
		return strings.Join(items, sep)
	}
	return w.inlines(n)
}

// lines is a code or HTML block's text, as written.
func (w *markupWriter) lines(n ast.Node) string {
	var b strings.Builder
	for i := range n.Lines().Len() {
		seg := n.Lines().At(i)
		b.Write(seg.Value(w.src))
	}
	return b.String()
}

// inlines writes n's inline children.
func (w *markupWriter) inlines(n ast.Node) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		b.WriteString(w.inline(c))
	}
	return b.String()
}

func (w *markupWriter) inline(n ast.Node) string {
	switch n := n.(type) {
	case *ast.Text:
		v := n.Segment.Value(w.src)
		s := string(v)
		if !n.IsRaw() {
			s = string(util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(v))))
		}
		s = w.m.escape(s)
		if n.SoftLineBreak() || n.HardLineBreak() {
			s += "\n"
		}
		return s
	case *ast.String:
		return w.m.escape(string(n.Value))
	case *ast.CodeSpan:
		var b strings.Builder
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			if t, ok := c.(*ast.Text); ok {
				b.Write(t.Segment.Value(w.src))
			} else if s, ok := c.(*ast.String); ok {
				b.Write(s.Value)
			}
		}
		return w.m.code(w.m.escape(b.String()))
	case *ast.Emphasis:
		if n.Level >= 2 {
			return w.m.bold(w.inlines(n))
		}
		return w.m.italic(w.inlines(n))
	case *east.Strikethrough:
		return w.m.strike(w.inlines(n))
	case *ast.Link:
		return w.linkTo(string(n.Destination), w.inlines(n))
	case *ast.AutoLink:
		href := string(n.URL(w.src))
		if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(href, "mailto:") {
			href = "mailto:" + href
		}
		return w.linkTo(href, w.m.escape(string(n.Label(w.src))))
	case *ast.Image:
		label := w.inlines(n)
		if label == "" {
			label = w.m.escape(string(n.Destination))
		}
		return w.linkTo(string(n.Destination), label)
	case *ast.RawHTML:
		return w.m.escape(string(n.Segments.Value(w.src)))
	}
	return w.inlines(n)
}

// linkTo is a link to href, or label alone when href is no web, mail or
// Telegram address (a link a platform would refuse, or run).
func (w *markupWriter) linkTo(href, label string) string {
	u, err := url.Parse(href)
	if err != nil || !(u.Scheme == "https" || u.Scheme == "http" || u.Scheme == "mailto" || u.Scheme == "tg") || strings.ContainsAny(href, "\n\r") {
		return label
	}
	if label == "" {
		label = w.m.escape(href)
	}
	return w.m.link(href, label)
}
