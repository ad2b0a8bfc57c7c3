package app_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"atrium/app"
	"atrium/backend/apperr"
	"atrium/backend/config"
	"atrium/backend/sessions"
)

// notices are the user messages of session id that tell of background
// processes' ends, and the replies after them, once there are n.
func notices(t *testing.T, e env, id string, n int) (told, replies []string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		msgs, err := e.st.Sessions.Messages(ctx, id, false)
		if err != nil {
			t.Fatal(err)
		}
		told, replies = nil, nil
		for i, m := range msgs {
			if m.Role == "user" && strings.HasPrefix(m.Content, "[IMPORTANT:") {
				told = append(told, m.Content)
				if i+1 < len(msgs) && msgs[i+1].Role == "assistant" {
					replies = append(replies, msgs[i+1].Content)
				}
			}
		}
		if len(replies) >= n {
			return told, replies
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d ends told (%q)", len(replies), n, told)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startedID is the process id a turn's terminal(background=true) answered.
func startedID(t *testing.T, e env, id string) string {
	t.Helper()
	msgs, err := e.st.Sessions.Messages(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		var out struct {
			SessionID string `json:"session_id"`
		}
		if msgs[i].Role == "tool" && json.Unmarshal([]byte(msgs[i].Content), &out) == nil && out.SessionID != "" {
			return out.SessionID
		}
	}
	t.Fatalf("no process started in %s", id)
	return ""
}

// A process the window's (or the dashboard's) conversation started with
// notify_on_complete is told to it when it ends: a turn of its own in the
// session, whose message is the familiar agent's notification, and which
// the model answers. One whose end the model waited for itself is not
// told again.
func TestTheEndOfABackgroundProcessIsToldToItsSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustCreate(t, sessions.CreateParams{ID: "bg"})
	if _, err := e.app.Sessions.Send("bg", `use tool terminal: {"command": "sleep 0.2; echo built; exit 2", "background": true, "notify_on_complete": true}`); err != nil {
		t.Fatal(err)
	}
	proc := startedID(t, e, "bg")
	told, replies := notices(t, e, "bg", 1)
	want := "[IMPORTANT: Background process " + proc + " exited (exit code 2).\nCommand: sleep 0.2; echo built; exit 2\nOutput:\nbuilt]"
	if len(told) != 1 || told[0] != want || replies[0] == "" {
		t.Fatalf("told %q, replied %q; want %q", told, replies, want)
	}

	// The model waits for the next one itself: that end is not told; the
	// one after it is, alone.
	if _, err := e.app.Sessions.Send("bg", `use tool terminal: {"command": "echo waited", "background": true, "notify_on_complete": true}`); err != nil {
		t.Fatal(err)
	}
	waited := startedID(t, e, "bg")
	if _, err := e.app.Sessions.Send("bg", `use tool process: {"action": "wait", "session_id": "`+waited+`"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := e.app.Sessions.Send("bg", `use tool terminal: {"command": "echo last", "background": true, "notify_on_complete": true}`); err != nil {
		t.Fatal(err)
	}
	last := startedID(t, e, "bg")
	told, _ = notices(t, e, "bg", 2)
	if len(told) != 2 || !strings.HasPrefix(told[1], "[IMPORTANT: Background process "+last+" completed normally (exit code 0).") || strings.Contains(strings.Join(told, ""), waited) {
		t.Fatalf("told %q (waited for %s)", told, waited)
	}
}

// A session closed with /new before its process ended is not told: the
// fresh session goes on without it.
func TestAnEndAfterNewIsNotTold(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustCreate(t, sessions.CreateParams{ID: "old"})
	gate := t.TempDir() + "/go"
	if _, err := e.app.Sessions.Send("old", `use tool terminal: {"command": "while [ ! -e `+gate+` ]; do sleep 0.05; done; echo stale", "background": true, "notify_on_complete": true}`); err != nil {
		t.Fatal(err)
	}
	turn, err := e.app.Sessions.Send("old", "/new")
	if err != nil || turn.SessionID == "old" {
		t.Fatalf("/new: %+v %v", turn, err)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// A second process, started after, in the fresh session, is told: by
	// then the first one's end has been handed over and dropped.
	if _, err := e.app.Sessions.Send(turn.SessionID, `use tool terminal: {"command": "while [ ! -e `+gate+`2 ]; do sleep 0.05; done; echo fresh", "background": true, "notify_on_complete": true}`); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gate+"2", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	told, _ := notices(t, e, turn.SessionID, 1)
	if len(told) != 1 || !strings.HasSuffix(told[0], "Output:\nfresh]") {
		t.Fatalf("the fresh session was told %q", told)
	}
	if old, _ := notices(t, e, "old", 0); len(old) != 0 {
		t.Fatalf("the closed session was told %q", old)
	}
}

// Settings → Agent tools chooses which ends are told
// (display.background_process_notifications) and how a chat is shown the
// tool calls (display.tool_progress): the file says it, off quoted, the
// default goes rather than say "all", another value is refused.
func TestSettingsChooseWhichEndsAreTold(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, k := range []struct {
		key     string
		field   func(*app.ToolsSettingsDTO) *string
		read    func(config.Config) string
		values  []string
		refused string
	}{
		{"background_process_notifications", func(d *app.ToolsSettingsDTO) *string { return &d.ProcessEnds }, config.Config.ProcessNotifications,
			[]string{"error", "off", "result", "all"}, "must be all, result, error or off"},
		{"tool_progress", func(d *app.ToolsSettingsDTO) *string { return &d.ToolProgress }, config.Config.ToolProgressMode,
			[]string{"new", "off", "verbose", "log", "all"}, "must be all, new, verbose, log or off"},
	} {
		s, err := e.app.Settings.Get()
		if err != nil || *k.field(s.Tools) != "all" {
			t.Fatalf("%s default: %q %v", k.key, *k.field(s.Tools), err)
		}
		for _, mode := range k.values {
			*k.field(s.Tools) = mode
			got, err := e.app.Settings.Set(s)
			if err != nil || *k.field(got.Tools) != mode {
				t.Fatalf("%s %s: %q %v", k.key, mode, *k.field(got.Tools), err)
			}
			cfg, _, err := config.Load(e.st.Home.ConfigPath())
			if err != nil || k.read(cfg) != mode {
				t.Fatalf("%s %s: config.yaml says %v (%v)", k.key, mode, k.read(cfg), err)
			}
			b, _ := os.ReadFile(e.st.Home.ConfigPath())
			if mode == "off" && !strings.Contains(string(b), k.key+`: "off"`) {
				t.Fatalf("off is written so that YAML 1.1 readers do not take it for false:\n%s", b)
			}
			if mode == "all" && strings.Contains(string(b), k.key) {
				t.Fatalf("the default is written:\n%s", b)
			}
		}
		*k.field(s.Tools) = "loud"
		if _, err := e.app.Settings.Set(s); apperr.CodeOf(err) != apperr.Invalid || !strings.Contains(err.Error(), k.refused) {
			t.Fatalf("%s, a bad value: %v", k.key, err)
		}
	}
}

// A line of a watched process's output that holds one of its
// watch_patterns is told to the window's conversation while the process
// runs: a turn whose message is the familiar agent's notice, which the
// model answers.
func TestAWatchedLineIsToldToItsSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustCreate(t, sessions.CreateParams{ID: "srv"})
	if _, err := e.app.Sessions.Send("srv", `use tool terminal: {"command": "echo booting; echo listening on :8080; sleep 60", "background": true, "watch_patterns": ["listening on"]}`); err != nil {
		t.Fatal(err)
	}
	proc := startedID(t, e, "srv")
	told, replies := notices(t, e, "srv", 1)
	want := "[IMPORTANT: Background process " + proc + " matched watch pattern \"listening on\".\nCommand: echo booting; echo listening on :8080; sleep 60\nMatched output:\nlistening on :8080]"
	if len(told) != 1 || told[0] != want || replies[0] == "" {
		t.Fatalf("told %q, replied %q; want %q", told, replies, want)
	}
}
