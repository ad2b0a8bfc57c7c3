package gateway_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"atrium/backend/gateway"
	"atrium/backend/gateway/gatewaytest"
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
		if got := gateway.TelegramHTML(c.md); got != c.telegram {
			t.Errorf("telegram %q:\n got %q\nwant %q", c.md, got, c.telegram)
		}
		if _, _, problem := gatewaytest.TelegramReads(gateway.TelegramHTML(c.md)); problem != "" {
			t.Errorf("telegram refuses %q: %s", c.md, problem)
		}
		if got := gateway.SlackMrkdwn(c.md); got != c.slack {
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
		html := gateway.TelegramHTML(md)
		if _, _, problem := gatewaytest.TelegramReads(html); problem != "" {
			t.Fatalf("Telegram would refuse the HTML of %q: %s\n%s", md, problem, html)
		}
		_ = gateway.SlackMrkdwn(md)
	})
}

// A long reply goes in several messages; a code block the split cuts is
// closed at the end of one and opened again, with its language, at the
// start of the next, so each message reads as Telegram HTML with its code.
func TestTelegramSplitKeepsCodeBlocks(t *testing.T) {
	t.Parallel()
	f := gatewaytest.NewTelegram(t, tgToken)
	tg := gateway.NewTelegram(gateway.TelegramOptions{Token: tgToken, BaseURL: f.URL, RetryBase: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond})
	code := strings.Repeat("fmt.Println(\"a < b\")\n", 300) // 6,300 characters
	if _, err := tg.Send(context.Background(), gateway.Message{ChatID: "42", Text: "Here:\n\n```go\n" + code + "```\n\nDone.", Markdown: true}); err != nil {
		t.Fatal(err)
	}
	sent := f.Sent()
	if len(sent) != 2 {
		t.Fatalf("%d messages", len(sent))
	}
	for i, m := range sent {
		html, _ := m["html"].(string)
		if m["parse_mode"] != "HTML" || !strings.Contains(html, `<pre><code class="language-go">fmt.Println("a &lt; b")`) {
			t.Fatalf("message %d: %v %.200q", i, m["parse_mode"], html)
		}
	}
	if !strings.HasSuffix(sent[1]["text"].(string), "\n\nDone.") {
		t.Fatalf("the end: %.100q", sent[1]["text"])
	}
}

// Hostile nesting costs little: quotes are not nested (neither platform
// nests them), lists stop indenting deeper than 8, a text over 16,000
// characters goes as it is, escaped.
func TestMarkupBounds(t *testing.T) {
	t.Parallel()
	if got := gateway.TelegramHTML("> a\n>> b\n>>> c"); got != "<blockquote>a\n\nb\n\nc</blockquote>" {
		t.Fatalf("nested quotes: %q", got)
	}
	if got := gateway.SlackMrkdwn("> a\n>> b"); got != "> a\n> \n> b" {
		t.Fatalf("nested quotes, slack: %q", got)
	}
	var deep strings.Builder
	for i := range 12 {
		deep.WriteString(strings.Repeat("  ", i) + "- x\n")
	}
	if got := gateway.TelegramHTML(deep.String()); strings.Contains(got, strings.Repeat(" ", 3*8+1)+"•") || !strings.Contains(got, strings.Repeat(" ", 3*8)+"•") {
		t.Fatalf("deep list:\n%s", got)
	}
	long := strings.Repeat("**a** <b> ", 2000)
	if got := gateway.TelegramHTML(long); got != strings.ReplaceAll(strings.ReplaceAll(long, "<", "&lt;"), ">", "&gt;") {
		t.Fatalf("a long text: %.80q", got)
	}
}

// A model's answer reaches Telegram as HTML (parse_mode HTML) and Slack
// in mrkdwn; Atrium's own words (a command's output) go as they are; an
// answer Telegram cannot read as HTML is sent again as plain text, once,
// and is not lost. The outbox row says which it was.
func TestModelAnswersInThePlatformsMarkup(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2000, 0.5)
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "4242"))
	f.Push(4242, "Ada", 4242, "private", "ship **it** with `a<b`")
	waitFor(t, "the answer", func() bool { return len(f.Sent()) == 1 })
	m := f.Sent()[0]
	if m["parse_mode"] != "HTML" || m["html"] != "offline reply to: ship <b>it</b> with <code>a&lt;b</code>" || m["text"] != "offline reply to: ship it with a<b" {
		t.Fatalf("the answer: %+v", m)
	}
	f.Push(4242, "Ada", 4242, "private", "/whoami")
	waitFor(t, "the command's output", func() bool { return len(f.Sent()) == 2 })
	if m := f.Sent()[1]; m["parse_mode"] != nil || !strings.Contains(m["text"].(string), "Ada (4242) on telegram") {
		t.Fatalf("a command's output: %+v", m)
	}
	f.Set(func(f *gatewaytest.Telegram) { f.RejectHTML = 1 })
	f.Push(4242, "Ada", 4242, "private", "again **please**")
	waitFor(t, "the plain answer", func() bool { return len(f.Sent()) == 3 })
	if m := f.Sent()[2]; m["parse_mode"] != nil || m["text"] != "offline reply to: again **please**" {
		t.Fatalf("the answer Telegram refused as HTML: %+v", m)
	}
	waitFor(t, "all sent", func() bool {
		return e.count(t, `SELECT COUNT(*) FROM gateway_outbox WHERE platform = 'telegram' AND state = 'sent'`) == 3
	})
	if n := e.count(t, `SELECT COUNT(*) FROM gateway_outbox WHERE markdown = 1`); n != 2 || len(f.Sent()) != 3 {
		t.Fatalf("%d rows of the model's Markdown, %d sent", n, len(f.Sent()))
	}

	api := gatewaytest.NewSlackAPI(t, slackToken)
	s := newEnv(t, 2000, 0.5)
	url := s.startSlack(t, api)
	gatewaytest.SlackEvent(t, url, slackSecret, gatewaytest.SlackMessage("U1", "D1", "im", "## Plan with **bold** & <more>"), false)
	waitFor(t, "the slack answer", func() bool { return len(api.Texts()) == 1 })
	if got := api.Texts()[0]; got != "offline reply to: ## Plan with *bold* &amp; &lt;more&gt;" {
		t.Fatalf("slack: %q", got)
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
				_ = gateway.TelegramHTML(c.md)
			}
		})
		b.Run("slack/"+c.name, func(b *testing.B) {
			for b.Loop() {
				_ = gateway.SlackMrkdwn(c.md)
			}
		})
	}
}

// A model's answer longer than a Slack message holds (12,000 characters a
// part: the API cuts a text at 40,000) goes as several, in mrkdwn, a code
// block the split cuts closed and opened again; Atrium's own words go as
// they are, in one.
func TestSlackSplitsALongAnswer(t *testing.T) {
	t.Parallel()
	api := gatewaytest.NewSlackAPI(t, slackToken)
	sl := gateway.NewSlack(gateway.SlackOptions{Token: slackToken, SigningSecret: slackSecret, APIURL: api.URL + "/api"})
	code := "```\n" + strings.Repeat("echo 'a & b' # the same line\n", 600) + "```" // 17,400 characters
	if _, err := sl.Send(context.Background(), gateway.Message{ChatID: "D1", Text: "**Run:**\n" + code + "\nDone.", Markdown: true}); err != nil {
		t.Fatal(err)
	}
	texts := api.Texts()
	if len(texts) != 2 || !strings.HasPrefix(texts[0], "*Run:*\n\n```\necho 'a &amp; b'") || !strings.HasSuffix(texts[0], "# the same line\n```") ||
		!strings.HasPrefix(texts[1], "```\necho 'a &amp; b' # the same line\n") || !strings.HasSuffix(texts[1], "```\n\nDone.") {
		t.Fatalf("%d posts: %.60q … %.60q", len(texts), texts[0], texts[len(texts)-1])
	}
	if _, err := sl.Send(context.Background(), gateway.Message{ChatID: "D1", Text: strings.Repeat("**plain** ", 2000)}); err != nil {
		t.Fatal(err)
	}
	if texts := api.Texts(); len(texts) != 3 || !strings.HasPrefix(texts[2], "**plain**") {
		t.Fatalf("Atrium's own words: %d posts", len(texts))
	}
}
