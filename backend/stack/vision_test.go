package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"atrium/backend/config"
)

// Without auxiliary.vision of its own, images go to the main model's
// provider and model (a real loopback server); with the main model
// offline, nothing can look, and VisionOf says why.
func TestVisionOfTheMainModel(t *testing.T) {
	t.Parallel()
	bodies := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- r.URL.Path + " " + string(b)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"a red dot"}}]}`)
	}))
	defer srv.Close()
	home := config.Home{Dir: t.TempDir()}
	cfg, _, err := config.Parse([]byte(fmt.Sprintf("model:\n  provider: custom\n  base_url: %s/v1\n  default: main-m\n", srv.URL)), "config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	v := VisionOf(home, cfg)
	if v.Problem() != "" {
		t.Fatalf("problem %q", v.Problem())
	}
	got, err := v.Ask(context.Background(), "what is it?", "data:image/png;base64,AAAA")
	if err != nil || got != "a red dot" {
		t.Fatalf("%q %v", got, err)
	}
	path, body, _ := strings.Cut(<-bodies, " ")
	var req struct {
		Model       string
		Temperature float64
		Messages    []struct {
			Role    string
			Content []map[string]any
		}
	}
	if err := json.Unmarshal([]byte(body), &req); err != nil || path != "/v1/chat/completions" || req.Model != "main-m" || req.Temperature != config.DefaultVisionTemperature ||
		len(req.Messages) != 1 || len(req.Messages[0].Content) != 2 || req.Messages[0].Content[1]["type"] != "image_url" {
		t.Fatalf("%s %s %v", path, body, err)
	}
	offline, _, _ := config.Parse(nil, "config.yaml")
	if v := VisionOf(home, offline); v.Ask != nil || !strings.Contains(v.Problem(), "the main model is offline") {
		t.Fatalf("offline: %+v %q", v, v.Problem())
	}
}
