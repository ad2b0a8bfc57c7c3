package tools

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/image/bmp"
)

// asked is what a fake vision model was asked, and what it answers.
type asked struct {
	mu      sync.Mutex
	prompts []string
	urls    []string
	answers []string // one per call; the last repeats
	errs    []error
}

func (a *asked) vision() Vision {
	return Vision{Ask: func(_ context.Context, prompt, dataURL string) (string, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		i := len(a.prompts)
		a.prompts, a.urls = append(a.prompts, prompt), append(a.urls, dataURL)
		if i < len(a.errs) && a.errs[i] != nil {
			return "", a.errs[i]
		}
		if len(a.answers) == 0 {
			return "", nil
		}
		return a.answers[min(i, len(a.answers)-1)], nil
	}}
}

// decodeURL is the image a data: URL carries, and its type.
func decodeURL(t *testing.T, u string) (image.Image, string) {
	t.Helper()
	meta, payload, ok := strings.Cut(strings.TrimPrefix(u, "data:"), ",")
	if !ok || !strings.HasSuffix(meta, ";base64") {
		t.Fatalf("not a base64 data: URL: %.60s", u)
	}
	b, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		t.Fatal(err)
	}
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return img, strings.TrimSuffix(meta, ";base64")
}

// quadrants is a w×h image whose four quadrants are red, green, blue and
// white, as PNG.
func quadrants(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.RGBA{255, 0, 0, 255}
			switch {
			case x >= w/2 && y < h/2:
				c = color.RGBA{0, 255, 0, 255}
			case x < w/2 && y >= h/2:
				c = color.RGBA{0, 0, 255, 255}
			case x >= w/2 && y >= h/2:
				c = color.RGBA{255, 255, 255, 255}
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func runVision(t *testing.T, s Settings, dir string, args map[string]any) map[string]any {
	t.Helper()
	out := visionAnalyzeTool().Run(context.Background(), &Call{Args: args, Dir: dir, Settings: s})
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return m
}

// A local image goes to the vision model as a data: URL of its exact
// bytes, with the familiar prompt around the question; the answer comes
// back as the familiar result.
func TestVisionAnalyzeLocalFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := quadrants(t, 40, 20)
	if err := os.WriteFile(filepath.Join(dir, "chart.png"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	a := &asked{answers: []string{"  Four coloured squares.  "}}
	m := runVision(t, Settings{Vision: a.vision()}, dir, map[string]any{"image_url": "chart.png", "question": "What colours?"})
	if m["success"] != true || m["analysis"] != "Four coloured squares." || m["scale_note"] != nil {
		t.Fatalf("result %v", m)
	}
	if len(a.prompts) != 1 || a.prompts[0] != "Fully describe and explain everything about this image, then answer the following question:\n\nWhat colours?" {
		t.Fatalf("prompts %q", a.prompts)
	}
	if a.urls[0] != "data:image/png;base64,"+base64.StdEncoding.EncodeToString(data) {
		t.Fatalf("the image was not sent as it is: %.80s", a.urls[0])
	}
	// file:// and a data: URL name the same image.
	for _, src := range []string{"file://" + filepath.Join(dir, "chart.png"), a.urls[0]} {
		if m := runVision(t, Settings{Vision: a.vision()}, "/", map[string]any{"image_url": src, "question": "?"}); m["success"] != true {
			t.Fatalf("%.40s: %v", src, m)
		}
	}
	if a.urls[1] != a.urls[0] || a.urls[2] != a.urls[0] {
		t.Fatal("file:// or data: sent other bytes")
	}
}

// What is not an image the model can be shown is refused, saying why, and
// the model is never asked.
func TestVisionAnalyzeRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := write(".env", []byte("OPENAI_API_KEY=sk-secret\n"))
	notes := write("notes.txt", []byte("just words, not pixels"))
	svg := write("logo.svg", []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"></svg>`))
	broken := write("broken.png", append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 40)...))
	a := &asked{answers: []string{"never"}}
	s := Settings{Vision: a.vision(), Secrets: []string{env}}
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"question": "?"}, "image_url is required"},
		{map[string]any{"image_url": env, "question": "?"}, "holds the profile's keys and tokens"},
		{map[string]any{"image_url": notes, "question": "?"}, "this is not an image (it reads as text/plain)"},
		{map[string]any{"image_url": svg, "question": "?"}, "SVG image is not one a vision model takes"},
		{map[string]any{"image_url": filepath.Join(dir, "gone.png"), "question": "?"}, "no such file: " + filepath.Join(dir, "gone.png")},
		{map[string]any{"image_url": dir, "question": "?"}, "is not a regular file"},
		{map[string]any{"image_url": "data:image/png,raw", "question": "?"}, "a data: URL must be base64"},
		{map[string]any{"image_url": "data:image/png;base64,@@@", "question": "?"}, "not valid base64"},
		{map[string]any{"image_url": broken, "question": "?", "region": []any{0, 0, 5, 5}}, "could not be decoded"},
		{map[string]any{"image_url": broken, "question": "?", "region": []any{0, 0, 5}}, "region must be [x1, y1, x2, y2]"},
		{map[string]any{"image_url": broken, "question": "?", "region": []any{0, -1, 5, 5}}, "of 0 or more"},
	} {
		m := runVision(t, s, dir, tc.args)
		if m["success"] != false || !strings.Contains(m["error"].(string), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, m, tc.want)
		}
	}
	if len(a.prompts) != 0 {
		t.Fatalf("the model was asked %d times", len(a.prompts))
	}
	// No model that can see: the tool says so.
	m := runVision(t, Settings{Vision: Vision{Unavailable: "the main model is offline"}}, dir, map[string]any{"image_url": notes, "question": "?"})
	if m["success"] != false || m["error"] != "Error analyzing image: the main model is offline" {
		t.Fatalf("%v", m)
	}
}

// A region is cropped from the original image at full resolution, and the
// model is told where the crop starts; a region outside the image is
// refused.
func TestVisionAnalyzeRegion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "q.png")
	if err := os.WriteFile(p, quadrants(t, 100, 80), 0o600); err != nil {
		t.Fatal(err)
	}
	a := &asked{answers: []string{"green"}}
	m := runVision(t, Settings{Vision: a.vision()}, dir, map[string]any{"image_url": p, "question": "colour?", "region": []any{60, 5, 90.0, "30"}})
	note := "Analysis was performed on a cropped region of the original image starting at offset (60, 5); coordinates are relative to that crop origin — add the offset to map back to the full image."
	if m["success"] != true || m["scale_note"] != note || m["analysis"] != "["+note+"] green" {
		t.Fatalf("%v", m)
	}
	img, mt := decodeURL(t, a.urls[0])
	if b := img.Bounds(); mt != "image/png" || b.Dx() != 30 || b.Dy() != 25 {
		t.Fatalf("crop %v %s", img.Bounds(), mt)
	}
	if r, g, b, _ := img.At(0, 0).RGBA(); r != 0 || g != 0xffff || b != 0 {
		t.Fatalf("the crop is not the green quadrant: %v %v %v", r, g, b)
	}
	m = runVision(t, Settings{Vision: a.vision()}, dir, map[string]any{"image_url": p, "question": "?", "region": `[200, 200, 300, 300]`})
	if m["success"] != false || !strings.Contains(m["error"].(string), "holds no pixels of the 100x80 image") {
		t.Fatalf("%v", m)
	}
}

// A BMP goes as PNG; an empty answer is asked again once; a model's error
// is the tool's, in the familiar result.
func TestVisionAnalyzeFormatsAndAnswers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var buf bytes.Buffer
	src, _, _ := image.Decode(bytes.NewReader(quadrants(t, 8, 8)))
	if err := bmp.Encode(&buf, src); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "old.bmp")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	a := &asked{answers: []string{"", "a bitmap"}}
	m := runVision(t, Settings{Vision: a.vision()}, dir, map[string]any{"image_url": p, "question": "?"})
	if m["success"] != true || m["analysis"] != "a bitmap" || len(a.prompts) != 2 {
		t.Fatalf("%v after %d calls", m, len(a.prompts))
	}
	if img, mt := decodeURL(t, a.urls[0]); mt != "image/png" || img.Bounds().Dx() != 8 {
		t.Fatalf("%s %v", mt, img.Bounds())
	}
	a = &asked{answers: []string{""}}
	if m := runVision(t, Settings{Vision: a.vision()}, dir, map[string]any{"image_url": p, "question": "?"}); m["analysis"] != "There was a problem with the request and the image could not be analyzed." || len(a.prompts) != 2 {
		t.Fatalf("%v after %d calls", m, len(a.prompts))
	}
	a = &asked{errs: []error{errors.New("openai: HTTP 400: model does not support image input")}}
	m = runVision(t, Settings{Vision: a.vision()}, dir, map[string]any{"image_url": p, "question": "?"})
	if m["success"] != false || m["error"] != "Error analyzing image: openai: HTTP 400: model does not support image input" ||
		!strings.HasPrefix(m["analysis"].(string), "There was a problem with the request and the image could not be analyzed. Error: openai: HTTP 400") || len(a.prompts) != 1 {
		t.Fatalf("%v", m)
	}
}

// A provider that refuses an image for its size is sent it again scaled
// down (a PNG stays a PNG), and the model told how to map coordinates back.
func TestVisionAnalyzeScalesDownWhenRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	img := image.NewRGBA(image.Rect(0, 0, 1500, 1000))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = byte(r.Uint32())
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "noise.png")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	a := &asked{errs: []error{errors.New("openai: HTTP 413: request_too_large")}, answers: []string{"", "static"}}
	m := runVision(t, Settings{Vision: a.vision()}, dir, map[string]any{"image_url": p, "question": "?"})
	note := "Image downscaled from 1500x1000 to 750x500 for vision; multiply any coordinates you report by 2.00 to map back to the original image."
	if m["success"] != true || m["scale_note"] != note || m["analysis"] != "["+note+"] static" || len(a.urls) != 2 {
		t.Fatalf("%v after %d calls", m, len(a.urls))
	}
	if len(a.urls[0]) <= resizeTarget || len(a.urls[1]) > resizeTarget {
		t.Fatalf("sizes %d then %d", len(a.urls[0]), len(a.urls[1]))
	}
	if got, mt := decodeURL(t, a.urls[1]); mt != "image/png" || got.Bounds().Dx() != 750 || got.Bounds().Dy() != 500 {
		t.Fatalf("%s %v", mt, got.Bounds())
	}
}

// An image on the web is downloaded, never from a private address unless
// security.allow_private_urls says so (a loopback server stands for one),
// never with a key in its URL; a failed download says why.
func TestVisionAnalyzeURL(t *testing.T) {
	t.Parallel()
	data := quadrants(t, 10, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/cat.png":
			if !strings.HasPrefix(r.Header.Get("Accept"), "image/") {
				w.WriteHeader(http.StatusNotAcceptable)
				return
			}
			_, _ = w.Write(data)
		case "/moved":
			http.Redirect(w, r, "/cat.png", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	a := &asked{answers: []string{"quadrants"}}
	m := runVision(t, Settings{Vision: a.vision()}, "/", map[string]any{"image_url": srv.URL + "/cat.png", "question": "?"})
	if m["success"] != false || !strings.Contains(m["error"].(string), "private or internal network address") || len(a.prompts) != 0 {
		t.Fatalf("%v", m)
	}
	open := Settings{Vision: a.vision(), Web: Web{AllowPrivateURLs: true}}
	for _, path := range []string{"/cat.png", "/moved"} {
		m = runVision(t, open, "/", map[string]any{"image_url": srv.URL + path, "question": "?"})
		if m["success"] != true || m["analysis"] != "quadrants" {
			t.Fatalf("%s: %v", path, m)
		}
	}
	if a.urls[1] != "data:image/png;base64,"+base64.StdEncoding.EncodeToString(data) {
		t.Fatal("the redirect's image differs")
	}
	m = runVision(t, open, "/", map[string]any{"image_url": srv.URL + "/gone.png", "question": "?"})
	if m["success"] != false || !strings.Contains(m["error"].(string), "answered HTTP 404") {
		t.Fatalf("%v", m)
	}
	m = runVision(t, open, "/", map[string]any{"image_url": srv.URL + "/cat.png?api_key=sk-abcdefghijklmnopqrstuvwx", "question": "?"})
	if m["success"] != false || !strings.Contains(m["error"].(string), "API key or token") {
		t.Fatalf("%v", m)
	}
	// The check holds at connection time too: a guarded client refuses a
	// loopback address even when asked directly.
	if _, err := (Web{}).guardedClient().Get(srv.URL + "/cat.png"); err == nil || !strings.Contains(err.Error(), "private or internal") {
		t.Fatalf("the dialer let a loopback connection through: %v", err)
	}
}
