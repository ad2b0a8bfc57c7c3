package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"atrium/backend/gateway/gatewaytest"
	"atrium/backend/hooks"
	"atrium/backend/hooks/hookstest"
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
	e := newEnv(t, 8192, 0.9, func(bus *hooks.Bus) {
		if err := hookstest.WantApproval(bus, "guard", "echo", "echo repeats what it is given"); err != nil {
			t.Fatal(err)
		}
	})
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
	edits := f.Edits()
	last := edits[len(edits)-1]
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
