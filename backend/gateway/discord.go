package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
)

// DiscordOptions configure the Discord adapter. The behaviour in a server
// follows the familiar gateway's (DISCORD_* in its .env): DiscordDefaults
// are its defaults.
type DiscordOptions struct {
	Token    string // the bot token
	TokenEnv string // where it came from, for errors
	// APIURL is Discord's REST API (default https://discord.com/api/v9);
	// the gateway's WebSocket address is asked of it.
	APIURL string
	// TextBatch gathers a person's quick text messages (zero: none are).
	TextBatch TextBatch
	// Access is who may talk (the service checks it too): a thread is
	// opened only for a message the agent will answer.
	Access Access
	// RequireMention: in a server channel only a message that @mentions
	// the bot is answered (a DM always is).
	RequireMention bool
	// FreeResponse are channels answered without a mention, inline.
	FreeResponse []string
	// IgnoreNoMention: in a server, a message that @mentions other people
	// and not the bot is left alone.
	IgnoreNoMention bool
	// AutoThread: an @mention in a text channel opens a thread from the
	// message, where the conversation goes on without mentions.
	AutoThread bool
	// NoThread are channels answered inline though AutoThread is on.
	NoThread []string
	// Ignored are channels never answered; Allowed, when set, the only
	// server channels answered. A thread follows its parent channel.
	Ignored, Allowed []string
	// AllowBots: none (default), mentions (a bot's message that
	// @mentions this one), all.
	AllowBots string
	// Reactions: 👀 on the message a turn answers while it runs, then ✅,
	// or ❌ when it failed.
	Reactions bool
	// ReplyToMode: off, first (the reply's first part refers to the
	// message it answers), all.
	ReplyToMode string
	// Mentions the bot's messages may ping.
	Mentions DiscordMentions
	// SlashCommands: the commands (built-in and plugins') are registered
	// as the application's slash commands when the adapter connects,
	// replacing the ones it had (off: left as they are).
	SlashCommands bool
	// MaxFileSize bounds a file the bot sends (default
	// DiscordMaxFileSize); a server whose boosts let members upload more
	// can be given more.
	MaxFileSize int64
	// Client is the HTTP client (its Transport is kept; a timeout is set).
	Client              *http.Client
	RetryBase, RetryMax time.Duration
}

// DiscordMentions are the pings the bot's messages may make.
type DiscordMentions struct {
	Everyone, Roles, Users, RepliedUser bool
}

// DiscordDefaults are the familiar gateway's defaults: mentions required,
// mentions of others heeded, a thread for each @mention, reactions, the
// first part a reply, slash commands registered; no @everyone or role
// pings.
func DiscordDefaults() DiscordOptions {
	return DiscordOptions{RequireMention: true, IgnoreNoMention: true, AutoThread: true, Reactions: true, SlashCommands: true,
		AllowBots: "none", ReplyToMode: "first", Mentions: DiscordMentions{Users: true, RepliedUser: true}}
}

// DiscordAPI is Discord's REST API (the version discordgo speaks).
var DiscordAPI = strings.TrimSuffix(discordgo.EndpointAPI, "/")

// discordLimit is a message's length limit (characters).
const discordLimit = 2000

// DiscordMaxFileSize is what Discord takes as one upload in a server
// without boosts, and in a DM: 10 MiB.
const DiscordMaxFileSize = 10 << 20

// discordIntents: guilds (channels and threads), messages in servers and
// DMs with their content, and reactions.
const discordIntents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages |
	discordgo.IntentsMessageContent | discordgo.IntentsGuildMessageReactions | discordgo.IntentsDirectMessageReactions

// Discord is the Discord adapter: the gateway's WebSocket for events
// (bwmarrin/discordgo), the REST API for replies.
type Discord struct {
	o          DiscordOptions
	s          *discordgo.Session
	menuSource // the commands, for the application's slash commands

	mu      sync.Mutex
	texts   *texts // the service's inbox, a person's quick texts gathered
	me      *discordgo.User
	app     string             // the application's id (READY)
	admits  func(Inbound) bool // who may talk (the service's; else Access)
	conn    net.Conn           // the gateway's connection last dialled
	threads map[string]bool    // threads the bot takes part in
	chans   map[string]*discordgo.Channel
	homes   map[string]string // message id → its channel, for one a thread was opened from
	cdn     *http.Client      // fetches attachments
}

// NewDiscord builds the adapter.
func NewDiscord(o DiscordOptions) *Discord {
	if o.TokenEnv == "" {
		o.TokenEnv = "DISCORD_BOT_TOKEN"
	}
	if o.APIURL == "" {
		o.APIURL = DiscordAPI
	}
	if o.AllowBots == "" {
		o.AllowBots = "none"
	}
	if o.ReplyToMode == "" {
		o.ReplyToMode = "first"
	}
	if o.RetryBase <= 0 {
		o.RetryBase = time.Second
	}
	if o.RetryMax <= 0 {
		o.RetryMax = time.Minute
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DiscordMaxFileSize
	}
	client := &http.Client{Timeout: 30 * time.Second}
	if o.Client != nil {
		client.Transport = o.Client.Transport
	}
	if base := strings.TrimRight(o.APIURL, "/"); base != DiscordAPI {
		client.Transport = discordRewrite{to: base, next: client.Transport}
	}
	s, _ := discordgo.New("Bot " + o.Token) // builds; connects nothing
	s.Client = client
	s.LogLevel = -1                  // the adapter reports its state itself
	s.ShouldReconnectOnError = false // Run reconnects, and stops on a refusal
	s.ShouldRetryOnRateLimit = false // a 429 goes back to the outbox, which waits
	s.Identify.Intents = discordIntents
	s.SyncEvents = true // handled in the order they came: a conversation's messages stay in order
	d := &Discord{o: o, s: s, threads: map[string]bool{}, chans: map[string]*discordgo.Channel{}, homes: map[string]string{},
		// An attachment's download is bounded by the service's context,
		// not the 30 seconds a REST call gets: a large file takes longer.
		cdn: &http.Client{Transport: client.Transport}}
	s.Dialer = &websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: discordOpenTimeout, NetDialContext: d.dial}
	// A message is taken as the event came (discordgo's Message has no
	// duration_secs, a voice message's length), with discordgo's reading
	// of it.
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.Event) {
		if mc, ok := e.Struct.(*discordgo.MessageCreate); ok && e.Type == "MESSAGE_CREATE" {
			d.onMessage(mc, e.RawData)
		}
	})
	s.AddHandler(d.onInteraction)
	s.AddHandler(func(_ *discordgo.Session, r *discordgo.MessageReactionAdd) {
		d.onReaction(r.MessageReaction, r.Member, true)
	})
	s.AddHandler(func(_ *discordgo.Session, r *discordgo.MessageReactionRemove) {
		d.onReaction(r.MessageReaction, nil, false)
	})
	s.AddHandler(func(_ *discordgo.Session, t *discordgo.ThreadCreate) { d.remember(t.Channel) })
	s.AddHandler(func(_ *discordgo.Session, r *discordgo.Ready) {
		if r.Application != nil && r.Application.ID != "" {
			d.mu.Lock()
			d.app = r.Application.ID
			d.mu.Unlock()
		}
	})
	return d
}

// Platform implements Adapter.
func (d *Discord) Platform() string { return "discord" }

// discordOpenTimeout bounds opening the gateway's connection, from the
// dial to READY (discordgo reads Hello and READY without a deadline).
const discordOpenTimeout = 30 * time.Second

// dial opens the gateway's connection with a deadline for the opening,
// lifted once it is open (opened), and keeps it so that Run can close it
// when it must stop while an opening hangs.
func (d *Discord) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{Timeout: discordOpenTimeout}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(discordOpenTimeout))
	d.mu.Lock()
	d.conn = c
	d.mu.Unlock()
	return c, nil
}

// opened lifts the opening's deadline from the connection.
func (d *Discord) opened() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.conn != nil {
		_ = d.conn.SetDeadline(time.Time{})
	}
}

// discordRewrite sends the REST calls discordgo makes to Discord's API to
// another address (api_url: a proxy, a loopback fake).
type discordRewrite struct {
	to   string
	next http.RoundTripper
}

func (r discordRewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	next := r.next
	if next == nil {
		next = http.DefaultTransport
	}
	if rest, ok := strings.CutPrefix(req.URL.String(), DiscordAPI+"/"); ok {
		u, err := url.Parse(r.to + "/" + rest)
		if err != nil {
			return nil, err
		}
		req = req.Clone(req.Context())
		req.URL, req.Host = u, u.Host
	}
	return next.RoundTrip(req)
}

// plain is err as a person should read it: the token never in it, and a
// request sent elsewhere (api_url) named by where it went.
func (d *Discord) plain(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if rest, ok := strings.CutPrefix(ue.URL, DiscordAPI+"/"); ok && strings.TrimRight(d.o.APIURL, "/") != DiscordAPI {
			err = &url.Error{Op: ue.Op, URL: strings.TrimRight(d.o.APIURL, "/") + "/" + rest, Err: ue.Err}
		}
	}
	return scrub(err, d.o.Token)
}

// Run implements Adapter: check the token (GET /users/@me), then hold the
// gateway's WebSocket open, reconnecting (resuming) when it drops. A token
// Discord refuses, or intents the application is not allowed, stop the
// adapter with what to do.
func (d *Discord) Run(ctx context.Context, in Inbox, report Reporter) error {
	if d.o.Token == "" {
		return errMissingSecret("discord", d.o.TokenEnv)
	}
	texts := newTexts(in, d.o.TextBatch)
	defer texts.flush()
	d.mu.Lock()
	d.texts = texts
	d.mu.Unlock()
	var me *discordgo.User
	for attempt := 1; ; attempt++ {
		u, err := d.s.User("@me", discordgo.WithContext(ctx))
		if err == nil {
			me = u
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		if restStatus(err) == http.StatusUnauthorized {
			return Permanent(fmt.Errorf("discord: Discord refused the bot token in %s (401 Unauthorized): copy it again from the Developer Portal (Bot → Reset Token)", d.o.TokenEnv))
		}
		report(Retrying, "cannot reach Discord's API", d.plain(err))
		if !sleep(ctx, backoff(d.o.RetryBase, d.o.RetryMax, attempt)) {
			return nil
		}
	}
	d.mu.Lock()
	d.me = me
	d.mu.Unlock()
	// Stopping while an opening hangs (Open holds discordgo's lock, and
	// reads without a deadline): the connection is closed under it.
	defer context.AfterFunc(ctx, func() {
		d.mu.Lock()
		c := d.conn
		d.mu.Unlock()
		if c != nil {
			_ = c.Close()
		}
	})()
	dropped := make(chan struct{}, 1)
	defer d.s.AddHandler(func(_ *discordgo.Session, _ *discordgo.Disconnect) {
		select {
		case dropped <- struct{}{}:
		default:
		}
	})()
	registered := false
	for attempt := 1; ; {
		err := d.s.Open()
		if err == nil || errors.Is(err, discordgo.ErrWSAlreadyOpen) {
			d.opened()
			attempt = 1
			detail := "@" + me.Username + " on Discord's gateway"
			if !registered {
				registered = true
				detail += d.registerCommands(ctx)
			}
			report(Connected, detail, nil)
			select {
			case <-ctx.Done():
				_ = d.s.Close()
				return nil
			case <-dropped:
				report(Retrying, "the gateway connection dropped; resuming", nil)
				if !sleep(ctx, d.o.RetryBase/4) {
					return nil
				}
				continue
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if refusal := discordRefusal(err, d.o.TokenEnv); refusal != nil {
			return Permanent(refusal)
		}
		report(Retrying, "cannot connect to Discord's gateway", d.plain(err))
		if !sleep(ctx, backoff(d.o.RetryBase, d.o.RetryMax, attempt)) {
			return nil
		}
		attempt++
	}
}

// SetAdmits implements Gatekeeper.
func (d *Discord) SetAdmits(admits func(Inbound) bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.admits = admits
}

// allowed says whether the sender of m may talk.
func (d *Discord) allowed(m Inbound) bool {
	d.mu.Lock()
	admits := d.admits
	d.mu.Unlock()
	if admits != nil {
		return admits(m)
	}
	return d.o.Access.Admits(m)
}

// commandName is what Discord takes as a slash command's name.
var discordCommandName = regexp.MustCompile(`^[-_\p{Ll}\p{Lo}\p{N}]{1,32}$`)

// registerCommands makes the commands the application's slash commands
// (a bulk overwrite: Discord keeps the ids of those that stay), each
// with an optional args; what is said after the connection's detail when
// it could not.
func (d *Discord) registerCommands(ctx context.Context) string {
	d.mu.Lock()
	app := d.app
	if app == "" && d.me != nil {
		app = d.me.ID
	}
	d.mu.Unlock()
	if !d.o.SlashCommands || app == "" {
		return ""
	}
	entries, ok := d.menu(discordCommandName, nil, 100)
	if !ok {
		return ""
	}
	cmds := make([]*discordgo.ApplicationCommand, 0, len(entries))
	for _, e := range entries {
		hint := e.hint
		if hint == "" {
			hint = "what to pass to /" + e.name
		}
		cmds = append(cmds, &discordgo.ApplicationCommand{Name: e.name, Description: clipRunes(e.description, 100),
			Options: []*discordgo.ApplicationCommandOption{{Type: discordgo.ApplicationCommandOptionString, Name: "args",
				Description: clipRunes(hint, 100)}}})
	}
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := d.s.ApplicationCommandBulkOverwrite(app, "", cmds, discordgo.WithContext(c)); err != nil {
		return "; its slash commands were not registered (" + clipRunes(d.plain(err).Error(), 200) + "): typed as messages they still work"
	}
	return fmt.Sprintf("; %d slash commands", len(cmds))
}

// discordRefusal is what a close code the gateway ends a connection with
// for good means (https://discord.com/developers/docs/topics/opcodes-and-status-codes#gateway-gateway-close-event-codes);
// nil for one worth connecting again after.
func discordRefusal(err error, tokenEnv string) error {
	var ce *websocket.CloseError
	if !errors.As(err, &ce) {
		return nil
	}
	switch ce.Code {
	case 4004:
		return fmt.Errorf("discord: the gateway refused the bot token in %s (4004 authentication failed)", tokenEnv)
	case 4014:
		return fmt.Errorf("discord: the gateway refused the intents the agent needs (4014 disallowed intents): turn on Message Content Intent in the Developer Portal (your application → Bot → Privileged Gateway Intents), then start the gateway again")
	case 4010, 4011, 4012, 4013:
		return fmt.Errorf("discord: the gateway refused the connection (%d %s)", ce.Code, ce.Text)
	}
	return nil
}

func restStatus(err error) int {
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil {
		return re.Response.StatusCode
	}
	return 0
}

// botID is the bot's user id ("" before Run learned it).
func (d *Discord) botID() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.me == nil {
		return ""
	}
	return d.me.ID
}

// deliver hands a message to the service (nothing before Run), a
// person's quick text messages gathered into one (TextBatch).
func (d *Discord) deliver(m Inbound) {
	d.mu.Lock()
	texts := d.texts
	d.mu.Unlock()
	if texts != nil {
		texts.deliver(m)
	}
}

// remember keeps a channel the gateway told of.
func (d *Discord) remember(c *discordgo.Channel) {
	if c == nil || c.ID == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.chans) > 4096 {
		clear(d.chans)
	}
	d.chans[c.ID] = c
}

// channel is a channel's kind and parent: what the gateway told, else
// asked once (GET /channels/{id}); nil when Discord cannot say.
func (d *Discord) channel(id string) *discordgo.Channel {
	d.mu.Lock()
	c := d.chans[id]
	d.mu.Unlock()
	if c != nil {
		return c
	}
	if c, err := d.s.State.Channel(id); err == nil {
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := d.s.Channel(id, discordgo.WithContext(ctx))
	if err != nil {
		return nil
	}
	d.remember(c)
	return c
}

// place says where a message, a tap or a reaction came from: a DM (no
// server), a server's channel, or a thread (its parent kept); the
// channel, when Discord says what it is (nil in a DM).
func (d *Discord) place(in *Inbound, guild, channel string) *discordgo.Channel {
	if guild == "" {
		in.ChatType = "dm"
		return nil
	}
	in.ChatType = "group"
	c := d.channel(channel)
	if c != nil && c.IsThread() {
		in.ChatType, in.ThreadID, in.Parent = "thread", channel, c.ParentID
	}
	return c
}

// inAny reports whether list names channel, or the channel a thread is
// in (parent, "" for none).
func inAny(list []string, channel, parent string) bool {
	return slices.Contains(list, channel) || parent != "" && slices.Contains(list, parent)
}

// closed reports whether the bot answers nothing in channel: an ignored
// one (or a thread of one), or one outside allowed_channels.
func (d *Discord) closed(channel, parent string) bool {
	return inAny(d.o.Ignored, channel, parent) || len(d.o.Allowed) > 0 && !inAny(d.o.Allowed, channel, parent)
}

// mentionOf matches a mention of a user (<@id>, <@!id>).
var mentionOf = regexp.MustCompile(`<@!?(\d+)>`)

// onMessage takes a message (raw: its event's data): who may be answered
// where, as the familiar gateway decides it, then the thread an @mention
// opens; its attachments go with it, for the service to fetch.
func (d *Discord) onMessage(mc *discordgo.MessageCreate, raw json.RawMessage) {
	m := mc.Message
	bot := d.botID()
	if m == nil || m.Author == nil || bot == "" || m.Author.ID == bot {
		return
	}
	if m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply {
		return // a thread opened, a pin, someone joined: no one's words
	}
	mentioned := slices.ContainsFunc(m.Mentions, func(u *discordgo.User) bool { return u.ID == bot }) ||
		strings.Contains(m.Content, "<@"+bot+">") || strings.Contains(m.Content, "<@!"+bot+">")
	if m.Author.Bot && (d.o.AllowBots == "none" || d.o.AllowBots == "mentions" && !mentioned) {
		return
	}
	in := Inbound{EventID: "message:" + m.ID, MessageID: m.ID, UserID: m.Author.ID, UserName: discordName(m.Author, m.Member),
		ChatID: m.ChannelID, ReplyTo: m.ID, Roles: memberRoles(m.Member), At: m.Timestamp.UTC()}
	if d.o.ReplyToMode == "off" {
		in.ReplyTo = ""
	}
	in.Text = strings.TrimSpace(mentionOf.ReplaceAllStringFunc(m.Content, func(s string) string {
		if mentionOf.FindStringSubmatch(s)[1] == bot {
			return ""
		}
		return s
	}))
	if in.Text == "" && len(m.Attachments) == 0 {
		return // a bare mention: nothing to answer
	}
	if c := d.place(&in, m.GuildID, m.ChannelID); m.GuildID != "" {
		thread := in.ThreadID != ""
		here := func(list []string) bool { return inAny(list, m.ChannelID, in.Parent) }
		if d.closed(m.ChannelID, in.Parent) {
			return
		}
		free := !d.o.RequireMention || here(d.o.FreeResponse)
		if thread && !free {
			d.mu.Lock()
			free = d.threads[m.ChannelID] || c.OwnerID == bot
			d.mu.Unlock()
		}
		others := slices.ContainsFunc(m.Mentions, func(u *discordgo.User) bool { return u.ID != bot }) || len(m.MentionRoles) > 0 || m.MentionEveryone
		if !mentioned && (!free || d.o.IgnoreNoMention && others) {
			return
		}
		if mentioned && thread {
			d.takePart(m.ChannelID)
		}
		if mentioned && !free && !thread && d.o.AutoThread && !here(d.o.NoThread) && d.allowed(in) {
			if t := d.openThread(m); t != nil {
				in.ChatID, in.ChatType, in.ThreadID, in.ReplyTo, in.Parent = t.ID, "thread", t.ID, "", m.ChannelID
				d.mu.Lock()
				if len(d.homes) > 4096 {
					clear(d.homes)
				}
				d.homes[m.ID] = m.ChannelID
				d.mu.Unlock()
			}
		}
	}
	// Only a message the adapter answers carries its files: one it left
	// alone is never downloaded.
	in.Files = d.attachments(m, raw)
	d.deliver(in)
}

// attachments are a message's files, each fetched from its URL when the
// service saves it. A voice message's audio is a voice message, its length
// read from the event (raw), which says it as duration_secs.
func (d *Discord) attachments(m *discordgo.Message, raw json.RawMessage) []InFile {
	if len(m.Attachments) == 0 {
		return nil
	}
	voice := m.Flags&discordgo.MessageFlagsIsVoiceMessage != 0
	seconds := map[string]float64{}
	if voice {
		var ev struct {
			Attachments []struct {
				ID       string  `json:"id"`
				Duration float64 `json:"duration_secs"`
			} `json:"attachments"`
		}
		if json.Unmarshal(raw, &ev) == nil {
			for _, a := range ev.Attachments {
				seconds[a.ID] = a.Duration
			}
		}
	}
	var out []InFile
	for _, a := range m.Attachments {
		if a == nil || a.URL == "" {
			continue
		}
		name := a.Filename
		if name == "" {
			name = "attachment-" + a.ID
		}
		f := InFile{Name: name, MIME: a.ContentType, Kind: kindOf(a.ContentType, name), Size: int64(a.Size), Fetch: d.fetch(a.URL)}
		if voice && f.Kind == KindAudio {
			f.Kind, f.Duration = KindVoice, int(math.Round(seconds[a.ID]))
		}
		out = append(out, f)
	}
	return out
}

// fetch GETs an attachment from Discord's CDN. Its URL is signed: the bot
// token is not sent (it is Discord's API's, and the URL came from an
// event).
func (d *Discord) fetch(u string) func(ctx context.Context) (io.ReadCloser, error) {
	return func(ctx context.Context) (io.ReadCloser, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, fmt.Errorf("its address is not one to fetch (%v)", err)
		}
		resp, err := d.cdn.Do(req)
		if err != nil {
			// Go's error repeats the URL, whose signature says nothing
			// to a person.
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return nil, fmt.Errorf("cannot reach Discord's CDN (%v)", err)
		}
		if resp.StatusCode/100 != 2 {
			resp.Body.Close()
			return nil, fmt.Errorf("fetching it from Discord's CDN answered %s", resp.Status)
		}
		return resp.Body, nil
	}
}

// takePart notes a thread the bot takes part in (it is answered there
// without a mention; a thread it opened is known by its owner after a
// restart).
func (d *Discord) takePart(thread string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.threads) > 4096 {
		clear(d.threads)
	}
	d.threads[thread] = true
}

// openThread opens a thread from a message that @mentioned the bot, named
// after its first line; nil when it cannot (no permission): the reply is
// then inline.
func (d *Discord) openThread(m *discordgo.Message) *discordgo.Channel {
	name := strings.TrimSpace(mentionOf.ReplaceAllString(m.Content, ""))
	name, _, _ = strings.Cut(name, "\n")
	name = strings.TrimSpace(strings.TrimLeft(name, "# "))
	if name == "" {
		name = "Conversation with " + discordName(m.Author, m.Member)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	t, err := d.s.MessageThreadStartComplex(m.ChannelID, m.ID, &discordgo.ThreadStart{Name: clipRunes(name, 100), AutoArchiveDuration: 1440},
		discordgo.WithContext(ctx))
	if err != nil {
		return nil
	}
	d.remember(t)
	d.takePart(t.ID)
	return t
}

// memberRoles are a server member's role ids (none outside a server).
func memberRoles(m *discordgo.Member) []string {
	if m == nil {
		return nil
	}
	return m.Roles
}

// discordName is the name a person shows in the server (or their own).
func discordName(u *discordgo.User, mem *discordgo.Member) string {
	if mem != nil && mem.Nick != "" {
		return mem.Nick
	}
	if u.GlobalName != "" {
		return u.GlobalName
	}
	return u.Username
}

// onInteraction takes a tap on a button under one of the bot's messages,
// acknowledged at once (Discord wants an answer within 3 seconds; the
// message is edited after), or one of the application's slash commands,
// answered at once to the person alone ("Running /new…"): the command is
// the message that says it, and its answer comes in the channel.
func (d *Discord) onInteraction(_ *discordgo.Session, ic *discordgo.InteractionCreate) {
	i := ic.Interaction
	if i == nil || i.Type != discordgo.InteractionMessageComponent && i.Type != discordgo.InteractionApplicationCommand {
		return
	}
	user := i.User
	if i.Member != nil && i.Member.User != nil {
		user = i.Member.User
	}
	if user == nil || user.Bot {
		return
	}
	in := Inbound{UserID: user.ID, UserName: discordName(user, i.Member), ChatID: i.ChannelID, Roles: memberRoles(i.Member), At: time.Now().UTC()}
	d.place(&in, i.GuildID, i.ChannelID)
	answer := &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}
	if i.Type == discordgo.InteractionMessageComponent {
		if i.Message == nil {
			return
		}
		in.EventID = "tap:" + i.ID
		in.Tap = &Tap{ID: i.AppID + ":" + i.Token, MessageID: i.Message.ID, MessageText: i.Message.Content, Data: i.MessageComponentData().CustomID}
	} else {
		data := i.ApplicationCommandData()
		in.EventID, in.Text = "command:"+i.ID, "/"+data.Name
		for _, o := range data.Options {
			if v, ok := o.Value.(string); ok && o.Name == "args" && strings.TrimSpace(v) != "" {
				in.Text += " " + strings.TrimSpace(v)
			}
		}
		say := "Running " + clipRunes(in.Text, 200) + "…"
		if i.GuildID != "" && d.closed(i.ChannelID, in.Parent) {
			say, in.Text = "I do not answer in this channel.", ""
		}
		answer = &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
			Data: &discordgo.InteractionResponseData{Content: say, Flags: discordgo.MessageFlagsEphemeral}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_ = d.s.InteractionRespond(i, answer, discordgo.WithContext(ctx))
	cancel()
	if in.Tap != nil || in.Text != "" {
		d.deliver(in)
	}
}

// onReaction tells of an emoji reaction someone (not the bot) added or
// removed.
func (d *Discord) onReaction(r *discordgo.MessageReaction, member *discordgo.Member, added bool) {
	if r == nil || r.UserID == "" || r.UserID == d.botID() {
		return
	}
	raw, _ := json.Marshal(r)
	kind := "added"
	if !added {
		kind = "removed"
	}
	// Discord gives a reaction no id, and does not deliver one twice on a
	// connection (a resumed one replays only what was missed).
	in := Inbound{EventID: fmt.Sprintf("reaction:%s:%s:%s:%s:%d", kind, r.MessageID, r.UserID, r.Emoji.APIName(), time.Now().UnixNano()), UserID: r.UserID,
		ChatID: r.ChannelID, Roles: memberRoles(member), At: time.Now().UTC(),
		Reaction: &Reaction{Added: added, Name: r.Emoji.Name, ItemType: "message", MessageTS: r.MessageID, TeamID: r.GuildID,
			EventTS: strconv.FormatFloat(float64(time.Now().UnixMicro())/1e6, 'f', 6, 64), Raw: raw}}
	d.place(&in, r.GuildID, r.ChannelID)
	d.deliver(in)
}

// target is the channel a message goes to: a thread is a channel of its own.
func discordTarget(chatID, threadID string) string {
	if threadID != "" {
		return threadID
	}
	return chatID
}

// allowedMentions are the pings the bot's messages may make.
func (d *Discord) allowedMentions() *discordgo.MessageAllowedMentions {
	am := &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}, RepliedUser: d.o.Mentions.RepliedUser}
	if d.o.Mentions.Everyone {
		am.Parse = append(am.Parse, discordgo.AllowedMentionTypeEveryone)
	}
	if d.o.Mentions.Roles {
		am.Parse = append(am.Parse, discordgo.AllowedMentionTypeRoles)
	}
	if d.o.Mentions.Users {
		am.Parse = append(am.Parse, discordgo.AllowedMentionTypeUsers)
	}
	return am
}

// Send implements Adapter: the text in parts of at most 2,000
// characters, the first (or each, reply_to_mode: all) a reply to the
// message it answers, buttons under the last.
func (d *Discord) Send(ctx context.Context, m Message) (string, error) {
	to := discordTarget(m.ChatID, m.ThreadID)
	parts := splitText(m.Text, discordLimit)
	if m.Markdown {
		parts = closeFences(parts) // Discord reads the Markdown: a code block cut by the split is closed, then opened again
	}
	var id string
	for i, part := range parts {
		ms := &discordgo.MessageSend{Content: part, AllowedMentions: d.allowedMentions()}
		if m.ReplyTo != "" && (d.o.ReplyToMode == "all" || d.o.ReplyToMode == "first" && i == 0) {
			no := false
			ms.Reference = &discordgo.MessageReference{MessageID: m.ReplyTo, ChannelID: to, FailIfNotExists: &no}
		}
		if i == len(parts)-1 && len(m.Buttons) > 0 {
			ms.Components = discordButtons(m.Buttons)
		}
		sent, err := d.s.ChannelMessageSendComplex(to, ms, discordgo.WithContext(ctx))
		if err != nil {
			return "", d.sendError(err)
		}
		id = sent.ID
	}
	return id, nil
}

// SendFile implements FileSender: one message with the file attached, in
// the channel or thread Send would post in, its caption the text. A voice
// message ([[audio_as_voice]]) goes as an audio file, which Discord plays
// in the chat (its own voice messages want Opus and a waveform worked
// out). Only reply_to_mode all makes it a reply: the reply's text went
// first, and took the reference under first.
func (d *Discord) SendFile(ctx context.Context, m Message) (string, error) {
	if m.File == nil {
		return d.Send(ctx, m)
	}
	fh, size, err := openFile(m.File, "Discord", d.o.MaxFileSize)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	to := discordTarget(m.ChatID, m.ThreadID)
	kind := mime.TypeByExtension(filepath.Ext(m.File.Name))
	if kind == "" {
		kind = "application/octet-stream"
	}
	ms := &discordgo.MessageSend{Content: clipRunes(m.Text, discordLimit), AllowedMentions: d.allowedMentions(),
		Files: []*discordgo.File{{Name: m.File.Name, ContentType: kind, Reader: fh}}}
	if m.ReplyTo != "" && d.o.ReplyToMode == "all" {
		no := false
		ms.Reference = &discordgo.MessageReference{MessageID: m.ReplyTo, ChannelID: to, FailIfNotExists: &no}
	}
	sent, err := d.s.ChannelMessageSendComplex(to, ms, discordgo.WithContext(ctx))
	if err != nil {
		var re *discordgo.RESTError
		if restStatus(err) == http.StatusRequestEntityTooLarge ||
			errors.As(err, &re) && re.Message != nil && re.Message.Code == discordgo.ErrCodeRequestEntityTooLarge {
			// The channel takes less than max_file_size (a server's
			// boosts lapsed, a smaller limit than configured).
			return "", Permanent(fmt.Errorf("%s is %s, larger than Discord takes in this channel (HTTP %d)", m.File.Name, humanSize(size), restStatus(err)))
		}
		return "", d.sendError(err)
	}
	return sent.ID, nil
}

// discordButtons are buttons as action rows (at most 5 rows of 5; a
// label at most 80 characters, the data, custom_id, at most 100).
func discordButtons(rows [][]Button) []discordgo.MessageComponent {
	var out []discordgo.MessageComponent
	for _, row := range rows[:min(len(rows), 5)] {
		var bs []discordgo.MessageComponent
		for _, b := range row[:min(len(row), 5)] {
			style := discordgo.SecondaryButton
			switch {
			case strings.HasPrefix(b.Label, "✅"):
				style = discordgo.SuccessButton
			case strings.HasPrefix(b.Label, "❌"):
				style = discordgo.DangerButton
			}
			bs = append(bs, discordgo.Button{Label: clipRunes(b.Label, 80), Style: style, CustomID: clipRunes(b.Data, 100)})
		}
		out = append(out, discordgo.ActionsRow{Components: bs})
	}
	return out
}

// sendError: a 429 is tried again when Discord says; a refusal (400,
// 401, 403, 404: a channel gone, the bot removed or not allowed to post)
// is not.
func (d *Discord) sendError(err error) error {
	var rl *discordgo.RateLimitError
	if errors.As(err, &rl) && rl.RateLimit != nil && rl.TooManyRequests != nil {
		wait := rl.RetryAfter
		if wait <= 0 {
			wait = time.Second
		}
		return RetryAfter(fmt.Errorf("discord: rate limited: %w", err), wait)
	}
	switch st := restStatus(err); {
	case st == http.StatusBadRequest || st == http.StatusUnauthorized || st == http.StatusForbidden || st == http.StatusNotFound:
		return Permanent(fmt.Errorf("discord: %w", d.plain(err)))
	}
	return fmt.Errorf("discord: %w", d.plain(err))
}

// AnswerTap implements Tapper. Discord shows no passing notice: the tap
// was acknowledged when it came, and the message is edited to say how it
// was answered. A refusal (alert) is said to the tapper alone, as an
// ephemeral follow-up.
func (d *Discord) AnswerTap(ctx context.Context, id, notice string, alert bool) error {
	app, token, ok := strings.Cut(id, ":")
	if !alert || notice == "" || !ok {
		return nil
	}
	_, err := d.s.FollowupMessageCreate(&discordgo.Interaction{AppID: app, Token: token}, false,
		&discordgo.WebhookParams{Content: clipRunes(notice, discordLimit), Flags: discordgo.MessageFlagsEphemeral}, discordgo.WithContext(ctx))
	if err != nil {
		return d.sendError(err)
	}
	return nil
}

// Typing implements Typer (it shows for 10 seconds, or until the bot posts).
func (d *Discord) Typing(ctx context.Context, chatID, threadID string) error {
	return d.s.ChannelTyping(discordTarget(chatID, threadID), discordgo.WithContext(ctx))
}

// Edit implements Editor; the buttons under the message go.
func (d *Discord) Edit(ctx context.Context, chatID, messageID, text string) error {
	text = clipRunes(text, discordLimit)
	none := []discordgo.MessageComponent{}
	_, err := d.s.ChannelMessageEditComplex(&discordgo.MessageEdit{ID: messageID, Channel: chatID, Content: &text, Components: &none,
		AllowedMentions: d.allowedMentions()}, discordgo.WithContext(ctx))
	if err != nil {
		return d.sendError(err)
	}
	return nil
}

// Delete implements Deleter.
func (d *Discord) Delete(ctx context.Context, chatID, messageID string) error {
	if err := d.s.ChannelMessageDelete(chatID, messageID, discordgo.WithContext(ctx)); err != nil {
		return d.sendError(err)
	}
	return nil
}

// home is the channel message id is in: the conversation's, unless a
// thread was opened from it.
func (d *Discord) home(m Inbound) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.homes[m.MessageID]; ok {
		return c
	}
	return discordTarget(m.ChatID, m.ThreadID)
}

// The reactions a turn shows on the message it answers.
const (
	DiscordWorking = "👀"
	DiscordDone    = "✅"
	DiscordFailed  = "❌"
)

// Working implements Acknowledger: 👀 on the message while its turn runs.
func (d *Discord) Working(ctx context.Context, m Inbound) error {
	if !d.o.Reactions || m.MessageID == "" {
		return nil
	}
	if err := d.s.MessageReactionAdd(d.home(m), m.MessageID, DiscordWorking, discordgo.WithContext(ctx)); err != nil {
		return d.sendError(err)
	}
	return nil
}

// Done implements Acknowledger: 👀 gives way to ✅, or ❌ when the turn
// failed.
func (d *Discord) Done(ctx context.Context, m Inbound, ok bool) error {
	if !d.o.Reactions || m.MessageID == "" {
		return nil
	}
	home := d.home(m)
	_ = d.s.MessageReactionRemove(home, m.MessageID, DiscordWorking, "@me", discordgo.WithContext(ctx))
	mark := DiscordDone
	if !ok {
		mark = DiscordFailed
	}
	if err := d.s.MessageReactionAdd(home, m.MessageID, mark, discordgo.WithContext(ctx)); err != nil {
		return d.sendError(err)
	}
	return nil
}
