package gateway_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"atrium/backend/gateway"
	"atrium/backend/gateway/gatewaytest"
)

// quickTexts is text batching with a wait short enough for a test and
// long enough for two messages pushed back to back.
var quickTexts = gateway.TextBatch{Wait: 400 * time.Millisecond, SplitWait: 2 * time.Second, SplitAt: gateway.TelegramSplitAt}

// A person's quick text messages on Telegram are one turn, as the familiar
// gateway's text batching makes them: "fix the bug" then "in auth.py"; a
// long message the client split in two; never two people's in a group; a
// command is answered on its own, after the text that came before it;
// without batching each message is a turn.
func TestTelegramGathersQuickTexts(t *testing.T) {
	t.Parallel()
	e, model := mediaEnv(t, "ok")
	f := gatewaytest.NewTelegram(t, tgToken)
	c := telegram(f, "5", "6")
	c.Adapter = gateway.NewTelegram(gateway.TelegramOptions{Token: tgToken, BaseURL: f.URL, PollTimeout: time.Second,
		RetryBase: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond, TextBatch: quickTexts})
	e.start(t, c)

	f.Push(5, "Ada", 5, "private", "fix the bug")
	f.Push(5, "Ada", 5, "private", "in auth.py")
	waitFor(t, "the gathered turn", func() bool { return len(model.told()) == 1 })
	long := strings.Repeat("x", gateway.TelegramSplitAt)
	f.Push(5, "Ada", 5, "private", long)
	f.Push(5, "Ada", 5, "private", "…and the rest")
	waitFor(t, "the split message's turn", func() bool { return len(model.told()) == 2 })
	if told := model.told(); told[0] != "fix the bug\nin auth.py" || told[1] != long+"\n…and the rest" {
		t.Fatalf("the model was given %q", told)
	}

	// Two people in a group: two turns, each their own words.
	f.Push(5, "Ada", -100, "group", "mine")
	f.Push(6, "Bob", -100, "group", "and mine")
	waitFor(t, "two turns in the group", func() bool { return len(model.told()) == 4 })
	if got := model.told()[2:]; !slices.Contains(got, "mine") || !slices.Contains(got, "and mine") {
		t.Fatalf("the group's turns: %q", got)
	}

	// A command after a text: the text is handed on first, alone, and the
	// command answered.
	f.Push(5, "Ada", 5, "private", "one more thing")
	f.Push(5, "Ada", 5, "private", "/whoami")
	waitFor(t, "the text's turn and the command's answer", func() bool {
		return len(model.told()) == 5 && slices.ContainsFunc(f.SentTexts(), func(s string) bool {
			return strings.Contains(s, "5") && strings.Contains(strings.ToLower(s), "telegram")
		})
	})
	if got := model.told()[4]; got != "one more thing" {
		t.Fatalf("the text before the command: %q", got)
	}
}

// Without text batching (a zero wait, HERMES_TELEGRAM_TEXT_BATCH_DELAY_SECONDS=0),
// each message is a turn of its own.
func TestTelegramWithoutTextBatching(t *testing.T) {
	t.Parallel()
	e, model := mediaEnv(t, "ok")
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "5"))
	f.Push(5, "Ada", 5, "private", "fix the bug")
	f.Push(5, "Ada", 5, "private", "in auth.py")
	waitFor(t, "two turns", func() bool { return len(model.told()) == 2 })
	if told := model.told(); told[0] != "fix the bug" || told[1] != "in auth.py" {
		t.Fatalf("the model was given %q", told)
	}
}

// On Discord too, a person's quick messages in a DM are one turn.
func TestDiscordGathersQuickTexts(t *testing.T) {
	t.Parallel()
	e, model := mediaEnv(t, "ok")
	f := gatewaytest.NewDiscord(t, discordToken)
	f.AddChannel("9001", 1, "", "", "")
	e.startDiscord(t, f, discordOn(f, func(o *gateway.DiscordOptions) {
		o.TextBatch = gateway.TextBatch{Wait: quickTexts.Wait, SplitWait: quickTexts.SplitWait, SplitAt: gateway.DiscordSplitAt}
	}, "4242"))
	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("m1", "9001", "", "4242", "ada", "fix the bug"))
	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("m2", "9001", "", "4242", "ada", "in auth.py"))
	waitFor(t, "the gathered turn", func() bool { return len(model.told()) == 1 })
	if got := model.told()[0]; got != "fix the bug\nin auth.py" {
		t.Fatalf("the model was given %q", got)
	}
}
