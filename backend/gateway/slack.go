package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"atrium/backend/markup"
)

// SlackOptions configure the Slack adapter.
type SlackOptions struct {
	Token            string // the bot token (xoxb-...), from the environment
	TokenEnv         string
	SigningSecret    string // the app's signing secret, from the environment
	SigningSecretEnv string
	// AppToken is the app-level token (xapp-..., scope connections:write)
	// that opens Socket Mode, from the environment, as the familiar
	// gateway's SLACK_APP_TOKEN.
	AppToken    string
	AppTokenEnv string
	// Mode is how events come: SlackSocket (a WebSocket the adapter opens:
	// no public address needed), SlackEvents (the Events API posting to
	// Listen), or "" / "auto": Socket Mode when AppToken is set
	// (SlackSocketMode).
	Mode      string
	Listen    string       // where the Events API posts (default 127.0.0.1:8790), path /slack/events
	Listener  net.Listener // a listener to serve on instead of Listen (tests)
	APIURL    string       // default https://slack.com/api
	RetryBase time.Duration
	RetryMax  time.Duration
	Client    *http.Client
	// PingInterval: in Socket Mode, a connection Slack sent no ping on for
	// this long is opened again (default 30 s).
	PingInterval time.Duration
}

// The ways Slack's events come (SlackOptions.Mode).
const (
	SlackSocket = "socket"
	SlackEvents = "events"
)

// Slack receives Slack's events in Socket Mode (a WebSocket the adapter
// opens with the app-level token, as the familiar gateway does: no public
// address needed) or from the Events API over HTTP (every request's
// signature verified with the signing secret, through slack-go), and
// answers with the Web API (chat.postMessage, chat.update;
// assistant.threads.setStatus while a turn runs in a thread; files both
// ways, slack_files.go) through slack-go's client.
type Slack struct {
	o   SlackOptions
	api *slack.Client
	// fileClient is o.Client without its overall timeout, for a file's bytes
	// both ways: a large one takes longer than a Web API call, and the
	// caller's context bounds it.
	fileClient *http.Client

	mu     sync.Mutex
	names  map[string]string
	kinds  map[string]string // each channel's chat type, as its messages said
	botID  string
	addr   string
	events chan Inbound
	// status: when the thread status was last set, by channel and thread;
	// noStatus: the workspace refused it for good (a scope, a token type).
	status   map[string]time.Time
	noStatus bool
}

// SlackEventsPath is where the Events API request URL points.
const SlackEventsPath = "/slack/events"

// SlackInteractivePath is where the app's Interactivity request URL points:
// taps on the buttons under an approval or a question (the events path
// takes them too).
const SlackInteractivePath = "/slack/interactive"

// NewSlack builds the adapter.
func NewSlack(o SlackOptions) *Slack {
	if o.Listen == "" {
		o.Listen = "127.0.0.1:8790"
	}
	if o.APIURL == "" {
		o.APIURL = "https://slack.com/api"
	}
	if o.TokenEnv == "" {
		o.TokenEnv = "SLACK_BOT_TOKEN"
	}
	if o.SigningSecretEnv == "" {
		o.SigningSecretEnv = "SLACK_SIGNING_SECRET"
	}
	if o.AppTokenEnv == "" {
		o.AppTokenEnv = "SLACK_APP_TOKEN"
	}
	if o.PingInterval <= 0 {
		o.PingInterval = 30 * time.Second
	}
	if o.RetryBase <= 0 {
		o.RetryBase = time.Second
	}
	if o.RetryMax <= 0 {
		o.RetryMax = time.Minute
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 30 * time.Second}
	}
	api := slack.New(o.Token, slack.OptionAPIURL(strings.TrimRight(o.APIURL, "/")+"/"), slack.OptionHTTPClient(o.Client),
		slack.OptionAppLevelToken(o.AppToken))
	fc := *o.Client
	fc.Timeout = 0
	return &Slack{o: o, api: api, fileClient: &fc, names: map[string]string{}, kinds: map[string]string{}, events: make(chan Inbound, 256), status: map[string]time.Time{}}
}

// Platform implements Adapter.
func (s *Slack) Platform() string { return "slack" }

// Addr is the address the Events API endpoint listens on ("" before Run).
func (s *Slack) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// SlackSocketMode reports whether Slack's events come in Socket Mode under
// mode (SlackSocket, SlackEvents, or "" / "auto": Socket Mode when the
// app-level token appToken is set).
func SlackSocketMode(mode, appToken string) bool {
	switch mode {
	case SlackSocket:
		return true
	case SlackEvents:
		return false
	}
	return appToken != ""
}

// socket reports whether events come in Socket Mode.
func (s *Slack) socket() bool { return SlackSocketMode(s.o.Mode, s.o.AppToken) }

// Run implements Adapter: check the token (auth.test), take events in
// Socket Mode or serve the Events API endpoint, and hand messages on in
// order.
func (s *Slack) Run(ctx context.Context, in Inbox, report Reporter) error {
	switch {
	case s.o.Token == "":
		return errMissingSecret("slack", s.o.TokenEnv)
	case s.socket() && s.o.AppToken == "":
		return errMissingSecret("slack", s.o.AppTokenEnv)
	case s.socket():
		return s.runSocket(ctx, in, report)
	case s.o.SigningSecret == "":
		return errMissingSecret("slack", s.o.SigningSecretEnv)
	}
	ln := s.o.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.o.Listen); err != nil {
			return fmt.Errorf("slack: cannot listen on %s: %w", s.o.Listen, err)
		}
	}
	s.mu.Lock()
	s.addr = ln.Addr().String()
	s.mu.Unlock()
	mux := http.NewServeMux()
	mux.Handle(SlackEventsPath, s)
	mux.Handle(SlackInteractivePath, s)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.forward(ctx, in)
	}()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = srv.Shutdown(sctx)
		cancel()
		wg.Wait()
	}()
	auth, ok := s.auth(ctx, report)
	if !ok {
		return nil
	}
	report(Connected, fmt.Sprintf("%s in %s, events on http://%s%s", auth.User, auth.Team, ln.Addr(), SlackEventsPath), nil)
	select {
	case <-ctx.Done():
		return nil
	case err := <-served:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("slack: the events endpoint stopped: %w", err)
	}
}

// auth checks the bot token (auth.test) until Slack answers, keeping the
// bot's own id; false when ctx ended first.
func (s *Slack) auth(ctx context.Context, report Reporter) (*slack.AuthTestResponse, bool) {
	for attempt := 1; ; attempt++ {
		auth, err := s.api.AuthTestContext(ctx)
		if err == nil {
			s.mu.Lock()
			s.botID = auth.UserID
			s.mu.Unlock()
			return auth, true
		}
		if ctx.Err() != nil {
			return nil, false
		}
		report(Retrying, "auth.test failed", err)
		if !sleep(ctx, backoff(s.o.RetryBase, s.o.RetryMax, attempt)) {
			return nil, false
		}
	}
}

// forward resolves each sender's name and hands messages on, in the order
// they came.
func (s *Slack) forward(ctx context.Context, in Inbox) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-s.events:
			m.UserName = s.userName(ctx, m.UserID)
			in(m)
		}
	}
}

// userName asks users.info once per user (best effort).
func (s *Slack) userName(ctx context.Context, id string) string {
	s.mu.Lock()
	name, ok := s.names[id]
	s.mu.Unlock()
	if ok {
		return name
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if u, err := s.api.GetUserInfoContext(cctx, id); err == nil {
		name = u.Profile.DisplayName
		if name == "" {
			name = u.RealName
		}
		if name == "" {
			name = u.Name
		}
	}
	s.mu.Lock()
	s.names[id] = name
	s.mu.Unlock()
	return name
}

var mentionRE = regexp.MustCompile(`<@[A-Z0-9]+>\s*`)

// ServeHTTP is the Events API endpoint: it verifies the request's
// signature (v0, timestamp within five minutes), answers url_verification,
// and queues message and app_mention events, answering 200 at once.
func (s *Slack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20+1))
	if err != nil || len(body) > 1<<20 {
		http.Error(w, "body too large or unreadable", http.StatusBadRequest)
		return
	}
	sv, err := slack.NewSecretsVerifier(r.Header, s.o.SigningSecret)
	if err == nil {
		_, _ = sv.Write(body)
		err = sv.Ensure()
	}
	if err != nil {
		http.Error(w, "invalid signature", http.StatusUnauthorized)
		return
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		s.interaction(w, body)
		return
	}
	ev, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
	if err != nil {
		http.Error(w, "not an Events API request", http.StatusBadRequest)
		return
	}
	switch ev.Type {
	case slackevents.URLVerification:
		v, _ := ev.Data.(*slackevents.EventsAPIURLVerificationEvent)
		if v == nil {
			http.Error(w, "no challenge", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(slackevents.ChallengeResponse{Challenge: v.Challenge})
		return
	case slackevents.CallbackEvent:
		if !s.take(ev, body) {
			// Full: Slack retries the event, which is deduplicated.
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

// take queues what a callback event carries (a person's message, a
// reaction; body is the event as it came); false when the queue is full:
// Slack sends it again.
func (s *Slack) take(ev slackevents.EventsAPIEvent, body []byte) bool {
	m, ok := s.inbound(ev, body)
	if !ok {
		m, ok = s.reaction(ev, body)
	}
	return !ok || s.queue(m)
}

// queue hands m to forward; false when the queue is full.
func (s *Slack) queue(m Inbound) bool {
	select {
	case s.events <- m:
		return true
	default:
		return false
	}
}

// inbound turns a callback event (body: the callback as it came) into a
// message, or false for one that is not a person's message (bots, edits,
// joins, the bot itself). The files a message carries come with it
// (file_share, or files on a plain message); a message of files alone,
// without text, is one.
func (s *Slack) inbound(ev slackevents.EventsAPIEvent, body []byte) (Inbound, bool) {
	var m Inbound
	var channelType string
	hasFiles := false
	switch e := ev.InnerEvent.Data.(type) {
	case *slackevents.MessageEvent:
		if e.BotID != "" || (e.SubType != "" && e.SubType != "file_share" && e.SubType != "thread_broadcast") {
			return m, false
		}
		m = Inbound{UserID: e.User, ChatID: e.Channel, Text: e.Text, MessageID: e.TimeStamp, ThreadID: e.ThreadTimeStamp}
		channelType = e.ChannelType
		hasFiles = e.Message != nil && len(e.Message.Files) > 0
	case *slackevents.AppMentionEvent:
		if e.BotID != "" {
			return m, false
		}
		m = Inbound{UserID: e.User, ChatID: e.Channel, Text: e.Text, MessageID: e.TimeStamp, ThreadID: e.ThreadTimeStamp}
		hasFiles = len(e.Files) > 0
		channelType = "channel"
		if strings.HasPrefix(e.Channel, "D") {
			channelType = "im"
		}
	default:
		return m, false
	}
	s.mu.Lock()
	bot := s.botID
	s.mu.Unlock()
	if m.UserID == "" || m.UserID == bot {
		return m, false
	}
	m.Text = strings.TrimSpace(mentionRE.ReplaceAllString(m.Text, ""))
	if hasFiles {
		m.Files = s.inFiles(body)
	}
	// A message and its app_mention are one message: dedupe on channel+ts.
	m.EventID = m.ChatID + ":" + m.MessageID
	m.ReplyTo = m.ThreadID
	m.ChatType = slackChatType(channelType)
	s.mu.Lock()
	s.kinds[m.ChatID] = m.ChatType
	s.mu.Unlock()
	if ts := strings.SplitN(m.MessageID, ".", 2); len(ts) > 0 {
		var sec int64
		_, _ = fmt.Sscan(ts[0], &sec)
		m.At = time.Unix(sec, 0).UTC()
	}
	return m, m.Text != "" || len(m.Files) > 0
}

// reaction turns a reaction_added or reaction_removed callback into an
// Inbound that carries it (for the event hooks), or false.
func (s *Slack) reaction(ev slackevents.EventsAPIEvent, body []byte) (Inbound, bool) {
	var r Reaction
	var e slackevents.ReactionAddedEvent
	switch x := ev.InnerEvent.Data.(type) {
	case *slackevents.ReactionAddedEvent:
		e, r.Added = *x, true
	case *slackevents.ReactionRemovedEvent:
		e = slackevents.ReactionAddedEvent(*x)
	default:
		return Inbound{}, false
	}
	s.mu.Lock()
	bot := s.botID
	s.mu.Unlock()
	if e.User == "" || e.User == bot {
		return Inbound{}, false
	}
	var outer struct {
		EventID string          `json:"event_id"`
		Event   json.RawMessage `json:"event"`
	}
	_ = json.Unmarshal(body, &outer)
	r.Name, r.ItemUser, r.ItemType, r.MessageTS, r.TeamID, r.EventTS, r.Raw = e.Reaction, e.ItemUser, e.Item.Type, e.Item.Timestamp,
		ev.TeamID, e.EventTimestamp, outer.Event
	id := outer.EventID
	if id == "" {
		id = fmt.Sprintf("reaction:%s:%s:%s:%s:%t:%s", e.Item.Channel, e.Item.Timestamp, e.User, e.Reaction, r.Added, e.EventTimestamp)
	}
	return Inbound{EventID: id, UserID: e.User, ChatID: e.Item.Channel, MessageID: e.Item.Timestamp, Reaction: &r, At: time.Now().UTC()}, true
}

// chatType is channel's chat type as its messages said, else as Slack's
// channel name for it says (a slash command's channel_name), else as its
// id's first letter does (D: a direct message, G: a private group).
func (s *Slack) chatType(channel, name string) string {
	s.mu.Lock()
	kind, ok := s.kinds[channel]
	s.mu.Unlock()
	switch {
	case ok:
		return kind
	case name == "directmessage":
		return "dm"
	case name == "privategroup" || name == "mpdm":
		return "group"
	}
	return slackChatType(map[byte]string{'D': "im", 'G': "group"}[channel[0]])
}

func slackChatType(t string) string {
	switch t {
	case "im":
		return "dm"
	case "mpim", "group":
		return "group"
	case "channel":
		return "channel"
	}
	if t == "" {
		return "channel"
	}
	return t
}

// Send implements Adapter (chat.postMessage, in the thread when there is
// one), a model's Markdown in Slack's mrkdwn and in parts of at most
// 12,000 characters (a code block the split cuts closed and opened
// again); buttons go under the last as Block Kit buttons, the text staying
// the message's (its notification's) fallback.
func (s *Slack) Send(ctx context.Context, m Message) (string, error) {
	parts := []string{m.Text}
	if m.Markdown {
		parts = closeFences(splitText(m.Text, slackLimit))
	}
	var ts string
	for i, part := range parts {
		text := part
		if m.Markdown {
			text = markup.SlackMrkdwn(text)
		}
		opts := []slack.MsgOption{slack.MsgOptionText(text, false)}
		if m.ThreadID != "" {
			opts = append(opts, slack.MsgOptionTS(m.ThreadID))
		}
		if i == len(parts)-1 && len(m.Buttons) > 0 {
			opts = append(opts, slack.MsgOptionBlocks(slackBlocks(text, m.Buttons)...))
		}
		var err error
		if _, ts, err = s.api.PostMessageContext(ctx, m.ChatID, opts...); err != nil {
			return "", slackError("chat.postMessage", err)
		}
	}
	if m.ThreadID != "" {
		// A message posted in the thread takes its status down: the next
		// Typing sets it again (a turn's progress lines come mid-turn).
		s.mu.Lock()
		delete(s.status, m.ChatID+"/"+m.ThreadID)
		s.mu.Unlock()
	}
	return ts, nil
}

// slackLimit is the most of a model's answer one Slack message holds: the
// API keeps 40,000 characters of a text and cuts the rest; a longer answer
// goes as several messages (under the markup's own bound).
const slackLimit = 12_000

// Edit implements Editor (chat.update): the text, its buttons gone.
func (s *Slack) Edit(ctx context.Context, chatID, messageID, text string) error {
	_, _, _, err := s.api.UpdateMessageContext(ctx, chatID, messageID, slack.MsgOptionText(text, false), slack.MsgOptionBlocks())
	return slackError("chat.update", err)
}

// Delete implements Deleter (chat.delete).
func (s *Slack) Delete(ctx context.Context, chatID, messageID string) error {
	_, _, err := s.api.DeleteMessageContext(ctx, chatID, messageID)
	return slackError("chat.delete", err)
}

// slackBlocks are text and its buttons as Block Kit: a section, then an
// actions block for each row.
func slackBlocks(text string, rows [][]Button) []slack.Block {
	blocks := []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, clipRunes(text, 3000), false, false), nil, nil)}
	n := 0
	for _, row := range rows {
		var els []slack.BlockElement
		for _, b := range row {
			btn := slack.NewButtonBlockElement(slackActionID(b.Data, n), b.Data, slack.NewTextBlockObject(slack.PlainTextType, clipRunes(b.Label, 75), true, false))
			if strings.HasPrefix(b.Data, "ea:deny:") {
				btn.Style = slack.StyleDanger
			}
			els = append(els, btn)
			n++
		}
		blocks = append(blocks, slack.NewActionBlock("", els...))
	}
	return blocks
}

// slackActionID is a button's action_id, the familiar gateway's for an
// approval's (hermes_approve_once, hermes_deny) and a question's
// (hermes_clarify_choice_2, hermes_clarify_other); else its place. A tap
// is read from the button's value, its data.
func slackActionID(data string, n int) string {
	kind, rest, _ := strings.Cut(data, ":")
	choice, _, _ := strings.Cut(rest, ":")
	switch {
	case kind == "ea" && choice == "deny":
		return "hermes_deny"
	case kind == "ea":
		return "hermes_approve_" + choice
	case kind == "cl" && choice == "other":
		return "hermes_clarify_other"
	case kind == "cl":
		return "hermes_clarify_choice_" + choice
	}
	return fmt.Sprintf("atrium_button_%d", n)
}

// interaction takes an Interactivity request (its signature checked): a
// tap on a button under one of the bot's messages (block_actions) is
// handed on as a Tap (tapOf) and answered 200 at once, as Slack wants
// within three seconds. Anything else is acknowledged and dropped.
func (s *Slack) interaction(w http.ResponseWriter, body []byte) {
	form, err := url.ParseQuery(string(body))
	var cb slack.InteractionCallback
	if err == nil {
		err = json.Unmarshal([]byte(form.Get("payload")), &cb)
	}
	if err != nil {
		http.Error(w, "not an interaction payload", http.StatusBadRequest)
		return
	}
	if m, ok := s.tapOf(cb); ok && !s.queue(m) {
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// tapOf is a tap on a button under one of the bot's messages
// (block_actions), in the conversation the message is in; false for
// any other interaction.
func (s *Slack) tapOf(cb slack.InteractionCallback) (Inbound, bool) {
	a := cb.ActionCallback.BlockActions
	chat, msg := cb.Channel.ID, cb.Container.MessageTs
	if chat == "" {
		chat = cb.Container.ChannelID
	}
	if cb.Type != slack.InteractionTypeBlockActions || len(a) == 0 || cb.User.ID == "" || chat == "" {
		return Inbound{}, false
	}
	if msg == "" {
		msg = cb.Message.Timestamp
	}
	thread := cb.Container.ThreadTs
	if thread == "" {
		thread = cb.Message.ThreadTimestamp
	}
	m := Inbound{EventID: "tap:" + chat + ":" + msg + ":" + a[0].ActionTs, UserID: cb.User.ID, ChatID: chat, ChatType: s.chatType(chat, ""), ThreadID: thread,
		ReplyTo: thread, MessageID: msg, At: time.Now().UTC(),
		Tap: &Tap{ID: cb.ResponseURL, MessageID: msg, MessageText: cb.Message.Text, Data: a[0].Value}}
	return m, true
}

// AnswerTap implements Tapper. Slack shows no passing notice for a tap:
// the message is edited to say how it was answered. A refusal (alert) is
// said to the tapper alone, through the tap's response_url, as an
// ephemeral message.
func (s *Slack) AnswerTap(ctx context.Context, id, notice string, alert bool) error {
	if !alert || notice == "" || id == "" {
		return nil
	}
	u, err := url.Parse(id)
	if err != nil || !(u.Scheme == "https" && u.Host == "hooks.slack.com" || strings.HasPrefix(id, strings.TrimRight(s.o.APIURL, "/")+"/")) {
		return fmt.Errorf("slack: a tap's response_url that is not Slack's: %q", clipRunes(id, 80))
	}
	body, _ := json.Marshal(map[string]any{"response_type": "ephemeral", "replace_original": false, "text": notice})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, id, strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.o.Client.Do(req)
	if err != nil {
		return fmt.Errorf("slack: response_url: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("slack: response_url answered %s", resp.Status)
	}
	return nil
}

// SlackThinking is the thread status shown while a turn runs (Slack puts
// the app's name before it).
const SlackThinking = "is thinking…"

// slackStatusRefresh: a thread status lasts two minutes unless a message
// is posted in the thread; a longer turn sets it again after this long.
const slackStatusRefresh = 90 * time.Second

// Typing implements Typer with the thread status
// (assistant.threads.setStatus, which the chat:write scope allows in any
// thread): "<app> is thinking…" below the thread while a turn runs. Slack
// has no typing indicator for bots outside a thread, where a reply that is
// not threaded would leave the status standing: there it does nothing.
// The status is set once and again only when it would expire; a workspace
// that refuses the method for good is not asked again.
func (s *Slack) Typing(ctx context.Context, chatID, threadID string) error {
	if threadID == "" {
		return nil
	}
	key := chatID + "/" + threadID
	s.mu.Lock()
	at, set := s.status[key]
	skip := s.noStatus || (set && time.Since(at) < slackStatusRefresh)
	s.mu.Unlock()
	if skip {
		return nil
	}
	err := s.api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{ChannelID: chatID, ThreadTS: threadID, Status: SlackThinking})
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.status[key] = time.Now()
		return nil
	}
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		switch se.Err {
		case "missing_scope", "not_allowed_token_type", "no_permission", "access_denied", "accesslimited",
			"team_access_not_granted", "method_deprecated", "unknown_method", "not_authed", "invalid_auth":
			s.noStatus = true
		}
	}
	return slackError("assistant.threads.setStatus", err)
}

// StopTyping implements TypingStopper: it clears a status it set (the
// reply clears it too once posted in the thread; a turn that posts nothing,
// or posts later, must not leave it standing for two minutes).
func (s *Slack) StopTyping(ctx context.Context, chatID, threadID string) error {
	key := chatID + "/" + threadID
	s.mu.Lock()
	_, set := s.status[key]
	delete(s.status, key)
	s.mu.Unlock()
	if !set {
		return nil
	}
	err := s.api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{ChannelID: chatID, ThreadTS: threadID, Status: ""})
	return slackError("assistant.threads.setStatus", err)
}

// slackError classifies a Web API error: rate limits wait, Slack's own
// "this cannot work" answers are permanent, the rest is retried.
func slackError(method string, err error) error {
	if err == nil {
		return nil
	}
	wrapped := fmt.Errorf("slack %s: %w", method, err)
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return RetryAfter(wrapped, rl.RetryAfter)
	}
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		switch se.Err {
		case "ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout":
			return wrapped
		}
		return Permanent(wrapped)
	}
	var sc slack.StatusCodeError
	if errors.As(err, &sc) && sc.Code >= 400 && sc.Code < 500 && sc.Code != http.StatusTooManyRequests && sc.Code != http.StatusRequestTimeout {
		return Permanent(wrapped)
	}
	return wrapped
}
