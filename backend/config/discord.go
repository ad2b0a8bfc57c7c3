package config

import (
	"fmt"
	"maps"
	"strings"
)

// Discord is the Discord adapter (the gateway's WebSocket for events, the
// REST API for replies): gateway.discord.
type Discord struct {
	Access   `yaml:",inline"`
	TokenEnv string `yaml:"token_env"` // default DISCORD_BOT_TOKEN
	// TextBatch is how a person's quick text messages are gathered
	// (GatewayWithFamiliarEnv fills it).
	TextBatch TextBatch `yaml:"-"`
	APIURL    string    `yaml:"api_url"` // default https://discord.com/api/v9
	// AllowedRoles let in a server member who has one of these roles (the
	// familiar DISCORD_ALLOWED_ROLES), in a server's channels and threads.
	AllowedRoles IDList `yaml:"allowed_roles"`
	// UploadLimitMB bounds a file the bot sends (default 10: what a
	// server without boosts takes; a boosted server takes 50 or 100).
	UploadLimitMB *float64 `yaml:"upload_limit_mb"`
	// DiscordBehaviour is how the bot behaves in a server, keyed as the
	// familiar agent's discord: section.
	DiscordBehaviour `yaml:",inline"`
}

// DiscordBehaviour is the familiar agent's discord: section (config.yaml),
// also its DISCORD_* variables: where the bot answers and how. Unset
// fields take the familiar defaults.
type DiscordBehaviour struct {
	RequireMention       *bool        `yaml:"require_mention"`        // default true
	FreeResponseChannels IDList       `yaml:"free_response_channels"` // answered without a mention, inline
	IgnoreNoMention      *bool        `yaml:"ignore_no_mention"`      // default true
	AutoThread           *bool        `yaml:"auto_thread"`            // default true
	Reactions            *bool        `yaml:"reactions"`              // default true
	IgnoredChannels      IDList       `yaml:"ignored_channels"`
	AllowedChannels      IDList       `yaml:"allowed_channels"`
	NoThreadChannels     IDList       `yaml:"no_thread_channels"`
	AllowBots            string       `yaml:"allow_bots"`    // none (default), mentions, all
	ReplyToMode          string       `yaml:"reply_to_mode"` // off, first (default), all
	AllowMentions        DiscordPings `yaml:"allow_mentions"`
	// SlashCommands registers the commands as the application's slash
	// commands on connecting (default true; DISCORD_COMMAND_SYNC_POLICY=off
	// leaves them as they are).
	SlashCommands *bool `yaml:"slash_commands"`
	// UnauthorizedDMBehavior is the familiar discord.unauthorized_dm_behavior.
	UnauthorizedDMBehavior string `yaml:"unauthorized_dm_behavior"`
	// ChannelPrompts are instructions added to every turn in a channel
	// or thread, by its id (a thread without one of its own takes its
	// channel's).
	ChannelPrompts map[string]string `yaml:"channel_prompts"`
}

// DiscordPings are the pings the bot's messages may make.
type DiscordPings struct {
	Everyone    *bool `yaml:"everyone"`     // default false
	Roles       *bool `yaml:"roles"`        // default false
	Users       *bool `yaml:"users"`        // default true
	RepliedUser *bool `yaml:"replied_user"` // default true
}

func (b DiscordBehaviour) validate(field string) error {
	switch b.AllowBots {
	case "", "none", "mentions", "all":
	default:
		return fmt.Errorf("%s.allow_bots must be none, mentions or all, not %q", field, b.AllowBots)
	}
	switch b.ReplyToMode {
	case "", "off", "first", "all":
	default:
		return fmt.Errorf("%s.reply_to_mode must be off, first or all, not %q", field, b.ReplyToMode)
	}
	return checkUnknownDM(field+".unauthorized_dm_behavior", b.UnauthorizedDMBehavior)
}

// over is b with what it leaves unset taken from under.
func (b DiscordBehaviour) over(under DiscordBehaviour) DiscordBehaviour {
	pick := func(a, u *bool) *bool {
		if a != nil {
			return a
		}
		return u
	}
	list := func(a, u IDList) IDList {
		if a != nil {
			return a
		}
		return u
	}
	str := func(a, u string) string {
		if a != "" {
			return a
		}
		return u
	}
	return DiscordBehaviour{
		RequireMention: pick(b.RequireMention, under.RequireMention), FreeResponseChannels: list(b.FreeResponseChannels, under.FreeResponseChannels),
		IgnoreNoMention: pick(b.IgnoreNoMention, under.IgnoreNoMention), AutoThread: pick(b.AutoThread, under.AutoThread),
		Reactions: pick(b.Reactions, under.Reactions), IgnoredChannels: list(b.IgnoredChannels, under.IgnoredChannels),
		AllowedChannels: list(b.AllowedChannels, under.AllowedChannels), NoThreadChannels: list(b.NoThreadChannels, under.NoThreadChannels),
		AllowBots: str(b.AllowBots, under.AllowBots), ReplyToMode: str(b.ReplyToMode, under.ReplyToMode),
		SlashCommands: pick(b.SlashCommands, under.SlashCommands), ChannelPrompts: prompts(b.ChannelPrompts, under.ChannelPrompts),
		AllowMentions: DiscordPings{Everyone: pick(b.AllowMentions.Everyone, under.AllowMentions.Everyone),
			Roles: pick(b.AllowMentions.Roles, under.AllowMentions.Roles), Users: pick(b.AllowMentions.Users, under.AllowMentions.Users),
			RepliedUser: pick(b.AllowMentions.RepliedUser, under.AllowMentions.RepliedUser)},
	}
}

// prompts is a's channel prompts over under's.
func prompts(a, under map[string]string) map[string]string {
	if len(a) == 0 {
		return under
	}
	out := maps.Clone(under)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, a)
	return out
}

// discordEnv is the behaviour the familiar .env's DISCORD_* variables set
// (a value that is not a yes or a no is noted, and left unset).
func discordEnv(getenv func(string) string) (b DiscordBehaviour, notes []string) {
	flag := func(name string) *bool {
		v := strings.ToLower(strings.TrimSpace(getenv(name)))
		switch v {
		case "":
			return nil
		case "1", "true", "yes", "on":
			t := true
			return &t
		case "0", "false", "no", "off":
			f := false
			return &f
		}
		notes = append(notes, fmt.Sprintf("%s=%q is neither true nor false; its default holds", name, getenv(name)))
		return nil
	}
	ids := func(name string) IDList {
		if strings.TrimSpace(getenv(name)) == "" {
			return nil
		}
		return idsOf(getenv(name))
	}
	b = DiscordBehaviour{RequireMention: flag("DISCORD_REQUIRE_MENTION"), FreeResponseChannels: ids("DISCORD_FREE_RESPONSE_CHANNELS"),
		IgnoreNoMention: flag("DISCORD_IGNORE_NO_MENTION"), AutoThread: flag("DISCORD_AUTO_THREAD"), Reactions: flag("DISCORD_REACTIONS"),
		IgnoredChannels: ids("DISCORD_IGNORED_CHANNELS"), AllowedChannels: ids("DISCORD_ALLOWED_CHANNELS"),
		NoThreadChannels: ids("DISCORD_NO_THREAD_CHANNELS"),
		AllowBots:        strings.ToLower(strings.TrimSpace(getenv("DISCORD_ALLOW_BOTS"))),
		ReplyToMode:      strings.ToLower(strings.TrimSpace(getenv("DISCORD_REPLY_TO_MODE"))),
		AllowMentions: DiscordPings{Everyone: flag("DISCORD_ALLOW_MENTION_EVERYONE"), Roles: flag("DISCORD_ALLOW_MENTION_ROLES"),
			Users: flag("DISCORD_ALLOW_MENTION_USERS"), RepliedUser: flag("DISCORD_ALLOW_MENTION_REPLIED_USER")}}
	if (DiscordBehaviour{AllowBots: b.AllowBots}).validate("") != nil {
		notes = append(notes, fmt.Sprintf("DISCORD_ALLOW_BOTS=%q is not none, mentions or all; none holds", b.AllowBots))
		b.AllowBots = ""
	}
	if (DiscordBehaviour{ReplyToMode: b.ReplyToMode}).validate("") != nil {
		notes = append(notes, fmt.Sprintf("DISCORD_REPLY_TO_MODE=%q is not off, first or all; first holds", b.ReplyToMode))
		b.ReplyToMode = ""
	}
	switch v := strings.ToLower(strings.TrimSpace(getenv("DISCORD_COMMAND_SYNC_POLICY"))); v {
	case "":
	case "off":
		off := false
		b.SlashCommands = &off
	case "safe", "bulk":
		on := true
		b.SlashCommands = &on
	default:
		notes = append(notes, fmt.Sprintf("DISCORD_COMMAND_SYNC_POLICY=%q is not safe, bulk or off; the commands are registered", v))
	}
	return b, notes
}

// discordResolved is a Discord block with every behaviour its
// gateway.discord block leaves unset taken from the .env's DISCORD_*
// variables, then from the familiar discord: section.
func (c Config) discordResolved(d Discord, getenv func(string) string) (Discord, []string) {
	env, notes := discordEnv(getenv)
	d.DiscordBehaviour = d.DiscordBehaviour.over(env.over(c.DiscordSection))
	if d.AllowedRoles == nil && strings.TrimSpace(getenv("DISCORD_ALLOWED_ROLES")) != "" {
		d.AllowedRoles = idsOf(getenv("DISCORD_ALLOWED_ROLES"))
	}
	return d, notes
}
