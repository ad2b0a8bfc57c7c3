package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"atrium/backend/gateway"
	"atrium/backend/gateway/gatewaytest"
	"atrium/backend/llm"
	"atrium/backend/turns"
)

const discordToken = "discord-test-token"

// discordOn is the Discord adapter on the fake f with the familiar
// defaults changed by change, letting in users.
func discordOn(f *gatewaytest.Discord, change func(*gateway.DiscordOptions), users ...string) gateway.Configured {
	o := gateway.DiscordDefaults()
	o.Token, o.APIURL = discordToken, f.APIURL()
	o.RetryBase, o.RetryMax = 20*time.Millisecond, 100*time.Millisecond
	o.Access = gateway.Access{Users: users}
	if change != nil {
		change(&o)
	}
	return gateway.Configured{Adapter: gateway.NewDiscord(o), Access: o.Access}
}

// startDiscord runs e's gateway with c on f and waits until it is connected.
func (e *env) startDiscord(t *testing.T, f *gatewaytest.Discord, c gateway.Configured) {
	t.Helper()
	e.start(t, c)
	waitFor(t, "connected to Discord's gateway", func() bool {
		return e.count(t, `SELECT COUNT(*) FROM gateway_status WHERE platform = 'discord' AND state = 'connected'`) == 1 && f.Live() == 1
	})
}

// discordDM starts e's gateway on a fake of Discord with a DM channel
// (9001), letting in users.
func (e *env) discordDM(t *testing.T, users ...string) (*gatewaytest.Discord, gateway.Configured) {
	t.Helper()
	f := gatewaytest.NewDiscord(t, discordToken)
	f.AddChannel("9001", 1, "", "", "")
	c := discordOn(f, nil, users...)
	e.startDiscord(t, f, c)
	return f, c
}

// postedTo waits for the nth post and returns it.
func postedTo(t *testing.T, f *gatewaytest.Discord, n int, what string) gatewaytest.DiscordPost {
	t.Helper()
	waitFor(t, what, func() bool { return len(f.Posted()) >= n })
	return f.Posted()[n-1]
}

// A DM conversation over Discord's gateway: the intents the agent needs
// are asked for; a DM is answered without a mention, as a reply to the
// message, pinging nobody but users; the message shows 👀 while its turn
// runs, then ✅; the same message delivered again (a resumed connection
// replays) is one turn; the conversation holds the gateway's contract
// (hygiene, /compress, /new); a bot's message is left alone; a message
// longer than 2,000 characters goes in parts, the first a reply.
func TestDiscordDMConversation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2000, 0.5)
	const dm, ada = "9001", "4242"
	f, c := e.discordDM(t, ada)
	if _, identified, _, intents := f.Connections(); identified != 1 || intents != 1<<0|1<<9|1<<10|1<<12|1<<13|1<<15 {
		t.Fatalf("identified %d times with intents %b", identified, intents)
	}

	first := gatewaytest.DiscordMessage("m1", dm, "", ada, "ada", "/whoami")
	f.Dispatch("MESSAGE_CREATE", first)
	p := postedTo(t, f, 1, "the /whoami reply")
	key := "discord:dm:" + dm
	if p.Channel != dm || p.ReplyTo != "m1" || !strings.Contains(p.Content, "Ada (4242) on discord") || !strings.Contains(p.Content, "key "+key) {
		t.Fatalf("the reply: %+v", p)
	}
	var am struct {
		Parse       []string `json:"parse"`
		RepliedUser bool     `json:"replied_user"`
	}
	if err := json.Unmarshal(p.Mentions, &am); err != nil || !slices.Equal(am.Parse, []string{"users"}) || !am.RepliedUser {
		t.Fatalf("allowed_mentions %s", p.Mentions)
	}
	reactions := func() []string {
		var out []string
		for _, c := range f.Calls() {
			if strings.Contains(c, "react ") {
				out = append(out, c)
			}
		}
		return out
	}
	waitFor(t, "👀 then ✅", func() bool { return len(reactions()) >= 3 })
	if got := reactions(); !slices.Equal(got, []string{"react " + dm + " m1 👀", "unreact " + dm + " m1 👀", "react " + dm + " m1 ✅"}) {
		t.Fatalf("reactions: %q", got)
	}
	f.Dispatch("MESSAGE_CREATE", first) // redelivered
	bot := gatewaytest.DiscordMessage("m2", dm, "", "777", "otherbot", "hello from a bot")
	bot["author"].(map[string]any)["bot"] = true
	f.Dispatch("MESSAGE_CREATE", bot)

	sid := e.route(t, key)
	e.conversation(t, chatter{platform: "discord", key: key, user: ada, sid: sid,
		send: func(text string) {
			f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage(gatewaytest.DiscordID(), dm, "", ada, "ada", text))
		},
		replies: func() int { return len(f.Posted()) }})
	if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE content IN ('/whoami', 'hello from a bot')`); n != 0 {
		t.Fatalf("%d stored messages of a command or a bot", n)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM gateway_inbound WHERE platform = 'discord' AND event_id = 'message:m1'`); n != 1 {
		t.Fatalf("m1 seen %d times", n)
	}

	long := strings.Repeat("word ", 500) // 2,500 characters
	n := len(f.Posted())
	if _, err := c.Adapter.Send(context.Background(), gateway.Message{ChatID: dm, ReplyTo: "m-long", Text: long}); err != nil {
		t.Fatal(err)
	}
	a, b := f.Posted()[n], f.Posted()[n+1]
	if a.ReplyTo != "m-long" || b.ReplyTo != "" || len([]rune(a.Content)) > 2000 || a.Content+" "+b.Content != long {
		t.Fatalf("the parts: %d characters replying to %q, %d replying to %q", len([]rune(a.Content)), a.ReplyTo, len([]rune(b.Content)), b.ReplyTo)
	}
	// A model's answer whose code block the split cuts: each part reads
	// as Markdown with its code (closed, then opened again in its
	// language).
	n = len(f.Posted())
	code := "```go\n" + strings.Repeat("x := 1 // the same line\n", 100) + "```"
	if _, err := c.Adapter.Send(context.Background(), gateway.Message{ChatID: dm, Text: "Here:\n" + code + "\nDone.", Markdown: true}); err != nil {
		t.Fatal(err)
	}
	a, b = f.Posted()[n], f.Posted()[n+1]
	if !strings.HasSuffix(a.Content, "\n```") || !strings.HasPrefix(b.Content, "```go\n") || !strings.HasSuffix(b.Content, "```\nDone.") {
		t.Fatalf("the parts of a code block:\n%.80q\n…%.80q\n%.80q…", a.Content, a.Content[max(0, len(a.Content)-80):], b.Content)
	}
	if strings.Contains(e.logs.String(), discordToken) {
		t.Fatal("the bot token reached the log")
	}
}

// In a server, as the familiar gateway behaves there: a message without a
// mention is left alone, and so is a bare mention; an @mention opens a
// thread from the message,
// named after it, and the conversation goes on there without mentions
// (its own session); a free-response channel is answered inline without a
// mention, unless the message @mentions someone else; an ignored channel
// never is; a sender who is not let in gets no thread, one refusal inline.
func TestDiscordServerChannels(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	f := gatewaytest.NewDiscord(t, discordToken)
	const guild, general, free, quiet, ada = "500", "600", "601", "602", "4242"
	f.AddChannel(general, 0, guild, "", "")
	f.AddChannel(free, 0, guild, "", "")
	f.AddChannel(quiet, 0, guild, "", "")
	e.startDiscord(t, f, discordOn(f, func(o *gateway.DiscordOptions) {
		o.FreeResponse, o.Ignored = []string{free}, []string{quiet}
	}, ada))
	mention := "<@" + f.BotID + ">"

	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("g0", general, guild, ada, "ada", mention, f.BotID)) // a bare mention: nothing to answer, no thread
	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("g1", general, guild, ada, "ada", "talking among ourselves"))
	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("g2", general, guild, ada, "ada", mention+" plan the launch\nwith details", f.BotID))
	p := postedTo(t, f, 1, "the reply in a thread")
	calls := f.Calls()
	if len(calls) == 0 || calls[0] != "thread "+general+" g2 plan the launch" {
		t.Fatalf("calls: %q", calls)
	}
	thread := p.Channel
	if thread == general || p.ReplyTo != "" || p.Content != "offline reply to: plan the launch with details" {
		t.Fatalf("the reply: %+v", p)
	}
	waitFor(t, "✅ on the message in its channel", func() bool { return slices.Contains(f.Calls(), "react "+general+" g2 ✅") })
	key := "discord:thread:" + thread + ":" + thread
	sid := e.route(t, key)
	if sid == "" {
		t.Fatalf("no session for %s", key)
	}

	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("t1", thread, guild, ada, "ada", "and the budget?"))
	p = postedTo(t, f, 2, "the reply in the thread without a mention")
	if p.Channel != thread || p.ReplyTo != "t1" || p.Content != "offline reply to: and the budget?" || e.route(t, key) != sid {
		t.Fatalf("in the thread: %+v", p)
	}

	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("f1", free, guild, ada, "ada", "<@999> what do you think?", "999"))
	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("q1", quiet, guild, ada, "ada", mention+" are you there?", f.BotID))
	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("f2", free, guild, ada, "ada", "hello free channel"))
	p = postedTo(t, f, 3, "the inline reply in the free channel")
	if p.Channel != free || p.ReplyTo != "f2" || p.Content != "offline reply to: hello free channel" {
		t.Fatalf("in the free channel: %+v", p)
	}
	if e.route(t, "discord:group:"+free) == "" {
		t.Fatal("no session for the free channel")
	}

	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("x1", general, guild, "31337", "mallory", mention+" let me in", f.BotID))
	p = postedTo(t, f, 4, "the refusal")
	if p.Channel != general || !strings.Contains(p.Content, "Your discord id is 31337") {
		t.Fatalf("the refusal: %+v", p)
	}
	time.Sleep(50 * time.Millisecond) // nothing else is coming; let a stray post show
	if got := len(f.Posted()); got != 4 {
		t.Fatalf("%d posts: %+v", got, f.Posted())
	}
	threads := 0
	for _, c := range f.Calls() {
		if strings.HasPrefix(c, "thread ") {
			threads++
		}
	}
	if threads != 1 {
		t.Fatalf("%d threads opened: %q", threads, f.Calls())
	}
	for _, q := range []string{"talking among ourselves", "<@999> what do you think?", "are you there?"} {
		if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE content = ?`, q); n != 0 {
			t.Fatalf("%q reached a session", q)
		}
	}
}

// With mentions not required and threads off, a server channel is one
// conversation answered inline; a bot's message that @mentions this one
// is answered under allow_bots: mentions; reply_to_mode off sends no
// reference; reactions off shows none.
func TestDiscordInlineOptions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	f := gatewaytest.NewDiscord(t, discordToken)
	const guild, general, ada, helper = "500", "600", "4242", "4343"
	f.AddChannel(general, 0, guild, "", "")
	e.startDiscord(t, f, discordOn(f, func(o *gateway.DiscordOptions) {
		o.RequireMention, o.AutoThread, o.Reactions, o.ReplyToMode, o.AllowBots = false, false, false, "off", "mentions"
	}, ada, helper))
	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("g1", general, guild, ada, "ada", "no mention needed"))
	p := postedTo(t, f, 1, "the inline reply")
	if p.Channel != general || p.ReplyTo != "" || p.Content != "offline reply to: no mention needed" {
		t.Fatalf("the reply: %+v", p)
	}
	quiet := gatewaytest.DiscordMessage("b1", general, guild, helper, "helper", "a bot talking")
	quiet["author"].(map[string]any)["bot"] = true
	asked := gatewaytest.DiscordMessage("b2", general, guild, helper, "helper", "<@"+f.BotID+"> a bot asking", f.BotID)
	asked["author"].(map[string]any)["bot"] = true
	f.Dispatch("MESSAGE_CREATE", quiet)
	f.Dispatch("MESSAGE_CREATE", asked)
	p = postedTo(t, f, 2, "the bot's answer")
	if p.Content != "offline reply to: a bot asking" {
		t.Fatalf("the reply to a bot: %+v", p)
	}
	for _, c := range f.Calls() {
		if strings.HasPrefix(c, "react") || strings.HasPrefix(c, "thread") {
			t.Fatalf("a call with reactions and threads off: %q", f.Calls())
		}
	}
	if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE content = 'a bot talking'`); n != 0 {
		t.Fatal("a bot's message without a mention reached a session")
	}
}

// An approval on Discord carries buttons with the familiar data; a tap is
// acknowledged at once (a deferred update, so Discord does not say the
// interaction failed); another person's tap is refused to them alone
// (an ephemeral follow-up); the sender's answers, and the message is
// edited to say how, its buttons gone.
func TestDiscordApprovalButtons(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9, guardEcho(t))
	const dm, ada = "9001", "4242"
	f, _ := e.discordDM(t, ada, "4343")
	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("m1", dm, "", ada, "ada", "use tool echo: tapped"))
	card := postedTo(t, f, 1, "the approval")
	var rows []struct {
		Type       int `json:"type"`
		Components []struct {
			Label    string `json:"label"`
			CustomID string `json:"custom_id"`
			Style    int    `json:"style"`
		} `json:"components"`
	}
	if err := json.Unmarshal(card.Components, &rows); err != nil || len(rows) != 2 || rows[0].Type != 1 ||
		rows[0].Components[0].Label != "✅ Allow Once" || !strings.HasPrefix(rows[0].Components[0].CustomID, "ea:once:") || rows[0].Components[0].Style != 3 ||
		rows[1].Components[1].Label != "❌ Deny" || rows[1].Components[1].Style != 4 {
		t.Fatalf("the approval's components: %s %v", card.Components, err)
	}
	if !strings.HasPrefix(card.Content, "Approval needed: the plugin guard") {
		t.Fatalf("the approval: %q", card.Content)
	}
	once := rows[0].Components[0].CustomID

	f.Dispatch("INTERACTION_CREATE", gatewaytest.DiscordTap("i1", f.BotID, dm, "", "4343", card.ID, card.Content, once))
	waitFor(t, "the refusal to the other person", func() bool { return len(f.Followups()) == 1 })
	if fu := f.Followups()[0]; fu.Flags != 64 || !strings.Contains(fu.Content, "not authorized") || fu.Channel != "tok-i1" {
		t.Fatalf("the follow-up: %+v", fu)
	}
	f.Dispatch("INTERACTION_CREATE", gatewaytest.DiscordTap("i2", f.BotID, dm, "", ada, card.ID, card.Content, once))
	p := postedTo(t, f, 2, "the reply")
	if p.Content != "The tool echo returned: tapped" {
		t.Fatalf("the reply: %+v", p)
	}
	waitFor(t, "the approval edited", func() bool { return len(f.Edited()) == 1 })
	if ed := f.Edited()[0]; ed.ID != card.ID || ed.Content != card.Content+"\n\n✅ Approved once" || string(ed.Components) != "[]" {
		t.Fatalf("the edit: %+v %s", ed, ed.Components)
	}
	for _, id := range []string{"i1", "i2"} {
		if !slices.Contains(f.Calls(), "callback "+id+" 6") {
			t.Fatalf("tap %s not acknowledged: %q", id, f.Calls())
		}
	}
}

// A server member who has one of the allowed roles is let in there (a
// thread opened for their @mention, the answer in it); the same person in
// a DM, where Discord says no roles, is not.
func TestDiscordAllowedRoles(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	f := gatewaytest.NewDiscord(t, discordToken)
	const guild, general, dm, mod = "500", "600", "9001", "4545"
	f.AddChannel(general, 0, guild, "", "")
	f.AddChannel(dm, 1, "", "", "")
	e.startDiscord(t, f, discordOn(f, func(o *gateway.DiscordOptions) { o.Access.Roles = []string{"777"} }))
	msg := gatewaytest.DiscordMessage("g1", general, guild, mod, "mod", "<@"+f.BotID+"> summarize the incident", f.BotID)
	msg["member"] = map[string]any{"roles": []string{"111", "777"}}
	f.Dispatch("MESSAGE_CREATE", msg)
	p := postedTo(t, f, 1, "the answer to the moderator")
	if p.Channel == general || p.Content != "offline reply to: summarize the incident" {
		t.Fatalf("the answer: %+v", p)
	}
	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("d1", dm, "", mod, "mod", "and in a DM?"))
	p = postedTo(t, f, 2, "the refusal in the DM")
	if p.Channel != dm || !strings.Contains(p.Content, "Your discord id is "+mod) {
		t.Fatalf("in the DM: %+v", p)
	}
}

// A reaction someone let in adds or removes reaches the event hooks
// (reaction:added, reaction:removed), once each, and starts no turn; one
// from someone not let in, or the bot's own 👀, does not.
func TestDiscordReactionsReachTheEventHooksOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	f := gatewaytest.NewDiscord(t, discordToken)
	const guild, general, ada = "500", "600", "4242"
	f.AddChannel(general, 0, guild, "", "")
	e.startDiscord(t, f, discordOn(f, nil, ada))
	reaction := func(user, emoji string) map[string]any {
		return map[string]any{"user_id": user, "channel_id": general, "message_id": "m9", "guild_id": guild, "emoji": map[string]any{"name": emoji}}
	}
	f.Dispatch("MESSAGE_REACTION_ADD", reaction(ada, "👍"))
	f.Dispatch("MESSAGE_REACTION_ADD", reaction("31337", "👎"))
	f.Dispatch("MESSAGE_REACTION_ADD", reaction(f.BotID, "👀"))
	f.Dispatch("MESSAGE_REACTION_REMOVE", reaction(ada, "👍"))
	waitFor(t, "reaction:removed", func() bool { return len(e.events.named("reaction:removed")) == 1 })
	got := e.events.named("reaction:added")
	if len(got) != 1 {
		t.Fatalf("reaction:added %d times: %+v", len(got), got)
	}
	if a := got[0]; a["platform"] != "discord" || a["reaction"] != "👍" || a["user_id"] != ada || a["channel_id"] != general ||
		a["message_ts"] != "m9" || a["team_id"] != guild || a["event_ts"] == "" {
		t.Fatalf("reaction:added: %+v", a)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM sessions`); n != 0 || len(f.Posted()) != 0 {
		t.Fatalf("a reaction started a conversation: %d sessions, %d posts", n, len(f.Posted()))
	}
	e.rec.Expect(t, e.bus, map[string]int{"*": 0})
}

// As the familiar gateway keeps them (group_sessions_per_user on,
// thread_sessions_per_user off): two people in one server channel each
// have their own conversation with the agent (the key ends in their id),
// and /whoami says so; in a thread they share one; in a DM there is one
// person anyway. The same on Telegram, in a group.
func TestSessionsPerUserInSharedChats(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	e.perUser = [2]bool{true, false}
	f := gatewaytest.NewDiscord(t, discordToken)
	const guild, free, thread, ada, bob = "500", "601", "603", "4242", "4343"
	f.AddChannel(free, 0, guild, "", "")
	f.AddChannel(thread, 11, guild, free, "someone")
	tg := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, discordOn(f, func(o *gateway.DiscordOptions) { o.FreeResponse = []string{free} }, ada, bob), telegram(tg, "1", "2"))
	waitFor(t, "connected", func() bool { return f.Live() == 1 })
	mention := "<@" + f.BotID + "> "
	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("a1", free, guild, ada, "ada", "/whoami"))
	postedTo(t, f, 1, "ada's answer")
	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("b1", free, guild, bob, "bob", "/whoami"))
	p := postedTo(t, f, 2, "bob's answer")
	if !strings.Contains(p.Content, "key discord:group:"+free+":"+bob) || !strings.Contains(f.Posted()[0].Content, "key discord:group:"+free+":"+ada) {
		t.Fatalf("the keys: %q / %q", f.Posted()[0].Content, p.Content)
	}
	a, b := e.route(t, "discord:group:"+free+":"+ada), e.route(t, "discord:group:"+free+":"+bob)
	if a == "" || b == "" || a == b {
		t.Fatalf("the sessions: %q %q", a, b)
	}
	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("a2", thread, guild, ada, "ada", mention+"in the thread", f.BotID))
	postedTo(t, f, 3, "ada's answer in the thread")
	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("b2", thread, guild, bob, "bob", "me too"))
	postedTo(t, f, 4, "bob's answer in the thread")
	if n := e.count(t, `SELECT COUNT(*) FROM gateway_routes WHERE session_key LIKE 'discord:thread:%'`); n != 1 {
		t.Fatalf("%d conversations in one thread", n)
	}

	tg.Push(1, "Ada", -100, "group", "hello group")
	tg.Push(2, "Bob", -100, "group", "hello group")
	waitFor(t, "both answered on Telegram", func() bool { return len(tg.SentTexts()) == 2 })
	if e.route(t, "telegram:group:-100:1") == "" || e.route(t, "telegram:group:-100:2") == "" || e.route(t, "telegram:group:-100") != "" {
		t.Fatal("Telegram's group is not one conversation a person")
	}
}

// The commands (built-in and plugins') are registered as the
// application's slash commands when the adapter connects, each with an
// optional args; one used is answered at once to the person alone, and
// is the message that says it: its answer comes in the channel.
func TestDiscordSlashCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	const dm, ada = "9001", "4242"
	f, _ := e.discordDM(t, ada)
	waitFor(t, "the commands registered", func() bool { app, cmds := f.Commands(); return app == f.BotID && len(cmds) > 0 })
	_, cmds := f.Commands()
	names := map[string]map[string]any{}
	for _, c := range cmds {
		names[c["name"].(string)] = c
	}
	for _, want := range []string{"whoami", "new", "compress", "title", "undo", "approve", "stop", "sethome"} {
		if names[want] == nil {
			t.Fatalf("/%s not registered: %v", want, cmds)
		}
	}
	opts, _ := names["title"]["options"].([]any)
	if len(opts) != 1 || opts[0].(map[string]any)["name"] != "args" || opts[0].(map[string]any)["required"] != false || names["title"]["description"] == "" {
		t.Fatalf("/title: %v", names["title"])
	}
	if e.count(t, `SELECT COUNT(*) FROM gateway_status WHERE platform = 'discord' AND detail LIKE ?`, fmt.Sprintf("%%; %d slash commands", len(cmds))) != 1 {
		t.Fatal("the status does not say the commands were registered")
	}

	f.Dispatch("INTERACTION_CREATE", gatewaytest.DiscordCommand("c1", f.BotID, dm, "", ada, "whoami", ""))
	p := postedTo(t, f, 1, "the answer to /whoami")
	if p.Channel != dm || !strings.Contains(p.Content, "(4242) on discord") {
		t.Fatalf("/whoami: %+v", p)
	}
	if !slices.Contains(f.Calls(), "callback c1 4 64 Running /whoami…") {
		t.Fatalf("calls: %q", f.Calls())
	}
	f.Dispatch("INTERACTION_CREATE", gatewaytest.DiscordCommand("c2", f.BotID, dm, "", ada, "title", "Launch plan"))
	p = postedTo(t, f, 2, "the answer to /title")
	sid := e.route(t, "discord:dm:"+dm)
	if s, err := e.sess.Get(context.Background(), sid); err != nil || s.Title != "Launch plan" || !strings.Contains(p.Content, "Launch plan") {
		t.Fatalf("/title Launch plan: %+v %v; %q", s, err, p.Content)
	}
}

// A connection that drops is resumed, and the conversation goes on; a
// reply Discord rate-limits is sent when it says.
func TestDiscordResumesAndWaitsOutARateLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	const dm, ada = "9001", "4242"
	f, _ := e.discordDM(t, ada)
	f.Drop()
	waitFor(t, "a resumed connection", func() bool {
		_, _, resumed, _ := f.Connections()
		return resumed == 1 && f.Live() == 1
	})
	f.RateLimit(1)
	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("m1", dm, "", ada, "ada", "still there?"))
	p := postedTo(t, f, 1, "the reply after the rate limit")
	if p.Content != "offline reply to: still there?" {
		t.Fatalf("the reply: %+v", p)
	}
	waitFor(t, "the reply sent on its second attempt", func() bool {
		return e.count(t, `SELECT COUNT(*) FROM gateway_outbox WHERE platform = 'discord' AND attempts = 2 AND state = 'sent'`) == 1
	})
	if len(f.Posted()) != 1 {
		t.Fatalf("%d posts", len(f.Posted()))
	}
	if _, identified, _, _ := f.Connections(); identified != 1 {
		t.Fatalf("identified %d times: a drop should resume", identified)
	}
}

// What stops the adapter says what to do: a token Discord refuses names
// its variable (and is never written out); a gateway that refuses the
// Message Content intent says where to turn it on; a missing token names
// its variable before any connection.
func TestDiscordRefusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, token, want string
		refuse            int
	}{
		{"token", "wrong-token", "%refused the bot token in DISCORD_BOT_TOKEN (401%", 0},
		{"intents", discordToken, "%turn on Message Content Intent%", 4014},
		{"missing", "", "%DISCORD_BOT_TOKEN is not set%", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, 8192, 0.9)
			f := gatewaytest.NewDiscord(t, discordToken)
			f.RefuseIdentify(c.refuse)
			e.start(t, discordOn(f, func(o *gateway.DiscordOptions) { o.Token = c.token }, "1"))
			waitFor(t, "the error state", func() bool {
				return e.count(t, `SELECT COUNT(*) FROM gateway_status WHERE platform = 'discord' AND state = 'error' AND last_error LIKE ?`, c.want) == 1
			})
			var last string
			_ = e.db.Read.Raw(`SELECT last_error FROM gateway_status WHERE platform = 'discord'`).Scan(&last).Error
			if c.token != "" && (strings.Contains(last, c.token) || strings.Contains(e.logs.String(), c.token)) {
				t.Fatalf("the token was written out: %s", last)
			}
			if opened, _, _, _ := f.Connections(); c.refuse == 0 && opened != 0 {
				t.Fatal(fmt.Sprintf("%d connections with a token that cannot work", opened))
			}
		})
	}
}

// BenchmarkDiscordInbound is the adapter alone, from an event on the
// gateway's WebSocket to the message handed on: a DM; a message in a
// free-response channel (its kind asked of the API once, then known); an
// @mention that opens a thread (a REST call each time).
func BenchmarkDiscordInbound(b *testing.B) {
	run := func(b *testing.B, msg func(f *gatewaytest.Discord) map[string]any) {
		f := gatewaytest.NewDiscord(b, discordToken)
		f.AddChannel("700", 1, "", "", "")
		f.AddChannel("800", 0, "50", "", "")
		o := gateway.DiscordDefaults()
		o.Token, o.APIURL, o.FreeResponse, o.Access = discordToken, f.APIURL(), []string{"800"}, gateway.Access{Users: []string{"4242"}}
		benchInbound(b, gateway.NewDiscord(o), func() {
			for f.Live() == 0 {
				time.Sleep(time.Millisecond)
			}
		}, func() { f.Dispatch("MESSAGE_CREATE", msg(f)) })
	}
	b.Run("dm", func(b *testing.B) {
		run(b, func(*gatewaytest.Discord) map[string]any {
			return gatewaytest.DiscordMessage(gatewaytest.DiscordID(), "700", "", "4242", "ada", "hello")
		})
	})
	b.Run("free-channel", func(b *testing.B) {
		run(b, func(*gatewaytest.Discord) map[string]any {
			return gatewaytest.DiscordMessage(gatewaytest.DiscordID(), "800", "50", "4242", "ada", "hello")
		})
	})
	b.Run("mention-opens-thread", func(b *testing.B) {
		run(b, func(f *gatewaytest.Discord) map[string]any {
			f.AddChannel("900", 0, "50", "", "")
			return gatewaytest.DiscordMessage(gatewaytest.DiscordID(), "900", "50", "4242", "ada", "<@"+f.BotID+"> hello", f.BotID)
		})
	})
}

// Discord's API out of reach is retried, and the error names where the
// requests went (api_url), not discord.com.
func TestDiscordUnreachableSaysWhere(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	o := gateway.DiscordDefaults()
	o.Token, o.APIURL, o.RetryBase, o.RetryMax = discordToken, "http://127.0.0.1:9/api/v9", 20*time.Millisecond, 50*time.Millisecond
	e.start(t, gateway.Configured{Adapter: gateway.NewDiscord(o)})
	waitFor(t, "retrying", func() bool {
		return e.count(t, `SELECT COUNT(*) FROM gateway_status WHERE platform = 'discord' AND state = 'retrying'
			AND last_error LIKE '%http://127.0.0.1:9/api/v9/users/@me%' AND last_error NOT LIKE '%discord.com%'`) == 1
	})
}

// A gateway that accepts the connection and says nothing holds the
// opening (discordgo reads without a deadline): stopping the adapter then
// closes the connection under it, and Run returns at once.
func TestDiscordStopsWhileTheGatewayHangs(t *testing.T) {
	t.Parallel()
	f := gatewaytest.NewDiscord(t, discordToken)
	f.Silent(true)
	o := gateway.DiscordDefaults()
	o.Token, o.APIURL = discordToken, f.APIURL()
	d := gateway.NewDiscord(o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, func(gateway.Inbound) {}, func(string, string, error) {}) }()
	waitFor(t, "the connection opened", func() bool { opened, _, _, _ := f.Connections(); return opened == 1 })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return while the opening hung")
	}
}

// seenSystem is the offline model that keeps the system prompt of every
// request it gets.
type seenSystem struct {
	llm.OfflineProvider
	mu  sync.Mutex
	got []string
}

func (s *seenSystem) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	sys := ""
	if len(req.Messages) > 0 && req.Messages[0].Role == "system" {
		sys = req.Messages[0].Content
	}
	s.mu.Lock()
	s.got = append(s.got, sys)
	s.mu.Unlock()
	return s.OfflineProvider.Complete(ctx, req)
}

func (s *seenSystem) systems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

// The familiar channel_prompts: a channel's prompt is added to the system
// prompt of every model call in it, and in a thread opened there; a
// thread's own wins; nothing of it is stored in the transcript, so it is
// there once per call however long the conversation.
func TestDiscordChannelPrompts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	model := &seenSystem{OfflineProvider: llm.OfflineProvider{Window: 8192}}
	e.useLoop(t, turns.Options{Provider: model})
	f := gatewaytest.NewDiscord(t, discordToken)
	const guild, research, free, own, ada = "500", "600", "601", "603", "4242"
	f.AddChannel(research, 0, guild, "", "")
	f.AddChannel(free, 0, guild, "", "")
	f.AddChannel(own, 11, guild, research, "someone")
	c := discordOn(f, func(o *gateway.DiscordOptions) { o.FreeResponse = []string{free} }, ada)
	c.ChannelPrompts = map[string]string{research: "RESEARCH: cite your sources.", free: "FREE: be brief.", own: "OWN: a thread of its own."}
	e.startDiscord(t, f, c)
	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("r1", research, guild, ada, "ada", "<@"+f.BotID+"> compare the two", f.BotID))
	thread := postedTo(t, f, 1, "the answer in a thread").Channel
	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("r2", thread, guild, ada, "ada", "and again"))
	postedTo(t, f, 2, "the second answer")
	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("f1", free, guild, ada, "ada", "hello"))
	postedTo(t, f, 3, "the answer in the free channel")
	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("o1", own, guild, ada, "ada", "<@"+f.BotID+"> here too", f.BotID))
	postedTo(t, f, 4, "the answer in the thread with a prompt of its own")
	got := model.systems()
	if len(got) != 4 || !strings.HasSuffix(got[3], "OWN: a thread of its own.") || strings.Contains(got[3], "RESEARCH") || !strings.HasSuffix(got[0], "RESEARCH: cite your sources.") || !strings.HasSuffix(got[1], "RESEARCH: cite your sources.") ||
		strings.Count(got[1], "RESEARCH") != 1 || !strings.HasSuffix(got[2], "FREE: be brief.") || strings.Contains(got[2], "RESEARCH") {
		t.Fatalf("the system prompts: %q", got)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE content LIKE '%RESEARCH%' OR sent_content LIKE '%RESEARCH%'`); n != 0 {
		t.Fatal("the channel prompt was stored")
	}
}
