package gateway_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"atrium/backend/gateway"
	"atrium/backend/gateway/gatewaytest"
)

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
