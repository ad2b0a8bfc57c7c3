package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"atrium/backend/atomicfile"
)

// What the gateway asks the vision model of what a person sends, in the
// familiar gateway's words.
const (
	DescribeImagePrompt = "Describe everything visible in this image in thorough detail. " +
		"Include any text, code, data, objects, people, layout, colors, " +
		"and any other notable visual information."
	StickerPrompt = "Describe this sticker in 1-2 sentences. Focus on what it depicts -- " +
		"character, action, emotion. Be concise and objective."
)

// stickerCacheMax bounds the sticker cache (the oldest go first).
const stickerCacheMax = 5000

// stickerEntry is one sticker's description, as the familiar
// sticker_cache.json keeps it (a cache brought from there is read).
type stickerEntry struct {
	Description string  `json:"description"`
	Emoji       string  `json:"emoji"`
	SetName     string  `json:"set_name"`
	CachedAt    float64 `json:"cached_at"`
}

// stickerCache is the descriptions of the stickers people sent, kept in
// a file so that each is looked at once.
type stickerCache struct {
	path string
	mu   sync.Mutex
}

func (c *stickerCache) load() map[string]stickerEntry {
	m := map[string]stickerEntry{}
	if c.path == "" {
		return m
	}
	if b, err := os.ReadFile(c.path); err == nil {
		_ = json.Unmarshal(b, &m) // a broken cache is an empty one
	}
	return m
}

func (c *stickerCache) get(id string) (stickerEntry, bool) {
	if id == "" {
		return stickerEntry{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.load()[id]
	return e, ok && e.Description != ""
}

func (c *stickerCache) put(id string, e stickerEntry) error {
	if c.path == "" || id == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.load()
	m[id] = e
	if len(m) > stickerCacheMax {
		ids := make([]string, 0, len(m))
		for k := range m {
			ids = append(ids, k)
		}
		sort.Slice(ids, func(i, j int) bool { return m[ids[i]].CachedAt < m[ids[j]].CachedAt })
		for _, k := range ids[:len(m)-stickerCacheMax] {
			delete(m, k)
		}
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(c.path, b, 0o600, nil)
}

// receiveSticker is the note of a sticker a person sent, in the familiar
// gateway's words: what the vision model sees in it (asked once per
// sticker, then kept), or its emoji when it cannot be looked at (an
// animated one, no model that can see, a look that failed).
func (s *Service) receiveSticker(ctx context.Context, platform string, f InFile) string {
	st := f.Sticker
	if st.Animated {
		if st.Emoji != "" {
			return "[The user sent an animated sticker " + st.Emoji + "~ I can't see animated ones yet, but the emoji suggests: " + st.Emoji + "]"
		}
		return "[The user sent an animated sticker~ I can't see animated ones yet]"
	}
	if e, ok := s.stickers.get(st.ID); ok {
		return stickerNote(e.Description, e.Emoji, e.SetName)
	}
	fallback := "a sticker"
	if st.Emoji != "" {
		fallback = "a sticker with emoji " + st.Emoji
	}
	if s.o.SeeImage == nil || s.o.MediaDir == "" || f.Fetch == nil {
		return stickerNote(fallback, st.Emoji, st.Set)
	}
	limit := s.o.MaxInboundFile
	if limit <= 0 {
		limit = DefaultMaxInboundFile
	}
	fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	path, _, err := saveFile(fctx, filepath.Join(s.o.MediaDir, platform), f, limit)
	cancel()
	if err != nil {
		s.log.Warn("gateway: a sticker a person sent was not saved", "platform", platform, "error", err)
		return stickerNote(fallback, st.Emoji, st.Set)
	}
	description, err := s.o.SeeImage(ctx, path, StickerPrompt)
	if err != nil {
		if !errors.Is(err, ErrCannotSee) {
			s.log.Warn("gateway: the vision model could not look at a sticker", "platform", platform, "error", err)
		}
		return stickerNote(fallback, st.Emoji, st.Set)
	}
	if err := s.stickers.put(st.ID, stickerEntry{Description: description, Emoji: st.Emoji, SetName: st.Set,
		CachedAt: float64(time.Now().UnixNano()) / 1e9}); err != nil {
		s.log.Warn("gateway: the sticker cache was not written", "path", s.stickers.path, "error", err)
	}
	return stickerNote(description, st.Emoji, st.Set)
}

// stickerNote is the familiar note of a sticker that shows description.
func stickerNote(description, emoji, set string) string {
	context := ""
	switch {
	case set != "" && emoji != "":
		context = " " + emoji + ` from "` + set + `"`
	case emoji != "":
		context = " " + emoji
	}
	return "[The user sent a sticker" + context + `~ It shows: "` + description + `" (=^.w.^=)]`
}
