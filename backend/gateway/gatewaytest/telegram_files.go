package gatewaytest

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Upload is a file a bot sent the fake Telegram (sendPhoto, sendDocument,
// sendAudio, sendVoice, sendVideo as multipart/form-data).
type Upload struct {
	Method      string
	Field       string // the form field the file came in (photo, document, ...)
	Name        string // its file name
	ContentType string
	Fields      map[string]string // the other form fields (chat_id, message_thread_id, caption)
	Data        []byte
}

// tgFiles is the fake's side of files: what people sent (by file_id, for
// getFile and the download), what the bot uploaded.
type tgFiles struct {
	stored    map[string][]byte
	downloads int
	uploads   []Upload
	// PhotoInvalid answers sendPhoto with 400 PHOTO_INVALID_DIMENSIONS (as
	// for a very long image); MaxUpload answers 413 to an upload larger.
	PhotoInvalid bool
	MaxUpload    int64
}

// PushFile queues a message from a user carrying a file: key is the
// message's field (photo, document, audio, voice, video), file what the
// Bot API says of it (file_name, mime_type, duration...; file_id and
// file_size are filled in), data its bytes, served by getFile and the
// file URL. A photo is given as two sizes, the second the file.
func (f *Telegram) PushFile(userID int64, first string, chatID int64, chatType, caption, key string, file map[string]any, data []byte) int64 {
	return f.pushFile(userID, first, chatID, chatType, caption, key, file, data, "")
}

// pushFile is PushFile, in the media group group ("" none), the update
// whole before a getUpdates can see it.
func (f *Telegram) pushFile(userID int64, first string, chatID int64, chatType, caption, key string, file map[string]any, data []byte, group string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	if f.stored == nil {
		f.stored = map[string][]byte{}
	}
	id := fmt.Sprintf("file-%d", f.nextID)
	f.stored[id] = data
	meta := map[string]any{"file_id": id, "file_unique_id": "u" + id, "file_size": len(data)}
	for k, v := range file {
		meta[k] = v
	}
	var value any = meta
	if key == "photo" {
		f.stored[id+"-small"] = data[:min(len(data), 4)]
		value = []any{map[string]any{"file_id": id + "-small", "file_size": min(len(data), 4), "width": 90, "height": 90}, meta}
	}
	msg := map[string]any{"message_id": f.nextID * 10, "date": time.Now().Unix(), key: value,
		"from": map[string]any{"id": userID, "is_bot": false, "first_name": first},
		"chat": map[string]any{"id": chatID, "type": chatType}}
	if caption != "" {
		msg["caption"] = caption
	}
	if group != "" {
		msg["media_group_id"] = group
	}
	f.updates = append(f.updates, map[string]any{"update_id": f.nextID, "message": msg})
	f.cond.Broadcast()
	return f.nextID
}

// Uploads are the files the bot sent, in order.
func (f *Telegram) Uploads() []Upload { return snapshot(&f.mu, &f.uploads) }

// Downloads counts the files fetched from the file URL.
func (f *Telegram) Downloads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.downloads
}

// serveFiles answers getFile, the file URL (/file/bot<token>/<path>) and
// uploads; false for any other request.
func (f *Telegram) serveFiles(w http.ResponseWriter, r *http.Request) bool {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/file/bot"); ok {
		token, p, _ := strings.Cut(rest, "/")
		f.mu.Lock()
		data, found := f.stored[strings.TrimPrefix(p, "files/")]
		if found && token == f.token {
			f.downloads++
		}
		f.mu.Unlock()
		if token != f.token || !found {
			http.NotFound(w, r)
			return true
		}
		_, _ = w.Write(data)
		return true
	}
	token, method, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/bot"), "/")
	if token != f.token {
		return false
	}
	if method == "getFile" && strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var body struct {
			FileID string `json:"file_id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		data, found := f.stored[body.FileID]
		f.mu.Unlock()
		if !found {
			tgErr(w, http.StatusBadRequest, "Bad Request: invalid file_id", 0)
			return true
		}
		tgOK(w, map[string]any{"file_id": body.FileID, "file_size": len(data), "file_path": "files/" + body.FileID})
		return true
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		return false
	}
	f.mu.Lock()
	photoInvalid, maxUpload := f.PhotoInvalid, f.MaxUpload
	f.mu.Unlock()
	if maxUpload > 0 && r.ContentLength > maxUpload {
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		_, _ = io.WriteString(w, "<html>413 Request Entity Too Large</html>")
		return true
	}
	if r.ContentLength < 0 {
		tgErr(w, http.StatusBadRequest, "Bad Request: no Content-Length", 0)
		return true
	}
	fields := map[string]string{"photo": "sendPhoto", "document": "sendDocument", "audio": "sendAudio", "voice": "sendVoice", "video": "sendVideo"}
	mr, err := r.MultipartReader()
	if err != nil {
		tgErr(w, http.StatusBadRequest, "Bad Request: "+err.Error(), 0)
		return true
	}
	up := Upload{Method: method, Fields: map[string]string{}}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			tgErr(w, http.StatusBadRequest, "Bad Request: "+err.Error(), 0)
			return true
		}
		data, _ := io.ReadAll(part)
		if part.FileName() == "" {
			up.Fields[part.FormName()] = string(data)
			continue
		}
		up.Field, up.Name, up.ContentType, up.Data = part.FormName(), part.FileName(), part.Header.Get("Content-Type"), data
	}
	switch {
	case fields[up.Field] != method:
		tgErr(w, http.StatusBadRequest, "Bad Request: there is no "+strings.TrimPrefix(strings.ToLower(method), "send")+" in the request", 0)
		return true
	case up.Fields["chat_id"] == "":
		tgErr(w, http.StatusBadRequest, "Bad Request: chat_id is empty", 0)
		return true
	case method == "sendPhoto" && photoInvalid:
		tgErr(w, http.StatusBadRequest, "Bad Request: PHOTO_INVALID_DIMENSIONS", 0)
		return true
	}
	f.mu.Lock()
	f.uploads = append(f.uploads, up)
	id := len(f.uploads) + 7000
	f.cond.Broadcast()
	f.mu.Unlock()
	chat, _ := strconv.ParseInt(up.Fields["chat_id"], 10, 64)
	tgOK(w, map[string]any{"message_id": id, "chat": map[string]any{"id": chat}, "date": time.Now().Unix()})
	return true
}

// PushAlbum queues an album from a user: one message per photo, sharing a
// media_group_id, as Telegram sends one; caption goes with the part
// numbered captioned (from 0).
func (f *Telegram) PushAlbum(userID int64, first string, chatID int64, chatType, group, caption string, captioned int, photos ...[]byte) {
	for i, data := range photos {
		c := ""
		if i == captioned {
			c = caption
		}
		// The group is in the update when it is pushed: set after, a poll
		// in between took the photo alone (seen under load).
		f.pushFile(userID, first, chatID, chatType, c, "photo", map[string]any{"width": 800, "height": 600}, data, group)
	}
}
