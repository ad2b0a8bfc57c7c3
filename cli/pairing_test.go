package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"atrium/backend/gateway/gatewaytest"
)

// `atrium pairing`, as the familiar `hermes pairing`: a stranger who writes
// to the bot in a DM (unauthorized_dm_behavior: pair) is given a code;
// `pairing list` shows them waiting (never the code); a wrong code is
// refused with a clear error; `pairing approve telegram CODE` lets them in
// and the running gateway answers them; `pairing revoke` lets them out.
func TestPairingCommands(t *testing.T) {
	t.Parallel()
	tg := gatewaytest.NewTelegram(t, cliTGToken)
	home, cfg := telegramHome(t, tg)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg+"unauthorized_dm_behavior: pair\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, logs := gatewayRun(t, home)
	waitFor(t, "connected", 30*time.Second, func() bool { return strings.Contains(logs.String(), `"state":"connected"`) })
	sent := sentBy(t, tg)
	tg.Push(777, "Mallory", 777, "private", "hello?")
	m := regexp.MustCompile("pairing code: `([A-Z2-9]{8})`").FindStringSubmatch(sent(1))
	if m == nil || !strings.Contains(sent(1), "atrium pairing approve telegram "+m[1]) {
		t.Fatalf("the offer: %q", sent(1))
	}
	list := atrium(t, home, "pairing", "list", "--json")
	var got struct {
		Pending []struct {
			ID       string `json:"id"`
			Platform string `json:"platform"`
			UserID   string `json:"user_id"`
			UserName string `json:"user_name"`
		} `json:"pending"`
		Approved []struct {
			UserID string `json:"user_id"`
		} `json:"approved"`
	}
	if err := json.Unmarshal([]byte(list.stdout), &got); err != nil || len(got.Pending) != 1 || got.Pending[0].UserID != "777" ||
		got.Pending[0].UserName != "Mallory" || len(got.Approved) != 0 || strings.Contains(list.stdout, m[1]) {
		t.Fatalf("list: %v %s", err, list.stdout)
	}
	if plain := atrium(t, home, "pairing", "list"); !strings.Contains(plain.stdout, "Mallory") || !strings.Contains(plain.stdout, got.Pending[0].ID) {
		t.Fatalf("list: %+v", plain)
	}
	if wrong := atrium(t, home, "pairing", "approve", "telegram", "ZZZZZZZZ"); wrong.code == 0 || !strings.Contains(wrong.stderr, `no pairing request on telegram has the code "ZZZZZZZZ"`) {
		t.Fatalf("a wrong code: %+v", wrong)
	}
	if ok := atrium(t, home, "pairing", "approve", "telegram", strings.ToLower(m[1])); ok.code != 0 || !strings.Contains(ok.stdout, "Approved: Mallory (777) may now talk to the agent on telegram") {
		t.Fatalf("approve: %+v", ok)
	}
	tg.Push(777, "Mallory", 777, "private", "now?")
	if got := sent(2); got != "offline reply to: now?" {
		t.Fatalf("once paired: %q", got)
	}
	if rv := atrium(t, home, "pairing", "revoke", "telegram", "777"); rv.code != 0 || !strings.Contains(rv.stdout, "Revoked: 777") {
		t.Fatalf("revoke: %+v", rv)
	}
	if again := atrium(t, home, "pairing", "revoke", "telegram", "777"); again.code == 0 || !strings.Contains(again.stderr, "777 is not paired on telegram") {
		t.Fatalf("revoke twice: %+v", again)
	}
	tg.Push(778, "Eve", 778, "private", "me too")
	sent(3)
	if cl := atrium(t, home, "pairing", "clear-pending", "telegram"); cl.code != 0 || !strings.Contains(cl.stdout, "1 request(s) dropped") {
		t.Fatalf("clear-pending: %+v", cl)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	if strings.Contains(logs.String(), m[1]) {
		t.Fatal("the code reached the log")
	}
}
