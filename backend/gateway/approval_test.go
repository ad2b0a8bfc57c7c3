package gateway

import (
	"strings"
	"testing"
	"time"

	"atrium/backend/turns"
)

// A terminal command Atrium itself asks about is put to the chat as the
// command it is and the rule an answer covers, not as a plugin's tool call.
func TestApprovalTextOfATerminalCommand(t *testing.T) {
	t.Parallel()
	got := approvalText(turns.Approval{ToolName: "terminal", Args: map[string]any{"command": "git push --force origin main"},
		Message: "This command could destroy data: git force push (rewrites remote history).", PatternKey: "git force push (rewrites remote history)",
		KeepAlways: func() error { return nil }}, 5*time.Minute)
	for _, part := range []string{"Approval needed: the terminal wants to run git push --force origin main.",
		"It says: This command could destroy data", "/approve session to allow such commands (git force push (rewrites remote history))",
		"/approve always", "within 5m0s"} {
		if !strings.Contains(got, part) {
			t.Errorf("%q lacks %q", got, part)
		}
	}
	if strings.Contains(got, "plugin") {
		t.Errorf("names a plugin: %q", got)
	}
}

// An approval whose "always" cannot be kept has no Always button: Allow
// Once and Session, then Deny alone on its row.
func TestApprovalButtonsWithoutAlways(t *testing.T) {
	rows := approvalButtons(&pendingAsk{id: "abc"})
	if len(rows) != 2 || len(rows[0]) != 2 || len(rows[1]) != 1 || rows[0][0] != (Button{"✅ Allow Once", "ea:once:abc"}) ||
		rows[0][1] != (Button{"✅ Session", "ea:session:abc"}) || rows[1][0] != (Button{"❌ Deny", "ea:deny:abc"}) {
		t.Fatalf("%v", rows)
	}
}
