package markup_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"

	"atrium/backend/gateway/gatewaytest"
	"atrium/backend/markup"
)

// A model's Markdown in Telegram's HTML and in Slack's mrkdwn: what the
// platform shows as formatting, everything else escaped so it shows as
// written; a link to anything but a web, mail or Telegram address is its
// text alone; what neither platform has (tables) stays text.
func TestMarkup(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ md, telegram, slack string }{
		{"## Plan\n\nShip **it** _now_, ~~later~~.", "<b>Plan</b>\n\nShip <b>it</b> <i>now</i>, <s>later</s>.", "*Plan*\n\nShip *it* _now_, ~later~."},
		{"`a<b && c>d` and 3 < 4 & 5 > 2", "<code>a&lt;b &amp;&amp; c&gt;d</code> and 3 &lt; 4 &amp; 5 &gt; 2", "`a&lt;b &amp;&amp; c&gt;d` and 3 &lt; 4 &amp; 5 &gt; 2"},
		{"```go\nif a < b {\n\treturn \"&\"\n}\n```", "<pre><code class=\"language-go\">if a &lt; b {\n\treturn \"&amp;\"\n}</code></pre>", "```\nif a &lt; b {\n\treturn \"&amp;\"\n}\n```"},
		{"    indented code\n", "<pre>indented code</pre>", "```\nindented code\n```"},
		{"[the docs](https://example.com/a?b=1&c=\"2\") and <https://x.example> and me@example.com",
			"<a href=\"https://example.com/a?b=1&amp;c=&quot;2&quot;\">the docs</a> and <a href=\"https://x.example\">https://x.example</a> and me@example.com",
			"<https://example.com/a?b=1&amp;c=\"2\"|the docs> and <https://x.example> and me@example.com"},
		{"[run me](javascript:alert(1)) [file](file:///etc/passwd)", "run me file", "run me file"},
		{"![a chart](https://x.example/c.png)", "<a href=\"https://x.example/c.png\">a chart</a>", "<https://x.example/c.png|a chart>"},
		{"> quoted\n> **still**", "<blockquote>quoted\n<b>still</b></blockquote>", "> quoted\n> *still*"},
		{"- one\n- two\n  - nested\n\n3. three\n4. four", "• one\n• two\n   • nested\n\n3. three\n4. four", "• one\n• two\n   • nested\n\n3. three\n4. four"},
		{"<script>alert(1)</script>\n\nan <b>inline</b> tag", "&lt;script&gt;alert(1)&lt;/script&gt;\n\nan &lt;b&gt;inline&lt;/b&gt; tag", "&lt;script&gt;alert(1)&lt;/script&gt;\n\nan &lt;b&gt;inline&lt;/b&gt; tag"},
		{"snake_case_name and 5 * 3 = 15 and \\*literal\\* &amp; &copy;", "snake_case_name and 5 * 3 = 15 and *literal* &amp; ©", "snake_case_name and 5 * 3 = 15 and *literal* &amp; ©"},
		{"| a | b |\n|---|---|\n| 1 | 2 |", "| a | b |\n|---|---|\n| 1 | 2 |", "| a | b |\n|---|---|\n| 1 | 2 |"},
		{"line one\nline two  \nline three\n\n---\n\nafter", "line one\nline two\nline three\n\n———\n\nafter", "line one\nline two\nline three\n\n———\n\nafter"},
		{"", "", ""},
	} {
		if got := markup.TelegramHTML(c.md); got != c.telegram {
			t.Errorf("telegram %q:\n got %q\nwant %q", c.md, got, c.telegram)
		}
		if _, _, problem := gatewaytest.TelegramReads(markup.TelegramHTML(c.md)); problem != "" {
			t.Errorf("telegram refuses %q: %s", c.md, problem)
		}
		if got := markup.SlackMrkdwn(c.md); got != c.slack {
			t.Errorf("slack %q:\n got %q\nwant %q", c.md, got, c.slack)
		}
	}
}

// Whatever a model writes, Telegram reads the HTML made of it: no input
// makes a reply Telegram refuses (the plain-text retry is for what this
// cannot foresee), and none makes the conversion fail.
func FuzzTelegramHTML(f *testing.F) {
	for _, s := range []string{"**a** _b_ `c` ~~d~~", "```\nx\n```", "[l](https://e.x?a=1&b=2)", "> q\n- a\n  1. b", "<b>raw</b> &amp; &#x41; &bogus;",
		"***bold italic***", "**a *b* c**", "[a **b**](http://x)", "\\<not a tag\\>", "&#0; &#xD800;", "`` ` ``", "~~~\ncode\n~~~"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		html := markup.TelegramHTML(md)
		if _, _, problem := gatewaytest.TelegramReads(html); problem != "" {
			t.Fatalf("Telegram would refuse the HTML of %q: %s\n%s", md, problem, html)
		}
		_ = markup.SlackMrkdwn(md)
	})
}

// Hostile nesting costs little: quotes are not nested (neither platform
// nests them), lists stop indenting deeper than 8, a text over 16,000
// characters goes as it is, escaped.
func TestMarkupBounds(t *testing.T) {
	t.Parallel()
	if got := markup.TelegramHTML("> a\n>> b\n>>> c"); got != "<blockquote>a\n\nb\n\nc</blockquote>" {
		t.Fatalf("nested quotes: %q", got)
	}
	if got := markup.SlackMrkdwn("> a\n>> b"); got != "> a\n> \n> b" {
		t.Fatalf("nested quotes, slack: %q", got)
	}
	var deep strings.Builder
	for i := range 12 {
		deep.WriteString(strings.Repeat("  ", i) + "- x\n")
	}
	if got := markup.TelegramHTML(deep.String()); strings.Contains(got, strings.Repeat(" ", 3*8+1)+"•") || !strings.Contains(got, strings.Repeat(" ", 3*8)+"•") {
		t.Fatalf("deep list:\n%s", got)
	}
	long := strings.Repeat("**a** <b> ", 2000)
	if got := markup.TelegramHTML(long); got != strings.ReplaceAll(strings.ReplaceAll(long, "<", "&lt;"), ">", "&gt;") {
		t.Fatalf("a long text: %.80q", got)
	}
}

// What writing a reply in a platform's markup costs the send: a typical
// answer (1.6 KB: a heading, paragraphs with bold, code and a link, a list,
// a code block) and a worst Telegram part (4,096 characters of nested
// emphasis and links). docs/benchmarks.md, "Chat platforms' markup".
func BenchmarkMarkup(b *testing.B) {
	typical := "## What changed\n\nThe **importer** now keeps `sent_content` and the [release notes](https://example.com/notes?v=2&x=1) say so.\n\n" +
		"- one fix for `a < b`\n- another, with *emphasis*\n  - and a nested point\n\n```go\nfor i := range n {\n\tfmt.Println(i)\n}\n```\n\n" +
		strings.Repeat("A plain paragraph of the answer, long enough to be typical of what a model writes back. ", 12) + "\n\n> a quoted line\n"
	hostile := strings.Repeat("*_[a](", 4096/6)
	for _, c := range []struct{ name, md string }{{"typical", typical}, {"hostile-part", hostile}} {
		b.Run("telegram/"+c.name, func(b *testing.B) {
			for b.Loop() {
				_ = markup.TelegramHTML(c.md)
			}
		})
		b.Run("slack/"+c.name, func(b *testing.B) {
			for b.Loop() {
				_ = markup.SlackMrkdwn(c.md)
			}
		})
	}
}

// A terminal shows the Markdown in its styles, each closed by its own
// reset so they nest; a hostile text's escape sequences (a cursor move, a
// window title, a bell) never reach the terminal, in text or in code.
func TestTerminal(t *testing.T) {
	t.Parallel()
	for md, want := range map[string]string{
		"## Plan\n\n**bold *and it* here** ~~gone~~ `x<y`":     "\x1b[1mPlan\x1b[22m\n\n\x1b[1mbold \x1b[3mand it\x1b[23m here\x1b[22m \x1b[9mgone\x1b[29m \x1b[36mx<y\x1b[39m",
		"```sh\nmake test\n```":                                "\x1b[36m    make test\x1b[39m",
		"[docs](https://x.example/a) and <https://y.example>":  "docs (\x1b[4mhttps://x.example/a\x1b[24m) and \x1b[4mhttps://y.example\x1b[24m",
		"> quoted\n\n- one\n- two":                             "\x1b[2m│\x1b[22m quoted\n\n• one\n• two",
		"evil \x1b]0;owned\x07 title\x1b[2J and `\x1b[31mred`": "evil ]0;owned title[2J and \x1b[36m[31mred\x1b[39m",
	} {
		if got := markup.Terminal(md); got != want {
			t.Errorf("%q:\n got %q\nwant %q", md, got, want)
		}
	}
}

// The strikethrough parsed here reads every text as goldmark's own GFM
// extension does: the same tree, node for node, for the corpus's
// tildes and a thousand random mixes of them with other markup.
func TestStrikethrough(t *testing.T) {
	t.Parallel()
	ext := goldmark.New(goldmark.WithExtensions(extension.Strikethrough))
	tree := func(md goldmark.Markdown, src string) string {
		var b strings.Builder
		_ = ast.Walk(md.Parser().Parse(text.NewReader([]byte(src))), func(n ast.Node, entering bool) (ast.WalkStatus, error) {
			if entering {
				fmt.Fprintf(&b, "(%s", n.Kind())
				if t, ok := n.(*ast.Text); ok {
					fmt.Fprintf(&b, " %q", t.Segment.Value([]byte(src)))
				}
			} else {
				b.WriteString(")")
			}
			return ast.WalkContinue, nil
		})
		return b.String()
	}
	cases := []string{"~~a~~", "~a~", "~~~a~~~", "~~a~", "a~~b~~c", "~~ a ~~", "**~~a~~**", "~~*a*~~", "`~~a~~`", "\\~~a~~", "~~a\nb~~", "x ~~a~~~ y", "~~~~"}
	r := rand.New(rand.NewPCG(7, 11))
	atoms := []string{"~", "~~", "~~~", "a", " ", "*", "**", "_", "`", "\\", "\n", "[", "](http://x)", "b c", "!", "#"}
	for range 1000 {
		var b strings.Builder
		for range 1 + r.IntN(14) {
			b.WriteString(atoms[r.IntN(len(atoms))])
		}
		cases = append(cases, b.String())
	}
	ours := markup.Parser()
	for _, c := range cases {
		if got, want := tree(ours, c), tree(ext, c); got != want {
			t.Fatalf("%q:\n ours %s\n ext  %s", c, got, want)
		}
	}
}
