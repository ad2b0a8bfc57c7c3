package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"atrium/backend/approvals"
	"atrium/backend/compaction"
	"atrium/backend/config"
	"atrium/backend/db"
	"atrium/backend/gateway"
	"atrium/backend/gateway/gatewaytest"
	"atrium/backend/hooks"
	"atrium/backend/hooks/hookstest"
	"atrium/backend/llm"
	"atrium/backend/sessions"
	"atrium/backend/turns"
	"atrium/plugins/whoami"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type env struct {
	db   *db.DB
	bus  *hooks.Bus
	sess *sessions.Service
	eng  *compaction.Engine
	rec  *hookstest.Recorder
	loop *turns.Loop
	logs *syncBuf
	log  *slog.Logger
	mem  *memCalls
	// gw is the started gateway, which the loop asks for approvals;
	// approvalTimeout its ApprovalTimeout (0: the default).
	gw              *gateway.Service
	approvalTimeout time.Duration
	turnTimeout     time.Duration // its TurnTimeout (0: the default)
	// home holds the config.yaml of the loop's standing approvals.
	home     string
	parallel int
	// events records what the gateway tells its event hooks.
	events *eventRecorder
	// progress is the gateway's Progress (nil: none shown).
	progress func(platform string) gateway.Progress
	// perUser is its GroupSessionsPerUser and ThreadSessionsPerUser.
	perUser [2]bool
	// mediaDir, media, maxInbound are its MediaDir, Media and
	// MaxInboundFile.
	mediaDir   string
	media      gateway.MediaPolicy
	maxInbound int64
	// seeImage and stickerCache are its SeeImage and StickerCache.
	seeImage     func(ctx context.Context, path, prompt string) (string, error)
	stickerCache string
	// transcribe and echo are its Transcribe and EchoTranscripts.
	transcribe func(ctx context.Context, path string) (string, error)
	echo       bool
	skills     func(platform string) [][2]string
}

// eventRecorder is gateway.EventHooks that keeps what it is told.
type eventRecorder struct {
	mu      sync.Mutex
	started int
	got     []recordedEvent
}

type recordedEvent struct {
	name string
	ctx  map[string]any
}

func (r *eventRecorder) Start(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started++
	return nil
}

func (r *eventRecorder) Emit(name string, ctx map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, recordedEvent{name, ctx})
}

func (r *eventRecorder) Stop(context.Context) error { return nil }

func (r *eventRecorder) named(name string) []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, e := range r.got {
		if e.name == name {
			out = append(out, e.ctx)
		}
	}
	return out
}

// newEnv is a real store on a temp file (real clock: delivery backoff is
// timed), a bus with a recorder and the whoami plugin, a compaction engine
// and a turn loop on the offline provider with a window of window tokens.
func newEnv(t *testing.T, window int, soft float64, register ...func(*hooks.Bus)) *env {
	t.Helper()
	ctx := context.Background()
	d, err := db.Open(ctx, filepath.Join(t.TempDir(), "state.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuf{}
	lg := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	bus := hooks.NewBus(d, hooks.Options{Timeout: 5 * time.Second, Logger: lg})
	rec := hookstest.Record(t, bus)
	if err := whoami.Register(bus.Plugin(whoami.Name)); err != nil {
		t.Fatal(err)
	}
	// An in-process memory provider that records how it is initialized.
	mem := &memCalls{}
	if err := bus.Plugin("mem").RegisterCapability(hooks.CapMemoryProvider, "recall", nil, func(_ context.Context, method string, raw json.RawMessage) (json.RawMessage, error) {
		if method == "initialize" {
			var c hooks.MemoryCall
			_ = json.Unmarshal(raw, &c)
			mem.mu.Lock()
			mem.calls = append(mem.calls, c)
			mem.mu.Unlock()
		}
		return json.RawMessage(`{"available": true, "value": null}`), nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, r := range register {
		r(bus)
	}
	if err := bus.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = bus.Close(ctx)
		_ = d.Close()
	})
	sess := sessions.NewService(d, bus, sessions.Options{Profile: "default", SessionsDir: t.TempDir(), Logger: lg})
	c := compaction.DefaultConfig()
	c.Threshold, c.SoftThreshold = 0.95, soft
	eng := compaction.NewEngine(d, sess, bus, llm.OfflineSummarizer{}, c)
	if err := eng.RegisterCommands(bus.Commands()); err != nil {
		t.Fatal(err)
	}
	e := &env{db: d, bus: bus, sess: sess, eng: eng, rec: rec, logs: logs, log: lg, mem: mem, home: t.TempDir(), events: &eventRecorder{}}
	approve := func(ctx context.Context, a turns.Approval) (turns.Answer, error) { return e.gw.Approve(ctx, a) }
	if e.loop, err = turns.New(d, sess, eng, bus, turns.Options{Provider: llm.OfflineProvider{Window: window}, NoBetweenTurns: true,
		MemoryProvider: "recall", Approve: approve, Standing: approvals.New(config.Home{Dir: e.home})}); err != nil {
		t.Fatal(err)
	}
	return e
}

// useLoop makes e's turn loop of o: the offline model unless o names
// another, leaving compaction between messages to the gateway.
func (e *env) useLoop(t *testing.T, o turns.Options) {
	t.Helper()
	if o.Provider == nil {
		o.Provider = llm.OfflineProvider{Window: 8192}
	}
	o.NoBetweenTurns = true
	l, err := turns.New(e.db, e.sess, e.eng, e.bus, o)
	if err != nil {
		t.Fatal(err)
	}
	e.loop = l
}

func (e *env) start(t *testing.T, adapters ...gateway.Configured) *gateway.Service {
	t.Helper()
	g := gateway.New(gateway.Options{DB: e.db, Sessions: e.sess, Bus: e.bus, Loop: e.loop, Adapters: adapters,
		Process: "test", Logger: e.log, RetryBase: 50 * time.Millisecond, RetryMax: 200 * time.Millisecond, Poll: 50 * time.Millisecond,
		ApprovalTimeout: e.approvalTimeout, TurnTimeout: e.turnTimeout, Parallel: e.parallel, Hooks: e.events, Progress: e.progress,
		GroupSessionsPerUser: e.perUser[0], ThreadSessionsPerUser: e.perUser[1], MediaDir: e.mediaDir, Media: e.media,
		MaxInboundFile: e.maxInbound, SeeImage: e.seeImage, StickerCache: e.stickerCache, Transcribe: e.transcribe, EchoTranscripts: e.echo,
		SkillCommands: e.skills})
	e.gw = g
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = g.Stop(ctx)
	})
	return g
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (e *env) count(t *testing.T, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := e.db.Read.Raw(q, args...).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func (e *env) posts(t *testing.T) []hooks.PostCompactionPayload {
	t.Helper()
	if err := e.bus.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var out []hooks.PostCompactionPayload
	for _, ev := range e.rec.Events(hooks.PostCompaction) {
		var p hooks.PostCompactionPayload
		if err := ev.Decode(&p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func (e *env) route(t *testing.T, key string) string {
	t.Helper()
	id, err := gateway.NewStore(e.db).Route(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// chatter is one allowed sender's side of a conversation on a platform.
type chatter struct {
	platform, key, user string
	sid                 string // the conversation's session so far
	send                func(text string)
	replies             func() int // the replies sent to this chat so far
}

// conversation goes on over c's platform: the memory provider's initialize
// learned the sender's user_id; a long chat is compacted once between
// messages with gateway_hygiene (then goes on in the continuation, the
// sender kept); /compress fires post_compaction, reason manual, with the
// platform; /new fires on_session_reset with both ids and the next message
// goes to the new session.
func (e *env) conversation(t *testing.T, c chatter) {
	t.Helper()
	say := func(text string) {
		t.Helper()
		n := c.replies()
		c.send(text)
		waitFor(t, "a reply to "+text[:min(len(text), 20)], func() bool { return c.replies() == n+1 })
	}
	if up := e.events.named("gateway:startup"); len(up) != 1 || !slices.Contains(up[0]["platforms"].([]string), c.platform) || e.events.started != 1 {
		t.Fatalf("gateway:startup: %+v (hooks started %d times)", up, e.events.started)
	}
	before := len(e.posts(t))
	long := strings.Repeat("the shipment for order 77 leaves from the north dock on monday morning ", 6)
	for i := 0; i < 14 && len(e.posts(t)) == before; i++ {
		say(long)
	}
	say("and the invoice?") // well below the threshold again: no second compaction
	posts := e.posts(t)[before:]
	if len(posts) != 1 || posts[0].Reason != compaction.ReasonGatewayHygiene || posts[0].Kind != compaction.KindSummarize ||
		posts[0].Platform == nil || *posts[0].Platform != c.platform {
		t.Fatalf("hygiene compactions on %s: %+v", c.platform, posts)
	}
	tip := e.route(t, c.key)
	if tip == c.sid || posts[0].SessionID != tip || posts[0].OldSessionID != c.sid {
		t.Fatalf("route %s after hygiene %+v (was %s)", tip, posts[0], c.sid)
	}
	// The event hooks heard of it (session:compress), as they heard every
	// message the agent answered (agent:start, agent:end).
	if cs := e.events.named("session:compress"); len(cs) != 1 || cs[0]["session_id"] != tip || cs[0]["old_session_id"] != c.sid ||
		cs[0]["in_place"] != false || cs[0]["compression_count"] != 1 || cs[0]["platform"] != c.platform {
		t.Fatalf("session:compress on %s: %+v", c.platform, cs)
	}
	starts, ends := e.events.named("agent:start"), e.events.named("agent:end")
	if len(starts) == 0 || len(starts) != len(ends) || starts[len(starts)-1]["message"] != "and the invoice?" ||
		ends[len(ends)-1]["session_id"] != tip || ends[len(ends)-1]["user_id"] != c.user || ends[len(ends)-1]["response"] == "" {
		t.Fatalf("agent:start / agent:end on %s: %v / %v", c.platform, starts, ends)
	}
	if s, _ := e.sess.Get(context.Background(), tip); s.Platform != c.platform || s.SenderID != c.user {
		t.Fatalf("the continuation lost its sender: %+v", s)
	}
	if !e.mem.sawUser(c.user, c.platform) {
		t.Fatalf("memory provider initialize never had user_id %s on %s: %+v", c.user, c.platform, e.mem.all())
	}

	// /compress from the chat: reason manual, the platform on it.
	say("/compress")
	posts = e.posts(t)[before:]
	if len(posts) != 2 || posts[1].Reason != compaction.ReasonManual || posts[1].Platform == nil || *posts[1].Platform != c.platform {
		t.Fatalf("/compress on %s: %+v", c.platform, posts)
	}
	if cs := e.events.named("session:compress"); len(cs) != 2 || cs[1]["old_session_id"] != tip || cs[1]["session_id"] != e.route(t, c.key) ||
		cs[1]["compression_count"] != 2 {
		t.Fatalf("session:compress after /compress on %s: %+v", c.platform, cs)
	}
	tip = e.route(t, c.key)

	// /new: on_session_reset with both ids; the next message goes to the new session.
	say("/new")
	if err := e.bus.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	resets := e.rec.Events(hooks.OnSessionReset)
	if len(resets) != 1 {
		t.Fatalf("resets %d", len(resets))
	}
	var reset hooks.SessionReset
	_ = resets[0].Decode(&reset)
	fresh := e.route(t, c.key)
	if reset.OldSessionID != tip || reset.NewSessionID != fresh || reset.Platform != c.platform || fresh == tip {
		t.Fatalf("reset %+v, route %s (was %s)", reset, fresh, tip)
	}
	say("hello again")
	if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE session_id = ? AND role = 'assistant'`, fresh); n != 1 {
		t.Fatalf("replies in the new session: %d", n)
	}
	for _, name := range []string{"command:compress", "command:new", "session:end", "session:reset"} {
		if got := e.events.named(name); len(got) != 1 || got[0]["platform"] != c.platform || got[0]["user_id"] != c.user {
			t.Fatalf("%s on %s: %+v", name, c.platform, got)
		}
	}
	if r := e.events.named("session:reset")[0]; r["session_key"] != c.key {
		t.Fatalf("session:reset on %s: %+v", c.platform, r)
	}
}

// memCalls records a memory provider's initialize calls.
type memCalls struct {
	mu    sync.Mutex
	calls []hooks.MemoryCall
}

func (m *memCalls) all() []hooks.MemoryCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]hooks.MemoryCall(nil), m.calls...)
}

func (m *memCalls) sawUser(user, platform string) bool {
	for _, c := range m.all() {
		if c.UserID == user && c.Platform == platform {
			return true
		}
	}
	return false
}

const tgToken = "123456:TEST-telegram-token-never-logged"

// sentTo is what the bot sent to f's chats: sent(n, what) waits for the
// n-th message (what names it in a failure) and returns it.
func sentTo(t *testing.T, f *gatewaytest.Telegram) func(n int, what string) string {
	return func(n int, what string) string {
		t.Helper()
		waitFor(t, what, func() bool { return len(f.SentTexts()) >= n })
		return f.SentTexts()[n-1]
	}
}

func telegram(f *gatewaytest.Telegram, users ...string) gateway.Configured {
	return gateway.Configured{Adapter: gateway.NewTelegram(gateway.TelegramOptions{Token: tgToken, BaseURL: f.URL,
		PollTimeout: time.Second, RetryBase: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond}),
		Access: gateway.Access{Users: users}}
}

// A conversation over the Telegram Bot API: /whoami tells the sender's id
// and the platform; the session is a gateway session with the sender on
// it; an unknown sender is refused once and nothing fires; a long chat is
// compacted once with gateway_hygiene; /compress fires post_compaction with
// the platform; /new fires on_session_reset and the conversation follows.
func TestTelegramConversation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2000, 0.5)
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "4242"))
	key := "telegram:dm:4242"

	f.Push(4242, "Ada", 4242, "private", "/whoami")
	waitFor(t, "the /whoami reply", func() bool { return len(f.SentTexts()) == 1 })
	sid := e.route(t, key)
	if got := f.SentTexts()[0]; !strings.Contains(got, "Ada (4242) on telegram") || !strings.Contains(got, "key "+key) || !strings.Contains(got, sid) {
		t.Fatalf("whoami answered %q (session %s)", got, sid)
	}
	s, err := e.sess.Get(context.Background(), sid)
	if err != nil || s.Source != "gateway" || s.Platform != "telegram" || s.SenderID != "4242" || s.SenderName != "Ada" {
		t.Fatalf("session %+v %v", s, err)
	}
	e.rec.Expect(t, e.bus, map[string]int{"*": 0})

	// An unknown sender: one polite refusal, then silence; nothing reaches
	// the model or the plugins, no session is made.
	before := e.count(t, `SELECT COUNT(*) FROM sessions`)
	f.Push(777, "Mallory", 777, "private", "hello?")
	f.Push(777, "Mallory", 777, "private", "/whoami")
	waitFor(t, "the refusal", func() bool { return len(f.SentTexts()) == 2 })
	if got := f.SentTexts()[1]; !strings.Contains(got, "only answers the people its owner allowed") || !strings.Contains(got, "777") {
		ds, _ := gateway.NewStore(e.db).Deliveries(context.Background(), "", 10)
		t.Fatalf("refusal %q; outbox %+v; log %s", got, ds, e.logs.String())
	}
	waitFor(t, "both refused", func() bool {
		return e.count(t, `SELECT count FROM gateway_refusals WHERE platform = 'telegram' AND user_id = '777'`) == 2
	})
	if n := e.count(t, `SELECT COUNT(*) FROM sessions`); n != before {
		t.Fatalf("a refused sender made a session: %d -> %d", before, n)
	}
	e.rec.Expect(t, e.bus, map[string]int{"*": 0})

	e.conversation(t, chatter{platform: "telegram", key: key, user: "4242", sid: sid,
		send: func(text string) { f.Push(4242, "Ada", 4242, "private", text) }, replies: func() int { return len(f.SentTexts()) }})
	if strings.Contains(e.logs.String(), tgToken) {
		t.Fatal("the bot token reached the log")
	}
}

// A send that fails is retried with backoff and delivered once; the turn
// is stored once. A rate limit waits as long as the platform asks.
func TestDeliveryRetriesWithoutRunningTheTurnAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	f := gatewaytest.NewTelegram(t, tgToken)
	f.Set(func(f *gatewaytest.Telegram) { f.FailSend, f.RateLimit = 2, 1 })
	e.start(t, telegram(f, "1"))
	f.Push(1, "Bo", 1, "private", "what ships today?")
	waitFor(t, "the reply after the retries", func() bool {
		return e.count(t, `SELECT COUNT(*) FROM gateway_outbox WHERE state = 'sent'`) == 1
	})
	if len(f.SentTexts()) != 1 {
		t.Fatalf("sent %q", f.SentTexts())
	}
	sid := e.route(t, "telegram:dm:1")
	if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE session_id = ? AND role = 'assistant'`, sid); n != 1 {
		t.Fatalf("assistant messages %d", n)
	}
	if n := e.count(t, `SELECT attempts FROM gateway_outbox WHERE state = 'sent'`); n != 4 {
		t.Fatalf("attempts %d, want 4 (two 500s, one 429, then sent)", n)
	}
	waitFor(t, "the last error on the status", func() bool {
		return e.count(t, `SELECT COUNT(*) FROM gateway_status WHERE platform = 'telegram' AND last_error LIKE '%delivery failed%'`) == 1
	})
	if strings.Contains(e.logs.String(), tgToken) {
		t.Fatal("the bot token reached the log")
	}
}

// The same update delivered twice (a restart before the offset was
// confirmed) runs one turn.
func TestRedeliveredMessageRunsOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	store := gateway.NewStore(e.db)
	ok1, err1 := store.Take(context.Background(), "telegram", "101")
	ok2, err2 := store.Take(context.Background(), "telegram", "101")
	if !ok1 || ok2 || err1 != nil || err2 != nil {
		t.Fatalf("take: %v %v %v %v", ok1, ok2, err1, err2)
	}
}

// A platform that is down does not hold up another: its replies wait and
// retry while the webhook platform answers.
func TestOnePlatformDownDoesNotBlockAnother(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	f := gatewaytest.NewTelegram(t, tgToken)
	f.Set(func(f *gatewaytest.Telegram) { f.Down = true })
	recv := newReplyReceiver(t, "s3cret", 0)
	wh := webhookAdapter(t, "s3cret", recv.URL)
	e.start(t, telegram(f, "1"), gateway.Configured{Adapter: wh, Access: gateway.Access{Users: []string{"u1"}}})
	f.Push(1, "Bo", 1, "private", "are you there?")
	waitFor(t, "telegram's reply failing", func() bool {
		return e.count(t, `SELECT COUNT(*) FROM gateway_outbox WHERE platform = 'telegram' AND attempts >= 2 AND state = 'pending'`) == 1
	})
	postSigned(t, wh, "s3cret", map[string]any{"id": "m1", "user_id": "u1", "chat_id": "c1", "text": "/whoami"}, http.StatusAccepted)
	waitFor(t, "the webhook reply", func() bool { return len(recv.replies()) == 1 })
	if r := recv.replies()[0]; !strings.Contains(r.Text, "u1 on webhook") || r.ChatID != "c1" {
		t.Fatalf("reply %+v", r)
	}
	f.Set(func(f *gatewaytest.Telegram) { f.Down = false })
	waitFor(t, "telegram back", func() bool { return len(f.SentTexts()) == 1 })
}

// pre_gateway_dispatch runs before a message is routed: skip drops it
// (nothing stored, nothing fired), rewrite changes the text, allow routes it.
func TestPreGatewayDispatch(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []hooks.GatewayDispatchPayload
	e := newEnv(t, 8192, 0.9, func(bus *hooks.Bus) {
		if _, err := bus.RegisterSync("guard", hooks.PreGatewayDispatch, func(_ context.Context, raw json.RawMessage) (any, error) {
			var p hooks.GatewayDispatchPayload
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, err
			}
			mu.Lock()
			seen = append(seen, p)
			mu.Unlock()
			switch {
			case strings.Contains(p.Event.Text, "spam"):
				return map[string]any{"action": "skip", "reason": "spam"}, nil
			case p.Event.Text == "who":
				return map[string]any{"action": "rewrite", "text": "/whoami"}, nil
			}
			return map[string]any{"action": "allow"}, nil
		}); err != nil {
			t.Fatal(err)
		}
	})
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "5"))
	f.Push(5, "Cy", -100, "supergroup", "buy spam now")
	f.Push(5, "Cy", -100, "supergroup", "who")
	waitFor(t, "the rewritten message's answer", func() bool { return len(f.SentTexts()) == 1 })
	if got := f.SentTexts()[0]; !strings.Contains(got, "Cy (5) on telegram") {
		t.Fatalf("rewrite answered %q", got)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE content LIKE '%spam%'`); n != 0 {
		t.Fatalf("a skipped message was stored")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0].Event.Source.UserID != "5" || seen[0].Event.ChatType != "group" || seen[0].SessionKey != "telegram:group:-100" ||
		seen[0].SessionID != nil || seen[1].SessionID != nil || seen[0].Gateway.Platform != "telegram" {
		t.Fatalf("payloads %+v", seen)
	}
}

// A tool call a plugin wants approved is asked of the sender in the chat:
// the same sender's yes (or /approve) runs it, /deny blocks it, another
// member's answer is only a message, no answer in time blocks it and says
// so; a late /approve is told nothing waits; /approve session and /approve
// always widen the answer to the conversation and to the profile.
func TestGatewayAsksTheSenderToApprove(t *testing.T) {
	t.Parallel()
	guard := guardEcho(t)
	e := newEnv(t, 8192, 0.9, guard)
	e.parallel = 1 // one conversation at a time: waiting for a person must not hold it
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "5", "6"))
	sent := sentTo(t, f)
	f.Push(5, "Cy", -100, "supergroup", "use tool echo: hello")
	ask := sent(1, "the approval request")
	for _, part := range []string{"Approval needed: the plugin guard", "the tool echo", `{"text":"hello"}`, "It says: echo repeats what it is given", "/approve", "/deny"} {
		if !strings.Contains(ask, part) {
			t.Fatalf("approval request %q lacks %q", ask, part)
		}
	}
	// Another conversation is answered meanwhile.
	f.Push(6, "Di", 6, "private", "/whoami")
	if got := sent(2, "the other conversation's answer"); !strings.Contains(got, "Di (6) on telegram") {
		t.Fatalf("another conversation while the approval waits: %q", got)
	}
	// Another member's answer does not count: it waits for its turn.
	f.Push(6, "Di", -100, "supergroup", "/approve")
	f.Push(5, "Cy", -100, "supergroup", "Yes")
	if got := sent(3, "the approved call's reply"); !strings.Contains(got, "The tool echo returned: hello") {
		t.Fatalf("after yes: %q", got)
	}
	if got := sent(4, "the other member's /approve"); got != "Nothing is waiting for your approval." {
		t.Fatalf("another member's /approve: %q", got)
	}
	f.Push(5, "Cy", -100, "supergroup", "use tool echo: again")
	sent(5, "the second approval request")
	f.Push(5, "Cy", -100, "supergroup", "/deny@atrium_bot")
	if got := sent(6, "the denied call's reply"); !strings.Contains(got, "BLOCKED: plugin approval required for echo") {
		t.Fatalf("after /deny: %q", got)
	}
	// "/approve session": this conversation's next echo is not asked about.
	f.Push(5, "Cy", -100, "supergroup", "use tool echo: for the session")
	if got := sent(7, "the third approval request"); !strings.Contains(got, "/approve session to allow echo from guard for the rest of this conversation") {
		t.Fatalf("the request does not offer /approve session: %q", got)
	}
	f.Push(5, "Cy", -100, "supergroup", "/approve@atrium_bot  Session")
	if got := sent(8, "the call approved for the session"); !strings.Contains(got, "The tool echo returned: for the session") {
		t.Fatalf("after /approve session: %q", got)
	}
	f.Push(5, "Cy", -100, "supergroup", "use tool echo: not asked")
	if got := sent(9, "the call not asked about"); !strings.Contains(got, "The tool echo returned: not asked") {
		t.Fatalf("the next call: %q", got)
	}
	// "/approve always" (another sender, another chat): from now on nobody
	// is asked about echo, in any conversation.
	f.Push(6, "Di", 6, "private", "use tool echo: always")
	if got := sent(10, "the fourth approval request"); !strings.Contains(got, "/approve always to allow it from now on everywhere (plugin_rule:echo)") {
		t.Fatalf("the request does not offer /approve always: %q", got)
	}
	f.Push(6, "Di", 6, "private", "/Approve always")
	if got := sent(11, "the call approved always"); !strings.Contains(got, "The tool echo returned: always") {
		t.Fatalf("after /approve always: %q", got)
	}
	f.Push(5, "Cy", 5, "private", "use tool echo: anywhere")
	if got := sent(12, "the call in a third conversation"); !strings.Contains(got, "The tool echo returned: anywhere") {
		t.Fatalf("a third conversation: %q", got)
	}
	// The answers reached no turn, and nothing else was sent.
	if got := f.SentTexts(); len(got) != 12 {
		t.Fatalf("sent %q", got)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE role = 'user' AND content LIKE 'use tool%'`); n != 6 {
		t.Fatalf("%d requests stored, want 6", n)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE content IN ('Yes', '/approve', '/deny', '/deny@atrium_bot', '/approve@atrium_bot  Session', '/Approve always')`); n != 0 {
		t.Fatalf("%d answers stored as messages", n)
	}

	// A standing list broken by hand: /approve always is refused, saying
	// why, and the approval still waits for another answer.
	if err := os.WriteFile(filepath.Join(e.home, "config.yaml"), []byte("command_allowlist: {echo: yes}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.Push(6, "Di", 6, "private", "use tool echo: kept waiting")
	sent(13, "the fifth approval request")
	f.Push(6, "Di", 6, "private", "/approve always")
	if got := sent(14, "why always was refused"); !strings.HasPrefix(got, "Always cannot be kept now (") || !strings.Contains(got, "must be a list of strings") {
		t.Fatalf("always with a broken list: %q", got)
	}
	f.Push(6, "Di", 6, "private", "/approve")
	if got := sent(15, "the call approved once"); !strings.Contains(got, "The tool echo returned: kept waiting") {
		t.Fatalf("after /approve: %q", got)
	}

	// No answer in time.
	e2 := newEnv(t, 8192, 0.9, guard)
	e2.approvalTimeout = 200 * time.Millisecond
	f2 := gatewaytest.NewTelegram(t, tgToken)
	e2.start(t, telegram(f2, "5"))
	f2.Push(5, "Cy", 5, "private", "use tool echo: late")
	waitFor(t, "the timeout", func() bool { return len(f2.SentTexts()) == 3 })
	got := f2.SentTexts()
	if !strings.HasPrefix(got[0], "Approval needed") || got[1] != "No answer within 200ms: echo was not run." ||
		!strings.Contains(got[2], "BLOCKED: plugin approval required for echo") {
		t.Fatalf("timeout: %q", got)
	}
	f2.Push(5, "Cy", 5, "private", "/approve")
	waitFor(t, "the late /approve's answer", func() bool { return len(f2.SentTexts()) == 4 })
	if got := f2.SentTexts()[3]; got != "Nothing is waiting for your approval." {
		t.Fatalf("late /approve: %q", got)
	}
}

// A bad token is a clear state on the Gateway page, never the token.
func TestTelegramBadTokenIsAnErrorState(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	f := gatewaytest.NewTelegram(t, "other-token")
	e.start(t, telegram(f, "1"))
	waitFor(t, "the error state", func() bool {
		return e.count(t, `SELECT COUNT(*) FROM gateway_status WHERE platform = 'telegram' AND state = 'error' AND last_error LIKE '%401 Unauthorized%'`) == 1
	})
	var errText string
	_ = e.db.Read.Raw(`SELECT last_error FROM gateway_status WHERE platform = 'telegram'`).Scan(&errText).Error
	if strings.Contains(errText, tgToken) || strings.Contains(e.logs.String(), tgToken) {
		t.Fatalf("token leaked: %s", errText)
	}
}

func TestMissingSecretSaysWhichVariable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	e.start(t, gateway.Configured{Adapter: gateway.NewTelegram(gateway.TelegramOptions{TokenEnv: "MY_TG_TOKEN"})})
	waitFor(t, "the error state", func() bool {
		return e.count(t, `SELECT COUNT(*) FROM gateway_status WHERE platform = 'telegram' AND state = 'error' AND last_error LIKE '%MY_TG_TOKEN is not set%'`) == 1
	})
}

const slackToken, slackSecret = "xoxb-test-token", "slack-signing-secret"

// A conversation over Slack's Events API (signatures verified) and Web API.
// startSlack runs the Slack adapter against api, U1 allowed, and returns
// the Events API URL once it is connected.
func (e *env) startSlack(t *testing.T, api *gatewaytest.SlackAPI) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sl := gateway.NewSlack(gateway.SlackOptions{Token: slackToken, SigningSecret: slackSecret, Listener: ln, APIURL: api.URL + "/api"})
	e.start(t, gateway.Configured{Adapter: sl, Access: gateway.Access{Users: []string{"U1"}}})
	waitFor(t, "connected", func() bool {
		return e.count(t, `SELECT COUNT(*) FROM gateway_status WHERE platform = 'slack' AND state = 'connected'`) == 1
	})
	return "http://" + ln.Addr().String() + gateway.SlackEventsPath
}

func TestSlackConversation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2000, 0.5)
	api := gatewaytest.NewSlackAPI(t, slackToken)
	url := e.startSlack(t, api)

	// url_verification echoes the challenge; a bad signature is refused.
	if code := gatewaytest.SlackEvent(t, url, slackSecret, map[string]any{"type": "url_verification", "challenge": "c-123", "token": "x"}, false); code != 200 {
		t.Fatalf("url_verification: %d", code)
	}
	if code := gatewaytest.SlackEvent(t, url, "wrong-secret", gatewaytest.SlackMessage("U1", "D1", "im", "/whoami"), false); code != http.StatusUnauthorized {
		t.Fatalf("bad signature: %d", code)
	}
	if code := gatewaytest.SlackEvent(t, url, slackSecret, gatewaytest.SlackMessage("U1", "D1", "im", "/whoami"), true); code != http.StatusUnauthorized {
		t.Fatalf("tampered body: %d", code)
	}

	ev := gatewaytest.SlackMessage("U1", "D1", "im", "/whoami")
	if code := gatewaytest.SlackEvent(t, url, slackSecret, ev, false); code != 200 {
		t.Fatalf("message: %d", code)
	}
	// Slack retries a delivery: one turn.
	if code := gatewaytest.SlackEvent(t, url, slackSecret, ev, false); code != 200 {
		t.Fatalf("retry: %d", code)
	}
	waitFor(t, "the reply", func() bool { return len(api.Texts()) == 1 })
	if got := api.Texts()[0]; !strings.Contains(got, "Ada U1 (U1) on slack") || !strings.Contains(got, "key slack:dm:D1") {
		t.Fatalf("whoami over slack: %q", got)
	}
	// An unknown user in a channel thread: refused once, in the thread.
	th := gatewaytest.SlackMessage("U9", "C1", "channel", "hi")
	th["event"].(map[string]any)["thread_ts"] = "1700000000.000100"
	gatewaytest.SlackEvent(t, url, slackSecret, th, false)
	waitFor(t, "the refusal", func() bool { return len(api.Texts()) == 2 })
	refusal := api.Posted()[1]
	if refusal["thread_ts"] != "1700000000.000100" || !strings.Contains(refusal["text"], "U9") {
		t.Fatalf("refusal %+v", refusal)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM sessions WHERE sender_id = 'U9'`); n != 0 {
		t.Fatal("a refused sender got a session")
	}
	// A conversation in a thread is its own session.
	msg := gatewaytest.SlackMessage("U1", "C1", "channel", "<@UBOT> summarise the thread")
	msg["event"].(map[string]any)["thread_ts"] = "1700000000.000200"
	gatewaytest.SlackEvent(t, url, slackSecret, msg, false)
	waitFor(t, "the thread reply", func() bool { return len(api.Texts()) == 3 })
	if id := e.route(t, "slack:channel:C1:1700000000.000200"); id == "" {
		t.Fatal("no route for the thread")
	}
	if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE content = 'summarise the thread'`); n != 1 {
		t.Fatalf("the mention was not stripped (%d)", n)
	}

	// The direct conversation goes on: hygiene, /compress, /new.
	e.conversation(t, chatter{platform: "slack", key: "slack:dm:D1", user: "U1", sid: e.route(t, "slack:dm:D1"),
		send: func(text string) {
			if code := gatewaytest.SlackEvent(t, url, slackSecret, gatewaytest.SlackMessage("U1", "D1", "im", text), false); code != 200 {
				t.Fatalf("message: %d", code)
			}
		},
		replies: func() int {
			n := 0
			for _, p := range api.Posted() {
				if p["channel"] == "D1" {
					n++
				}
			}
			return n
		}})
}

// Slack shows "<app> is thinking…" below a thread while its turn runs
// (assistant.threads.setStatus), and takes it down when the turn ends,
// before the reply is posted; outside a thread it shows nothing; a
// workspace that refuses the method for good is not asked again.
func TestSlackThreadStatus(t *testing.T) {
	t.Parallel()
	api := gatewaytest.NewSlackAPI(t, slackToken)
	var expect atomic.Bool // the running turn should see its status set
	statuses := func() int {
		n := 0
		for _, c := range api.Calls() {
			if strings.HasPrefix(c, "setStatus ") {
				n++
			}
		}
		return n
	}
	var before atomic.Int64
	e := newEnv(t, 8192, 0.9, func(bus *hooks.Bus) {
		// The turn waits until its status was asked for, so the check
		// does not depend on how fast the offline provider answers.
		if _, err := bus.RegisterSync("slow", hooks.PreLLMCall, func(ctx context.Context, _ json.RawMessage) (any, error) {
			for expect.Load() && int64(statuses()) == before.Load() && ctx.Err() == nil {
				time.Sleep(5 * time.Millisecond)
			}
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
	})
	url := e.startSlack(t, api)
	turn := func(channel, kind, thread, text string, status bool) []string {
		t.Helper()
		seen := len(api.Calls())
		posts := len(api.Posted())
		before.Store(int64(statuses()))
		expect.Store(status)
		ev := gatewaytest.SlackMessage("U1", channel, kind, text)
		if thread != "" {
			ev["event"].(map[string]any)["thread_ts"] = thread
		}
		if code := gatewaytest.SlackEvent(t, url, slackSecret, ev, false); code != 200 {
			t.Fatalf("message: %d", code)
		}
		waitFor(t, "the reply to "+text, func() bool { return len(api.Posted()) == posts+1 })
		return api.Calls()[seen:]
	}
	expectCalls := func(step string, got []string, want ...string) {
		t.Helper()
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s: calls %q, want %q", step, got, want)
		}
	}
	expectCalls("in a thread", turn("C1", "channel", "1700000000.000100", "<@UBOT> what is in this thread", true),
		"setStatus C1 1700000000.000100 "+gateway.SlackThinking, "setStatus C1 1700000000.000100 ", "postMessage C1 1700000000.000100")
	expectCalls("outside a thread", turn("D1", "im", "", "hello there", false), "postMessage D1")
	api.RefuseStatus("missing_scope")
	expectCalls("refused", turn("C1", "channel", "1700000000.000200", "<@UBOT> and this one", true),
		"setStatus C1 1700000000.000200 "+gateway.SlackThinking, "postMessage C1 1700000000.000200")
	expectCalls("not asked again", turn("C1", "channel", "1700000000.000300", "<@UBOT> and another", false),
		"postMessage C1 1700000000.000300")
}

func webhookAdapter(t *testing.T, secret, replyURL string) *gateway.Webhook {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return gateway.NewWebhook(gateway.WebhookOptions{Secret: secret, Listener: ln, ReplyURL: replyURL})
}

type replyReceiver struct {
	*httptest.Server
	mu   sync.Mutex
	got  []gateway.WebhookReply
	fail int
	bad  int
}

// newReplyReceiver is the bridge's side of the webhook: it verifies each
// reply's signature and answers 500 to the first fail ones.
func newReplyReceiver(t *testing.T, secret string, fail int) *replyReceiver {
	r := &replyReceiver{fail: fail}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(req.Body)
		if err := gateway.Verify(secret, req.Header, buf.Bytes(), time.Now()); err != nil {
			r.mu.Lock()
			r.bad++
			r.mu.Unlock()
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.fail > 0 {
			r.fail--
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		var rep gateway.WebhookReply
		_ = json.Unmarshal(buf.Bytes(), &rep)
		r.got = append(r.got, rep)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *replyReceiver) replies() []gateway.WebhookReply {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]gateway.WebhookReply(nil), r.got...)
}

func postSigned(t *testing.T, w *gateway.Webhook, secret string, body map[string]any, want int) {
	t.Helper()
	waitFor(t, "the webhook listening", func() bool { return w.Addr() != "" })
	raw, _ := json.Marshal(body)
	ts := time.Now().Unix()
	req, _ := http.NewRequest(http.MethodPost, "http://"+w.Addr()+gateway.WebhookPath, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(gateway.HeaderTimestamp, strings.TrimSpace(json.Number(jsonInt(ts)).String()))
	req.Header.Set(gateway.HeaderSignature, gateway.Sign(secret, ts, raw))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Fatalf("POST %v: HTTP %d, want %d", body, resp.StatusCode, want)
	}
}

func jsonInt(v int64) string { b, _ := json.Marshal(v); return string(b) }

// The generic webhook: signed in (a wrong signature is refused), signed
// reply out, retried when the receiver answers 500.
func TestWebhookConversation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2000, 0.5)
	recv := newReplyReceiver(t, "hook-secret", 2)
	wh := webhookAdapter(t, "hook-secret", recv.URL)
	e.start(t, gateway.Configured{Adapter: wh, Access: gateway.Access{Chats: []string{"room-1"}}})
	postSigned(t, wh, "wrong", map[string]any{"id": "m0", "user_id": "u1", "chat_id": "room-1", "text": "/whoami"}, http.StatusUnauthorized)
	postSigned(t, wh, "hook-secret", map[string]any{"id": "m1", "user_id": "u1", "chat_id": "room-1"}, http.StatusBadRequest)
	postSigned(t, wh, "hook-secret", map[string]any{"id": "m1", "user_id": "u1", "user_name": "Una", "chat_id": "room-1", "chat_type": "group", "text": "/whoami"}, http.StatusAccepted)
	waitFor(t, "the reply after two 500s", func() bool { return len(recv.replies()) == 1 })
	r := recv.replies()[0]
	if !strings.Contains(r.Text, "Una (u1) on webhook") || !strings.Contains(r.Text, "key webhook:group:room-1") || r.ReplyTo != "m1" || r.DeliveryID == "" {
		t.Fatalf("reply %+v", r)
	}
	if recv.bad != 0 {
		t.Fatalf("%d replies had a bad signature", recv.bad)
	}
	e.rec.Expect(t, e.bus, map[string]int{"*": 0})

	// The conversation goes on: hygiene, /compress, /new.
	n := 1
	e.conversation(t, chatter{platform: "webhook", key: "webhook:group:room-1", user: "u1", sid: e.route(t, "webhook:group:room-1"),
		send: func(text string) {
			n++
			postSigned(t, wh, "hook-secret", map[string]any{"id": fmt.Sprintf("m%d", n), "user_id": "u1", "user_name": "Una", "chat_id": "room-1", "chat_type": "group", "text": text}, http.StatusAccepted)
		},
		replies: func() int { return len(recv.replies()) }})
}

// A pre_turn_end hook (a Claude Code Stop hook) that keeps a turn going on
// a chat platform: the person gets every reply of the turn in one answer,
// and what the hook asked to show, and the conversation's transcript has
// the hook's instruction between the replies.
func TestGatewayTurnAHookKeptGoing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9, func(bus *hooks.Bus) {
		if err := bus.Plugin("checker").RegisterSync(hooks.PreTurnEnd, func(_ context.Context, raw json.RawMessage) (any, error) {
			var p hooks.TurnEndPayload
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, err
			}
			if p.Continues == 0 {
				return map[string]any{"action": "continue", "message": "check the totals once more", "note": "a hook asked for a check"}, nil
			}
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
	})
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "5"))
	f.Push(5, "Cy", 5, "private", "sum the invoices")
	waitFor(t, "the answer", func() bool { return len(f.SentTexts()) == 1 })
	got := f.SentTexts()[0]
	first, second := strings.Index(got, "offline reply to: sum the invoices"), strings.Index(got, "offline reply to: check the totals once more")
	if first < 0 || second < first || !strings.HasSuffix(got, "(a hook asked for a check)") {
		t.Fatalf("answer %q", got)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE role = 'user' AND content = 'check the totals once more'`); n != 1 {
		t.Fatalf("%d stored instructions, want 1", n)
	}
}

// /stop from the conversation stops the message being answered (here a
// turn waiting for an approval): the sender is told it stopped, in the
// familiar gateway's words; agent_loop_stopped fires once ("Stop
// requested", "stop_command"); the /stop reaches no turn; the conversation
// goes on. With nothing running, /stop says so.
func TestGatewayStopStopsTheTurn(t *testing.T) {
	t.Parallel()
	e, f := guardedChat(t)
	sent := sentTo(t, f)
	f.Push(5, "Cy", 5, "private", "/stop")
	if got := sent(1, "/stop with nothing running"); got != gateway.NothingToStopText {
		t.Fatalf("/stop with nothing running: %q", got)
	}
	f.Push(5, "Cy", 5, "private", "use tool echo: hello")
	sent(2, "the approval request")
	e.rec.Reset()
	f.Push(5, "Cy", 5, "private", "/stop@atrium_bot")
	if got := sent(3, "the stopped turn's answer"); got != gateway.StoppedText {
		t.Fatalf("after /stop: %q", got)
	}
	e.rec.Expect(t, e.bus, map[string]int{hooks.AgentLoopStopped: 1, hooks.OnSessionEnd: 1, hooks.PostApprovalResp: 1, hooks.PostToolCall: 1})
	// The call keeps its result in the transcript, so the next request is whole.
	if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE role = 'tool' AND content LIKE '%the turn was stopped while echo waited for approval%'`); n != 1 {
		t.Fatalf("%d tool results for the stopped call", n)
	}
	var st hooks.LoopStopped
	if err := e.rec.Events(hooks.AgentLoopStopped)[0].Decode(&st); err != nil || st.Reason != "Stop requested" ||
		st.InvalidationReason != "stop_command" || st.Platform != "telegram" || st.SessionKey == "" || st.SessionID == "" {
		t.Fatalf("agent_loop_stopped %+v %v", st, err)
	}
	f.Push(5, "Cy", 5, "private", "/whoami")
	if got := sent(4, "the next message's answer"); !strings.Contains(got, "Cy (5) on telegram") {
		t.Fatalf("after the stop: %q", got)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE content LIKE '/stop%'`); n != 0 {
		t.Fatalf("%d /stop stored as messages", n)
	}
	if got := f.SentTexts(); len(got) != 4 {
		t.Fatalf("sent %q", got)
	}
}

// /new while a message is being answered stops that turn ("Session reset
// requested", "new_command") instead of waiting behind it, and then starts
// the fresh session: the chat hears only /new's answer.
func TestGatewayNewStopsTheRunningTurn(t *testing.T) {
	t.Parallel()
	e, f := guardedChat(t)
	f.Push(5, "Cy", 5, "private", "use tool echo: hello")
	waitFor(t, "the approval request", func() bool { return len(f.SentTexts()) == 1 })
	e.rec.Reset()
	f.Push(5, "Cy", 5, "private", "/new")
	waitFor(t, "/new's answer", func() bool { return len(f.SentTexts()) == 2 })
	e.rec.Expect(t, e.bus, map[string]int{hooks.AgentLoopStopped: 1, hooks.OnSessionEnd: 1, hooks.PostApprovalResp: 1,
		hooks.PostToolCall: 1, hooks.OnSessionFinalize: 1, hooks.OnSessionReset: 1})
	var st hooks.LoopStopped
	if err := e.rec.Events(hooks.AgentLoopStopped)[0].Decode(&st); err != nil || st.Reason != "Session reset requested" || st.InvalidationReason != "new_command" {
		t.Fatalf("agent_loop_stopped %+v %v", st, err)
	}
	if got := f.SentTexts()[1]; !strings.HasPrefix(got, "Started a new session") {
		t.Fatalf("/new's answer: %q", got)
	}
	// The event hooks hear the stopped turn end (no response), then /new.
	waitFor(t, "session:reset", func() bool { return len(e.events.named("session:reset")) == 1 })
	starts, ends := e.events.named("agent:start"), e.events.named("agent:end")
	if len(starts) != 1 || len(ends) != 1 || ends[0]["response"] != "" || ends[0]["message"] != "use tool echo: hello" ||
		len(e.events.named("command:new")) != 1 || len(e.events.named("session:end")) != 1 {
		t.Fatalf("event hooks: %v / %v / %v", starts, ends, e.events.got)
	}
}

// guardedChat is a gateway with a Telegram conversation (sender 5) and a
// plugin that wants every call of echo approved.
func guardedChat(t *testing.T) (*env, *gatewaytest.Telegram) {
	t.Helper()
	e := newEnv(t, 8192, 0.9, guardEcho(t))
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "5"))
	return e, f
}

// A plugin's tool called in a chat platform's turn learns which
// conversation, platform, sender and chat it serves (the runner binds them
// for HERMES_SESSION_* and gateway.session_context).
func TestAPluginToolLearnsTheSenderAndTheChat(t *testing.T) {
	t.Parallel()
	got := make(chan map[string]any, 1)
	e := newEnv(t, 2000, 0.5, func(bus *hooks.Bus) {
		if err := bus.Plugin("who").RegisterCapability(hooks.CapTool, "who", map[string]any{"name": "who"}, func(_ context.Context, method string, raw json.RawMessage) (json.RawMessage, error) {
			if method == "call" {
				var p map[string]any
				_ = json.Unmarshal(raw, &p)
				got <- p
			}
			return json.RawMessage(`{"result": "ok"}`), nil
		}); err != nil {
			t.Fatal(err)
		}
	})
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "4242"))
	f.Push(4242, "Ada", 4242, "private", "use tool who: {}")
	var p map[string]any
	select {
	case p = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("the tool was not called")
	}
	src, _ := p["source"].(map[string]any)
	if p["platform"] != "telegram" || p["session_key"] != "telegram:dm:4242" || src["user_id"] != "4242" || src["chat_id"] != "4242" ||
		src["chat_type"] != "dm" || src["user_name"] != "Ada" {
		t.Fatalf("the tool was called with %v", p)
	}
}

// An emoji reaction on Slack starts no turn: the event hooks hear
// reaction:added and reaction:removed with the familiar agent's keys, once
// however often Slack delivers it, and nothing of a sender who may not talk
// to the agent.
func TestSlackReactionsReachTheEventHooksOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	api := gatewaytest.NewSlackAPI(t, slackToken)
	url := e.startSlack(t, api)
	added := gatewaytest.SlackReaction("U1", "thumbsup", "C1", "1700000100.000001", "UBOT", true)
	for range 2 { // Slack retries an event it thinks was not taken
		if code := gatewaytest.SlackEvent(t, url, slackSecret, added, false); code != 200 {
			t.Fatalf("reaction_added: %d", code)
		}
	}
	for _, ev := range []map[string]any{gatewaytest.SlackReaction("U9", "eyes", "C1", "1700000100.000001", "UBOT", true),
		gatewaytest.SlackReaction("U1", "thumbsup", "C1", "1700000100.000001", "UBOT", false)} {
		if code := gatewaytest.SlackEvent(t, url, slackSecret, ev, false); code != 200 {
			t.Fatalf("reaction event: %d", code)
		}
	}
	waitFor(t, "reaction:removed", func() bool { return len(e.events.named("reaction:removed")) == 1 })
	got := e.events.named("reaction:added")
	if len(got) != 1 {
		t.Fatalf("reaction:added %d times: %+v", len(got), got)
	}
	a := got[0]
	raw, _ := a["raw_event"].(map[string]any)
	if a["platform"] != "slack" || a["reaction"] != "thumbsup" || a["user_id"] != "U1" || a["item_user_id"] != "UBOT" || a["item_type"] != "message" ||
		a["channel_id"] != "C1" || a["message_ts"] != "1700000100.000001" || a["team_id"] != "T1" || a["event_ts"] == "" || raw["type"] != "reaction_added" {
		t.Fatalf("reaction:added: %+v", a)
	}
	if r := e.events.named("reaction:removed")[0]; r["reaction"] != "thumbsup" || r["user_id"] != "U1" {
		t.Fatalf("reaction:removed: %+v", r)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM sessions`); n != 0 || len(api.Texts()) != 0 {
		t.Fatalf("a reaction started a conversation: %d sessions, sent %v", n, api.Texts())
	}
	e.rec.Expect(t, e.bus, map[string]int{"*": 0})
}

// The familiar gateway's /title, /status, /retry, /undo and /reset from a
// chat: the title is set and said, /status says the session, /retry
// answers the last message again, /undo takes it back, and /reset starts
// a fresh session as /new does (the next message there).
func TestTitleStatusAndResetFromAChat(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "5"))
	say := func(n int, text string) string {
		t.Helper()
		f.Push(5, "Cy", 5, "private", text)
		waitFor(t, text, func() bool { return len(f.SentTexts()) >= n })
		return f.SentTexts()[n-1]
	}
	if got := say(1, "hello"); got != "offline reply to: hello" {
		t.Fatalf("hello: %q", got)
	}
	first := e.route(t, "telegram:dm:5")
	if got := say(2, "/title Budget review"); got != "Title set: Budget review" {
		t.Fatalf("/title: %q", got)
	}
	if got := say(3, "/title"); got != "Title: Budget review" {
		t.Fatalf("/title alone: %q", got)
	}
	if got := say(4, "/status"); !strings.HasPrefix(got, "Session "+first+": Budget review\nStarted ") || !strings.Contains(got, " on telegram;") ||
		!strings.Contains(got, "\n2 messages, about ") {
		t.Fatalf("/status: %q", got)
	}
	if got := say(5, "/retry"); got != "offline reply to: hello" {
		t.Fatalf("/retry: %q", got)
	}
	if got := say(6, "/undo"); !strings.HasPrefix(got, "Took back your last message and what answered (2 messages;") {
		t.Fatalf("/undo: %q", got)
	}
	if got := say(7, "/reset"); !strings.HasPrefix(got, "Started a new session") {
		t.Fatalf("/reset: %q", got)
	}
	fresh := e.route(t, "telegram:dm:5")
	if fresh == first || fresh == "" {
		t.Fatalf("the conversation stayed in %s", first)
	}
	if s, _ := e.sess.Get(context.Background(), first); s.EndReason != "new" {
		t.Fatalf("the first session after /reset: %+v", s)
	}
	say(8, "and now?")
	if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE session_id = ? AND content = 'and now?'`, fresh); n != 1 {
		t.Fatalf("the next message went elsewhere (%d in the new session)", n)
	}
}
