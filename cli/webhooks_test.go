package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"atrium/backend/webhooks"
)

// Outbound webhooks through the real binary and its plugin host: a delete
// is posted, signed, with every removed id; while the receiver answers
// 500 the command returns at once, the attempt is in the event log, and
// the event is posted again with the same delivery_id until it is taken.
func TestOutboundWebhooksNeverDropAnEvent(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies [][]byte
	var heads []http.Header
	down := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		bodies, heads = append(bodies, b), append(heads, r.Header.Clone())
		if down {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	home := shellHome(t, `
hooks:
  outbound:
    - name: audit
      url: `+srv.URL+`/atrium
      events: [on_session_delete, pre_tool_call]
      secret_env: ATRIUM_TEST_WEBHOOK_SECRET
`, nil)
	env := []string{"ATRIUM_TEST_WEBHOOK_SECRET=hush"}
	id := create(t, home, "--title", "to be deleted")
	start := time.Now()
	r := atriumExec(t, home, "", env, "sessions", "delete", id)
	if r.code != 0 || !strings.Contains(r.stderr, "pre_tool_call is called in line and not kept in the event log") {
		t.Fatalf("delete: %+v", r)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Fatalf("the delete waited %s for a receiver that is down", took)
	}
	type delivery struct {
		Subscriber string `json:"subscriber"`
		Status     string `json:"status"`
		Error      string `json:"error"`
	}
	var evs []struct {
		EventID    string     `json:"event_id"`
		Hook       string     `json:"hook"`
		Deliveries []delivery `json:"deliveries"`
	}
	statusOf := func() (string, string, string) {
		evs = nil
		mustJSON(t, atriumExec(t, home, "", env, "events", "list", "--hook", "on_session_delete", "--json"), &evs)
		if len(evs) != 1 {
			return "", "", ""
		}
		for _, d := range evs[0].Deliveries {
			if d.Subscriber == "webhook:audit" {
				return evs[0].EventID, d.Status, d.Error
			}
		}
		return evs[0].EventID, "", ""
	}
	waitFor(t, "the failed attempt in the log", 30*time.Second, func() bool {
		_, st, e := statusOf()
		return st == "retrying" && strings.HasPrefix(e, "attempt ") && strings.Contains(e, "HTTP 500")
	})
	mu.Lock()
	down = false
	mu.Unlock()
	waitFor(t, "the event taken", 30*time.Second, func() bool {
		_, st, _ := statusOf()
		return st == "ok"
	})
	eventID, _, _ := statusOf()
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) < 2 {
		t.Fatalf("%d posts", len(bodies))
	}
	for i, b := range bodies {
		var body struct {
			Event      string         `json:"hook_event_name"`
			SessionID  string         `json:"session_id"`
			DeliveryID string         `json:"delivery_id"`
			Extra      map[string]any `json:"extra"`
		}
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatal(err)
		}
		if body.Event != "on_session_delete" || body.SessionID != id || body.DeliveryID != eventID ||
			heads[i].Get("X-Hermes-Delivery") != eventID || heads[i].Get("X-Hermes-Signature-256") != webhooks.Sign("hush", b) {
			t.Fatalf("post %d: %v\n%s", i, heads[i], b)
		}
		if ids, _ := body.Extra["deleted_ids"].([]any); len(ids) != 1 || ids[0] != id || body.Extra["reason"] != "delete" {
			t.Fatalf("post %d: %s", i, b)
		}
	}
	var list struct {
		Outbound []struct {
			Name         string   `json:"name"`
			Signed       bool     `json:"signed"`
			RegisteredIn []string `json:"registered_in"`
		} `json:"outbound"`
	}
	mustJSON(t, atriumExec(t, home, "", env, "hooks", "list", "--json"), &list)
	if len(list.Outbound) != 1 || list.Outbound[0].Name != "audit" || !list.Outbound[0].Signed || len(list.Outbound[0].RegisteredIn) != 1 {
		t.Fatalf("hooks list: %+v", list)
	}
}
