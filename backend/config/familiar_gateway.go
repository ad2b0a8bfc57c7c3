package config

import (
	"fmt"
	"slices"
	"strings"
)

// Platform is one entry of the familiar agent's platforms block: only its
// enabled switch is read (platforms.telegram.enabled: false keeps a
// platform its .env has credentials for from running).
type Platform struct {
	Enabled *bool `yaml:"enabled"`
}

// familiarPlatform is a platform the familiar gateway enables from its
// .env alone: the variables whose values enable it, and its allowlist's.
type familiarPlatform struct {
	name    string
	enable  []string // all set: the platform runs
	allowed string   // <PLATFORM>_ALLOWED_USERS
	allAll  string   // <PLATFORM>_ALLOW_ALL_USERS
}

var familiarPlatforms = []familiarPlatform{
	{name: "telegram", enable: []string{"TELEGRAM_BOT_TOKEN"}, allowed: "TELEGRAM_ALLOWED_USERS", allAll: "TELEGRAM_ALLOW_ALL_USERS"},
	{name: "slack", enable: []string{"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN"}, allowed: "SLACK_ALLOWED_USERS", allAll: "SLACK_ALLOW_ALL_USERS"},
	{name: "discord", enable: []string{"DISCORD_BOT_TOKEN"}, allowed: "DISCORD_ALLOWED_USERS", allAll: "DISCORD_ALLOW_ALL_USERS"},
}

// GatewayWithFamiliarEnv is the gateway config.yaml configures, with the
// platforms the familiar agent's .env enables as its gateway does: a
// platform config.yaml has no block for runs when its credentials are set
// (TELEGRAM_BOT_TOKEN; SLACK_BOT_TOKEN with SLACK_APP_TOKEN, in Socket
// Mode; DISCORD_BOT_TOKEN, behaving as DISCORD_* and the discord: section
// say), unless platforms.<name>.enabled is false, letting in the users
// <PLATFORM>_ALLOWED_USERS and GATEWAY_ALLOWED_USERS list (ids between
// commas). notes say what a person should know: a platform that lets
// nobody in yet, an ALLOW_ALL_USERS switch Atrium does not honour. A block
// in config.yaml wins over the .env.
func (c Config) GatewayWithFamiliarEnv(getenv func(string) string) (g Gateway, notes []string) {
	g = c.Gateway
	for _, p := range familiarPlatforms {
		if (p.name == "telegram" && g.Telegram != nil) || (p.name == "slack" && g.Slack != nil) || (p.name == "discord" && g.Discord != nil) {
			continue
		}
		if sw, ok := c.Platforms[p.name]; ok && sw.Enabled != nil && !*sw.Enabled {
			continue
		}
		if slices.ContainsFunc(p.enable, func(v string) bool { return strings.TrimSpace(getenv(v)) == "" }) {
			continue
		}
		users := idsOf(getenv(p.allowed))
		for _, u := range idsOf(getenv("GATEWAY_ALLOWED_USERS")) {
			if !slices.Contains(users, u) {
				users = append(users, u)
			}
		}
		a := Access{AllowedUsers: users}
		switch p.name {
		case "telegram":
			g.Telegram = &Telegram{Access: a}
		case "slack":
			g.Slack = &Slack{Access: a, Mode: "socket"}
		case "discord":
			g.Discord = &Discord{Access: a}
		}
		for _, v := range []string{p.allAll, "GATEWAY_ALLOW_ALL_USERS"} {
			if Truthy(getenv(v)) {
				notes = append(notes, fmt.Sprintf("%s is not honoured: Atrium lets in only the users listed (%s, GATEWAY_ALLOWED_USERS, or gateway.%s.allowed_users)", v, p.allowed, p.name))
			}
		}
		if len(users) == 0 && (p.name != "discord" || strings.TrimSpace(getenv("DISCORD_ALLOWED_ROLES")) == "") {
			notes = append(notes, fmt.Sprintf("%s runs from the .env's %s, and lets nobody in yet: list their ids in %s (or GATEWAY_ALLOWED_USERS), or approve the pairing code a person who writes in a DM is given (atrium pairing)",
				p.name, strings.Join(p.enable, " and "), p.allowed))
		}
	}
	if g.Discord != nil {
		d, more := c.discordResolved(*g.Discord, getenv)
		g.Discord, notes = &d, append(notes, more...)
	}
	// Quick text messages are gathered as the familiar variables say.
	if g.Telegram != nil {
		t := *g.Telegram
		var more []string
		t.TextBatch, more = textBatchOf("telegram", getenv)
		g.Telegram, notes = &t, append(notes, more...)
	}
	if g.Discord != nil {
		var more []string
		g.Discord.TextBatch, more = textBatchOf("discord", getenv)
		notes = append(notes, more...)
	}
	return g, append(notes, c.fillFamiliar(&g, getenv)...)
}

// fillFamiliar fills what each platform block leaves unset from the
// familiar settings: its unauthorized_dm_behavior from the platform's
// section (discord:), then the top level, then
// HERMES_UNAUTHORIZED_DM_BEHAVIOR; its home channel from
// <PLATFORM>_HOME_CHANNEL.
func (c Config) fillFamiliar(g *Gateway, getenv func(string) string) (notes []string) {
	def := c.UnauthorizedDMBehavior
	if def == "" {
		v := strings.ToLower(strings.TrimSpace(getenv("HERMES_UNAUTHORIZED_DM_BEHAVIOR")))
		if err := checkUnknownDM("HERMES_UNAUTHORIZED_DM_BEHAVIOR", v); err != nil {
			notes = append(notes, err.Error()+"; the default holds")
		} else {
			def = v
		}
	}
	// A home channel a block leaves unset is the familiar
	// <PLATFORM>_HOME_CHANNEL (the familiar agent has none for a webhook).
	home := func(platform string) string {
		v := strings.TrimSpace(getenv(strings.ToUpper(platform) + "_HOME_CHANNEL"))
		if err := checkHome(strings.ToUpper(platform)+"_HOME_CHANNEL", v); err != nil {
			notes = append(notes, err.Error()+"; it is not used")
			return ""
		}
		return v
	}
	section := map[string]string{"discord": c.DiscordSection.UnauthorizedDMBehavior}
	// Copies: the blocks are the config's own.
	g.Telegram, g.Slack, g.Discord, g.Webhook = clone(g.Telegram), clone(g.Slack), clone(g.Discord), clone(g.Webhook)
	for _, b := range g.blocks() {
		b.access.UnauthorizedDM = firstSet(b.access.UnauthorizedDM, section[b.name], def)
		if b.name != "webhook" {
			b.access.HomeChannel = firstSet(b.access.HomeChannel, home(b.name))
		}
	}
	return notes
}

// clone is a copy of *p (nil for nil).
func clone[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// HomeChannels are the home channels the gateway's blocks (and the
// familiar .env) name, by platform (a webhook's by the name it reports):
// chat_id[:thread_id].
func (g Gateway) HomeChannels() map[string]string {
	out := map[string]string{}
	for _, b := range g.blocks() {
		name := b.name
		if name == "webhook" && g.Webhook.Name != "" {
			name = g.Webhook.Name
		}
		if b.access.HomeChannel != "" {
			out[name] = b.access.HomeChannel
		}
	}
	return out
}

// firstSet is the first of vs that is not "".
func firstSet(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// idsOf is a familiar allowlist: ids between commas (spaces around them
// dropped).
func idsOf(v string) IDList {
	var out IDList
	for _, id := range strings.Split(v, ",") {
		if id = strings.TrimSpace(id); id != "" {
			out = append(out, id)
		}
	}
	return out
}
