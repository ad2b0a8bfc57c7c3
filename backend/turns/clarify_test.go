package turns_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"atrium/backend/hooks"
	"atrium/backend/llm"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
	"atrium/backend/tools"
	"atrium/backend/turns"
)

// clarifyEnv is a loop whose clarify questions answer calls; asked is
// every question asked, in order.
type clarifyEnv struct {
	machineEnv
	mu    sync.Mutex
	asked []turns.Question
}

func newClarifyEnv(t *testing.T, toolsets []string, answer func(turns.Question) (turns.Reply, error)) *clarifyEnv {
	t.Helper()
	e := newEnv(t, 100000, nil)
	ce := &clarifyEnv{}
	dir := t.TempDir()
	o := turns.Options{Provider: llm.OfflineProvider{Window: 100000},
		Machine:        func() tools.Settings { return tools.Settings{Cwd: dir, Toolsets: toolsets} },
		ClarifyTimeout: func() time.Duration { return 90 * time.Second }}
	if answer != nil {
		o.Clarify = func(ctx context.Context, q turns.Question) (turns.Reply, error) {
			ce.mu.Lock()
			ce.asked = append(ce.asked, q)
			ce.mu.Unlock()
			return answer(q)
		}
	}
	loop, err := turns.New(e.DB, e.Sessions, e.eng, e.Bus, o)
	if err != nil {
		t.Fatal(err)
	}
	e.loop = loop
	ce.machineEnv = machineEnv{env: e, dir: dir}
	return ce
}

// lastResult is the text of the conversation's last tool result.
func (m machineEnv) lastResult(t *testing.T, id string) string {
	t.Helper()
	out, ok := sessionstest.LastToolResult(t, m.Sessions, id)
	if !ok {
		t.Fatalf("no tool result in %s", id)
	}
	return out
}

// The clarify tool asks the person through the surface and the model
// reads the answer in the familiar agent's words: the recommended choice
// marked where it is shown and not in the answer, several picks as a
// list, an open question's own words, a question unanswered in time as
// the agent's sentence.
func TestClarifyAsksThePersonAndTheModelReadsTheAnswer(t *testing.T) {
	t.Parallel()
	var next func(q turns.Question) (turns.Reply, error)
	m := newClarifyEnv(t, nil, func(q turns.Question) (turns.Reply, error) { return next(q) })
	s := m.MustCreate(t, sessions.CreateParams{Title: "deploy"})
	cases := []struct {
		name  string
		args  string
		reply func(q turns.Question) (turns.Reply, error)
		want  string
	}{
		{"the second choice", `{"question": " Which target? ", "choices": ["staging", "prod"]}`,
			func(q turns.Question) (turns.Reply, error) { return turns.Reply{Text: q.Choices[1]}, nil },
			`{"question":"Which target?","choices_offered":["staging","prod"],"user_response":"prod"}`},
		{"the recommended one", `{"question": "Which target?", "choices": [{"label": "staging"}, "{\"description\": \"prod\"}", {"name": "x"}, "a", "b", "c"]}`,
			func(q turns.Question) (turns.Reply, error) { return turns.Reply{Text: q.Choices[0]}, nil },
			`{"question":"Which target?","choices_offered":["staging","prod","a","b"],"user_response":"staging"}`},
		{"several", `{"question": "Which checks?", "choices": ["lint", "test", "e2e"], "multi_select": true}`,
			func(q turns.Question) (turns.Reply, error) {
				return turns.Reply{Picked: []string{q.Choices[0], "e2e", "soak <1h> & done"}}, nil
			},
			`{"question":"Which checks?","choices_offered":["lint","test","e2e"],"user_response":["lint","e2e","soak <1h> & done"]}`},
		{"several as text", `{"question": "Which checks?", "choices": ["lint", "test"], "multi_select": true}`,
			func(q turns.Question) (turns.Reply, error) { return turns.Reply{Text: "lint, test"}, nil },
			`{"question":"Which checks?","choices_offered":["lint","test"],"user_response":["lint","test"]}`},
		{"open", `{"question": "When should it go out?", "choices": []}`,
			func(q turns.Question) (turns.Reply, error) { return turns.Reply{Text: "Tuesday"}, nil },
			`{"question":"When should it go out?","choices_offered":null,"user_response":"Tuesday"}`},
		{"no answer in time", `{"question": "Which target?", "choices": ["staging", "prod"]}`,
			func(q turns.Question) (turns.Reply, error) { return turns.Reply{}, turns.ErrNoAnswer },
			`{"question":"Which target?","choices_offered":["staging","prod"],"user_response":"` + tools.ClarifyTimedOut + `"}`},
		{"the surface failed", `{"question": "Which target?"}`,
			func(q turns.Question) (turns.Reply, error) { return turns.Reply{}, errors.New("the page went away") },
			`{"error":"Failed to get user input: the page went away"}`},
	}
	for _, c := range cases {
		next = c.reply
		if _, err := m.loop.Send(ctx, s.ID, "use tool clarify: "+c.args, hooks.LocalContext("cli", s.ID)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := m.lastResult(t, s.ID); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
	first := m.asked[0]
	if first.SessionID != s.ID || first.Question != "Which target?" || fmt.Sprint(first.Choices) != "[staging (Recommended) prod]" ||
		first.MultiSelect || first.Index != 1 || first.Of != 1 || first.Title != "" || first.Timeout != 90*time.Second {
		t.Errorf("the question asked: %+v", first)
	}
	if q := m.asked[2]; !q.MultiSelect || len(q.Choices) != 3 {
		t.Errorf("the multi-select question: %+v", q)
	}
	if q := m.asked[4]; q.Choices != nil || q.MultiSelect {
		t.Errorf("the open question: %+v", q)
	}
	if len(m.asked) != len(cases) {
		t.Fatalf("%d questions asked for %d calls", len(m.asked), len(cases))
	}
	results := m.toolResults(t)
	if len(results) != len(cases) || results[0].ToolName != tools.ClarifyTool {
		t.Fatalf("post_tool_call: %+v", results)
	}
	m.Rec.Expect(t, m.Bus, map[string]int{hooks.PostToolCall: len(cases), hooks.PostLLMCall: len(cases),
		hooks.OnSessionEnd: len(cases), hooks.OnSessionStart: 1})
}

// Several questions in one call are asked one after the other under their
// title: a skipped one goes on to the next, one left unanswered in time
// ends the asking and the answer says timed_out; a model's id is echoed.
// Arguments that cannot be asked are an error the model reads, and
// nobody is asked.
func TestClarifyAsksABatchOneAfterTheOther(t *testing.T) {
	t.Parallel()
	m := newClarifyEnv(t, nil, func(q turns.Question) (turns.Reply, error) {
		switch q.Index {
		case 1:
			return turns.Reply{Text: "postgres"}, nil
		case 2:
			return turns.Reply{}, nil // skipped
		}
		return turns.Reply{}, turns.ErrNoAnswer
	})
	s := m.MustCreate(t, sessions.CreateParams{Title: "setup"})
	_, err := m.loop.Send(ctx, s.ID, `use tool clarify: {"question": "Setup", "questions": [{"id": "db", "question": "Which database?", "choices": ["postgres", "sqlite"]}, "Any deadline?", {"question": "Which region?"}, {"question": "Never asked"}]}`, hooks.LocalContext("cli", s.ID))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"responses":[{"id":"db","question":"Which database?","choices_offered":["postgres","sqlite"],"user_response":"postgres"},` +
		`{"question":"Any deadline?","choices_offered":null,"user_response":""},` +
		`{"question":"Which region?","choices_offered":null,"user_response":""},` +
		`{"question":"Never asked","choices_offered":null,"user_response":""}],"timed_out":true}`
	if got := m.lastResult(t, s.ID); got != want {
		t.Errorf("batch:\n got %s\nwant %s", got, want)
	}
	if len(m.asked) != 3 || m.asked[0].Title != "Setup" || m.asked[0].Of != 4 || m.asked[2].Index != 3 ||
		fmt.Sprint(m.asked[0].Choices) != "[postgres (Recommended) sqlite]" {
		t.Fatalf("asked: %+v", m.asked)
	}
	for _, bad := range []struct{ args, want string }{
		{`{"choices": ["a"]}`, `{"error":"Question text is required."}`},
		{`{"question": "x", "choices": "a or b"}`, `{"error":"choices must be a list of strings."}`},
		{`{"question": "x", "questions": [1]}`, `{"error":"questions[0] must be an object with a 'question'."}`},
		{`{"question": "x", "questions": [{"question": " "}]}`, `{"error":"questions[0].question must be non-empty text."}`},
		{`{"question": "x", "questions": ["a", "b", "c", "d", "e", "f"]}`, `{"error":"questions supports at most 5 items."}`},
	} {
		if _, err := m.loop.Send(ctx, s.ID, "use tool clarify: "+bad.args, hooks.LocalContext("cli", s.ID)); err != nil {
			t.Fatal(err)
		}
		if got := m.lastResult(t, s.ID); got != bad.want {
			t.Errorf("%s: %s, want %s", bad.args, got, bad.want)
		}
	}
	if len(m.asked) != 3 {
		t.Fatalf("bad arguments asked someone: %+v", m.asked[3:])
	}
}

// Nobody is asked where nobody is: the tool is not offered without a
// surface that asks, in a scheduled run, or where toolsets leave it out.
func TestClarifyIsOfferedOnlyWhereAPersonCanAnswer(t *testing.T) {
	t.Parallel()
	answer := func(turns.Question) (turns.Reply, error) { return turns.Reply{Text: "yes"}, nil }
	for _, c := range []struct {
		name     string
		toolsets []string
		answer   func(turns.Question) (turns.Reply, error)
		platform string
		offered  bool
	}{
		{"the window", nil, answer, "cli", true},
		{"no surface to ask", nil, nil, "cli", false},
		{"a scheduled run", nil, answer, turns.PlatformCron, false},
		{"toolsets without it", []string{"terminal"}, answer, "cli", false},
		{"toolsets naming it", []string{"clarify"}, answer, "cli", true},
	} {
		m := newClarifyEnv(t, c.toolsets, c.answer)
		s := m.MustCreate(t, sessions.CreateParams{Title: c.name})
		turn, err := m.loop.Send(ctx, s.ID, `use tool clarify: {"question": "Go on?"}`, hooks.LocalContext(c.platform, s.ID))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := len(turn.ToolCalls) == 1; got != c.offered {
			t.Errorf("%s: offered %v, want %v (%+v)", c.name, got, c.offered, turn)
		}
		if c.offered && len(m.asked) != 1 || !c.offered && len(m.asked) != 0 {
			t.Errorf("%s: asked %+v", c.name, m.asked)
		}
	}
}

// A turn stopped while its question waits ends the question; the call's
// record says the turn was stopped.
func TestAStoppedTurnEndsItsQuestion(t *testing.T) {
	t.Parallel()
	waiting := make(chan struct{})
	var m *clarifyEnv
	m = newClarifyEnv(t, nil, nil)
	m.loop, _ = turns.New(m.DB, m.Sessions, m.eng, m.Bus, turns.Options{Provider: llm.OfflineProvider{Window: 100000},
		Machine: func() tools.Settings { return tools.Settings{Cwd: m.dir} },
		Clarify: func(ctx context.Context, q turns.Question) (turns.Reply, error) {
			close(waiting)
			<-ctx.Done()
			return turns.Reply{}, ctx.Err()
		}})
	s := m.MustCreate(t, sessions.CreateParams{Title: "stop"})
	tctx, stop := context.WithCancelCause(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := m.loop.Send(tctx, s.ID, `use tool clarify: {"question": "Go on?"}`, hooks.LocalContext("cli", s.ID))
		done <- err
	}()
	<-waiting
	stop(turns.StopByPerson)
	if err := <-done; turns.StopOf(tctx, err) == nil {
		t.Fatalf("the turn: %v", err)
	}
	if got := m.lastResult(t, s.ID); !strings.Contains(got, "the turn was stopped") {
		t.Fatalf("the result: %s", got)
	}
}

// A plugin's dispatch_tool of a tool only a turn can run (the task list,
// memory, recall, a question to the person) is an error it reads, as the
// familiar agent's registry answers it: never a crash of the process.
func TestDispatchToolOfTheTurnsOwnTools(t *testing.T) {
	t.Parallel()
	m := newClarifyEnv(t, nil, func(turns.Question) (turns.Reply, error) { return turns.Reply{Text: "yes"}, nil })
	s := m.MustCreate(t, sessions.CreateParams{Title: "plugin"})
	for name, want := range map[string]string{
		"todo":           `{"error":"todo must be handled by the agent loop"}`,
		"memory":         `{"error":"memory must be handled by the agent loop"}`,
		"session_search": `{"error":"session_search must be handled by the agent loop"}`,
		"clarify":        `{"error":"Clarify tool is not available in this execution context."}`,
	} {
		out, err := m.loop.DispatchTool(ctx, "cli:"+s.ID, name, map[string]any{"question": "x"})
		if err != nil || out != want {
			t.Errorf("dispatch_tool %s: %s %v, want %s", name, out, err, want)
		}
	}
	if len(m.asked) != 0 {
		t.Fatalf("a plugin's dispatch asked the person: %+v", m.asked)
	}
}

// A question in a turn that must end by a fixed deadline (a caller's own
// context.WithTimeout; the surfaces' turns stand their clock still while
// a person is waited for, TestAPersonsTimeIsNotTheTurns) waits a minute
// less than the turn has, or half of what is left when that is less, so
// the model reads "no answer in time" and goes on instead of the turn
// ending mid-question; a shorter agent.clarify_timeout still wins.
func TestAQuestionWaitsNoLongerThanItsTurn(t *testing.T) {
	t.Parallel()
	m := newClarifyEnv(t, nil, nil)
	limit := time.Hour
	m.loop, _ = turns.New(m.DB, m.Sessions, m.eng, m.Bus, turns.Options{Provider: llm.OfflineProvider{Window: 100000},
		Machine:        func() tools.Settings { return tools.Settings{Cwd: m.dir} },
		ClarifyTimeout: func() time.Duration { return limit },
		Clarify: func(_ context.Context, q turns.Question) (turns.Reply, error) {
			m.mu.Lock()
			m.asked = append(m.asked, q)
			m.mu.Unlock()
			return turns.Reply{}, turns.ErrNoAnswer
		}})
	s := m.MustCreate(t, sessions.CreateParams{Title: "deadline"})
	for _, c := range []struct {
		left, limit, lo, hi time.Duration
	}{
		{10 * time.Minute, time.Hour, 8*time.Minute + 58*time.Second, 9 * time.Minute},
		{30 * time.Second, time.Hour, 14 * time.Second, 15 * time.Second},
		{10 * time.Minute, 90 * time.Second, 90 * time.Second, 90 * time.Second},
		{10 * time.Minute, 0, 8*time.Minute + 58*time.Second, 9 * time.Minute}, // no limit of its own
	} {
		limit = c.limit
		dctx, cancel := context.WithTimeout(ctx, c.left)
		if _, err := m.loop.Send(dctx, s.ID, `use tool clarify: {"question": "Go on?"}`, hooks.LocalContext("telegram", s.ID)); err != nil {
			t.Fatal(err)
		}
		cancel()
		if q := m.asked[len(m.asked)-1]; q.Timeout < c.lo || q.Timeout > c.hi {
			t.Errorf("%v left, limit %v: asked with %v, want %v to %v", c.left, c.limit, q.Timeout, c.lo, c.hi)
		}
		if got := m.lastResult(t, s.ID); !strings.Contains(got, tools.ClarifyTimedOut) {
			t.Errorf("%v left: the model read %s", c.left, got)
		}
	}
}
