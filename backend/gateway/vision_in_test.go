package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"atrium/backend/gateway"
	"atrium/backend/gateway/gatewaytest"
)

// A photo a person sends is looked at before the agent answers: the agent
// is told what it shows and where it is for a closer look, in the familiar
// gateway's words, an album's photos each in order; a look that fails is
// said with the path; with no model that can see, the path alone.
func TestPhotosAreLookedAt(t *testing.T) {
	t.Parallel()
	e, model := mediaEnv(t, "seen")
	var mu sync.Mutex
	var looked []string
	answers := map[string]func(path string) (string, error){
		"cat": func(path string) (string, error) {
			b, err := os.ReadFile(path) // saved before it is looked at
			return fmt.Sprintf("  A cat on a mat (%d bytes).\n", len(b)), err
		},
		"lost": func(string) (string, error) { return "", errors.New("auxiliary.vision: HTTP 503") },
		"blind": func(string) (string, error) {
			return "", fmt.Errorf("%w: the main model is offline", gateway.ErrCannotSee)
		},
		"one": func(string) (string, error) { return "the first photo", nil },
		"two": func(string) (string, error) { return "the second photo", nil },
	}
	e.seeImage = func(_ context.Context, path, prompt string) (string, error) {
		if prompt != gateway.DescribeImagePrompt {
			t.Errorf("a photo was asked %q", prompt)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		mu.Lock()
		looked = append(looked, path)
		mu.Unlock()
		return answers[string(b[:strings.IndexByte(string(b), '|')])](path)
	}
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "5"))
	dir := filepath.Join(e.mediaDir, "telegram")
	pathOf := func(data string) string {
		t.Helper()
		contents, paths := savedFiles(t, dir)
		for name, c := range contents {
			if string(c) == data {
				return paths[name]
			}
		}
		t.Fatalf("%q was not saved", data)
		return ""
	}

	f.PushFile(5, "Ada", 5, "private", "what is this?", "photo", nil, []byte("cat|jpeg"))
	waitFor(t, "the photo's turn", func() bool { return len(model.told()) == 1 })
	cat := pathOf("cat|jpeg")
	if got, want := model.told()[0], "[The user sent an image~ Here's what I can see:\nA cat on a mat (8 bytes).]\n"+
		"[If you need a closer look, use vision_analyze with image_url: "+cat+" ~]\n\nwhat is this?"; got != want {
		t.Fatalf("the model was given\n%q\nwant\n%q", got, want)
	}

	f.PushFile(5, "Ada", 5, "private", "", "photo", nil, []byte("lost|jpeg"))
	waitFor(t, "the second turn", func() bool { return len(model.told()) == 2 })
	if got, want := model.told()[1], "[The user sent an image but I couldn't quite see it this time (>_<) You can try looking at it yourself "+
		"with vision_analyze using image_url: "+pathOf("lost|jpeg")+"]"; got != want {
		t.Fatalf("a failed look: the model was given\n%q\nwant\n%q", got, want)
	}

	f.PushFile(5, "Ada", 5, "private", "and this", "photo", nil, []byte("blind|jpeg"))
	waitFor(t, "the third turn", func() bool { return len(model.told()) == 3 })
	blind := pathOf("blind|jpeg")
	if got, want := model.told()[2], "[The user sent an image: '"+filepath.Base(blind)[25:]+"'. It is saved at: "+blind+".]\n\nand this"; got != want {
		t.Fatalf("no model that can see: the model was given\n%q\nwant\n%q", got, want)
	}

	f.PushAlbum(5, "Ada", 5, "private", "g1", "which is better?", 0, []byte("one|jpeg"), []byte("two|jpeg"))
	waitFor(t, "the album's turn", func() bool { return len(model.told()) == 4 })
	want := "[The user sent an image~ Here's what I can see:\nthe first photo]\n[If you need a closer look, use vision_analyze with image_url: " + pathOf("one|jpeg") + " ~]\n\n" +
		"[The user sent an image~ Here's what I can see:\nthe second photo]\n[If you need a closer look, use vision_analyze with image_url: " + pathOf("two|jpeg") + " ~]\n\n" +
		"which is better?"
	if got := model.told()[3]; got != want {
		t.Fatalf("an album: the model was given\n%q\nwant\n%q", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(looked) != 5 {
		t.Fatalf("%d looks, want one per photo: %q", len(looked), looked)
	}
}

// A sticker is looked at once, as the familiar gateway does: the agent is
// told what it shows in the familiar words, and the description kept in
// sticker_cache.json (the familiar file, whose entries are read) so the
// same sticker again is neither fetched nor looked at; an animated one is
// its emoji; a look that failed is its emoji too, and is not kept.
func TestStickersAreLookedAtOnce(t *testing.T) {
	t.Parallel()
	e, model := mediaEnv(t, "seen")
	e.stickerCache = filepath.Join(t.TempDir(), "sticker_cache.json")
	familiar := `{"S9": {"description": "A dog shrugging", "emoji": "🤷", "set_name": "Dogs", "cached_at": 1733500000.5}}`
	if err := os.WriteFile(e.stickerCache, []byte(familiar), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	looks := 0
	e.seeImage = func(_ context.Context, path, prompt string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		looks++
		if prompt != gateway.StickerPrompt {
			t.Errorf("a sticker was asked %q", prompt)
		}
		b, err := os.ReadFile(path)
		if err != nil || filepath.Ext(path) != ".webp" {
			return "", fmt.Errorf("saved %q: %v", path, err)
		}
		if string(b) == "sad" {
			return "", errors.New("HTTP 503")
		}
		return "A cat waving", nil
	}
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "5"))
	turn := func(n int) string {
		t.Helper()
		waitFor(t, fmt.Sprintf("turn %d", n), func() bool { return len(model.told()) == n })
		return model.told()[n-1]
	}
	sticker := map[string]any{"file_unique_id": "S1", "emoji": "😀", "set_name": "Cats", "width": 512, "height": 512}
	f.PushFile(5, "Ada", 5, "private", "", "sticker", sticker, []byte("cat"))
	want := `[The user sent a sticker 😀 from "Cats"~ It shows: "A cat waving" (=^.w.^=)]`
	if got := turn(1); got != want {
		t.Fatalf("the model was given %q, want %q", got, want)
	}
	f.PushFile(5, "Ada", 5, "private", "", "sticker", sticker, []byte("cat"))
	if got := turn(2); got != want || f.Downloads() != 1 {
		t.Fatalf("the same sticker again: %q after %d downloads", got, f.Downloads())
	}
	f.PushFile(5, "Ada", 5, "private", "", "sticker", map[string]any{"file_unique_id": "S9", "emoji": "🤷"}, []byte("dog"))
	if got := turn(3); got != `[The user sent a sticker 🤷 from "Dogs"~ It shows: "A dog shrugging" (=^.w.^=)]` {
		t.Fatalf("a sticker the familiar cache knows: %q", got)
	}
	f.PushFile(5, "Ada", 5, "private", "", "sticker", map[string]any{"file_unique_id": "S2", "emoji": "🎉", "is_animated": true}, []byte("tgs"))
	if got := turn(4); got != "[The user sent an animated sticker 🎉~ I can't see animated ones yet, but the emoji suggests: 🎉]" {
		t.Fatalf("an animated sticker: %q", got)
	}
	for n := 5; n <= 6; n++ {
		f.PushFile(5, "Ada", 5, "private", "", "sticker", map[string]any{"file_unique_id": "S3", "emoji": "😢"}, []byte("sad"))
		if got := turn(n); got != `[The user sent a sticker 😢~ It shows: "a sticker with emoji 😢" (=^.w.^=)]` {
			t.Fatalf("a failed look: %q", got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if looks != 3 || f.Downloads() != 3 {
		t.Fatalf("%d looks and %d downloads, want 3 and 3 (the failed one twice)", looks, f.Downloads())
	}
	var kept map[string]map[string]any
	b, _ := os.ReadFile(e.stickerCache)
	if err := json.Unmarshal(b, &kept); err != nil || len(kept) != 2 || kept["S1"]["description"] != "A cat waving" ||
		kept["S1"]["emoji"] != "😀" || kept["S1"]["set_name"] != "Cats" || kept["S1"]["cached_at"].(float64) < 1.7e9 || kept["S9"] == nil {
		t.Fatalf("the cache: %s %v", b, err)
	}
}

// An album's photos are looked at together, not one after another: each
// look here waits until all three are under way (one at a time, they
// never would be), and the notes keep the album's order.
func TestAnAlbumsPhotosAreLookedAtTogether(t *testing.T) {
	t.Parallel()
	e, model := mediaEnv(t, "seen")
	var mu sync.Mutex
	inFlight := 0
	all := make(chan struct{})
	e.seeImage = func(ctx context.Context, path, _ string) (string, error) {
		mu.Lock()
		inFlight++
		if inFlight == 3 {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(20 * time.Second):
			return "", errors.New("looked at one at a time")
		}
		b, err := os.ReadFile(path)
		return "photo " + string(b), err
	}
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "5"))
	f.PushAlbum(5, "Ada", 5, "private", "g7", "three", 0, []byte("1"), []byte("2"), []byte("3"))
	waitFor(t, "the album's turn", func() bool { return len(model.told()) == 1 })
	got := model.told()[0]
	if strings.Count(got, "Here's what I can see:") != 3 || !(strings.Index(got, "photo 1]") < strings.Index(got, "photo 2]") &&
		strings.Index(got, "photo 2]") < strings.Index(got, "photo 3]")) || !strings.HasSuffix(got, "\n\nthree") {
		t.Fatalf("the model was given %q", got)
	}
}
