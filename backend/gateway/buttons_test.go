package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"atrium/backend/gateway"
	"atrium/backend/gateway/gatewaytest"
	"atrium/backend/hooks"
	"atrium/backend/hooks/hookstest"
	"atrium/backend/tools"
	"atrium/backend/turns"
)

// On Telegram an approval comes with the familiar gateway's buttons (Allow
// Once and Session, then Always, where it can be kept, and Deny), each tap
// ea:<answer>:<approval>. The sender's tap answers it: the tap is
// acknowledged with the outcome, the message says it and loses its
// buttons, and the turn goes on. Another member's tap is refused in a
// dialog and answers nothing; a tap on an approval no longer waiting says
// it expired; data that is no approval's is invalid. A tap starts no turn.
func TestTelegramApprovalButtons(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9, guardEcho(t))
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "5", "6"))
	sent := sentTo(t, f)
	f.Push(5, "Cy", -100, "supergroup", "use tool echo: hello")
	card := sent(1, "the approval request")
	msg := f.Sent()[0]
	kb, _ := msg["reply_markup"].(map[string]any)
	rows := fmt.Sprint(kb["inline_keyboard"])
	if !strings.HasPrefix(card, "Approval needed: the plugin guard") || !strings.Contains(rows, "text:✅ Allow Once") ||
		!strings.Contains(rows, "text:✅ Session") || !strings.Contains(rows, "text:✅ Always") || !strings.Contains(rows, "text:❌ Deny") ||
		len(kb["inline_keyboard"].([]any)) != 2 {
		t.Fatalf("the approval's card: %q %v", card, rows)
	}
	data := func(label string) string {
		for _, row := range kb["inline_keyboard"].([]any) {
			for _, b := range row.([]any) {
				if bm := b.(map[string]any); bm["text"] == label {
					return bm["callback_data"].(string)
				}
			}
		}
		t.Fatalf("no %s button in %v", label, rows)
		return ""
	}
	session := data("✅ Session")
	if !strings.HasPrefix(session, "ea:session:") || len(session) > 64 || !strings.HasPrefix(data("✅ Allow Once"), "ea:once:") {
		t.Fatalf("callback data: %q", session)
	}
	cardID := msg["message_id"].(int64)
	answers := func(n int) []map[string]any {
		t.Helper()
		waitFor(t, "the taps acknowledged", func() bool { return len(f.Answers()) >= n })
		return f.Answers()
	}
	// Another member's tap answers nothing.
	f.Tap(6, "Di", -100, "supergroup", cardID, card, session)
	if a := answers(1)[0]; a["text"] != "⛔ You are not authorized to approve commands." || a["show_alert"] != true {
		t.Fatalf("another member's tap: %v", a)
	}
	// Data that is no approval's; an older approval's tap.
	f.Tap(5, "Cy", -100, "supergroup", cardID, card, "zz")
	if a := answers(2)[1]; a["text"] != "Invalid approval data." {
		t.Fatalf("invalid data: %v", a)
	}
	f.Tap(5, "Cy", -100, "supergroup", cardID, card, "ea:once:0123456789abcdef")
	if a := answers(3)[2]; a["text"] != "⌛ Approval expired" {
		t.Fatalf("an older approval's tap: %v", a)
	}
	if len(f.SentTexts()) != 1 {
		t.Fatalf("a tap was answered with a message: %q", f.SentTexts())
	}
	// The sender's tap.
	f.Tap(5, "Cy", -100, "supergroup", cardID, card, session)
	if got := sent(2, "the approved call's reply"); !strings.Contains(got, "The tool echo returned: hello") {
		t.Fatalf("after the tap: %q", f.SentTexts())
	}
	if a := answers(4)[3]; a["text"] != "✅ Approved for session" {
		t.Fatalf("the sender's tap: %v", a)
	}
	// The stale tap above settled the card too (its own edit, which may
	// land before or after this one): the approval's edit is looked for.
	var last map[string]any
	waitFor(t, "the card edited to say how it was answered", func() bool {
		for _, e := range f.Edits() {
			if e["text"] == card+"\n\n✅ Approved for session" {
				last = e
				return true
			}
		}
		return false
	})
	if fmt.Sprint(last["message_id"]) != fmt.Sprint(cardID) || last["text"] != card+"\n\n✅ Approved for session" || last["reply_markup"] != nil {
		t.Fatalf("the card after the tap: %v", last)
	}
	// The session's answer holds: the next echo is not asked about; a tap
	// on the old card now says it expired.
	f.Push(5, "Cy", -100, "supergroup", "use tool echo: again")
	if got := sent(3, "the next call"); !strings.Contains(got, "The tool echo returned: again") {
		t.Fatalf("the next call: %q", got)
	}
	f.Tap(5, "Cy", -100, "supergroup", cardID, card, data("❌ Deny"))
	if a := answers(5)[4]; a["text"] != "⌛ Approval expired" {
		t.Fatalf("a tap after the answer: %v", a)
	}
	if n := len(f.SentTexts()); n != 3 {
		t.Fatalf("taps started turns: %q", f.SentTexts())
	}
}

// On Telegram a clarify question's choices are buttons too, one to a row,
// then Other: the sender's tap on a choice is the answer (the message says
// which, without its buttons); Other asks for their own words, which
// their next message gives; another member's tap answers nothing. A
// question with several picks has no buttons.
func TestTelegramClarifyButtons(t *testing.T) {
	t.Parallel()
	e, f := clarifyChat(t, time.Hour)
	sent := sentTo(t, f)
	f.Push(5, "Cy", 5, "private", `use tool clarify: {"question": "Which target?", "choices": ["staging", "prod"]}`)
	card := sent(1, "the question")
	kb, _ := f.Sent()[0]["reply_markup"].(map[string]any)
	rows, _ := kb["inline_keyboard"].([]any)
	if len(rows) != 3 || rows[0].([]any)[0].(map[string]any)["text"] != "staging (Recommended)" || rows[1].([]any)[0].(map[string]any)["text"] != "prod" {
		t.Fatalf("the question's buttons: %v", rows)
	}
	data := func(i int) string { return rows[i].([]any)[0].(map[string]any)["callback_data"].(string) }
	if !strings.HasPrefix(data(0), "cl:1:") || !strings.HasPrefix(data(1), "cl:2:") || !strings.HasPrefix(data(2), "cl:other:") ||
		rows[2].([]any)[0].(map[string]any)["text"] != "✍️ Other" {
		t.Fatalf("the buttons' data: %v", rows)
	}
	cardID := f.Sent()[0]["message_id"].(int64)
	f.Tap(6, "Di", 5, "private", cardID, card, data(1)) // not the sender (chat 5 is Cy's; Di is allowed, not asked)
	waitFor(t, "the first tap acknowledged", func() bool { return len(f.Answers()) == 1 })
	if a := f.Answers()[0]; a["text"] != "⛔ The question was asked of someone else." || a["show_alert"] != true {
		t.Fatalf("another member's tap: %v", a)
	}
	f.Tap(5, "Cy", 5, "private", cardID, card, data(2))
	waitFor(t, "Other acknowledged", func() bool { return len(f.Answers()) == 2 })
	if a := f.Answers()[1]; a["text"] != "✍️ Reply with your answer in your own words." {
		t.Fatalf("Other: %v", a)
	}
	f.Tap(5, "Cy", 5, "private", cardID, card, data(1))
	sent(2, "the question's turn's reply")
	if got := e.toolResult(t); got != `{"question":"Which target?","choices_offered":["staging","prod"],"user_response":"prod"}` {
		t.Fatalf("the model read %s", got)
	}
	// The message is edited beside the turn going on: wait for it.
	waitFor(t, "the question edited", func() bool { return len(f.Edits()) > 0 })
	edits := f.Edits()
	if len(edits) != 1 || edits[0]["text"] != card+"\n\n✅ prod" {
		t.Fatalf("the question after the tap: %v", edits)
	}
	// The recommended choice, tapped, is said without its mark.
	f.Push(5, "Cy", 5, "private", `use tool clarify: {"question": "Which region?", "choices": ["eu", "us"]}`)
	second := sent(3, "the second question")
	secondID := f.Sent()[2]["message_id"].(int64)
	kb2, _ := f.Sent()[2]["reply_markup"].(map[string]any)
	first := kb2["inline_keyboard"].([]any)[0].([]any)[0].(map[string]any)
	if first["text"] != "eu (Recommended)" {
		t.Fatalf("the second question's buttons: %v", kb2)
	}
	f.Tap(5, "Cy", 5, "private", secondID, second, first["callback_data"].(string))
	sent(4, "the second question's turn's reply")
	waitFor(t, "the second question edited", func() bool { return len(f.Edits()) == 2 })
	if got := f.Edits()[1]["text"]; got != second+"\n\n✅ eu" {
		t.Fatalf("the second question after the tap: %v", got)
	}
	if a := f.Answers()[len(f.Answers())-1]; a["text"] != "✅ eu" {
		t.Fatalf("the tap's acknowledgement: %v", a)
	}
	if got := e.toolResult(t); !strings.Contains(got, `"user_response":"eu"`) {
		t.Fatalf("the model read %s", got)
	}
	// Several picks: words only.
	f.Push(5, "Cy", 5, "private", `use tool clarify: {"question": "Which ones?", "choices": ["a", "b"], "multi_select": true}`)
	sent(5, "the multi-select question")
	if _, ok := f.Sent()[4]["reply_markup"]; ok {
		t.Fatalf("a multi-select question has buttons: %v", f.Sent()[4])
	}
}

// slackButtons are the buttons of a posted message's blocks: action_id,
// label and value, row by row, and the section's text.
func slackButtons(t *testing.T, posted map[string]string) (string, [][][3]string) {
	t.Helper()
	var blocks []struct {
		Type string `json:"type"`
		Text struct {
			Text string `json:"text"`
		} `json:"text"`
		Elements []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
			Text     struct {
				Text string `json:"text"`
			} `json:"text"`
		} `json:"elements"`
	}
	if err := json.Unmarshal([]byte(posted["blocks"]), &blocks); err != nil || len(blocks) < 2 || blocks[0].Type != "section" {
		t.Fatalf("the message's blocks: %s %v", posted["blocks"], err)
	}
	var rows [][][3]string
	for _, b := range blocks[1:] {
		var row [][3]string
		for _, el := range b.Elements {
			row = append(row, [3]string{el.ActionID, el.Text.Text, el.Value})
		}
		rows = append(rows, row)
	}
	return blocks[0].Text.Text, rows
}

// On Slack an approval carries Block Kit buttons, with the familiar
// gateway's action_ids, in the thread it was asked in. A tap comes to the
// Interactivity endpoint (or the events one): another person's is refused
// to them alone (an ephemeral message through the tap's response_url);
// the sender's answers, and the message is updated to say how, its
// buttons gone; a tap on an approval no longer waiting says it expired.
func TestSlackApprovalButtons(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9, guardEcho(t))
	api := gatewaytest.NewSlackAPI(t, slackToken)
	events := e.startSlack(t, api)
	interactive := strings.Replace(events, gateway.SlackEventsPath, gateway.SlackInteractivePath, 1)
	const thread = "1700000000.000300"
	msg := gatewaytest.SlackMessage("U1", "C1", "channel", "use tool echo: hello")
	msg["event"].(map[string]any)["thread_ts"] = thread
	gatewaytest.SlackEvent(t, events, slackSecret, msg, false)
	waitFor(t, "the approval", func() bool { return len(api.Posted()) == 1 })
	card := api.Posted()[0]
	text, rows := slackButtons(t, card)
	if card["thread_ts"] != thread || !strings.HasPrefix(card["text"], "Approval needed: the plugin guard") || text != card["text"] || len(rows) != 2 ||
		rows[0][0][0] != "hermes_approve_once" || rows[0][0][1] != "✅ Allow Once" || !strings.HasPrefix(rows[0][0][2], "ea:once:") ||
		rows[0][1][0] != "hermes_approve_session" || rows[1][0][0] != "hermes_approve_always" || rows[1][1][0] != "hermes_deny" {
		t.Fatalf("the approval: %v %q", card, rows)
	}
	ts := "1700000000.000001" // the fake's ts of the first post
	tap := func(endpoint, user string, b [3]string) {
		t.Helper()
		if code := gatewaytest.SlackTap(t, endpoint, slackSecret, gatewaytest.SlackBlockAction(user, "C1", ts, thread, card["text"], b[0], b[2], api.ResponseURL())); code != 200 {
			t.Fatalf("the tap: %d", code)
		}
	}
	if code := gatewaytest.SlackTap(t, interactive, "wrong-secret", gatewaytest.SlackBlockAction("U1", "C1", ts, thread, card["text"], rows[0][1][0], rows[0][1][2], api.ResponseURL())); code != http.StatusUnauthorized {
		t.Fatalf("a tap signed wrong: %d", code)
	}
	tap(interactive, "U2", rows[0][1])
	waitFor(t, "the refusal", func() bool { return len(api.Responses()) == 1 })
	if r := api.Responses()[0]; r["response_type"] != "ephemeral" || r["replace_original"] != false || r["text"] != "⛔ You are not authorized to approve commands." {
		t.Fatalf("another person's tap: %v", r)
	}
	tap(events, "U1", rows[0][1]) // Session, through the events endpoint
	waitFor(t, "the reply", func() bool { return len(api.Posted()) == 2 })
	if got := api.Posted()[1]; got["text"] != "The tool echo returned: hello" || got["thread_ts"] != thread {
		t.Fatalf("the reply: %v", got)
	}
	waitFor(t, "the approval updated", func() bool { return len(api.Updated()) == 1 })
	if u := api.Updated()[0]; u["channel"] != "C1" || u["ts"] != ts || u["text"] != card["text"]+"\n\n✅ Approved for session" || u["blocks"] != "[]" {
		t.Fatalf("the approval after the tap: %v", u)
	}
	tap(interactive, "U1", rows[1][1])
	waitFor(t, "the expired tap", func() bool { return len(api.Updated()) == 2 })
	if u := api.Updated()[1]; !strings.HasPrefix(u["text"], card["text"]+"\n\n⌛ Approval expired") {
		t.Fatalf("a tap after the answer: %v", u)
	}
	if n := len(api.Responses()); n != 1 {
		t.Fatalf("%d ephemeral messages", n)
	}
}

// On Slack a clarify question's choices are buttons too
// (hermes_clarify_choice_<n>, then hermes_clarify_other): the sender's tap
// on a choice is the answer the model reads, and the question is updated
// to say it, without the Recommended mark.
func TestSlackClarifyButtons(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	e.useLoop(t, turns.Options{Machine: func() tools.Settings { return tools.Settings{Cwd: t.TempDir(), Toolsets: []string{"clarify"}} },
		Clarify: func(ctx context.Context, q turns.Question) (turns.Reply, error) { return e.gw.Clarify(ctx, q) }})
	api := gatewaytest.NewSlackAPI(t, slackToken)
	events := e.startSlack(t, api)
	gatewaytest.SlackEvent(t, events, slackSecret, gatewaytest.SlackMessage("U1", "D1", "im", `use tool clarify: {"question": "Which target?", "choices": ["staging", "prod"]}`), false)
	waitFor(t, "the question", func() bool { return len(api.Posted()) == 1 })
	card := api.Posted()[0]
	_, rows := slackButtons(t, card)
	if len(rows) != 3 || rows[0][0][0] != "hermes_clarify_choice_1" || rows[0][0][1] != "staging (Recommended)" || rows[1][0][0] != "hermes_clarify_choice_2" ||
		rows[2][0][0] != "hermes_clarify_other" || rows[2][0][1] != "✍️ Other" {
		t.Fatalf("the question's buttons: %q", rows)
	}
	ts := "1700000000.000001"
	interactive := strings.Replace(events, gateway.SlackEventsPath, gateway.SlackInteractivePath, 1)
	if code := gatewaytest.SlackTap(t, interactive, slackSecret, gatewaytest.SlackBlockAction("U1", "D1", ts, "", card["text"], rows[0][0][0], rows[0][0][2], api.ResponseURL())); code != 200 {
		t.Fatalf("the tap: %d", code)
	}
	waitFor(t, "the reply", func() bool { return len(api.Posted()) == 2 })
	if got := e.toolResult(t); got != `{"question":"Which target?","choices_offered":["staging","prod"],"user_response":"staging"}` {
		t.Fatalf("the model read %s", got)
	}
	waitFor(t, "the question updated", func() bool { return len(api.Updated()) == 1 })
	if u := api.Updated()[0]; u["text"] != card["text"]+"\n\n✅ staging" || u["blocks"] != "[]" {
		t.Fatalf("the question after the tap: %v", u)
	}
}

// guardEcho registers the guard plugin that wants a person to approve
// every call of echo.
func guardEcho(t *testing.T) func(*hooks.Bus) {
	return func(bus *hooks.Bus) {
		if err := hookstest.WantApproval(bus, "guard", "echo", "echo repeats what it is given"); err != nil {
			t.Fatal(err)
		}
	}
}
