package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// A file a person sends is saved under the profile's media folder and the
// agent is told where, in a note before the message's text, in the
// familiar gateway's words: a text document's content is included (up to
// 100 KB), any other file is the agent's to read with its tools.

// DefaultMaxInboundFile bounds a file a person sends (Telegram's Bot API
// hands a bot files up to 20 MB).
const DefaultMaxInboundFile = 20 << 20

// MediaKept is how long a saved file is kept.
const MediaKept = 30 * 24 * time.Hour

// inlineMax is how large a text document is included in the message.
const inlineMax = 100 << 10

var textExts = map[string]bool{".txt": true, ".md": true, ".markdown": true, ".csv": true, ".tsv": true, ".json": true, ".log": true,
	".yaml": true, ".yml": true, ".toml": true, ".ini": true, ".xml": true, ".html": true, ".py": true, ".go": true, ".js": true,
	".ts": true, ".sh": true, ".sql": true, ".rs": true, ".java": true, ".c": true, ".h": true, ".cpp": true, ".rb": true}

// receiveFiles saves the files of a message and returns the notes that
// tell the agent of them, one per file, in order ("" when there are
// none). A file that cannot be saved is said, and the message still goes
// to the agent. An album's files are fetched, looked at and heard
// filesAtOnce at a time: its photos take the time of the slowest look,
// not of all of them.
func (s *Service) receiveFiles(ctx context.Context, platform string, files []InFile) string {
	notes := make([]string, len(files))
	slots := make(chan struct{}, filesAtOnce)
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			notes[i] = s.receiveFile(ctx, platform, f)
		}()
	}
	wg.Wait()
	return strings.Join(notes, "\n\n")
}

// filesAtOnce bounds the files of one message received at the same time.
const filesAtOnce = 4

func (s *Service) receiveFile(ctx context.Context, platform string, f InFile) string {
	if f.Kind == KindSticker && f.Sticker != nil {
		return s.receiveSticker(ctx, platform, f)
	}
	name := f.Name
	limit := s.o.MaxInboundFile
	if limit <= 0 {
		limit = DefaultMaxInboundFile
	}
	switch {
	case s.o.MediaDir == "":
		return fmt.Sprintf("[The user sent a file: '%s'. It was not saved: this gateway keeps no files.]", name)
	case f.Size > limit:
		return fmt.Sprintf("[The user sent a file: '%s' (%s). It was not saved: the gateway takes files up to %s.]", name, humanSize(f.Size), humanSize(limit))
	case f.Fetch == nil:
		return fmt.Sprintf("[The user sent a file: '%s'. It could not be fetched from %s.]", name, platform)
	}
	fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	path, size, err := saveFile(fctx, filepath.Join(s.o.MediaDir, platform), f, limit)
	if err != nil {
		s.log.Warn("gateway: a file a person sent was not saved", "platform", platform, "file", name, "error", err)
		if errors.Is(err, errTooLarge) {
			return fmt.Sprintf("[The user sent a file: '%s' (over %s). It was not saved: the gateway takes files up to %s.]", name, humanSize(limit), humanSize(limit))
		}
		return fmt.Sprintf("[The user sent a file: '%s'. It could not be saved: %s.]", name, clipRunes(err.Error(), 300))
	}
	switch f.Kind {
	case KindImage:
		return s.seeImage(ctx, name, path)
	case KindVoice:
		if s.o.Transcribe != nil {
			if note, ok := s.hear(ctx, platform, path); ok {
				return note
			}
		}
		d := ""
		if f.Duration > 0 {
			d = fmt.Sprintf(" (duration: %d:%02d)", f.Duration/60, f.Duration%60)
		}
		return fmt.Sprintf("[The user sent a voice message: %s%s]", path, d)
	case KindAudio:
		return fmt.Sprintf("[The user sent an audio file: '%s'. It is saved at: %s.]", name, path)
	case KindVideo:
		return fmt.Sprintf("[The user sent a video: '%s'. The file is saved at: %s.]", name, path)
	}
	if text, ok := inlineText(path, f, size); ok {
		return fmt.Sprintf("[The user sent a text document: '%s'. Its content has been included below. The file is also saved at: %s]\n\n%s", name, path, text)
	}
	return fmt.Sprintf("[The user sent a document: '%s'. It is saved at: %s. Its text is not inlined here (it's a binary format such as PDF or DOCX). "+
		"To read it, extract the document's text yourself with your tools before answering, instead of asking the user to paste the contents.]", name, path)
}

// seeImage is the note of a saved photo: what the vision model sees in
// it, with where it is for a closer look, in the familiar gateway's words;
// a look that failed is said, with the path; with no model that can see,
// where it is saved.
func (s *Service) seeImage(ctx context.Context, name, path string) string {
	var description string
	err := ErrCannotSee // no model is asked
	if s.o.SeeImage != nil {
		description, err = s.o.SeeImage(ctx, path, DescribeImagePrompt)
	}
	switch {
	case errors.Is(err, ErrCannotSee):
		return fmt.Sprintf("[The user sent an image: '%s'. It is saved at: %s.]", name, path)
	case err != nil:
		s.log.Warn("gateway: the vision model could not look at a photo a person sent", "file", name, "error", err)
		return "[The user sent an image but I couldn't quite see it this time (>_<) You can try looking at it yourself " +
			"with vision_analyze using image_url: " + path + "]"
	}
	return "[The user sent an image~ Here's what I can see:\n" + strings.TrimSpace(description) + "]\n" +
		"[If you need a closer look, use vision_analyze with image_url: " + path + " ~]"
}

// inlineText is a saved text document's content, when it is one small
// enough to include.
func inlineText(path string, f InFile, size int64) (string, bool) {
	mt, _, _ := mime.ParseMediaType(f.MIME)
	if size > inlineMax || !(strings.HasPrefix(mt, "text/") || mt == "application/json" || textExts[strings.ToLower(filepath.Ext(f.Name))]) {
		return "", false
	}
	b, err := os.ReadFile(path)
	if err != nil || !utf8.Valid(b) || strings.ContainsRune(string(b), 0) {
		return "", false
	}
	return strings.TrimRight(string(b), "\n"), true
}

var errTooLarge = errors.New("too large")

// saveFile fetches f into dir under a name of its own (the time, a random
// part, f's name made safe), at most limit bytes; a partial file is
// removed.
func saveFile(ctx context.Context, dir string, f InFile, limit int64) (string, int64, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", 0, err
	}
	rc, err := f.Fetch(ctx)
	if err != nil {
		return "", 0, err
	}
	defer rc.Close()
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	path := filepath.Join(dir, time.Now().UTC().Format("20060102-150405")+"-"+hex.EncodeToString(rnd[:])+"-"+SafeFileName(f.Name))
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", 0, err
	}
	n, err := io.Copy(out, io.LimitReader(rc, limit+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > limit {
		err = errTooLarge
	}
	if err == nil && n == 0 {
		err = errors.New("the platform sent an empty file")
	}
	if err != nil {
		_ = os.Remove(path)
		return "", 0, err
	}
	return path, n, nil
}

// SafeFileName is a file's name as a person sent it, made safe to save:
// no folders, no control or path characters, at most 100 characters
// ("file" when nothing is left).
func SafeFileName(name string) string {
	name = filepath.Base(strings.ReplaceAll(name, "\\", "/"))
	var b strings.Builder
	for _, r := range name {
		switch {
		case r < 0x20 || r == 0x7f || strings.ContainsRune(`/\:*?"<>|`, r):
			b.WriteRune('_')
		default:
			b.WriteRune(r)
		}
	}
	out := strings.Trim(b.String(), ". ")
	if r := []rune(out); len(r) > 100 {
		ext := filepath.Ext(out)
		if len([]rune(ext)) > 10 {
			ext = ""
		}
		out = string(r[:100-len([]rune(ext))]) + ext
	}
	if out == "" {
		return "file"
	}
	return out
}

// kindOf is the kind of a file a person sent, from its type or name.
func kindOf(mimeType, name string) string {
	mt, _, _ := mime.ParseMediaType(mimeType)
	switch {
	case strings.HasPrefix(mt, "image/"):
		return KindImage
	case strings.HasPrefix(mt, "video/"):
		return KindVideo
	case strings.HasPrefix(mt, "audio/"):
		return KindAudio
	}
	ext := strings.ToLower(filepath.Ext(name))
	switch {
	case imageExts[ext]:
		return KindImage
	case videoExts[ext]:
		return KindVideo
	case audioExts[ext]:
		return KindAudio
	}
	return KindDocument
}

// pruneMedia removes saved files older than before; it returns how many.
func pruneMedia(dir string, before time.Time) (int, error) {
	if dir == "" {
		return 0, nil
	}
	n := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err == nil && fi.Mode().IsRegular() && fi.ModTime().Before(before) && os.Remove(p) == nil {
			n++
		}
		return nil
	})
	return n, err
}
