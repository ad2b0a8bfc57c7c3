package gatewaytest

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Discord is a loopback fake of Discord's REST API (v9) and its gateway
// WebSocket, as documented (https://discord.com/developers/docs): GET
// /gateway answers the fake's WebSocket; the WebSocket says Hello (op 10),
// takes Identify (op 2; a token it does not know is closed with 4004) or
// Resume (op 6), answers READY or RESUMED, acknowledges heartbeats (op 1
// → op 11), and pushes what Dispatch is given as op 0 events with their
// sequence numbers. It records what the bot posts, edits, deletes,
// reacts, types, the threads it opens and its answers to interactions;
// the files it uploads (a message posted as multipart/form-data,
// payload_json and files[n]); and it serves attachments, as Discord's CDN
// does, at /attachments/... (Attach).
type Discord struct {
	*httptest.Server
	token string
	// BotID and BotName are the bot's user.
	BotID, BotName string

	mu          sync.Mutex
	posted      []DiscordPost
	edited      []DiscordPost
	calls       []string // "typing C", "react C M E", "unreact C M E", "delete C M", "thread C M NAME", "callback ID TYPE", "too large C"
	followups   []DiscordPost
	channels    map[string]map[string]any
	conns       map[*websocket.Conn]*sync.Mutex
	connected   int
	identified  int
	resumed     int
	intents     int64
	closeWith   int // Identify is answered with this close code
	limited     int // this many message posts answer 429
	seq         int64
	commands    []map[string]any
	commandsApp string
	silent      bool // the gateway says no Hello
	uploads     []DiscordFile
	uploadLimit int64             // a message whose files are larger answers 413 (0: any)
	attachments map[string][]byte // the CDN's files, by path
	fetched     int               // GETs of an attachment
}

// DiscordFile is a file the bot uploaded, with the message it came with.
type DiscordFile struct {
	Message, Channel  string
	Name, ContentType string
	Data              []byte
}

// Uploads are the files the bot uploaded, in order.
func (f *Discord) Uploads() []DiscordFile { return snapshot(&f.mu, &f.uploads) }

// UploadLimit has a message whose files are larger than n bytes answer
// 413 with Discord's code 40005, as a channel that takes less does (0:
// any size).
func (f *Discord) UploadLimit(n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.uploadLimit = n
}

// Attach serves data as an attachment named name and returns it as a
// message's attachment (id, filename, content_type, size, url), for
// DiscordMessage's "attachments".
func (f *Discord) Attach(name, contentType string, data []byte) map[string]any {
	id := DiscordID()
	path := "/attachments/" + id + "/" + name
	f.mu.Lock()
	f.attachments[path] = data
	f.mu.Unlock()
	return map[string]any{"id": id, "filename": name, "content_type": contentType, "size": len(data),
		"url": f.URL + path + "?ex=1&is=2&hm=signed", "proxy_url": f.URL + path}
}

// Fetched is how many times an attachment was asked for.
func (f *Discord) Fetched() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fetched
}

// Silent has the gateway accept connections and say nothing (no Hello),
// as a gateway that hangs.
func (f *Discord) Silent(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.silent = on
}

// Commands are the application's slash commands as the bot last
// registered them (PUT /applications/{app}/commands), and the app's id.
func (f *Discord) Commands() (string, []map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.commandsApp, f.commands
}

// DiscordCommand is an INTERACTION_CREATE of a slash command (name, with
// args when not "") in channel.
func DiscordCommand(id, app, channel, guild, user, name, args string) map[string]any {
	i := DiscordTap(id, app, channel, guild, user, "", "", "")
	delete(i, "message")
	i["type"] = 2
	opts := []any{}
	if args != "" {
		opts = append(opts, map[string]any{"name": "args", "type": 3, "value": args})
	}
	i["data"] = map[string]any{"id": "cmd-" + name, "name": name, "type": 1, "options": opts}
	return i
}

// DiscordPost is a message the bot posted (or edited, or a follow-up).
type DiscordPost struct {
	Channel    string
	ID         string
	Content    string
	ReplyTo    string // message_reference.message_id
	Components json.RawMessage
	Mentions   json.RawMessage // allowed_mentions
	Flags      int64
}

var discordIDs atomic.Int64

// DiscordID is a new snowflake-like id.
func DiscordID() string { return strconv.FormatInt(1_300_000_000_000_000_000+discordIDs.Add(1), 10) }

// NewDiscord starts the fake; the bot's token is token.
func NewDiscord(t testing.TB, token string) *Discord {
	f := &Discord{token: token, BotID: DiscordID(), BotName: "atrium-bot", channels: map[string]map[string]any{},
		conns: map[*websocket.Conn]*sync.Mutex{}, attachments: map[string][]byte{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.Drop()
		f.Close()
	})
	return f
}

// APIURL is the fake's REST API, for the adapter's api_url.
func (f *Discord) APIURL() string { return f.URL + "/api/v9" }

// AddChannel makes a channel known: kind 0 a server's text channel, 1 a
// DM, 11 a public thread (parent its channel, owner who opened it).
func (f *Discord) AddChannel(id string, kind int, guild, parent, owner string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := map[string]any{"id": id, "type": kind}
	if guild != "" {
		c["guild_id"] = guild
	}
	if parent != "" {
		c["parent_id"] = parent
	}
	if owner != "" {
		c["owner_id"] = owner
	}
	f.channels[id] = c
}

// RefuseIdentify has the gateway close a connection that identifies with
// code (4014: disallowed intents); 0 accepts again.
func (f *Discord) RefuseIdentify(code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closeWith = code
}

// RateLimit has the next n message posts answer 429.
func (f *Discord) RateLimit(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limited = n
}

// Posted are the messages the bot posted, in order.
func (f *Discord) Posted() []DiscordPost { return snapshot(&f.mu, &f.posted) }

// Edited are the bot's edits, in order.
func (f *Discord) Edited() []DiscordPost { return snapshot(&f.mu, &f.edited) }

// Followups are the interaction follow-ups the bot sent.
func (f *Discord) Followups() []DiscordPost { return snapshot(&f.mu, &f.followups) }

// Calls are the other calls, in order.
func (f *Discord) Calls() []string { return snapshot(&f.mu, &f.calls) }

// Connections says how many gateway connections were opened, identified
// and resumed, and the intents of the last Identify.
func (f *Discord) Connections() (opened, identified, resumed int, intents int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.connected, f.identified, f.resumed, f.intents
}

// Live is how many gateway connections are open.
func (f *Discord) Live() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.conns)
}

// Dispatch pushes an event (op 0) to every open connection; its sequence
// number is returned.
func (f *Discord) Dispatch(event string, data any) int64 {
	f.mu.Lock()
	f.seq++
	seq := f.seq
	conns := make(map[*websocket.Conn]*sync.Mutex, len(f.conns))
	for c, m := range f.conns {
		conns[c] = m
	}
	f.mu.Unlock()
	for c, m := range conns {
		m.Lock()
		_ = c.WriteJSON(map[string]any{"op": 0, "s": seq, "t": event, "d": data})
		m.Unlock()
	}
	return seq
}

// Drop ends every gateway connection abruptly, as a network fault would.
func (f *Discord) Drop() {
	f.mu.Lock()
	conns := f.conns
	f.conns = map[*websocket.Conn]*sync.Mutex{}
	f.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
}

// DiscordMessage is a MESSAGE_CREATE's data: guild "" for a DM; mentions
// are user ids the message @mentions (their <@id> is in content).
func DiscordMessage(id, channel, guild, author, name, content string, mentions ...string) map[string]any {
	ms := []map[string]any{}
	for _, u := range mentions {
		ms = append(ms, map[string]any{"id": u, "username": "user" + u})
	}
	m := map[string]any{"id": id, "channel_id": channel, "type": 0, "content": content, "mentions": ms,
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano), "author": map[string]any{"id": author, "username": name, "global_name": strings.ToUpper(name[:1]) + name[1:]}}
	if guild != "" {
		m["guild_id"] = guild
		m["member"] = map[string]any{"roles": []string{}}
	}
	return m
}

// DiscordTap is an INTERACTION_CREATE of a tap on a button (custom_id)
// under message msg (its content) in channel.
func DiscordTap(id, app, channel, guild, user, msg, content, customID string) map[string]any {
	i := map[string]any{"id": id, "application_id": app, "type": 3, "token": "tok-" + id, "channel_id": channel, "version": 1,
		"message": map[string]any{"id": msg, "channel_id": channel, "content": content},
		"data":    map[string]any{"custom_id": customID, "component_type": 2}}
	u := map[string]any{"id": user, "username": "user" + user}
	if guild != "" {
		i["guild_id"] = guild
		i["member"] = map[string]any{"user": u, "roles": []string{}}
	} else {
		i["user"] = u
	}
	return i
}

func (f *Discord) authorized(r *http.Request) bool {
	return r.Header.Get("Authorization") == "Bot "+f.token
}

func (f *Discord) fail(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"message": msg, "code": code})
}

func (f *Discord) answer(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (f *Discord) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/gw" || r.URL.Path == "/gw/" {
		f.socket(w, r)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/attachments/") {
		f.attachment(w, r)
		return
	}
	path, ok := strings.CutPrefix(r.URL.Path, "/api/v9/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	parts := strings.Split(path, "/")
	if parts[0] == "gateway" {
		f.answer(w, map[string]any{"url": "ws://" + r.Host + "/gw"})
		return
	}
	if parts[0] == "webhooks" && len(parts) == 3 && r.Method == http.MethodPost { // an interaction's follow-up
		p, _ := f.post(r, parts[2])
		f.mu.Lock()
		f.followups = append(f.followups, p)
		f.mu.Unlock()
		f.answer(w, map[string]any{"id": p.ID, "content": p.Content})
		return
	}
	if parts[0] == "interactions" && len(parts) == 4 && parts[3] == "callback" {
		var body struct {
			Type int `json:"type"`
			Data struct {
				Content string `json:"content"`
				Flags   int64  `json:"flags"`
			} `json:"data"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		call := fmt.Sprintf("callback %s %d", parts[1], body.Type)
		if body.Data.Content != "" {
			call += fmt.Sprintf(" %d %s", body.Data.Flags, body.Data.Content)
		}
		f.record(call)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if !f.authorized(r) {
		f.fail(w, http.StatusUnauthorized, 0, "401: Unauthorized")
		return
	}
	switch {
	case parts[0] == "applications" && len(parts) == 3 && parts[2] == "commands" && r.Method == http.MethodPut:
		var cmds []map[string]any
		if err := json.NewDecoder(r.Body).Decode(&cmds); err != nil {
			f.fail(w, http.StatusBadRequest, 50035, "Invalid Form Body")
			return
		}
		f.mu.Lock()
		f.commands = cmds
		f.commandsApp = parts[1]
		f.mu.Unlock()
		f.answer(w, cmds)
	case path == "users/@me":
		f.answer(w, map[string]any{"id": f.BotID, "username": f.BotName, "bot": true})
	case parts[0] == "channels" && len(parts) == 2 && r.Method == http.MethodGet:
		f.mu.Lock()
		c, ok := f.channels[parts[1]]
		f.mu.Unlock()
		if !ok {
			f.fail(w, http.StatusNotFound, 10003, "Unknown Channel")
			return
		}
		f.answer(w, c)
	case parts[0] == "channels" && len(parts) == 3 && parts[2] == "typing":
		f.record("typing " + parts[1])
		w.WriteHeader(http.StatusNoContent)
	case parts[0] == "channels" && len(parts) == 3 && parts[2] == "messages" && r.Method == http.MethodPost:
		f.mu.Lock()
		_, known := f.channels[parts[1]]
		limited := f.limited > 0
		if limited {
			f.limited--
		}
		f.mu.Unlock()
		switch {
		case limited:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"message": "You are being rate limited.", "retry_after": 0.05, "global": false}`))
		case !known:
			f.fail(w, http.StatusNotFound, 10003, "Unknown Channel")
		default:
			p, files := f.post(r, parts[1])
			size := int64(0)
			for _, file := range files {
				size += int64(len(file.Data))
			}
			f.mu.Lock()
			tooLarge := f.uploadLimit > 0 && size > f.uploadLimit
			if !tooLarge {
				f.posted = append(f.posted, p)
				f.uploads = append(f.uploads, files...)
			}
			f.mu.Unlock()
			if tooLarge {
				f.record("too large " + parts[1])
				f.fail(w, http.StatusRequestEntityTooLarge, 40005, "Request entity too large")
				return
			}
			f.answer(w, map[string]any{"id": p.ID, "channel_id": p.Channel, "content": p.Content})
		}
	case parts[0] == "channels" && len(parts) == 4 && parts[2] == "messages" && r.Method == http.MethodPatch:
		p, _ := f.post(r, parts[1])
		p.ID = parts[3]
		f.mu.Lock()
		f.edited = append(f.edited, p)
		f.mu.Unlock()
		f.answer(w, map[string]any{"id": p.ID, "channel_id": p.Channel, "content": p.Content})
	case parts[0] == "channels" && len(parts) == 4 && parts[2] == "messages" && r.Method == http.MethodDelete:
		f.record("delete " + parts[1] + " " + parts[3])
		w.WriteHeader(http.StatusNoContent)
	case parts[0] == "channels" && len(parts) == 5 && parts[4] == "threads" && r.Method == http.MethodPost:
		var body struct {
			Name string `json:"name"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		id := DiscordID()
		f.mu.Lock()
		parent := f.channels[parts[1]]
		f.mu.Unlock()
		guild, _ := parent["guild_id"].(string)
		f.AddChannel(id, 11, guild, parts[1], f.BotID)
		f.record("thread " + parts[1] + " " + parts[3] + " " + body.Name)
		f.answer(w, map[string]any{"id": id, "type": 11, "guild_id": guild, "parent_id": parts[1], "owner_id": f.BotID, "name": body.Name})
	case parts[0] == "channels" && len(parts) == 7 && parts[4] == "reactions" && parts[6] == "@me":
		verb := "react"
		if r.Method == http.MethodDelete {
			verb = "unreact"
		}
		f.record(verb + " " + parts[1] + " " + parts[3] + " " + parts[5])
		w.WriteHeader(http.StatusNoContent)
	default:
		f.fail(w, http.StatusNotFound, 0, "404: Not Found")
	}
}

func (f *Discord) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

// post reads a message the bot sends: JSON, or multipart/form-data with
// its JSON in payload_json and its files in files[n].
func (f *Discord) post(r *http.Request, channel string) (DiscordPost, []DiscordFile) {
	var body struct {
		Content    string          `json:"content"`
		Components json.RawMessage `json:"components"`
		Mentions   json.RawMessage `json:"allowed_mentions"`
		Flags      int64           `json:"flags"`
		Reference  *struct {
			MessageID string `json:"message_id"`
		} `json:"message_reference"`
	}
	id := DiscordID()
	var files []DiscordFile
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
		mr, err := r.MultipartReader()
		for err == nil {
			var part *multipart.Part
			if part, err = mr.NextPart(); err != nil {
				break
			}
			switch name := part.FormName(); {
			case name == "payload_json":
				_ = json.NewDecoder(part).Decode(&body)
			case strings.HasPrefix(name, "files["):
				data, _ := io.ReadAll(part)
				files = append(files, DiscordFile{Message: id, Channel: channel, Name: part.FileName(), ContentType: part.Header.Get("Content-Type"), Data: data})
			}
		}
	} else {
		_ = json.NewDecoder(r.Body).Decode(&body)
	}
	p := DiscordPost{Channel: channel, ID: id, Content: body.Content, Components: body.Components, Mentions: body.Mentions, Flags: body.Flags}
	if body.Reference != nil {
		p.ReplyTo = body.Reference.MessageID
	}
	return p, files
}

// attachment serves an attachment's bytes, as Discord's CDN does: with
// no token (the URL is signed), which it refuses, so that a test sees
// the bot never sends its token there.
func (f *Discord) attachment(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.fetched++
	data, ok := f.attachments[r.URL.Path]
	f.mu.Unlock()
	switch {
	case r.Header.Get("Authorization") != "":
		http.Error(w, "the CDN takes no token", http.StatusForbidden)
	case !ok:
		http.NotFound(w, r)
	default:
		_, _ = w.Write(data)
	}
}

var discordUpgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

// socket is the gateway: Hello, Identify or Resume, READY or RESUMED,
// then heartbeats until the connection ends.
func (f *Discord) socket(w http.ResponseWriter, r *http.Request) {
	c, err := discordUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer c.Close()
	wm := &sync.Mutex{}
	send := func(v any) error {
		wm.Lock()
		defer wm.Unlock()
		return c.WriteJSON(v)
	}
	f.mu.Lock()
	f.connected++
	silent := f.silent
	f.mu.Unlock()
	if silent {
		_, _, _ = c.ReadMessage() // until the client goes
		return
	}
	if send(map[string]any{"op": 10, "d": map[string]any{"heartbeat_interval": 45000}}) != nil {
		return
	}
	var hello struct {
		Op int `json:"op"`
		D  struct {
			Token     string `json:"token"`
			Intents   int64  `json:"intents"`
			SessionID string `json:"session_id"`
		} `json:"d"`
	}
	if c.ReadJSON(&hello) != nil {
		return
	}
	closeWith := func(code int, text string) {
		wm.Lock()
		_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
		wm.Unlock()
	}
	f.mu.Lock()
	refuse := f.closeWith
	f.mu.Unlock()
	switch {
	case strings.TrimPrefix(hello.D.Token, "Bot ") != f.token:
		closeWith(4004, "Authentication failed.")
		return
	case hello.Op == 2 && refuse != 0:
		closeWith(refuse, "Disallowed intent(s).")
		return
	case hello.Op == 2:
		f.mu.Lock()
		f.identified++
		f.intents = hello.D.Intents
		f.seq++
		seq := f.seq
		f.mu.Unlock()
		if send(map[string]any{"op": 0, "s": seq, "t": "READY", "d": map[string]any{"v": 9, "session_id": "fake-session",
			"user": map[string]any{"id": f.BotID, "username": f.BotName, "bot": true}, "guilds": []any{},
			"application": map[string]any{"id": f.BotID}, "resume_gateway_url": "ws://" + r.Host + "/gw"}}) != nil {
			return
		}
	case hello.Op == 6:
		f.mu.Lock()
		f.resumed++
		f.seq++
		seq := f.seq
		f.mu.Unlock()
		if send(map[string]any{"op": 0, "s": seq, "t": "RESUMED", "d": map[string]any{}}) != nil {
			return
		}
	default:
		closeWith(4003, "Not authenticated.")
		return
	}
	f.mu.Lock()
	f.conns[c] = wm
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.conns, c)
		f.mu.Unlock()
	}()
	for {
		var m struct {
			Op int `json:"op"`
		}
		if c.ReadJSON(&m) != nil {
			return
		}
		if m.Op == 1 && send(map[string]any{"op": 11}) != nil {
			return
		}
	}
}
