// Package gatewaytest has loopback fakes of the chat platforms' documented
// HTTP APIs (Telegram's Bot API, Slack's Web API, Slack-signed Events API
// requests) for the tests of the gateway and of the command line.
package gatewaytest

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Telegram is a loopback fake of the Telegram Bot API's HTTP interface
// (https://core.telegram.org/bots/api): POST /bot<token>/<method> with a
// JSON body, answered {"ok": true, "result": ...} or {"ok": false,
// "error_code", "description", "parameters": {"retry_after"}}.
type Telegram struct {
	*httptest.Server
	token string

	mu        sync.Mutex
	cond      *sync.Cond
	updates   []map[string]any
	nextID    int64
	confirmed int64 // the highest offset a getUpdates confirmed
	sent      []map[string]any
	edits     []map[string]any // editMessageText bodies
	deletes   []map[string]any // deleteMessage bodies
	answers   []map[string]any // answerCallbackQuery bodies
	actions   int
	commands  []map[string]any // the last setMyCommands' commands
	// FailSend answers the next FailSend sendMessage calls with a 500;
	// Down fails every one (an outage); RateLimit answers the next ones
	// with 429 and retry_after 1. Change them with Set.
	FailSend  int
	Down      bool
	RateLimit int
	// FloodEdits answers the next FloodEdits editMessageText calls with
	// 429 (flood control), as the real API answers edits that come fast.
	FloodEdits int
	// RejectHTML answers the next RejectHTML sendMessage calls with
	// parse_mode HTML "can't parse entities", as for markup it cannot read.
	RejectHTML int
	tgFiles
}

func NewTelegram(t testing.TB, token string) *Telegram {
	f := &Telegram{token: token, nextID: 100}
	f.cond = sync.NewCond(&f.mu)
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.mu.Lock()
		f.cond.Broadcast()
		f.mu.Unlock()
		f.Close()
	})
	return f
}

func tgOK(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

func tgErr(w http.ResponseWriter, code int, desc string, retryAfter int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	body := map[string]any{"ok": false, "error_code": code, "description": desc}
	if retryAfter > 0 {
		body["parameters"] = map[string]any{"retry_after": retryAfter}
	}
	_ = json.NewEncoder(w).Encode(body)
}

func (f *Telegram) serve(w http.ResponseWriter, r *http.Request) {
	if f.serveFiles(w, r) {
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/bot")
	token, method, ok := strings.Cut(path, "/")
	if !ok || token != f.token {
		tgErr(w, http.StatusUnauthorized, "Unauthorized", 0)
		return
	}
	if r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		tgErr(w, http.StatusBadRequest, "Bad Request: expected a JSON POST", 0)
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		tgErr(w, http.StatusBadRequest, "Bad Request: invalid JSON", 0)
		return
	}
	switch method {
	case "getMe":
		tgOK(w, map[string]any{"id": 999, "is_bot": true, "first_name": "Atrium", "username": "atrium_bot"})
	case "getUpdates":
		f.getUpdates(r.Context(), w, body)
	case "sendMessage":
		f.mu.Lock()
		switch {
		case f.Down:
			f.mu.Unlock()
			tgErr(w, http.StatusBadGateway, "Bad Gateway", 0)
			return
		case f.RateLimit > 0:
			f.RateLimit--
			f.mu.Unlock()
			tgErr(w, http.StatusTooManyRequests, "Too Many Requests: retry after 1", 1)
			return
		case f.FailSend > 0:
			f.FailSend--
			f.mu.Unlock()
			tgErr(w, http.StatusInternalServerError, "Internal Server Error", 0)
			return
		case f.RejectHTML > 0 && body["parse_mode"] == "HTML":
			f.RejectHTML--
			f.mu.Unlock()
			tgErr(w, http.StatusBadRequest, "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 0", 0)
			return
		}
		if _, ok := body["chat_id"]; !ok || body["text"] == "" {
			f.mu.Unlock()
			tgErr(w, http.StatusBadRequest, "Bad Request: message text is empty", 0)
			return
		}
		if problem := tgFormatted(body); problem != "" {
			f.mu.Unlock()
			tgErr(w, http.StatusBadRequest, "Bad Request: can't parse entities: "+problem, 0)
			return
		}
		f.sent = append(f.sent, body)
		id := len(f.sent) + 5000
		f.cond.Broadcast()
		f.mu.Unlock()
		chat, err := strconv.ParseInt(fmt.Sprint(body["chat_id"]), 10, 64)
		if err != nil {
			tgErr(w, http.StatusBadRequest, "Bad Request: chat not found", 0)
			return
		}
		tgOK(w, map[string]any{"message_id": id, "chat": map[string]any{"id": chat}, "date": time.Now().Unix(), "text": body["text"]})
	case "editMessageText":
		f.mu.Lock()
		if f.FloodEdits > 0 {
			f.FloodEdits--
			f.mu.Unlock()
			tgErr(w, http.StatusTooManyRequests, "Too Many Requests: retry after 5", 5)
			return
		}
		if problem := tgFormatted(body); problem != "" {
			f.mu.Unlock()
			tgErr(w, http.StatusBadRequest, "Bad Request: can't parse entities: "+problem, 0)
			return
		}
		f.edits = append(f.edits, body)
		f.cond.Broadcast()
		f.mu.Unlock()
		tgOK(w, map[string]any{"message_id": body["message_id"], "text": body["text"]})
	case "deleteMessage":
		f.mu.Lock()
		f.deletes = append(f.deletes, body)
		f.mu.Unlock()
		tgOK(w, true)
	case "answerCallbackQuery":
		if _, ok := body["callback_query_id"].(string); !ok {
			tgErr(w, http.StatusBadRequest, "Bad Request: query id is empty", 0)
			return
		}
		f.mu.Lock()
		f.answers = append(f.answers, body)
		f.cond.Broadcast()
		f.mu.Unlock()
		tgOK(w, true)
	case "sendChatAction":
		f.mu.Lock()
		f.actions++
		f.mu.Unlock()
		tgOK(w, true)
	case "setMyCommands":
		var cmds []map[string]any
		if raw, ok := body["commands"]; ok {
			b, _ := json.Marshal(raw)
			_ = json.Unmarshal(b, &cmds)
		}
		for _, c := range cmds {
			name, _ := c["command"].(string)
			desc, _ := c["description"].(string)
			if !tgCommand.MatchString(name) || desc == "" || len([]rune(desc)) > 256 {
				tgErr(w, http.StatusBadRequest, "Bad Request: BOT_COMMAND_INVALID", 0)
				return
			}
		}
		f.mu.Lock()
		f.commands = cmds
		f.mu.Unlock()
		tgOK(w, true)
	default:
		tgErr(w, http.StatusNotFound, "Not Found: method not found", 0)
	}
}

// getUpdates long-polls: it answers at once when updates after offset wait,
// else when one arrives or the timeout passes. An offset confirms (drops)
// every earlier update, as the real API does.
func (f *Telegram) getUpdates(ctx context.Context, w http.ResponseWriter, body map[string]any) {
	offset := int64(0)
	if v, ok := body["offset"].(float64); ok {
		offset = int64(v)
	}
	timeout := 0.0
	if v, ok := body["timeout"].(float64); ok {
		timeout = v
	}
	// allowed_updates, as the real API applies it: the kinds listed only
	// (none listed: messages and the rest, but the fake has only these).
	allowed := map[string]bool{}
	if l, ok := body["allowed_updates"].([]any); ok {
		for _, k := range l {
			allowed[fmt.Sprint(k)] = true
		}
	}
	wanted := func(u map[string]any) bool {
		if len(allowed) == 0 {
			return true
		}
		for k := range u {
			if k != "update_id" && allowed[k] {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(time.Duration(timeout * float64(time.Second)))
	stop := context.AfterFunc(ctx, func() { f.mu.Lock(); f.cond.Broadcast(); f.mu.Unlock() })
	defer stop()
	go func() {
		time.Sleep(time.Until(deadline))
		f.mu.Lock()
		f.cond.Broadcast()
		f.mu.Unlock()
	}()
	f.mu.Lock()
	defer f.mu.Unlock()
	if offset > f.confirmed {
		f.confirmed = offset
	}
	for {
		var out []map[string]any
		for _, u := range f.updates {
			if int64(u["update_id"].(int64)) >= f.confirmed && wanted(u) {
				out = append(out, u)
			}
		}
		if len(out) > 0 || time.Now().After(deadline) || ctx.Err() != nil {
			if out == nil {
				out = []map[string]any{}
			}
			tgOK(w, out)
			return
		}
		f.cond.Wait()
	}
}

// push queues an incoming text message from a user in a private chat
// (chatID == userID) or a group.
func (f *Telegram) Push(userID int64, first string, chatID int64, chatType, text string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	f.updates = append(f.updates, map[string]any{"update_id": f.nextID, "message": map[string]any{
		"message_id": f.nextID * 10, "date": time.Now().Unix(), "text": text,
		"from": map[string]any{"id": userID, "is_bot": false, "first_name": first},
		"chat": map[string]any{"id": chatID, "type": chatType},
	}})
	f.cond.Broadcast()
	return f.nextID
}

// Tap queues a tap on a button (a callback_query) by a user under the
// bot's message messageID (its text text) in a chat.
func (f *Telegram) Tap(userID int64, first string, chatID int64, chatType string, messageID int64, text, data string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	f.updates = append(f.updates, map[string]any{"update_id": f.nextID, "callback_query": map[string]any{
		"id": fmt.Sprint("cq", f.nextID), "data": data, "chat_instance": "1",
		"from": map[string]any{"id": userID, "is_bot": false, "first_name": first},
		"message": map[string]any{"message_id": messageID, "date": time.Now().Unix(), "text": text,
			"from": map[string]any{"id": 999, "is_bot": true, "first_name": "Atrium"},
			"chat": map[string]any{"id": chatID, "type": chatType}},
	}})
	f.cond.Broadcast()
	return f.nextID
}

// tgFormatted reads a body's text as Telegram does under parse_mode HTML
// (https://core.telegram.org/bots/api#html-style): the tags it knows, each
// closed in order, &lt; &gt; &amp; &quot; and numeric references. body's
// "text" becomes what the person sees, its "html" what was sent and its
// "tags" the tags, in order; a text Telegram would refuse is why ("" when
// it reads, or is plain).
func tgFormatted(body map[string]any) string {
	if body["parse_mode"] != "HTML" {
		return ""
	}
	src, _ := body["text"].(string)
	plain, tags, problem := TelegramReads(src)
	if problem != "" {
		return problem
	}
	body["html"], body["text"], body["tags"] = src, plain, tags
	if strings.TrimSpace(plain) == "" {
		return "Text must be non-empty"
	}
	return ""
}

// TelegramReads reads src as Telegram's Bot API reads a parse_mode HTML
// text: what the person sees and the tags, in order; or why Telegram
// refuses it ("can't parse entities: ...").
func TelegramReads(src string) (string, []string, string) {
	var plain strings.Builder
	var tags, open []string
	for i := 0; i < len(src); {
		switch src[i] {
		case '<':
			end := strings.IndexByte(src[i:], '>')
			if end < 0 {
				return "", nil, fmt.Sprintf("Unclosed start tag at byte offset %d", i)
			}
			tag := src[i+1 : i+end]
			name, attrs, _ := strings.Cut(tag, " ")
			if closing := strings.HasPrefix(name, "/"); closing {
				name = name[1:]
				if len(open) == 0 || open[len(open)-1] != name {
					return "", nil, fmt.Sprintf("Unmatched end tag at byte offset %d, expected \"</%s>\", found \"</%s>\"", i, strings.Join(open, ""), name)
				}
				open = open[:len(open)-1]
			} else {
				switch name {
				case "b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "tg-spoiler", "code", "pre", "blockquote":
				case "a":
					if !strings.HasPrefix(attrs, `href="`) {
						return "", nil, fmt.Sprintf("Can't find end of href at byte offset %d", i)
					}
				case "span":
					if attrs != `class="tg-spoiler"` {
						return "", nil, fmt.Sprintf("Tag \"span\" must have class \"tg-spoiler\" at byte offset %d", i)
					}
				default:
					return "", nil, fmt.Sprintf("Unsupported start tag \"%s\" at byte offset %d", name, i)
				}
				if len(open) > 0 && (open[len(open)-1] == "code" || open[len(open)-1] == "pre" && name != "code") {
					return "", nil, fmt.Sprintf("Entity \"%s\" can't contain other entities at byte offset %d", open[len(open)-1], i)
				}
				if name == "blockquote" && slices.Contains(open, "blockquote") {
					return "", nil, fmt.Sprintf("Blockquote entities can't be nested at byte offset %d", i)
				}
				if name == "code" && attrs != "" && (len(open) == 0 || open[len(open)-1] != "pre") {
					return "", nil, fmt.Sprintf("a code block language is allowed only inside pre at byte offset %d", i)
				}
				open = append(open, name)
				tags = append(tags, name)
			}
			i += end + 1
		case '&':
			end := strings.IndexByte(src[i:], ';')
			ref := ""
			if end > 0 {
				ref = src[i+1 : i+end]
			}
			switch {
			case ref == "lt":
				plain.WriteByte('<')
			case ref == "gt":
				plain.WriteByte('>')
			case ref == "amp":
				plain.WriteByte('&')
			case ref == "quot":
				plain.WriteByte('"')
			case strings.HasPrefix(ref, "#"):
				n, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimPrefix(ref, "#"), "x"), map[bool]int{true: 16, false: 10}[strings.HasPrefix(ref, "#x")], 32)
				if err != nil {
					return "", nil, fmt.Sprintf("Unsupported numeric reference at byte offset %d", i)
				}
				plain.WriteRune(rune(n))
			default:
				return "", nil, fmt.Sprintf("Character entity expected to be finished with ';' or unsupported entity at byte offset %d", i)
			}
			i += end + 1
		case '>':
			return "", nil, fmt.Sprintf("Unexpected end tag at byte offset %d", i)
		default:
			plain.WriteByte(src[i])
			i++
		}
	}
	if len(open) > 0 {
		return "", nil, fmt.Sprintf("Can't find end tag corresponding to start tag \"%s\"", open[len(open)-1])
	}
	return plain.String(), tags, ""
}

// Sent is every sendMessage's body, in order, with its message_id (as the
// fake answered it).
func (f *Telegram) Sent() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]map[string]any, len(f.sent))
	for i, m := range f.sent {
		c := map[string]any{"message_id": int64(i + 1 + 5000)}
		for k, v := range m {
			c[k] = v
		}
		out[i] = c
	}
	return out
}

// Edits are the editMessageText bodies, in order.
func (f *Telegram) Edits() []map[string]any {
	return snapshot(&f.mu, &f.edits)
}

// Deletes are the deleteMessage bodies, in order.
func (f *Telegram) Deletes() []map[string]any { return snapshot(&f.mu, &f.deletes) }

// Answers are the answerCallbackQuery bodies, in order.
func (f *Telegram) Answers() []map[string]any {
	return snapshot(&f.mu, &f.answers)
}

// SentTexts are the texts of every sendMessage, in order.
func (f *Telegram) SentTexts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(f.sent))
	for i, m := range f.sent {
		out[i] = fmt.Sprint(m["text"])
	}
	return out
}

// Set changes the fake under its lock.
func (f *Telegram) Set(fn func(f *Telegram)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// SlackAPI is a loopback fake of the Slack Web API methods the adapter
// uses (auth.test, users.info, chat.postMessage, chat.update,
// assistant.threads.setStatus, files.getUploadURLExternal,
// files.completeUploadExternal): form-encoded POSTs to /api/<method>
// carrying the bot token, answered {"ok": ...}. It also serves the upload
// URLs it hands out, and the private URLs of the files AddFile shares.
type SlackAPI struct {
	*httptest.Server
	token string

	mu        sync.Mutex
	posted    []map[string]string
	updated   []map[string]string // chat.update: channel, ts, text, blocks
	responses []map[string]any    // what was posted to a tap's response_url
	fail      int
	calls     []string // "<method> <channel> <thread_ts> <status>", in order
	statusErr string   // setStatus answers this error when set
	sock      *slackSocket

	// files are the private files AddFile shared, by URL path; fileGets
	// the bearer token each GET of one carried ("" for none); noFilesRead:
	// the token lacks files:read.
	files       map[string]slackHosted
	fileGets    []string
	noFilesRead bool
	// upload: files asked for (files.getUploadURLExternal), by id, not
	// yet shared; uploads the shared ones, in order; filesErr the error
	// a files method answers, by method.
	upload   map[string]*SlackUpload
	uploads  []SlackUpload
	asked    int // files.getUploadURLExternal calls
	filesErr map[string]string
}

// slackHosted is a file the fake serves at a private URL.
type slackHosted struct {
	mime string
	data []byte
}

// SlackUpload is a file the adapter sent: what files.getUploadURLExternal
// was told (Filename, Length), the bytes posted to the upload URL, and
// where files.completeUploadExternal shared it.
type SlackUpload struct {
	ID, Filename string
	Length       int
	Data         []byte
	Uploaded     bool // the upload URL got its bytes
	Title        string
	Channel      string
	ThreadTS     string
	Comment      string // initial_comment
}

// Updated is every chat.update received: channel, ts, text, blocks.
func (f *SlackAPI) Updated() []map[string]string {
	return snapshot(&f.mu, &f.updated)
}

// Responses are the bodies posted to the response_urls of taps
// (ResponseURL), in order.
func (f *SlackAPI) Responses() []map[string]any {
	return snapshot(&f.mu, &f.responses)
}

// ResponseURL is a tap's response_url on the fake.
func (f *SlackAPI) ResponseURL() string {
	return f.URL + "/api/response/" + strconv.FormatInt(slackSeq.Add(1), 10)
}

// Calls lists the chat.postMessage, assistant.threads.setStatus and
// files.completeUploadExternal calls in the order they came, as
// "postMessage CHANNEL THREAD", "setStatus CHANNEL THREAD STATUS" and
// "upload CHANNEL THREAD TITLE".
func (f *SlackAPI) Calls() []string {
	return snapshot(&f.mu, &f.calls)
}

// RefuseStatus has assistant.threads.setStatus answer {"ok": false,
// "error": err} ("" accepts again).
func (f *SlackAPI) RefuseStatus(err string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statusErr = err
}

// Posted is every chat.postMessage received: channel, text, thread_ts.
func (f *SlackAPI) Posted() []map[string]string {
	return snapshot(&f.mu, &f.posted)
}

func NewSlackAPI(t testing.TB, token string) *SlackAPI {
	f := &SlackAPI{token: token}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func slackJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (f *SlackAPI) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/api/response/") { // a tap's response_url: JSON, no token
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.responses = append(f.responses, body)
		f.mu.Unlock()
		w.WriteHeader(http.StatusOK)
		return
	}
	if r.URL.Path == "/socket" && f.sock != nil {
		f.serveSocket(w, r)
		return
	}
	switch {
	case strings.HasPrefix(r.URL.Path, "/files-pri/"):
		f.serveFile(w, r)
		return
	case r.URL.Path == "/signin":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, "<!DOCTYPE html><html><head><title>Sign in | Slack</title></head><body>Sign in to Acme</body></html>")
		return
	case strings.HasPrefix(r.URL.Path, "/upload/v1/"):
		f.receiveUpload(w, r)
		return
	}
	if err := r.ParseForm(); err != nil {
		slackJSON(w, map[string]any{"ok": false, "error": "invalid_form_data"})
		return
	}
	tok := r.Form.Get("token")
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		tok = strings.TrimPrefix(h, "Bearer ")
	}
	if r.URL.Path == "/api/apps.connections.open" {
		f.open(w, tok)
		return
	}
	if tok != f.token {
		slackJSON(w, map[string]any{"ok": false, "error": "invalid_auth"})
		return
	}
	switch strings.TrimPrefix(r.URL.Path, "/api/") {
	case "auth.test":
		slackJSON(w, map[string]any{"ok": true, "url": "https://acme.slack.com/", "team": "Acme", "user": "atrium", "team_id": "T1", "user_id": "UBOT", "bot_id": "B1"})
	case "users.info":
		id := r.Form.Get("user")
		slackJSON(w, map[string]any{"ok": true, "user": map[string]any{"id": id, "name": strings.ToLower(id), "real_name": "Real " + id,
			"profile": map[string]any{"display_name": "Ada " + id}}})
	case "chat.postMessage":
		f.mu.Lock()
		if f.fail > 0 {
			f.fail--
			f.mu.Unlock()
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		if r.Form.Get("channel") == "CGONE" {
			f.mu.Unlock()
			slackJSON(w, map[string]any{"ok": false, "error": "channel_not_found"})
			return
		}
		m := map[string]string{"channel": r.Form.Get("channel"), "text": r.Form.Get("text"), "thread_ts": r.Form.Get("thread_ts"),
			"blocks": r.Form.Get("blocks")}
		f.posted = append(f.posted, m)
		f.calls = append(f.calls, strings.TrimSpace("postMessage "+m["channel"]+" "+m["thread_ts"]))
		ts := fmt.Sprintf("1700000000.%06d", len(f.posted))
		f.mu.Unlock()
		slackJSON(w, map[string]any{"ok": true, "channel": m["channel"], "ts": ts})
	case "chat.delete":
		f.mu.Lock()
		f.calls = append(f.calls, "delete "+r.Form.Get("channel")+" "+r.Form.Get("ts"))
		f.mu.Unlock()
		slackJSON(w, map[string]any{"ok": true, "channel": r.Form.Get("channel"), "ts": r.Form.Get("ts")})
	case "chat.update":
		f.mu.Lock()
		f.updated = append(f.updated, map[string]string{"channel": r.Form.Get("channel"), "ts": r.Form.Get("ts"), "text": r.Form.Get("text"),
			"blocks": r.Form.Get("blocks")})
		f.mu.Unlock()
		slackJSON(w, map[string]any{"ok": true, "channel": r.Form.Get("channel"), "ts": r.Form.Get("ts"), "text": r.Form.Get("text")})
	case "assistant.threads.setStatus":
		f.mu.Lock()
		f.calls = append(f.calls, fmt.Sprintf("setStatus %s %s %s", r.Form.Get("channel_id"), r.Form.Get("thread_ts"), r.Form.Get("status")))
		refuse := f.statusErr
		f.mu.Unlock()
		switch {
		case refuse != "":
			slackJSON(w, map[string]any{"ok": false, "error": refuse})
		case r.Form.Get("channel_id") == "" || r.Form.Get("thread_ts") == "" || !r.Form.Has("status"):
			slackJSON(w, map[string]any{"ok": false, "error": "invalid_arguments"})
		default:
			slackJSON(w, map[string]any{"ok": true})
		}
	case "files.getUploadURLExternal":
		f.getUploadURL(w, r)
	case "files.completeUploadExternal":
		f.completeUpload(w, r)
	default:
		slackJSON(w, map[string]any{"ok": false, "error": "unknown_method"})
	}
}

// AddFile hosts a file a person shares (name, its type, its bytes) and
// returns its file object, as a message event carries it: its private
// URLs answer the bot token alone; anything else gets the sign-in page.
func (f *SlackAPI) AddFile(name, mimeType string, data []byte) map[string]any {
	id := fmt.Sprintf("F%08d", slackSeq.Add(1))
	base := "/files-pri/T1-" + id + "/"
	f.mu.Lock()
	if f.files == nil {
		f.files = map[string]slackHosted{}
	}
	f.files[base+name] = slackHosted{mime: mimeType, data: data}
	f.files[base+"download/"+name] = slackHosted{mime: mimeType, data: data}
	f.mu.Unlock()
	ext := ""
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		ext = name[i+1:]
	}
	return map[string]any{"id": id, "created": time.Now().Unix(), "timestamp": time.Now().Unix(), "name": name, "title": name,
		"mimetype": mimeType, "filetype": ext, "pretty_type": strings.ToUpper(ext), "user": "U1", "user_team": "T1", "editable": false,
		"size": len(data), "mode": "hosted", "is_external": false, "external_type": "", "is_public": false, "public_url_shared": false,
		"url_private": f.URL + base + url.PathEscape(name), "url_private_download": f.URL + base + "download/" + url.PathEscape(name),
		"permalink": "https://acme.slack.com/files/U1/" + id + "/" + name}
}

// RefuseFileReads has the private file URLs answer the sign-in page even
// to the bot token, as Slack does when the app lacks files:read.
func (f *SlackAPI) RefuseFileReads(refuse bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noFilesRead = refuse
}

// FileGets are the bearer tokens the GETs of private file URLs carried,
// in order ("" for a GET without one).
func (f *SlackAPI) FileGets() []string { return snapshot(&f.mu, &f.fileGets) }

// serveFile serves a private file URL: the bytes to the bot token (with
// files:read), else a redirect to the sign-in page, as Slack answers.
func (f *SlackAPI) serveFile(w http.ResponseWriter, r *http.Request) {
	tok := ""
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		tok = strings.TrimPrefix(h, "Bearer ")
	}
	f.mu.Lock()
	f.fileGets = append(f.fileGets, tok)
	file, ok := f.files[r.URL.Path]
	refuse := f.noFilesRead
	f.mu.Unlock()
	switch {
	case r.Method != http.MethodGet:
		w.WriteHeader(http.StatusMethodNotAllowed)
	case tok != f.token || refuse:
		http.Redirect(w, r, "/signin?redir="+url.QueryEscape(r.URL.Path), http.StatusFound)
	case !ok:
		http.NotFound(w, r)
	default:
		w.Header().Set("Content-Type", file.mime)
		w.Header().Set("Content-Length", strconv.Itoa(len(file.data)))
		_, _ = w.Write(file.data)
	}
}

// RefuseFiles has method (files.getUploadURLExternal,
// files.completeUploadExternal) answer {"ok": false, "error": err} (""
// accepts again): missing_scope is a token without files:write.
func (f *SlackAPI) RefuseFiles(method, err string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.filesErr == nil {
		f.filesErr = map[string]string{}
	}
	f.filesErr[method] = err
}

// Uploads are the files shared by files.completeUploadExternal, in order.
func (f *SlackAPI) Uploads() []SlackUpload { return snapshot(&f.mu, &f.uploads) }

// UploadURLsAsked counts the files.getUploadURLExternal calls.
func (f *SlackAPI) UploadURLsAsked() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked
}

// getUploadURL answers files.getUploadURLExternal: an upload URL on the
// fake for a file of that name and length.
func (f *SlackAPI) getUploadURL(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked++
	if e := f.filesErr["files.getUploadURLExternal"]; e != "" {
		slackJSON(w, map[string]any{"ok": false, "error": e})
		return
	}
	n, err := strconv.Atoi(r.Form.Get("length"))
	name := r.Form.Get("filename")
	if err != nil || n <= 0 || name == "" {
		slackJSON(w, map[string]any{"ok": false, "error": "missing_argument"})
		return
	}
	id := fmt.Sprintf("F%08d", slackSeq.Add(1))
	if f.upload == nil {
		f.upload = map[string]*SlackUpload{}
	}
	f.upload[id] = &SlackUpload{ID: id, Filename: name, Length: n}
	slackJSON(w, map[string]any{"ok": true, "upload_url": f.URL + "/upload/v1/" + id, "file_id": id})
}

// receiveUpload takes a file's bytes at its upload URL, raw or as a
// multipart form's file, as Slack's upload service does.
func (f *SlackAPI) receiveUpload(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/upload/v1/")
	var data []byte
	var err error
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		var part io.ReadCloser
		if part, _, err = r.FormFile("file"); err == nil {
			data, err = io.ReadAll(part)
			part.Close()
		}
	} else {
		data, err = io.ReadAll(r.Body)
	}
	f.mu.Lock()
	u, ok := f.upload[id]
	if ok && err == nil && r.Method == http.MethodPost {
		u.Data, u.Uploaded = data, true
	}
	f.mu.Unlock()
	switch {
	case r.Method != http.MethodPost:
		w.WriteHeader(http.StatusMethodNotAllowed)
	case !ok:
		http.NotFound(w, r)
	case err != nil:
		w.WriteHeader(http.StatusBadRequest)
	default:
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "OK - %d", len(data))
	}
}

// completeUpload answers files.completeUploadExternal: each file listed
// must have had its bytes; each is shared in channel_id (thread_ts).
func (f *SlackAPI) completeUpload(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e := f.filesErr["files.completeUploadExternal"]; e != "" {
		slackJSON(w, map[string]any{"ok": false, "error": e})
		return
	}
	var files []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	if err := json.Unmarshal([]byte(r.Form.Get("files")), &files); err != nil || len(files) == 0 {
		slackJSON(w, map[string]any{"ok": false, "error": "invalid_arguments"})
		return
	}
	channel := r.Form.Get("channel_id")
	if channel == "CGONE" {
		slackJSON(w, map[string]any{"ok": false, "error": "channel_not_found"})
		return
	}
	var out []map[string]any
	for _, fl := range files {
		u, ok := f.upload[fl.ID]
		if !ok || !u.Uploaded {
			slackJSON(w, map[string]any{"ok": false, "error": "file_not_found"})
			return
		}
		out = append(out, map[string]any{"id": fl.ID, "title": fl.Title})
	}
	for _, fl := range files {
		u := f.upload[fl.ID]
		delete(f.upload, fl.ID)
		u.Title, u.Channel, u.ThreadTS, u.Comment = fl.Title, channel, r.Form.Get("thread_ts"), r.Form.Get("initial_comment")
		f.uploads = append(f.uploads, *u)
		f.calls = append(f.calls, strings.TrimSpace(fmt.Sprintf("upload %s %s %s", channel, u.ThreadTS, fl.Title)))
	}
	slackJSON(w, map[string]any{"ok": true, "files": out})
}

// Texts are the texts posted, in order.
func (f *SlackAPI) Texts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(f.posted))
	for i, m := range f.posted {
		out[i] = m["text"]
	}
	return out
}

// SlackEvent posts one Events API request to the adapter's endpoint, signed
// as Slack signs it (v0, HMAC-SHA256 over "v0:<ts>:<body>").
func SlackEvent(t testing.TB, url, secret string, body any, tamper bool) int {
	t.Helper()
	raw, _ := json.Marshal(body)
	sent := raw
	if tamper { // signed as it was, sent otherwise
		sent = append(raw[:len(raw)-1:len(raw)-1], []byte(`,"x":1}`)...)
	}
	return postSlack(t, url, secret, "application/json", raw, sent)
}

// postSlack posts sent to url signed as Slack signs signed (v0,
// HMAC-SHA256 over "v0:<ts>:<body>"), and returns the status.
func postSlack(t testing.TB, url, secret, contentType string, signed, sent []byte) int {
	t.Helper()
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "v0:%s:%s", ts, signed)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(sent)))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(m.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

var slackSeq atomic.Int64

// snapshot is a copy of *s, read under mu.
func snapshot[T any](mu *sync.Mutex, s *[]T) []T {
	mu.Lock()
	defer mu.Unlock()
	return append([]T(nil), *s...)
}

// SlackTap posts one Interactivity request to the adapter's endpoint, as
// Slack posts a tap on a button (block_actions): form-encoded payload=...,
// signed; it returns the status.
func SlackTap(t testing.TB, endpoint, secret string, payload map[string]any) int {
	t.Helper()
	raw, _ := json.Marshal(payload)
	body := []byte("payload=" + url.QueryEscape(string(raw)))
	return postSlack(t, endpoint, secret, "application/x-www-form-urlencoded", body, body)
}

// SlackBlockAction is a block_actions payload: user tapped the button
// whose value is value under the message at ts in channel (in thread,
// when not ""), whose text is text; the tap's response_url is responseURL.
func SlackBlockAction(user, channel, ts, thread, text, actionID, value, responseURL string) map[string]any {
	container := map[string]any{"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": false}
	if thread != "" {
		container["thread_ts"] = thread
	}
	return map[string]any{"type": "block_actions", "user": map[string]any{"id": user, "username": strings.ToLower(user)},
		"api_app_id": "A1", "team": map[string]any{"id": "T1"}, "container": container, "channel": map[string]any{"id": channel},
		"trigger_id": "trig" + ts, "response_url": responseURL,
		"message": map[string]any{"type": "message", "ts": ts, "text": text, "thread_ts": thread},
		"actions": []any{map[string]any{"action_id": actionID, "block_id": "b1", "type": "button", "value": value,
			"action_ts": fmt.Sprintf("1700000200.%06d", slackSeq.Add(1))}}}
}

// SlackMessage is a message event callback from user in channel.
func SlackMessage(user, channel, channelType, text string) map[string]any {
	n := slackSeq.Add(1)
	ts := fmt.Sprintf("1700000100.%06d", n)
	return map[string]any{"token": "verification-token-unused", "team_id": "T1", "api_app_id": "A1", "type": "event_callback",
		"event_id": fmt.Sprintf("Ev%06d", n), "event_time": time.Now().Unix(),
		"event": map[string]any{"type": "message", "user": user, "text": text, "ts": ts, "channel": channel, "channel_type": channelType, "event_ts": ts}}
}

// SlackFileShare is a message event callback (subtype file_share) from
// user in channel sharing files (AddFile's objects) with text ("" for
// files alone).
func SlackFileShare(user, channel, channelType, text string, files ...map[string]any) map[string]any {
	ev := SlackMessage(user, channel, channelType, text)
	e := ev["event"].(map[string]any)
	e["subtype"], e["upload"], e["display_as_bot"] = "file_share", false, false
	list := make([]any, len(files))
	for i, fl := range files {
		list[i] = fl
	}
	e["files"] = list
	return ev
}

// SlackReaction is a reaction_added (or, added false, reaction_removed)
// event callback: user reacted with name to the message at ts in channel,
// which itemUser wrote.
func SlackReaction(user, name, channel, ts, itemUser string, added bool) map[string]any {
	n := slackSeq.Add(1)
	kind := "reaction_removed"
	if added {
		kind = "reaction_added"
	}
	ets := fmt.Sprintf("1700000200.%06d", n)
	return map[string]any{"token": "verification-token-unused", "team_id": "T1", "api_app_id": "A1", "type": "event_callback",
		"event_id": fmt.Sprintf("Ev%06d", n), "event_time": time.Now().Unix(),
		"event": map[string]any{"type": kind, "user": user, "reaction": name, "item_user": itemUser,
			"item": map[string]any{"type": "message", "channel": channel, "ts": ts}, "event_ts": ets}}
}

var tgCommand = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

// Commands are the bot's command menu as setMyCommands last set it.
func (f *Telegram) Commands() []map[string]any { return snapshot(&f.mu, &f.commands) }
