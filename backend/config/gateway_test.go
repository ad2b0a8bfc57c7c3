package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"atrium/backend/apperr"
	"atrium/backend/config"
)

func load(t *testing.T, yaml string) (config.Config, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c, _, err := config.Load(p)
	return c, err
}

func TestGatewayConfig(t *testing.T) {
	t.Parallel()
	c, err := load(t, `gateway:
  autostart: true
  telegram:
    token_env: TELEGRAM_BOT_TOKEN
    base_url: https://api.telegram.org
    allowed_users: [123456789, "987"]
  slack:
    token_env: SLACK_BOT_TOKEN
    signing_secret_env: SLACK_SIGNING_SECRET
    app_token_env: SLACK_APP_TOKEN
    mode: socket
    listen: 127.0.0.1:8790
    api_url: https://slack.com/api
    allowed_users: [U012AB3CD]
    allowed_chats: [C1]
  webhook:
    secret_env: HOOK_SECRET
    reply_url: http://127.0.0.1:9000/replies
  approval_timeout_minutes: 2.5
model:
  native_compaction: true
  native_compaction_threshold: 0.5
`)
	if err != nil {
		t.Fatal(err)
	}
	g := c.Gateway
	if !g.Autostart || g.Telegram == nil || strings.Join(g.Telegram.AllowedUsers, ",") != "123456789,987" ||
		g.Slack.AllowedChats[0] != "C1" || g.Slack.Mode != "socket" || g.Slack.AppTokenEnv != "SLACK_APP_TOKEN" || g.Webhook.ReplyURL == "" || !c.Model.NativeCompaction || *c.Model.NativeThreshold != 0.5 ||
		g.ApprovalTimeoutMinutes == nil || *g.ApprovalTimeoutMinutes != 2.5 {
		t.Fatalf("parsed %+v %+v", g, c.Model)
	}
	for _, bad := range []string{
		"gateway:\n  telegram:\n    token_env: \"123456:AAE-secret-pasted\"\n",
		"gateway:\n  telegram:\n    base_url: ftp://x\n",
		"gateway:\n  slack:\n    listen: nowhere\n",
		"gateway:\n  slack:\n    mode: websocket\n",
		"gateway:\n  slack:\n    app_token_env: xapp-1-pasted-secret\n",
		"gateway:\n  telegram:\n    allowed_users: [{a: 1}]\n",
		"model:\n  native_compaction_threshold: 2\n",
		"gateway:\n  approval_timeout_minutes: 0\n",
		"gateway:\n  approval_timeout_minutes: 61\n",
	} {
		_, err := load(t, bad)
		if apperr.CodeOf(err) != apperr.Invalid || strings.Contains(err.Error(), "AAE-secret") {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}

// The platforms the familiar agent's .env enables run as its gateway runs
// them: Telegram from TELEGRAM_BOT_TOKEN, Slack (in Socket Mode) from
// SLACK_BOT_TOKEN with SLACK_APP_TOKEN, each letting in the ids of its
// <PLATFORM>_ALLOWED_USERS and GATEWAY_ALLOWED_USERS; config.yaml's block
// wins; platforms.<name>.enabled: false keeps one off; an allow-all switch
// is not honoured, and said.
func TestGatewayWithFamiliarEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{"TELEGRAM_BOT_TOKEN": "123:abc", "TELEGRAM_ALLOWED_USERS": " 42, 43 ,", "GATEWAY_ALLOWED_USERS": "43,U7",
		"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1", "SLACK_ALLOW_ALL_USERS": "true"}
	getenv := func(k string) string { return env[k] }
	c, err := load(t, "")
	if err != nil {
		t.Fatal(err)
	}
	g, notes := c.GatewayWithFamiliarEnv(getenv)
	if g.Telegram == nil || strings.Join(g.Telegram.AllowedUsers, ",") != "42,43,U7" || g.Telegram.TokenEnv != "" {
		t.Fatalf("telegram: %+v", g.Telegram)
	}
	if g.Slack == nil || g.Slack.Mode != "socket" || strings.Join(g.Slack.AllowedUsers, ",") != "43,U7" {
		t.Fatalf("slack: %+v", g.Slack)
	}
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "SLACK_ALLOW_ALL_USERS is not honoured: Atrium lets in only the users listed (SLACK_ALLOWED_USERS") {
		t.Fatalf("notes: %q", notes)
	}
	if c.Gateway.Telegram != nil {
		t.Fatal("the config itself was changed")
	}

	// config.yaml's block wins; a platform switched off stays off; Slack
	// needs both tokens; nobody listed is said.
	c, err = load(t, "gateway:\n  telegram:\n    allowed_users: [7]\nplatforms:\n  slack:\n    enabled: false\n")
	if err != nil {
		t.Fatal(err)
	}
	g, notes = c.GatewayWithFamiliarEnv(getenv)
	if g.Telegram == nil || strings.Join(g.Telegram.AllowedUsers, ",") != "7" || g.Slack != nil || len(notes) != 0 {
		t.Fatalf("block and switch: %+v %+v %q", g.Telegram, g.Slack, notes)
	}
	c, _ = load(t, "")
	g, notes = c.GatewayWithFamiliarEnv(func(k string) string {
		return map[string]string{"TELEGRAM_BOT_TOKEN": "123:abc", "SLACK_BOT_TOKEN": "xoxb-1"}[k]
	})
	if g.Telegram == nil || len(g.Telegram.AllowedUsers) != 0 || g.Slack != nil || len(notes) != 1 ||
		!strings.HasPrefix(notes[0], "telegram runs from the .env's TELEGRAM_BOT_TOKEN, and lets nobody in yet: list their ids in TELEGRAM_ALLOWED_USERS") {
		t.Fatalf("nobody listed: %+v %+v %q", g.Telegram, g.Slack, notes)
	}
	if g, _ := c.GatewayWithFamiliarEnv(func(string) string { return "" }); g.Telegram != nil || g.Slack != nil {
		t.Fatalf("no .env: %+v", g)
	}
}
