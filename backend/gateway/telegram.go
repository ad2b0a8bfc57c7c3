package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"atrium/backend/markup"
)

// TelegramOptions configure the Telegram adapter.
type TelegramOptions struct {
	Token       string        // the bot token (from the environment variable the config names)
	TokenEnv    string        // that variable's name, for messages
	BaseURL     string        // default https://api.telegram.org (a self-hosted Bot API server, or a test's fake)
	PollTimeout time.Duration // long-polling timeout (default 30 s)
	RetryBase   time.Duration // backoff after a failed poll (default 1 s, doubling up to RetryMax)
	RetryMax    time.Duration // default 1 min
	// AlbumWait is how long an album's parts are waited for after the
	// last one came (default 1 s): its photos are one message.
	AlbumWait time.Duration
	// TextBatch gathers a person's quick text messages (zero: none are).
	TextBatch TextBatch
	Client    *http.Client
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
	if o.AlbumWait <= 0 {
		o.AlbumWait = time.Second
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
	Date      int64    `json:"date"`
	Text      string   `json:"text"`
	Caption   string   `json:"caption"`
	Photo     []tgFile `json:"photo"` // the sizes of one photo, smallest first
	Document  *tgFile  `json:"document"`
	Audio     *tgFile  `json:"audio"`
	Voice     *tgFile  `json:"voice"`
	Video     *tgFile  `json:"video"`
	VideoNote *tgFile  `json:"video_note"`
	Animation *tgFile  `json:"animation"`
	Sticker   *struct {
		tgFile
		FileUniqueID string `json:"file_unique_id"`
		Emoji        string `json:"emoji"`
		SetName      string `json:"set_name"`
		IsAnimated   bool   `json:"is_animated"`
		IsVideo      bool   `json:"is_video"`
	} `json:"sticker"`
	ReplyToMessage *tgMessage `json:"reply_to_message"`
	IsTopicMessage bool       `json:"is_topic_message"`
	MediaGroupID   string     `json:"media_group_id"` // the album a photo or a video is part of
}

// tgFile is what the Bot API says of a file in a message (a PhotoSize,
// Document, Audio, Voice, Video, VideoNote or Animation), and getFile's
// answer (its file_path).
type tgFile struct {
	FileID   string `json:"file_id"`
	FileName string `json:"file_name"`
	MimeType string `json:"mime_type"`
	FileSize int64  `json:"file_size"`
	Duration int    `json:"duration"`
	FilePath string `json:"file_path"`
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
	return t.do(req, method, out)
}

// do sends a Bot API request and reads its answer into out.
func (t *Telegram) do(req *http.Request, method string, out any) error {
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
		if resp.StatusCode == http.StatusRequestEntityTooLarge {
			return Permanent(fmt.Errorf("telegram %s: HTTP 413: larger than Telegram takes from a bot", method))
		}
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
		case env.ErrorCode == http.StatusRequestEntityTooLarge:
			return Permanent(fmt.Errorf("%w (larger than Telegram takes from a bot)", e))
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
	// An album's parts are one message, gathered until none came for
	// AlbumWait (it takes the first part's ids, every part's files, and
	// whichever caption it has), as the familiar gateway gathers them; a
	// person's quick text messages are one too (TextBatch).
	albums, texts := newGatherer(in), newTexts(in, t.o.TextBatch)
	defer albums.flush()
	defer texts.flush()
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
				texts.deliver(msg)
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
			files := t.files(m)
			if strings.TrimSpace(text) == "" && len(files) == 0 {
				continue
			}
			msg := Inbound{EventID: strconv.FormatInt(u.UpdateID, 10), MessageID: strconv.FormatInt(m.MessageID, 10), Text: text,
				UserID: strconv.FormatInt(m.From.ID, 10), UserName: tgName(m.From), ChatID: strconv.FormatInt(m.Chat.ID, 10),
				ChatType: tgChatType(m.Chat.Type), ReplyTo: strconv.FormatInt(m.MessageID, 10), At: time.Unix(m.Date, 0).UTC(), Files: files}
			if m.IsTopicMessage && m.MessageThreadID != 0 {
				msg.ThreadID = strconv.FormatInt(m.MessageThreadID, 10)
			}
			if m.MediaGroupID != "" {
				texts.handNow(textKey(msg))
				albums.add(msg.ChatID+"/"+m.MediaGroupID, msg, mergeAlbum, t.o.AlbumWait)
				continue
			}
			texts.deliver(msg)
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
	parts := closeFences(splitText(m.Text, tgLimit))
	for i, part := range parts {
		body := map[string]any{"chat_id": m.ChatID}
		if m.ThreadID != "" {
			body["message_thread_id"] = m.ThreadID
		}
		if i == len(parts)-1 && len(m.Buttons) > 0 {
			body["reply_markup"] = tgKeyboard(m.Buttons)
		}
		// The message is sent once the API said ok: a result we cannot
		// read does not make it a failure (a retry would send it twice).
		var raw json.RawMessage
		if err := t.formatted(ctx, "sendMessage", body, part, m.Markdown, &raw); err != nil {
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

// formatted calls method with body and text: the Markdown a model wrote
// (markdown) in Telegram's HTML (parse_mode HTML), or as it is when
// Telegram cannot read that (a "can't parse entities" answer), so a reply
// is never lost to its markup; Atrium's own words as they are.
func (t *Telegram) formatted(ctx context.Context, method string, body map[string]any, text string, markdown bool, out any) error {
	html := ""
	if markdown {
		html = markup.TelegramHTML(text)
	}
	if html != "" {
		body["text"], body["parse_mode"] = html, "HTML"
		err := t.call(ctx, method, body, out)
		if err == nil || !strings.Contains(err.Error(), "can't parse entities") {
			return err
		}
		slog.Warn("telegram could not read a message's markup; sent as plain text", "method", method, "error", err)
		delete(body, "parse_mode")
	}
	body["text"] = text
	return t.call(ctx, method, body, out)
}

// closeFences closes a code block a split leaves open at the end of a
// part, and opens it again (with its language) at the next part's start.
func closeFences(parts []string) []string {
	open := ""
	for i, p := range parts {
		if open != "" {
			p = open + "\n" + p
		}
		open = ""
		for _, line := range strings.Split(p, "\n") {
			if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") {
				if open == "" {
					open = t
				} else {
					open = ""
				}
			}
		}
		if open != "" {
			p += "\n```"
		}
		parts[i] = p
	}
	return parts
}

// Delete implements Deleter (deleteMessage).
func (t *Telegram) Delete(ctx context.Context, chatID, messageID string) error {
	return t.call(ctx, "deleteMessage", map[string]any{"chat_id": chatID, "message_id": messageID}, nil)
}

// splitText cuts text into parts of at most limit characters, at a line
// break where it can (a line of code stays whole), else at a space.
func splitText(text string, limit int) []string {
	var out []string
	for utf8.RuneCountInString(text) > limit {
		r := []rune(text)
		// At the last line break in the second half, else the last space
		// there, else at the limit: a line of code stays whole.
		cut, space := limit, 0
		for i := limit; i > limit/2; i-- {
			if r[i] == '\n' {
				cut, space = i, -1
				break
			}
			if r[i] == ' ' && space == 0 {
				space = i
			}
		}
		if space > 0 {
			cut = space
		}
		out = append(out, string(r[:cut]))
		text = strings.TrimLeft(string(r[cut:]), " \n")
	}
	if text != "" || len(out) == 0 {
		out = append(out, text)
	}
	return out
}

// files are the files of a message: a photo (its largest size), a
// document, an audio file, a voice message, a video, a round video or an
// animation. Telegram names only documents, audio, videos and animations;
// the others get a name from their kind and message.
func (t *Telegram) files(m *tgMessage) []InFile {
	var out []InFile
	add := func(f *tgFile, kind, name, mimeType string) {
		if f == nil || f.FileID == "" {
			return
		}
		if f.FileName != "" {
			name = f.FileName
		}
		if f.MimeType != "" {
			mimeType = f.MimeType
		}
		if kind == "" {
			kind = kindOf(mimeType, name)
		}
		id := f.FileID
		out = append(out, InFile{Name: name, MIME: mimeType, Kind: kind, Size: f.FileSize, Duration: f.Duration,
			Fetch: func(ctx context.Context) (io.ReadCloser, error) { return t.fetch(ctx, id) }})
	}
	n := strconv.FormatInt(m.MessageID, 10)
	if len(m.Photo) > 0 {
		largest := m.Photo[0]
		for _, p := range m.Photo[1:] {
			if p.FileSize >= largest.FileSize {
				largest = p
			}
		}
		add(&largest, KindImage, "photo-"+n+".jpg", "image/jpeg")
	}
	add(m.Document, "", "document-"+n, "")
	add(m.Audio, KindAudio, "audio-"+n+".mp3", "audio/mpeg")
	add(m.Voice, KindVoice, "voice-"+n+".ogg", "audio/ogg")
	add(m.Video, KindVideo, "video-"+n+".mp4", "video/mp4")
	add(m.VideoNote, KindVideo, "video-note-"+n+".mp4", "video/mp4")
	if m.Document == nil { // an animation comes with its document too
		add(m.Animation, KindVideo, "animation-"+n+".mp4", "video/mp4")
	}
	if st := m.Sticker; st != nil && st.FileID != "" {
		add(&st.tgFile, KindSticker, "sticker-"+n+".webp", "image/webp")
		out[len(out)-1].Sticker = &Sticker{Emoji: st.Emoji, Set: st.SetName, ID: st.FileUniqueID, Animated: st.IsAnimated || st.IsVideo}
	}
	return out
}

// fetch downloads a file a person sent: getFile, then the file from the
// Bot API's file URL (which carries the token: errors are scrubbed).
func (t *Telegram) fetch(ctx context.Context, fileID string) (io.ReadCloser, error) {
	var f tgFile
	if err := t.call(ctx, "getFile", map[string]any{"file_id": fileID}, &f); err != nil {
		return nil, err
	}
	if f.FilePath == "" {
		return nil, fmt.Errorf("telegram getFile: no file path (a file over 20 MB cannot be fetched by a bot)")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.o.BaseURL+"/file/bot"+t.o.Token+"/"+strings.TrimLeft(f.FilePath, "/"), nil)
	if err != nil {
		return nil, scrub(err, t.o.Token)
	}
	resp, err := t.o.Client.Do(req)
	if err != nil {
		return nil, scrub(fmt.Errorf("telegram file download: %w", err), t.o.Token)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("telegram file download: HTTP %d", resp.StatusCode)
	}
	return resp.Body, nil
}

// Telegram's limits on what a bot uploads: any file 50 MB, a photo 10 MB
// (a larger one goes as a document).
const (
	tgFileMax  = 50 << 20
	tgPhotoMax = 10 << 20
)

// tgMethod is the Bot API method, and its file field, that sends a file
// of kind: sendPhoto, sendVideo, sendVoice (Opus in Ogg only), sendAudio
// (MP3 and M4A only), else sendDocument.
func tgMethod(f *OutFile) (method, field string) {
	ext := strings.ToLower(filepath.Ext(f.Name))
	switch {
	case f.Kind == KindImage && f.Size <= tgPhotoMax:
		return "sendPhoto", "photo"
	case f.Kind == KindVideo:
		return "sendVideo", "video"
	case f.Kind == KindVoice && (ext == ".ogg" || ext == ".opus"):
		return "sendVoice", "voice"
	case (f.Kind == KindAudio || f.Kind == KindVoice) && (ext == ".mp3" || ext == ".m4a"):
		return "sendAudio", "audio"
	}
	return "sendDocument", "document"
}

// SendFile implements FileSender: the file in a message of its own, by
// the method its kind takes; a photo Telegram refuses (its dimensions) is
// sent again as a document.
func (t *Telegram) SendFile(ctx context.Context, m Message) (string, error) {
	method, field := tgMethod(m.File)
	id, err := t.upload(ctx, m, method, field)
	if err != nil && method == "sendPhoto" && IsPermanent(err) && strings.Contains(err.Error(), " 400 ") {
		id, err = t.upload(ctx, m, "sendDocument", "document")
	}
	return id, err
}

// upload POSTs the file as multipart/form-data, streamed from the disk
// with its length known.
func (t *Telegram) upload(ctx context.Context, m Message, method, field string) (string, error) {
	fh, size, err := openFile(m.File, "Telegram", tgFileMax)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	fields := map[string]string{"chat_id": m.ChatID}
	if m.ThreadID != "" {
		fields["message_thread_id"] = m.ThreadID
	}
	if m.Text != "" {
		fields["caption"] = clipRunes(m.Text, 1024)
	}
	body, length, ctype := multipartFile(fields, field, m.File.Name, fh, size)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.o.BaseURL+"/bot"+t.o.Token+"/"+method, body)
	if err != nil {
		return "", Permanent(scrub(err, t.o.Token))
	}
	req.ContentLength = length
	req.Header.Set("Content-Type", ctype)
	var raw json.RawMessage
	if err := t.do(req, method, &raw); err != nil {
		return "", err
	}
	var sent struct {
		MessageID int64 `json:"message_id"`
	}
	_ = json.Unmarshal(raw, &sent)
	return strconv.FormatInt(sent.MessageID, 10), nil
}

// multipartFile is a multipart/form-data body of fields and one file
// (size bytes from r) under field: the body, its length, its content type.
// The file is streamed, not held in memory.
func multipartFile(fields map[string]string, field, name string, r io.Reader, size int64) (io.Reader, int64, string) {
	var head bytes.Buffer
	mw := multipart.NewWriter(&head)
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		_ = mw.WriteField(k, fields[k]) // into a buffer: cannot fail
	}
	h := make(textproto.MIMEHeader)
	h.Set("Content-Disposition", mime.FormatMediaType("form-data", map[string]string{"name": field, "filename": name}))
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	h.Set("Content-Type", ct)
	_, _ = mw.CreatePart(h)
	tail := "\r\n--" + mw.Boundary() + "--\r\n"
	return io.MultiReader(bytes.NewReader(head.Bytes()), r, strings.NewReader(tail)), int64(head.Len()) + size + int64(len(tail)), mw.FormDataContentType()
}
