package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// TelegramOptions configure the Telegram adapter.
type TelegramOptions struct {
	Token       string        // the bot token (from the environment variable the config names)
	TokenEnv    string        // that variable's name, for messages
	BaseURL     string        // default https://api.telegram.org (a self-hosted Bot API server, or a test's fake)
	PollTimeout time.Duration // long-polling timeout (default 30 s)
	RetryBase   time.Duration // backoff after a failed poll (default 1 s, doubling up to RetryMax)
	RetryMax    time.Duration // default 1 min
	Client      *http.Client
}

// Telegram talks to the Telegram Bot API over HTTP: getUpdates long polling
// in, sendMessage out, sendChatAction for typing, editMessageText for
// edits. The token is part of every URL: errors are scrubbed of it.
type Telegram struct {
	o          TelegramOptions
	menuSource // the commands, for the bot's command menu
}

// NewTelegram builds the adapter.
func NewTelegram(o TelegramOptions) *Telegram {
	if o.BaseURL == "" {
		o.BaseURL = "https://api.telegram.org"
	}
	o.BaseURL = strings.TrimRight(o.BaseURL, "/")
	if o.PollTimeout <= 0 {
		o.PollTimeout = 30 * time.Second
	}
	if o.RetryBase <= 0 {
		o.RetryBase = time.Second
	}
	if o.RetryMax <= 0 {
		o.RetryMax = time.Minute
	}
	if o.TokenEnv == "" {
		o.TokenEnv = "TELEGRAM_BOT_TOKEN"
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	return &Telegram{o: o}
}

// Platform implements Adapter.
func (t *Telegram) Platform() string { return "telegram" }

// tgResponse is the Bot API's envelope.
type tgResponse struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  *struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

type tgUser struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	Username  string `json:"username"`
}

type tgMessage struct {
	MessageID       int64  `json:"message_id"`
	MessageThreadID int64  `json:"message_thread_id"`
	From            tgUser `json:"from"`
	Chat            struct {
		ID   int64  `json:"id"`
		Type string `json:"type"`
	} `json:"chat"`
	Date           int64      `json:"date"`
	Text           string     `json:"text"`
	Caption        string     `json:"caption"`
	ReplyToMessage *tgMessage `json:"reply_to_message"`
	IsTopicMessage bool       `json:"is_topic_message"`
}

type tgUpdate struct {
	UpdateID      int64      `json:"update_id"`
	Message       *tgMessage `json:"message"`
	CallbackQuery *struct {
		ID      string     `json:"id"`
		From    tgUser     `json:"from"`
		Message *tgMessage `json:"message"`
		Data    string     `json:"data"`
	} `json:"callback_query"`
}

// call POSTs a JSON request to a Bot API method.
func (t *Telegram) call(ctx context.Context, method string, body any, out any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return Permanent(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.o.BaseURL+"/bot"+t.o.Token+"/"+method, bytes.NewReader(raw))
	if err != nil {
		return Permanent(scrub(err, t.o.Token))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.o.Client.Do(req)
	if err != nil {
		return scrub(fmt.Errorf("telegram %s: %w", method, err), t.o.Token)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("telegram %s: %w", method, err)
	}
	var env tgResponse
	if err := json.Unmarshal(data, &env); err != nil {
		return fmt.Errorf("telegram %s: HTTP %d, not a Bot API answer", method, resp.StatusCode)
	}
	if !env.OK {
		e := fmt.Errorf("telegram %s: %d %s", method, env.ErrorCode, env.Description)
		switch {
		case env.ErrorCode == http.StatusTooManyRequests:
			after := 5 * time.Second
			if env.Parameters != nil && env.Parameters.RetryAfter > 0 {
				after = time.Duration(env.Parameters.RetryAfter) * time.Second
			}
			return RetryAfter(e, after)
		case env.ErrorCode == http.StatusUnauthorized || env.ErrorCode == http.StatusNotFound:
			return Permanent(fmt.Errorf("%w (is %s the bot's token?)", e, t.o.TokenEnv))
		case env.ErrorCode >= 400 && env.ErrorCode < 500 && env.ErrorCode != http.StatusConflict:
			return Permanent(e)
		}
		return e
	}
	if out != nil {
		if err := json.Unmarshal(env.Result, out); err != nil {
			return fmt.Errorf("telegram %s: malformed result: %w", method, err)
		}
	}
	return nil
}

// Run implements Adapter: getMe, then getUpdates long polling.
func (t *Telegram) Run(ctx context.Context, in Inbox, report Reporter) error {
	if t.o.Token == "" {
		return errMissingSecret("telegram", t.o.TokenEnv)
	}
	var me tgUser
	for attempt := 1; ; attempt++ {
		err := t.call(ctx, "getMe", struct{}{}, &me)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		if IsPermanent(err) {
			return err
		}
		report(Retrying, "cannot reach the Bot API", err)
		if !sleep(ctx, backoff(t.o.RetryBase, t.o.RetryMax, attempt)) {
			return nil
		}
	}
	report(Connected, "@"+me.Username+t.setCommands(ctx), nil)
	var offset int64
	failures := 0
	for ctx.Err() == nil {
		var updates []tgUpdate
		body := map[string]any{"timeout": int(t.o.PollTimeout / time.Second), "allowed_updates": []string{"message", "callback_query"}}
		if offset > 0 {
			body["offset"] = offset
		}
		pctx, cancel := context.WithTimeout(ctx, t.o.PollTimeout+15*time.Second)
		err := t.call(pctx, "getUpdates", body, &updates)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			failures++
			if IsPermanent(err) && failures > 3 {
				return err
			}
			report(Retrying, "polling failed", err)
			delay := backoff(t.o.RetryBase, t.o.RetryMax, failures)
			if ra, ok := retryDelay(err); ok {
				delay = ra
			}
			if !sleep(ctx, delay) {
				return nil
			}
			continue
		}
		if failures > 0 {
			failures = 0
			report(Connected, "@"+me.Username, nil)
		}
		for _, u := range updates {
			offset = max(offset, u.UpdateID+1)
			if q := u.CallbackQuery; q != nil {
				// A tap on a button under one of our messages (an approval's).
				if q.From.IsBot || q.Message == nil {
					continue
				}
				msg := Inbound{EventID: strconv.FormatInt(u.UpdateID, 10), UserID: strconv.FormatInt(q.From.ID, 10), UserName: tgName(q.From),
					ChatID: strconv.FormatInt(q.Message.Chat.ID, 10), ChatType: tgChatType(q.Message.Chat.Type), At: time.Now().UTC(),
					Tap: &Tap{ID: q.ID, MessageID: strconv.FormatInt(q.Message.MessageID, 10), MessageText: q.Message.Text, Data: q.Data}}
				if q.Message.IsTopicMessage && q.Message.MessageThreadID != 0 {
					msg.ThreadID = strconv.FormatInt(q.Message.MessageThreadID, 10)
				}
				in(msg)
				continue
			}
			m := u.Message
			if m == nil || m.From.IsBot {
				continue
			}
			text := m.Text
			if text == "" {
				text = m.Caption
			}
			if strings.TrimSpace(text) == "" {
				continue
			}
			msg := Inbound{EventID: strconv.FormatInt(u.UpdateID, 10), MessageID: strconv.FormatInt(m.MessageID, 10), Text: text,
				UserID: strconv.FormatInt(m.From.ID, 10), UserName: tgName(m.From), ChatID: strconv.FormatInt(m.Chat.ID, 10),
				ChatType: tgChatType(m.Chat.Type), ReplyTo: strconv.FormatInt(m.MessageID, 10), At: time.Unix(m.Date, 0).UTC()}
			if m.IsTopicMessage && m.MessageThreadID != 0 {
				msg.ThreadID = strconv.FormatInt(m.MessageThreadID, 10)
			}
			in(msg)
		}
	}
	return nil
}

func tgName(u tgUser) string {
	name := strings.TrimSpace(u.FirstName + " " + u.LastName)
	if name == "" {
		name = u.Username
	}
	return name
}

func tgChatType(t string) string {
	switch t {
	case "private":
		return "dm"
	case "group", "supergroup":
		return "group"
	case "channel":
		return "channel"
	}
	return t
}

// tgLimit is the Bot API's limit on one message's text.
const tgLimit = 4096

// Send implements Adapter; a text over the platform's limit goes as several
// messages (the id returned is the last one's).
func (t *Telegram) Send(ctx context.Context, m Message) (string, error) {
	var id string
	parts := splitText(m.Text, tgLimit)
	for i, part := range parts {
		body := map[string]any{"chat_id": m.ChatID, "text": part}
		if m.ThreadID != "" {
			body["message_thread_id"] = m.ThreadID
		}
		if i == len(parts)-1 && len(m.Buttons) > 0 {
			body["reply_markup"] = tgKeyboard(m.Buttons)
		}
		// The message is sent once the API said ok: a result we cannot
		// read does not make it a failure (a retry would send it twice).
		var raw json.RawMessage
		if err := t.call(ctx, "sendMessage", body, &raw); err != nil {
			return "", err
		}
		var sent struct {
			MessageID int64 `json:"message_id"`
		}
		_ = json.Unmarshal(raw, &sent)
		id = strconv.FormatInt(sent.MessageID, 10)
	}
	return id, nil
}

// tgMenuMax is how many commands the menu gets, as the familiar gateway
// caps it (Telegram takes 100, but a large payload can fail).
const tgMenuMax = 60

// tgMenuFirst are listed first when the menu must be cut.
var tgMenuFirst = []string{"new", "stop", "approve", "deny", "help", "status", "retry", "undo", "compress", "title", "sethome"}

var tgCommandName = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

// setCommands sets the bot's command menu (the / button) to the
// commands, the familiar gateway's first, at most 60; what is said after
// the connection's detail.
func (t *Telegram) setCommands(ctx context.Context) string {
	entries, ok := t.menu(tgCommandName, tgMenuFirst, tgMenuMax)
	if !ok {
		return ""
	}
	menu := make([]map[string]string, 0, len(entries))
	for _, e := range entries {
		menu = append(menu, map[string]string{"command": e.name, "description": clipRunes(e.description, 256)})
	}
	if err := t.call(ctx, "setMyCommands", map[string]any{"commands": menu}, nil); err != nil {
		return "; its command menu was not set (" + clipRunes(err.Error(), 200) + "): typed commands still work"
	}
	return fmt.Sprintf("; %d commands in its menu", len(menu))
}

// tgKeyboard is buttons as an inline keyboard (callback_data: at most 64
// bytes, which an approval's are).
func tgKeyboard(rows [][]Button) map[string]any {
	kb := make([][]map[string]string, len(rows))
	for i, row := range rows {
		for _, b := range row {
			kb[i] = append(kb[i], map[string]string{"text": b.Label, "callback_data": b.Data})
		}
	}
	return map[string]any{"inline_keyboard": kb}
}

// AnswerTap implements Tapper: answerCallbackQuery, which also stops the
// button's spinner.
func (t *Telegram) AnswerTap(ctx context.Context, id, notice string, alert bool) error {
	body := map[string]any{"callback_query_id": id}
	if notice != "" {
		body["text"], body["show_alert"] = clipRunes(notice, 200), alert
	}
	return t.call(ctx, "answerCallbackQuery", body, nil)
}

// Typing implements Typer.
func (t *Telegram) Typing(ctx context.Context, chatID, threadID string) error {
	body := map[string]any{"chat_id": chatID, "action": "typing"}
	if threadID != "" {
		body["message_thread_id"] = threadID
	}
	return t.call(ctx, "sendChatAction", body, nil)
}

// Edit implements Editor.
func (t *Telegram) Edit(ctx context.Context, chatID, messageID, text string) error {
	return t.call(ctx, "editMessageText", map[string]any{"chat_id": chatID, "message_id": messageID,
		"text": clipRunes(text, tgLimit)}, nil)
}

// Delete implements Deleter (deleteMessage).
func (t *Telegram) Delete(ctx context.Context, chatID, messageID string) error {
	return t.call(ctx, "deleteMessage", map[string]any{"chat_id": chatID, "message_id": messageID}, nil)
}

// splitText cuts text into parts of at most limit characters, at a line
// break or a space where it can.
func splitText(text string, limit int) []string {
	var out []string
	for utf8.RuneCountInString(text) > limit {
		r := []rune(text)
		cut := limit
		for i := limit; i > limit/2; i-- {
			if r[i] == '\n' || r[i] == ' ' {
				cut = i
				break
			}
		}
		out = append(out, string(r[:cut]))
		text = strings.TrimLeft(string(r[cut:]), " \n")
	}
	if text != "" || len(out) == 0 {
		out = append(out, text)
	}
	return out
}
