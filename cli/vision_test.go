package cli_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"atrium/backend/tools"
)

// visionCall is a chat completion that showed the model an image: the
// familiar vision call, one user message of text and one image_url part.
type visionCall struct {
	Path, Auth, Model string
	Temperature       float64
	Prompt, Image     string
}

// readVisionCall reads a vision call, failing the test for any other
// shape of request.
func readVisionCall(t *testing.T, r *http.Request) visionCall {
	var req struct {
		Model       string   `json:"model"`
		Temperature *float64 `json:"temperature"`
		Messages    []struct {
			Role    string `json:"role"`
			Content []struct {
				Type     string `json:"type"`
				Text     string `json:"text"`
				ImageURL struct {
					URL string `json:"url"`
				} `json:"image_url"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 1 || req.Messages[0].Role != "user" ||
		len(req.Messages[0].Content) != 2 || req.Messages[0].Content[0].Type != "text" || req.Messages[0].Content[1].Type != "image_url" || req.Temperature == nil {
		t.Errorf("not a vision call: %+v %v", req, err)
		return visionCall{}
	}
	return visionCall{Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Model: req.Model, Temperature: *req.Temperature,
		Prompt: req.Messages[0].Content[0].Text, Image: req.Messages[0].Content[1].ImageURL.URL}
}

// tinyPNG is a 4×4 red PNG.
func tinyPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	for y := range 4 {
		for x := range 4 {
			img.Set(x, y, color.RGBA{255, 0, 0, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// With the main model offline nothing can look at an image, and `atrium
// tools` says so; auxiliary.vision naming a model that can see offers
// vision_analyze, and a chat's call of it shows that model the image with
// the familiar prompt and reads back its answer.
func TestVisionAnalyzeFromAChat(t *testing.T) {
	t.Parallel()
	home, work := t.TempDir(), t.TempDir()
	photo := tinyPNG(t)
	if err := os.WriteFile(filepath.Join(work, "red.png"), photo, 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var looked []visionCall
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := readVisionCall(t, r)
		mu.Lock()
		looked = append(looked, call)
		mu.Unlock()
		writeAnswer(w, map[string]any{"role": "assistant", "content": "A small red square."})
	}))
	defer srv.Close()
	offered := func() string {
		t.Helper()
		var out []struct {
			Name    string `json:"name"`
			Offered bool   `json:"offered"`
			Why     string `json:"why"`
		}
		mustJSON(t, atriumExec(t, home, "", nil, "tools", "--json"), &out)
		for _, s := range out {
			if s.Name == tools.VisionAnalyzeTool {
				return fmt.Sprintf("%v %s", s.Offered, s.Why)
			}
		}
		t.Fatal("vision_analyze is not listed")
		return ""
	}
	if got := offered(); got != "false vision_analyze needs a model that can see images, and the main model is offline: set auxiliary.vision (its provider and model, or a base_url), or model.provider" {
		t.Fatalf("offline: %q", got)
	}
	cfg := fmt.Sprintf("auxiliary:\n  vision:\n    base_url: %s/v1\n    model: eyes-1\n    api_key_env: ATRIUM_T_VISION_KEY\n    temperature: 0.2\n", srv.URL)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".env"), []byte("ATRIUM_T_VISION_KEY=sk-vision\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := offered(); got != "true " {
		t.Fatalf("with auxiliary.vision: %q", got)
	}
	args, _ := json.Marshal(map[string]any{"image_url": filepath.Join(work, "red.png"), "question": "What colour is it?"})
	r := atriumExec(t, home, "use tool vision_analyze: "+string(args)+"\n", nil, "chat")
	if r.code != 0 || !strings.Contains(r.stdout, `{"analysis":"A small red square.","success":true}`) {
		t.Fatalf("the chat: %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	want := visionCall{Path: "/v1/chat/completions", Auth: "Bearer sk-vision", Model: "eyes-1", Temperature: 0.2,
		Prompt: "Fully describe and explain everything about this image, then answer the following question:\n\nWhat colour is it?",
		Image:  "data:image/png;base64," + base64.StdEncoding.EncodeToString(photo)}
	if len(looked) != 1 || looked[0] != want {
		t.Fatalf("the vision model was asked %+v, want %+v", looked, want)
	}
}
