package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"atrium/app"
	"atrium/backend/sessions"
)

// A turn of the window or the dashboard that waits on its model says why
// while it waits (the runs event's status, which the page shows under the
// pending reply), then answers from the fallback model with a note saying
// so; the status is gone once the turn ends.
func TestTheWindowSeesTheModelWaitedOn(t *testing.T) {
	t.Parallel()
	e, rec, _ := approvalEnv(t, 0)
	liveCtx, stopLive := context.WithCancel(ctx)
	defer stopLive()
	go e.app.Run(liveCtx)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Model string `json:"model"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		w.Header().Set("Content-Type", "application/json")
		if strings.HasPrefix(r.URL.Path, "/main/") {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":{"message":"slow down"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hi from ` + body.Model + `"}}]}`))
	}))
	defer srv.Close()
	cfg := fmt.Sprintf("model:\n  provider: custom\n  base_url: %[1]s/main/v1\n  default: m1\nagent:\n  api_max_retries: 1\n"+
		"fallback_providers:\n  - provider: custom\n    model: spare\n    base_url: %[1]s/spare/v1\n", srv.URL)
	if err := os.WriteFile(e.st.Home.ConfigPath(), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	s := e.mustCreate(t, sessions.CreateParams{Title: "busy provider"})
	turn, err := e.app.Sessions.Send(s.ID, "hello")
	if err != nil || turn.Reply != "hi from spare" ||
		!slices.Equal(turn.Notes, []string{"m1 failed (rate limited, after 1 retry); the turn went on with fallback spare via custom"}) {
		t.Fatalf("turn: %+v %v", turn, err)
	}
	var statuses []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		statuses = statuses[:0]
		evs := rec.named(app.EventRuns)
		for _, ev := range evs {
			for _, r := range ev.(app.RunsDTO).Running {
				if r.SessionID == s.ID && r.Status != "" && !slices.Contains(statuses, r.Status) {
					statuses = append(statuses, r.Status)
				}
			}
		}
		if len(evs) > 0 && len(evs[len(evs)-1].(app.RunsDTO).Running) == 0 {
			break // the turn's end was told too
		}
		if time.Now().After(deadline) {
			t.Fatalf("no runs event without the turn: %+v", evs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(statuses) == 0 || statuses[0] != "⏱️ Rate limited. Waiting 1.0s (attempt 1/1)..." {
		t.Fatalf("the page was told %q", statuses)
	}
}
