package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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
  discord:
    upload_limit_mb: 50
  approval_timeout_minutes: 2.5
  max_file_mb: 8
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
		g.ApprovalTimeoutMinutes == nil || *g.ApprovalTimeoutMinutes != 2.5 || g.MaxFileBytes() != 8<<20 || *g.Discord.UploadLimitMB != 50 {
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
		"gateway:\n  max_file_mb: 0\n",
		"gateway:\n  max_file_mb: 4096\n",
		"gateway:\n  discord:\n    upload_limit_mb: -1\n",
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

// Discord from the familiar .env: DISCORD_BOT_TOKEN runs it, letting in
// DISCORD_ALLOWED_USERS; how it behaves in a server comes from DISCORD_*,
// then the familiar discord: section (lists as a string between commas or
// a YAML list), then the familiar defaults; a gateway.discord block's own
// settings win over both. A value that is not one is said, and the
// default holds; DISCORD_ALLOWED_ROLES lets in members with those roles.
func TestDiscordFromTheFamiliarEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DISCORD_BOT_TOKEN": "tok", "DISCORD_ALLOWED_USERS": "284102345871466496, 198765432109876543",
		"DISCORD_REQUIRE_MENTION": "false", "DISCORD_FREE_RESPONSE_CHANNELS": "111,222", "DISCORD_ALLOW_BOTS": "sometimes",
		"DISCORD_AUTO_THREAD": "maybe", "DISCORD_ALLOWED_ROLES": "9", "DISCORD_COMMAND_SYNC_POLICY": "off"}
	getenv := func(k string) string { return env[k] }
	c, err := load(t, "discord:\n  require_mention: true\n  auto_thread: false\n  ignored_channels: \"333, 444\"\n  no_thread_channels: [555]\n  reply_to_mode: all\n  allow_mentions:\n    everyone: true\n")
	if err != nil {
		t.Fatal(err)
	}
	g, notes := c.GatewayWithFamiliarEnv(getenv)
	d := g.Discord
	if d == nil || strings.Join(d.AllowedUsers, ",") != "284102345871466496,198765432109876543" {
		t.Fatalf("discord: %+v", d)
	}
	b := d.DiscordBehaviour
	if *b.RequireMention || strings.Join(b.FreeResponseChannels, ",") != "111,222" || *b.AutoThread ||
		strings.Join(b.IgnoredChannels, ",") != "333,444" || strings.Join(b.NoThreadChannels, ",") != "555" || b.ReplyToMode != "all" ||
		b.AllowBots != "" || !*b.AllowMentions.Everyone || b.AllowMentions.Users != nil || b.IgnoreNoMention != nil || *b.SlashCommands {
		t.Fatalf("behaviour: %+v", b)
	}
	if strings.Join(d.AllowedRoles, ",") != "9" {
		t.Fatalf("roles: %q", d.AllowedRoles)
	}
	want := []string{`DISCORD_AUTO_THREAD="maybe" is neither true nor false`, `DISCORD_ALLOW_BOTS="sometimes" is not none, mentions or all`}
	if len(notes) != len(want) {
		t.Fatalf("notes: %q", notes)
	}
	for i, w := range want {
		if !strings.HasPrefix(notes[i], w) {
			t.Fatalf("note %d: %q, want %q…", i, notes[i], w)
		}
	}

	// A gateway.discord block: its own settings win; what it leaves unset
	// comes from the .env and the section.
	c, err = load(t, "gateway:\n  discord:\n    allowed_users: [7]\n    require_mention: true\n    allow_bots: mentions\ndiscord:\n  reactions: false\n")
	if err != nil {
		t.Fatal(err)
	}
	g, _ = c.GatewayWithFamiliarEnv(getenv)
	if d := g.Discord; d == nil || strings.Join(d.AllowedUsers, ",") != "7" || !*d.RequireMention || d.AllowBots != "mentions" ||
		*d.Reactions || strings.Join(d.FreeResponseChannels, ",") != "111,222" {
		t.Fatalf("the block: %+v", g.Discord)
	}
	for _, bad := range []string{"gateway:\n  discord:\n    allow_bots: everyone\n", "discord:\n  reply_to_mode: sometimes\n",
		"gateway:\n  discord:\n    token_env: \"sk-abcdefgh\"\n"} {
		if _, err := load(t, bad); err == nil {
			t.Fatalf("accepted %q", bad)
		}
	}
	if g, _ := c.GatewayWithFamiliarEnv(func(string) string { return "" }); g.Discord == nil || g.Discord.RequireMention == nil {
		t.Fatal("the block alone")
	}
	c, _ = load(t, "")
	if g, _ := c.GatewayWithFamiliarEnv(func(string) string { return "" }); g.Discord != nil {
		t.Fatalf("no .env: %+v", g.Discord)
	}
}

// group_sessions_per_user and thread_sessions_per_user as the familiar
// agent reads them: a person's own conversation in a group by default,
// one shared in a thread.
func TestSessionsPerUser(t *testing.T) {
	t.Parallel()
	c, err := load(t, "")
	if err != nil {
		t.Fatal(err)
	}
	if g, th := c.SessionsPerUser(); !g || th {
		t.Fatalf("defaults: %v %v", g, th)
	}
	c, err = load(t, "group_sessions_per_user: false\nthread_sessions_per_user: true\n")
	if err != nil {
		t.Fatal(err)
	}
	if g, th := c.SessionsPerUser(); g || !th {
		t.Fatalf("set: %v %v", g, th)
	}
}

// unauthorized_dm_behavior as the familiar agent reads it: a platform's
// own block wins, then its section (discord:), then the top level, then
// HERMES_UNAUTHORIZED_DM_BEHAVIOR; a value that is not one is refused in
// the file and said of the variable.
func TestUnauthorizedDMBehavior(t *testing.T) {
	t.Parallel()
	c, err := load(t, "unauthorized_dm_behavior: ignore\ndiscord:\n  unauthorized_dm_behavior: refuse\ngateway:\n  telegram:\n    allowed_users: [1]\n  slack:\n    unauthorized_dm_behavior: pair\n  discord:\n    allowed_users: [2]\n")
	if err != nil {
		t.Fatal(err)
	}
	g, notes := c.GatewayWithFamiliarEnv(func(string) string { return "" })
	if g.Telegram.UnauthorizedDM != "ignore" || g.Slack.UnauthorizedDM != "pair" || g.Discord.UnauthorizedDM != "refuse" || len(notes) != 0 {
		t.Fatalf("resolved: %q %q %q %q", g.Telegram.UnauthorizedDM, g.Slack.UnauthorizedDM, g.Discord.UnauthorizedDM, notes)
	}
	if c.Gateway.Telegram.UnauthorizedDM != "" {
		t.Fatal("the config itself was changed")
	}
	c, _ = load(t, "gateway:\n  telegram:\n    allowed_users: [1]\n")
	if g, _ := c.GatewayWithFamiliarEnv(func(k string) string {
		return map[string]string{"HERMES_UNAUTHORIZED_DM_BEHAVIOR": "IGNORE"}[k]
	}); g.Telegram.UnauthorizedDM != "ignore" {
		t.Fatalf("from the .env: %q", g.Telegram.UnauthorizedDM)
	}
	if g, notes := c.GatewayWithFamiliarEnv(func(k string) string {
		return map[string]string{"HERMES_UNAUTHORIZED_DM_BEHAVIOR": "welcome"}[k]
	}); g.Telegram.UnauthorizedDM != "" || len(notes) != 1 || !strings.HasPrefix(notes[0], "HERMES_UNAUTHORIZED_DM_BEHAVIOR must be pair, ignore or refuse") {
		t.Fatalf("a value that is not one: %q %q", g.Telegram.UnauthorizedDM, notes)
	}
	for _, bad := range []string{"unauthorized_dm_behavior: welcome\n", "gateway:\n  slack:\n    unauthorized_dm_behavior: open\n",
		"discord:\n  unauthorized_dm_behavior: all\n"} {
		if _, err := load(t, bad); err == nil {
			t.Fatalf("accepted %q", bad)
		}
	}
}

// The familiar <PLATFORM>_HOME_CHANNEL fills a home channel a block
// leaves unset; a block's own wins; a value that is not one is said and
// not used; config.yaml refuses one.
func TestHomeChannels(t *testing.T) {
	t.Parallel()
	c, err := load(t, "gateway:\n  telegram:\n    allowed_users: [1]\n  discord:\n    home_channel: \"555:777\"\n")
	if err != nil {
		t.Fatal(err)
	}
	g, notes := c.GatewayWithFamiliarEnv(func(k string) string {
		return map[string]string{"TELEGRAM_HOME_CHANNEL": "-1001234567890", "DISCORD_HOME_CHANNEL": "999"}[k]
	})
	if h := g.HomeChannels(); h["telegram"] != "-1001234567890" || h["discord"] != "555:777" || len(notes) != 0 {
		t.Fatalf("homes: %v %q", h, notes)
	}
	g, notes = c.GatewayWithFamiliarEnv(func(k string) string {
		return map[string]string{"TELEGRAM_HOME_CHANNEL": "my group"}[k]
	})
	if h := g.HomeChannels(); h["telegram"] != "" || len(notes) != 1 || !strings.HasPrefix(notes[0], "TELEGRAM_HOME_CHANNEL must be chat_id or chat_id:thread_id") {
		t.Fatalf("a value that is not one: %v %q", h, notes)
	}
	if _, err := load(t, "gateway:\n  slack:\n    home_channel: \"#general ops\"\n"); err == nil {
		t.Fatal("accepted a home channel with a space")
	}
}

// The familiar discord.channel_prompts (ids as strings or numbers), with a
// gateway.discord block's own over them, per channel.
func TestDiscordChannelPrompts(t *testing.T) {
	t.Parallel()
	c, err := load(t, "discord:\n  channel_prompts:\n    \"1234567890\": |\n      Research: cite sources.\n    9876543210: Be warm.\ngateway:\n  discord:\n    allowed_users: [1]\n    channel_prompts:\n      \"9876543210\": Be brief.\n")
	if err != nil {
		t.Fatal(err)
	}
	g, _ := c.GatewayWithFamiliarEnv(func(string) string { return "" })
	p := g.Discord.ChannelPrompts
	if strings.TrimSpace(p["1234567890"]) != "Research: cite sources." || p["9876543210"] != "Be brief." || len(p) != 2 {
		t.Fatalf("prompts: %q", p)
	}
}

// Which files a reply may send: the familiar gateway's keys in
// config.yaml over its variables in the .env; defaults off-strict with
// ten minutes of trust; a bad variable said, its default kept; a relative
// folder refused in the config, left out (and said) from the .env.
func TestMediaDelivery(t *testing.T) {
	t.Parallel()
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	c, err := load(t, "")
	if err != nil {
		t.Fatal(err)
	}
	strict, allow, recent, notes := c.Gateway.MediaDelivery(getenv)
	if strict || allow != nil || recent != 10*time.Minute || notes != nil {
		t.Fatalf("defaults: %v %v %v %v", strict, allow, recent, notes)
	}
	env = map[string]string{"HERMES_MEDIA_DELIVERY_STRICT": "true", "HERMES_MEDIA_ALLOW_DIRS": "/srv/out:/tmp/a,relative",
		"HERMES_MEDIA_TRUST_RECENT_SECONDS": "30"}
	strict, allow, recent, notes = c.Gateway.MediaDelivery(getenv)
	if !strict || strings.Join(allow, " ") != "/srv/out /tmp/a" || recent != 30*time.Second || len(notes) != 1 || !strings.Contains(notes[0], `"relative" is not an absolute path`) {
		t.Fatalf("from the .env: %v %v %v %v", strict, allow, recent, notes)
	}
	env["HERMES_MEDIA_TRUST_RECENT_FILES"] = "maybe"
	if _, _, recent, notes = c.Gateway.MediaDelivery(getenv); recent != 30*time.Second || len(notes) != 2 || !strings.Contains(notes[1], "HERMES_MEDIA_TRUST_RECENT_FILES") {
		t.Fatalf("a bad switch: %v %v", recent, notes)
	}
	c, err = load(t, "gateway:\n  strict: false\n  media_delivery_allow_dirs: [/data/reports]\n  trust_recent_files: false\n")
	if err != nil {
		t.Fatal(err)
	}
	strict, allow, recent, _ = c.Gateway.MediaDelivery(getenv)
	if strict || strings.Join(allow, " ") != "/data/reports" || recent != 0 {
		t.Fatalf("config.yaml over the .env: %v %v %v", strict, allow, recent)
	}
	for _, bad := range []string{"gateway:\n  media_delivery_allow_dirs: [reports]\n", "gateway:\n  trust_recent_files_seconds: -1\n"} {
		if _, err := load(t, bad); apperr.CodeOf(err) != apperr.Invalid {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}

// Quick text messages are gathered as the familiar variables say, on
// Telegram and Discord (0.6 s, and 2 s after a part a client split; 0
// gathers none); a value that is no number of seconds from 0 to 10 keeps
// the default and is said.
func TestTextBatchFromTheFamiliarEnv(t *testing.T) {
	t.Parallel()
	c, err := load(t, "gateway:\n  telegram:\n    allowed_users: [1]\n  discord:\n    allowed_users: [2]\n")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	g, notes := c.GatewayWithFamiliarEnv(getenv)
	def := config.TextBatch{Wait: config.DefaultTextBatchWait, SplitWait: config.DefaultTextBatchSplitWait}
	if g.Telegram.TextBatch != def || g.Discord.TextBatch != def || len(notes) != 0 {
		t.Fatalf("defaults: %+v %+v %q", g.Telegram.TextBatch, g.Discord.TextBatch, notes)
	}
	env["HERMES_TELEGRAM_TEXT_BATCH_DELAY_SECONDS"], env["HERMES_TELEGRAM_TEXT_BATCH_SPLIT_DELAY_SECONDS"] = "0.25", "1.5"
	env["HERMES_DISCORD_TEXT_BATCH_DELAY_SECONDS"], env["HERMES_DISCORD_TEXT_BATCH_SPLIT_DELAY_SECONDS"] = "0", "soon"
	g, notes = c.GatewayWithFamiliarEnv(getenv)
	if want := (config.TextBatch{Wait: 250 * time.Millisecond, SplitWait: 1500 * time.Millisecond}); g.Telegram.TextBatch != want {
		t.Fatalf("telegram: %+v", g.Telegram.TextBatch)
	}
	if g.Discord.TextBatch != (config.TextBatch{}) {
		t.Fatalf("discord with a zero delay gathers nothing: %+v", g.Discord.TextBatch)
	}
	if len(notes) != 1 || notes[0] != "HERMES_DISCORD_TEXT_BATCH_SPLIT_DELAY_SECONDS=soon is not a number of seconds from 0 to 10: the default holds" {
		t.Fatalf("notes %q", notes)
	}
	if c.Gateway.Telegram.TextBatch != (config.TextBatch{}) {
		t.Fatal("the loaded config was changed")
	}
}

// The variables a configuration reads its keys from: every *_env setting
// (here the model's, the gateway's, the webhook's), with Atrium's and the
// familiar agent's defaults always counted as its own keys.
func TestCredentialVariables(t *testing.T) {
	t.Parallel()
	c, err := load(t, "model:\n  provider: custom\n  base_url: http://127.0.0.1:1/v1\n  api_key_env: my_llm_key\n"+
		"gateway:\n  telegram:\n    token_env: TG_BOT_X\n  webhook:\n    secret_env: HOOK_SECRET\n")
	if err != nil {
		t.Fatal(err)
	}
	got := c.CredentialVariables()
	for _, want := range []string{"MY_LLM_KEY", "TG_BOT_X", "HOOK_SECRET"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s not among %v", want, got)
		}
	}
	for name, want := range map[string]bool{"OPENAI_API_KEY": true, "openrouter_api_key": true, "TELEGRAM_BOT_TOKEN": true, "GITHUB_TOKEN": true,
		"SLACK_SIGNING_SECRET": true, "AUXILIARY_VISION_API_KEY": true, "SCIMINER_API_KEY": false, "HOMELAB_GH_TOKEN": false} {
		if config.ManagedCredential(name) != want {
			t.Errorf("ManagedCredential(%s) = %v", name, !want)
		}
	}
}
