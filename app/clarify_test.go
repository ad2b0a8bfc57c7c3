package app_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"atrium/app"
	"atrium/backend/config"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
	"atrium/backend/tools"
)

// clarifyEnv is a dashboard whose loop asks its Clarifications, with
// config.yaml as given.
func clarifyEnv(t *testing.T, configYAML string) (env, *recorder, client) {
	t.Helper()
	home, err := config.ResolveHome(t.TempDir(), "default")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(home.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(home.ConfigPath(), []byte(configYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	return askingDashboard(t, home, nil, app.Options{Clarify: app.NewClarifications()})
}

// waitQuestion waits for the n-th clarify:pending event.
func waitQuestion(t *testing.T, rec *recorder, n int) app.ClarifyDTO {
	t.Helper()
	return nthEvent[app.ClarifyDTO](t, rec, app.EventClarifyPending, n)
}

// lastToolResult is what the model read of the conversation's last tool
// call.
func (e env) lastToolResult(t *testing.T, id string) string {
	t.Helper()
	out, ok := sessionstest.LastToolResult(t, e.st.Sessions, id)
	if !ok {
		t.Fatalf("no tool result in %s", id)
	}
	return out
}

// The model's question waits for the person at the window or the
// dashboard: the dialog's event carries the question and its choices (the
// first marked as the model's pick) and when it stops waiting; GET
// /api/clarify lists it; an answer that does not fit the question is
// refused and the question still waits; the answer (POST
// /api/clarify/{id}) is taken once and the model reads it; the done event
// closes the dialog on every page.
func TestClarifyAsksThePersonHere(t *testing.T) {
	t.Parallel()
	e, rec, c := clarifyEnv(t, "agent:\n  clarify_timeout: 300\n")
	s := e.mustCreate(t, sessions.CreateParams{Title: "deploy"})
	ch := sendAsync(e, s.ID, `use tool clarify: {"question": "Which target?", "choices": ["staging", "prod"]}`)
	q := waitQuestion(t, rec, 1)
	if q.SessionID != s.ID || q.Question != "Which target?" || strings.Join(q.Choices, "|") != "staging (Recommended)|prod" ||
		q.MultiSelect || q.Of != 1 || q.Index != 1 || q.ExpiresAt == nil || time.Until(*q.ExpiresAt) < 4*time.Minute || time.Until(*q.ExpiresAt) > 5*time.Minute {
		t.Fatalf("pending %+v", q)
	}
	var waiting []app.ClarifyDTO
	if code := c.do("GET", "/api/clarify", token, nil, &waiting); code != 200 || len(waiting) != 1 || waiting[0].ID != q.ID {
		t.Fatalf("GET /api/clarify: %d %+v", code, waiting)
	}
	var refused app.ErrorDTO
	if code := c.do("POST", "/api/clarify/"+q.ID, token, map[string]any{"choices": []string{"prod"}}, &refused); code != 400 ||
		!strings.Contains(refused.Message, "takes one answer") {
		t.Fatalf("a list for a one-answer question: %d %+v", code, refused)
	}
	if code := c.do("POST", "/api/clarify/"+q.ID, token, map[string]any{"response": strings.Repeat("x", 17<<10)}, &refused); code != 400 {
		t.Fatalf("an answer too long: %d %+v", code, refused)
	}
	if code := c.do("POST", "/api/clarify/nope", token, map[string]any{"response": "prod"}, nil); code != 404 {
		t.Fatalf("an unknown question: %d", code)
	}
	if code := c.do("POST", "/api/clarify/"+q.ID, token, map[string]any{"response": "prod"}, &waiting); code != 200 || len(waiting) != 0 {
		t.Fatalf("the answer: %d %+v", code, waiting)
	}
	if r := <-ch; r.err != nil {
		t.Fatalf("the turn: %+v %v", r.turn, r.err)
	}
	if got, want := e.lastToolResult(t, s.ID), `{"question":"Which target?","choices_offered":["staging","prod"],"user_response":"prod"}`; got != want {
		t.Fatalf("the model read %s, want %s", got, want)
	}
	if code := c.do("POST", "/api/clarify/"+q.ID, token, map[string]any{"response": "staging"}, nil); code != 404 {
		t.Fatalf("a second answer: %d", code)
	}
	if done := rec.named(app.EventClarifyDone); len(done) != 1 || done[0].(app.ClarifyDoneDTO) != (app.ClarifyDoneDTO{ID: q.ID, Outcome: "answered"}) {
		t.Fatalf("done events: %+v", done)
	}

	// Several picks, and the person's own words beside them.
	ch = sendAsync(e, s.ID, `use tool clarify: {"question": "Which checks?", "choices": ["lint", "test", "e2e"], "multi_select": true}`)
	q = waitQuestion(t, rec, 2)
	if !q.MultiSelect {
		t.Fatalf("pending %+v", q)
	}
	if _, err := e.app.Sessions.AnswerClarify(q.ID, app.AnswerClarifyRequest{Choices: []string{"lint (Recommended)", "e2e"}, Response: "a soak test"}); err != nil {
		t.Fatal(err)
	}
	if r := <-ch; r.err != nil {
		t.Fatal(r.err)
	}
	if got, want := e.lastToolResult(t, s.ID), `{"question":"Which checks?","choices_offered":["lint","test","e2e"],"user_response":["lint","e2e","a soak test"]}`; got != want {
		t.Fatalf("the model read %s, want %s", got, want)
	}

	// Skipped: the model reads an empty answer.
	ch = sendAsync(e, s.ID, `use tool clarify: {"question": "Anything else?"}`)
	q = waitQuestion(t, rec, 3)
	if q.Choices == nil || len(q.Choices) != 0 {
		t.Fatalf("an open question's choices: %#v", q.Choices)
	}
	if code := c.do("POST", "/api/clarify/"+q.ID, token, map[string]any{}, nil); code != 200 {
		t.Fatalf("skip: %d", code)
	}
	if r := <-ch; r.err != nil {
		t.Fatal(r.err)
	}
	if got := e.lastToolResult(t, s.ID); got != `{"question":"Anything else?","choices_offered":null,"user_response":""}` {
		t.Fatalf("skipped: %s", got)
	}
	if done := rec.named(app.EventClarifyDone); len(done) != 3 || done[2].(app.ClarifyDoneDTO).Outcome != "skipped" {
		t.Fatalf("done events: %+v", done)
	}
}

// A question nobody answers in time (agent.clarify_timeout, read at the
// ask) stops waiting: the model reads the familiar agent's sentence and
// decides itself, and the dialog goes.
func TestClarifyRunsOutOfTime(t *testing.T) {
	t.Parallel()
	e, rec, _ := clarifyEnv(t, "agent:\n  clarify_timeout: 1\n")
	s := e.mustCreate(t, sessions.CreateParams{Title: "late"})
	ch := sendAsync(e, s.ID, `use tool clarify: {"question": "Which target?", "choices": ["staging", "prod"]}`)
	q := waitQuestion(t, rec, 1)
	if q.ExpiresAt == nil || time.Until(*q.ExpiresAt) > time.Second {
		t.Fatalf("expires %v", q.ExpiresAt)
	}
	if r := <-ch; r.err != nil {
		t.Fatal(r.err)
	}
	if got, want := e.lastToolResult(t, s.ID), `{"question":"Which target?","choices_offered":["staging","prod"],"user_response":"`+tools.ClarifyTimedOut+`"}`; got != want {
		t.Fatalf("the model read %s, want %s", got, want)
	}
	if done := rec.named(app.EventClarifyDone); len(done) != 1 || done[0].(app.ClarifyDoneDTO).Outcome != "timeout" {
		t.Fatalf("done events: %+v", done)
	}
	if _, err := e.app.Sessions.AnswerClarify(q.ID, app.AnswerClarifyRequest{Response: "prod"}); err == nil {
		t.Fatal("an answer after the time was taken")
	}
}
