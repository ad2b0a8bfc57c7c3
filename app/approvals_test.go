package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"atrium/app"
	"atrium/backend/apperr"
	"atrium/backend/config"
	"atrium/backend/hooks"
	"atrium/backend/hooks/hookstest"
	"atrium/backend/plugins"
	"atrium/backend/sessions"
	"atrium/backend/stack"
	"atrium/backend/turns"
)

// approvalEnv is a dashboard whose loop asks its Approvals, with a plugin
// that wants every call of the tool echo approved.
func approvalEnv(t *testing.T, timeout time.Duration) (env, *recorder, client) {
	t.Helper()
	home, err := config.ResolveHome(t.TempDir(), "default")
	if err != nil {
		t.Fatal(err)
	}
	return askingDashboard(t, home, func(st *stack.Stack) error {
		return hookstest.WantApproval(st.Bus, "guard", "echo", "echo repeats what it is given")
	}, app.Options{Approvals: app.NewApprovals(timeout)})
}

// askingDashboard is a dashboard on home whose loop asks o's Approvals and
// Clarify (those set), its plugins registered by register.
func askingDashboard(t *testing.T, home config.Home, register func(*stack.Stack) error, o app.Options) (env, *recorder, client) {
	t.Helper()
	st, _ := openStack(t, home, register)
	var f stack.ModelFlags
	if o.Approvals != nil {
		f.Approve = o.Approvals.Ask
	}
	if o.Clarify != nil {
		f.Clarify = o.Clarify.Ask
	}
	loop, err := st.Loop(f)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	o.Platform, o.Version, o.Emitter = app.PlatformDashboard, "test", rec
	a := app.New(ctx, st, loop, plugins.NewManager(plugins.DiscoverOptions{Home: home, Version: "dev"}), o)
	srv := httptest.NewServer(app.NewHandler(a, token, app.Serving{Hub: app.NewHub()}))
	t.Cleanup(srv.Close)
	return env{st: st, app: a}, rec, client{t: t, srv: srv}
}

// "Always allow" keeps the rule in config.yaml: later calls run without a
// dialog in any conversation; Settings lists it (GET
// /api/approvals/standing) and revokes it (POST .../revoke), after which
// the next call asks again; an unknown rule is not found.
func TestAlwaysAllowStandsUntilRevokedInSettings(t *testing.T) {
	t.Parallel()
	e, rec, c := approvalEnv(t, 0)
	a, b := e.mustCreate(t, sessions.CreateParams{Title: "a"}), e.mustCreate(t, sessions.CreateParams{Title: "b"})
	ch := sendAsync(e, a.ID, "use tool echo: always")
	p := waitPending(t, rec, 1)
	if p.PatternKey != "plugin_rule:echo" || !p.CanAlways {
		t.Fatalf("pending %+v", p)
	}
	if code := c.do("POST", "/api/approvals/"+p.ID, token, map[string]any{"approve": true, "scope": "always"}, nil); code != 200 {
		t.Fatalf("always: %d", code)
	}
	if r := <-ch; r.err != nil || !strings.Contains(r.turn.Reply, "returned: always") {
		t.Fatalf("approved turn: %+v %v", r.turn, r.err)
	}
	if r, err := e.app.Sessions.Send(b.ID, "use tool echo: not asked"); err != nil || !strings.Contains(r.Reply, "returned: not asked") {
		t.Fatalf("another conversation: %+v %v", r, err)
	}
	var list app.StandingApprovalsDTO
	if code := c.do("GET", "/api/approvals/standing", token, nil, &list); code != 200 || fmt.Sprint(list.Rules) != "[plugin_rule:echo]" ||
		list.Path != e.st.Home.ConfigPath() || list.Error != "" {
		t.Fatalf("GET standing: %d %+v", code, list)
	}
	if code := c.do("POST", "/api/approvals/standing/revoke", token, map[string]any{"rule": "plugin_rule:nothing"}, nil); code != 404 {
		t.Fatalf("an unknown rule: %d", code)
	}
	if code := c.do("POST", "/api/approvals/standing/revoke", token, map[string]any{"rule": "plugin_rule:echo"}, &list); code != 200 || len(list.Rules) != 0 {
		t.Fatalf("revoke: %d %+v", code, list)
	}
	ch = sendAsync(e, b.ID, "use tool echo: asked again")
	p = waitPending(t, rec, 2)
	if _, err := e.app.Sessions.AnswerApproval(p.ID, false, ""); err != nil {
		t.Fatal(err)
	}
	if r := <-ch; r.err != nil || !strings.Contains(r.turn.Reply, "BLOCKED") {
		t.Fatalf("after the revoke: %+v %v", r.turn, r.err)
	}
	// A list broken by hand is reported, not honoured.
	if err := os.WriteFile(e.st.Home.ConfigPath(), []byte("command_allowlist: {echo: yes}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := c.do("GET", "/api/approvals/standing", token, nil, &list); code != 200 || !strings.Contains(list.Error, "must be a list of strings") {
		t.Fatalf("GET standing of a broken list: %d %+v", code, list)
	}
	// Then "always" is refused before it is taken: the approval still
	// waits, and another answer decides it.
	ch = sendAsync(e, b.ID, "use tool echo: kept waiting")
	p = waitPending(t, rec, 3)
	var refused app.ErrorDTO
	if code := c.do("POST", "/api/approvals/"+p.ID, token, map[string]any{"approve": true, "scope": "always"}, &refused); code != 400 ||
		!strings.Contains(refused.Message, "the approval still waits") || !strings.Contains(refused.Message, "must be a list of strings") {
		t.Fatalf("always with a broken list: %d %+v", code, refused)
	}
	var waiting []app.ApprovalDTO
	if code := c.do("GET", "/api/approvals", token, nil, &waiting); code != 200 || len(waiting) != 1 || waiting[0].ID != p.ID {
		t.Fatalf("after the refused always: %d %+v", code, waiting)
	}
	if code := c.do("POST", "/api/approvals/"+p.ID, token, map[string]any{"approve": true}, nil); code != 200 {
		t.Fatalf("once: %d", code)
	}
	if r := <-ch; r.err != nil || !strings.Contains(r.turn.Reply, "returned: kept waiting") {
		t.Fatalf("approved once: %+v %v", r.turn, r.err)
	}
}

// waitPending waits for the n-th approval:pending event.
func waitPending(t *testing.T, rec *recorder, n int) app.ApprovalDTO {
	t.Helper()
	return nthEvent[app.ApprovalDTO](t, rec, app.EventApprovalPending, n)
}

// nthEvent waits for the n-th event called name, and is its data.
func nthEvent[T any](t *testing.T, rec *recorder, name string, n int) T {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(rec.named(name)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("no %s number %d", name, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return rec.named(name)[n-1].(T)
}

type sent struct {
	turn app.TurnDTO
	err  error
}

func sendAsync(e env, id, text string) chan sent {
	ch := make(chan sent, 1)
	go func() {
		t, err := e.app.Sessions.Send(id, text)
		ch <- sent{t, err}
	}()
	return ch
}

// A tool call a plugin wants approved waits for the person at the window
// or the dashboard: the dialog's event carries the plugin, the tool, its
// arguments and the plugin's reason; GET /api/approvals lists it; an
// answer (POST /api/approvals/{id}, or the bound method) decides, once;
// the done event closes the dialog on every surface.
func TestApprovalsAskThePersonHere(t *testing.T) {
	t.Parallel()
	e, rec, c := approvalEnv(t, 0)
	s := e.mustCreate(t, sessions.CreateParams{Title: "approve me"})
	ch := sendAsync(e, s.ID, "use tool echo: hi")
	a := waitPending(t, rec, 1)
	if a.SessionID != s.ID || a.Plugin != "guard" || a.Tool != "echo" || a.Args != `{"text":"hi"}` || a.Message != "echo repeats what it is given" ||
		time.Until(a.ExpiresAt) < 4*time.Minute {
		t.Fatalf("pending %+v", a)
	}
	var list []app.ApprovalDTO
	if code := c.do("GET", "/api/approvals", token, nil, &list); code != 200 || len(list) != 1 || list[0].ID != a.ID {
		t.Fatalf("GET /api/approvals: %d %+v", code, list)
	}
	if code := c.do("POST", "/api/approvals/not-an-approval", token, map[string]any{"approve": true}, nil); code != 404 {
		t.Fatalf("an unknown approval: %d", code)
	}
	if code := c.do("POST", "/api/approvals/"+a.ID, token, map[string]any{"approve": true}, &list); code != 200 || len(list) != 0 {
		t.Fatalf("approve: %d %+v", code, list)
	}
	r := <-ch
	if r.err != nil || !strings.Contains(r.turn.Reply, "The tool echo returned: hi") {
		t.Fatalf("approved turn: %+v %v", r.turn, r.err)
	}
	if d := rec.named(app.EventApprovalDone); len(d) != 1 || d[0].(app.ApprovalDoneDTO) != (app.ApprovalDoneDTO{ID: a.ID, Outcome: "approved"}) {
		t.Fatalf("done events %+v", d)
	}

	ch = sendAsync(e, s.ID, "use tool echo: again")
	a = waitPending(t, rec, 2)
	if _, err := e.app.Sessions.AnswerApproval(a.ID, false, ""); err != nil {
		t.Fatal(err)
	}
	if r := <-ch; r.err != nil || !strings.Contains(r.turn.Reply, "BLOCKED: plugin approval required for echo") {
		t.Fatalf("denied turn: %+v %v", r.turn, r.err)
	}
	if _, err := e.app.Sessions.AnswerApproval(a.ID, true, ""); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("a second answer: %v", err)
	}
	if d := rec.named(app.EventApprovalDone); len(d) != 2 || d[1].(app.ApprovalDoneDTO).Outcome != "denied" {
		t.Fatalf("done events %+v", d)
	}

	// "Allow for this session": the next call is not asked about.
	ch = sendAsync(e, s.ID, "use tool echo: for the session")
	a = waitPending(t, rec, 3)
	if code := c.do("POST", "/api/approvals/"+a.ID, token, map[string]any{"approve": true, "scope": "forever"}, nil); code != 400 {
		t.Fatalf("an unknown scope: %d", code)
	}
	if code := c.do("POST", "/api/approvals/"+a.ID, token, map[string]any{"approve": true, "scope": "session"}, nil); code != 200 {
		t.Fatalf("approve for the session: %d", code)
	}
	if r := <-ch; r.err != nil || !strings.Contains(r.turn.Reply, "returned: for the session") {
		t.Fatalf("approved turn: %+v %v", r.turn, r.err)
	}
	if r, err := e.app.Sessions.Send(s.ID, "use tool echo: not asked"); err != nil || !strings.Contains(r.Reply, "returned: not asked") {
		t.Fatalf("the next call: %+v %v", r, err)
	}
	if p := rec.named(app.EventApprovalPending); len(p) != 3 {
		t.Fatalf("asked %d times", len(p))
	}
}

// No answer in time is a no, and the dialog goes.
func TestApprovalsRunOutOfTime(t *testing.T) {
	t.Parallel()
	e, rec, _ := approvalEnv(t, 150*time.Millisecond)
	s := e.mustCreate(t, sessions.CreateParams{Title: "nobody answers"})
	r, err := e.app.Sessions.Send(s.ID, "use tool echo: late")
	if err != nil || !strings.Contains(r.Reply, "BLOCKED: plugin approval required for echo") {
		t.Fatalf("timed-out turn: %+v %v", r, err)
	}
	p, d := rec.named(app.EventApprovalPending), rec.named(app.EventApprovalDone)
	if len(p) != 1 || len(d) != 1 || d[0].(app.ApprovalDoneDTO) != (app.ApprovalDoneDTO{ID: p[0].(app.ApprovalDTO).ID, Outcome: "timeout"}) {
		t.Fatalf("events %+v %+v", p, d)
	}
	if list, _ := e.app.Sessions.PendingApprovals(); len(list) != 0 {
		t.Fatalf("still pending: %+v", list)
	}
}

// The Stop button stops the turn running in a session (here one waiting
// for an approval): its send answers stopped (not an error), the question is
// withdrawn, agent_loop_stopped fires once with reason "user_stop", the
// person's message stays; with nothing running, stop is not found.
func TestStopTurnStopsTheTurnHere(t *testing.T) {
	t.Parallel()
	e, rec, c := approvalEnv(t, 0)
	s := e.mustCreate(t, sessions.CreateParams{Title: "stop me"})
	if code := c.do("POST", "/api/sessions/"+s.ID+"/stop", token, nil, nil); code != 404 {
		t.Fatalf("stop with nothing running: %d", code)
	}
	ch := sendAsync(e, s.ID, "use tool echo: hi")
	waitPending(t, rec, 1)
	if code := c.do("POST", "/api/sessions/"+s.ID+"/stop", token, nil, nil); code != 200 {
		t.Fatalf("stop: %d", code)
	}
	r := <-ch
	if r.err != nil || !r.turn.Stopped || r.turn.SessionID != s.ID || r.turn.Reply != "" {
		t.Fatalf("stopped turn: %+v %v", r.turn, r.err)
	}
	if err := e.app.Sessions.StopTurn(s.ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("a second stop: %v", err)
	}
	if err := e.st.Bus.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var stops, ends, answers int
	var reason string
	if err := e.st.DB.Read.Raw(`SELECT COUNT(*) FROM hook_events WHERE hook = 'agent_loop_stopped'`).Scan(&stops).Error; err != nil {
		t.Fatal(err)
	}
	_ = e.st.DB.Read.Raw(`SELECT json_extract(payload, '$.reason') FROM hook_events WHERE hook = 'agent_loop_stopped'`).Scan(&reason)
	_ = e.st.DB.Read.Raw(`SELECT COUNT(*) FROM hook_events WHERE hook = 'on_session_end'`).Scan(&ends)
	_ = e.st.DB.Read.Raw(`SELECT COUNT(*) FROM hook_events WHERE hook = 'post_approval_response'`).Scan(&answers)
	if stops != 1 || reason != "user_stop" || ends != 1 || answers != 1 {
		t.Fatalf("agent_loop_stopped %d (%q), on_session_end %d, post_approval_response %d", stops, reason, ends, answers)
	}
	if list, _ := e.app.Sessions.PendingApprovals(); len(list) != 0 {
		t.Fatalf("still pending: %+v", list)
	}
	msgs, err := e.st.Sessions.Messages(ctx, s.ID, false)
	if err != nil || len(msgs) != 3 || msgs[0].Content != "use tool echo: hi" || msgs[2].Role != "tool" ||
		!strings.Contains(msgs[2].Content, "the turn was stopped while echo waited for approval") {
		t.Fatalf("stored: %+v %v", msgs, err)
	}
}

// A message sent while a turn runs in the session (here, one waiting for
// an approval) is refused, saying where that turn runs: two turns would
// write one transcript at once. A slash command still answers; once the
// turn has ended the message is taken.
func TestAMessageIsRefusedWhileATurnRunsInTheSession(t *testing.T) {
	t.Parallel()
	e, rec, c := approvalEnv(t, 0)
	s := e.mustCreate(t, sessions.CreateParams{Title: "busy"})
	ch := sendAsync(e, s.ID, "use tool echo: hi")
	waitPending(t, rec, 1)
	if _, err := e.app.Sessions.Send(s.ID, "and another thing"); apperr.CodeOf(err) != apperr.Conflict ||
		!strings.Contains(err.Error(), "a turn is already running in this session (in the dashboard): wait for it to end, or stop it, then send") {
		t.Fatalf("a second message: %v", err)
	}
	if out, err := e.app.Sessions.Send(s.ID, "/help"); err != nil || out.Output == "" {
		t.Fatalf("/help meanwhile: %+v %v", out, err)
	}
	if code := c.do("POST", "/api/sessions/"+s.ID+"/stop", token, nil, nil); code != 200 {
		t.Fatalf("stop: %d", code)
	}
	if r := <-ch; r.err != nil || !r.turn.Stopped {
		t.Fatalf("the first turn: %+v %v", r.turn, r.err)
	}
	if out, err := e.app.Sessions.Send(s.ID, "and another thing"); err != nil || out.Reply != "offline reply to: and another thing" {
		t.Fatalf("after the turn: %+v %v", out, err)
	}
	msgs, err := e.st.Sessions.Messages(ctx, s.ID, false)
	if err != nil || len(msgs) != 5 || msgs[3].Content != "and another thing" {
		t.Fatalf("stored: %+v %v", msgs, err)
	}
}

// The window's Stop stops any turn of the session that runs in this
// process, not only the ones it sent: a scheduled run (the window hosts
// the scheduler) or a chat platform's turn. The turn ends as stopped by a
// person, and answers so.
func TestStopTurnStopsAScheduledRunToo(t *testing.T) {
	t.Parallel()
	e, rec, c := approvalEnv(t, 0)
	liveCtx, stopLive := context.WithCancel(ctx)
	defer stopLive()
	go e.app.Run(liveCtx) // the live events, "runs" among them
	s := e.mustCreate(t, sessions.CreateParams{Title: "scheduled", Source: "cron"})
	waiting := make(chan struct{})
	cron, err := e.st.Loop(stack.ModelFlags{Approve: func(ctx context.Context, _ turns.Approval) (turns.Answer, error) {
		close(waiting)
		<-ctx.Done()
		return turns.AnswerDeny, context.Cause(ctx)
	}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := cron.Send(ctx, s.ID, "use tool echo: hi", hooks.LocalContext("cron", s.ID))
		done <- err
	}()
	<-waiting
	// The page hears of it without asking (EventRuns).
	runsEvent := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if evs := rec.named(app.EventRuns); len(evs) > 0 && fmt.Sprint(evs[len(evs)-1].(app.RunsDTO).Running) == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no runs event %s: %+v", want, rec.named(app.EventRuns))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	runsEvent(fmt.Sprint([]app.RunDTO{{SessionID: s.ID, Platform: "cron"}}))
	// The session, the list and the conversations say where a turn runs.
	if got, err := e.app.Sessions.Get(s.ID); err != nil || got.RunningIn != "cron" {
		t.Fatalf("get: %+v %v", got, err)
	}
	page, err := e.app.Sessions.List(app.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range page.Sessions {
		if (row.ID == s.ID) != (row.RunningIn == "cron") {
			t.Fatalf("list row %s running in %q", row.ID, row.RunningIn)
		}
	}
	convs, err := e.app.Sessions.Conversations(app.ConversationFilter{})
	if err != nil || len(convs.Rows) == 0 {
		t.Fatalf("conversations: %+v %v", convs, err)
	}
	for _, row := range convs.Rows {
		if (row.Session.ID == s.ID) != (row.Session.RunningIn == "cron") {
			t.Fatalf("conversation %s running in %q", row.Session.ID, row.Session.RunningIn)
		}
	}
	if code := c.do("POST", "/api/sessions/"+s.ID+"/stop", token, nil, nil); code != 200 {
		t.Fatalf("stop: %d", code)
	}
	err = <-done
	if err == nil || turns.StopOf(ctx, err) != turns.StopByPerson {
		t.Fatalf("the scheduled run ended with %v", err)
	}
	if code := c.do("POST", "/api/sessions/"+s.ID+"/stop", token, nil, nil); code != 404 {
		t.Fatalf("a second stop: %d", code)
	}
	if got, err := e.app.Sessions.Get(s.ID); err != nil || got.RunningIn != "" {
		t.Fatalf("after the run: %+v %v", got, err)
	}
	runsEvent("[]")
}

// Settings' approvals block applies at the next ask, without reopening the
// profile: mode off runs a call the plugin asks about without a dialog;
// back to manual, the dialog waits approval_timeout_seconds (0: the
// default 5 minutes); an unknown mode or a timeout out of range changes
// nothing.
func TestSettingsApprovalsApplyAtTheNextAsk(t *testing.T) {
	t.Parallel()
	e, rec, c := approvalEnv(t, 0)
	s := e.mustCreate(t, sessions.CreateParams{Title: "settings"})
	put := func(body map[string]any) (int, app.SettingsDTO) {
		t.Helper()
		var got app.SettingsDTO
		code := c.do("GET", "/api/settings", token, nil, &got)
		if code != 200 || got.ApprovalsMode == nil || got.ApprovalTimeoutSeconds == nil {
			t.Fatalf("GET /api/settings: %d %+v", code, got)
		}
		raw, _ := json.Marshal(got)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		maps.Copy(m, body)
		return c.do("PUT", "/api/settings", token, m, &got), got
	}
	if code, got := put(nil); code != 200 || *got.ApprovalsMode != "manual" || *got.ApprovalTimeoutSeconds != 0 {
		t.Fatalf("defaults: %d %+v", code, got)
	}
	if code, got := put(map[string]any{"approvals_mode": "off"}); code != 200 || *got.ApprovalsMode != "off" {
		t.Fatalf("off: %d %+v", code, got)
	}
	if r, err := e.app.Sessions.Send(s.ID, "use tool echo: unasked"); err != nil || !strings.Contains(r.Reply, "returned: unasked") {
		t.Fatalf("with approvals off: %+v %v", r, err)
	}
	if n := len(rec.named(app.EventApprovalPending)); n != 0 {
		t.Fatalf("asked %d times with approvals off", n)
	}
	for i, c := range []struct {
		timeout float64
		want    time.Duration
	}{{45, 45 * time.Second}, {0, turns.DefaultApprovalTimeout}} {
		if code, got := put(map[string]any{"approvals_mode": "manual", "approval_timeout_seconds": c.timeout}); code != 200 || *got.ApprovalTimeoutSeconds != c.timeout {
			t.Fatalf("manual, %vs: %d %+v", c.timeout, code, got)
		}
		ch := sendAsync(e, s.ID, "use tool echo: asked")
		a := waitPending(t, rec, i+1)
		if left := time.Until(a.ExpiresAt); left > c.want || left < c.want-10*time.Second {
			t.Fatalf("timeout %v: the dialog expires in %v", c.timeout, left)
		}
		if _, err := e.app.Sessions.AnswerApproval(a.ID, true, ""); err != nil {
			t.Fatal(err)
		}
		if r := <-ch; r.err != nil || !strings.Contains(r.turn.Reply, "returned: asked") {
			t.Fatalf("approved: %+v %v", r.turn, r.err)
		}
	}
	before, _ := os.ReadFile(e.st.Home.ConfigPath())
	for _, bad := range []map[string]any{{"approvals_mode": "sometimes"}, {"approval_timeout_seconds": 3601}, {"approval_timeout_seconds": -1}} {
		if code, _ := put(bad); code != 400 {
			t.Fatalf("%v: %d", bad, code)
		}
	}
	if after, _ := os.ReadFile(e.st.Home.ConfigPath()); string(after) != string(before) {
		t.Fatalf("a refused setting changed config.yaml:\n%s\n->\n%s", before, after)
	}
	if !strings.Contains(string(before), "approvals:\n  mode: manual\n") || strings.Contains(string(before), "\n  timeout:") {
		t.Fatalf("a 0 timeout is written rather than left out:\n%s", before)
	}
}

// Settings sets smart mode's reviewer: auxiliary.approval.model and
// approvals.smart_policy, read back as written, both taken out when empty;
// a name that is no model's, or rules too long, change nothing.
func TestSettingsSetTheSmartReviewer(t *testing.T) {
	t.Parallel()
	e, _, c := approvalEnv(t, 0)
	put := func(body map[string]any) (int, app.SettingsDTO) {
		t.Helper()
		var got app.SettingsDTO
		if code := c.do("GET", "/api/settings", token, nil, &got); code != 200 {
			t.Fatalf("GET /api/settings: %d", code)
		}
		raw, _ := json.Marshal(got)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		maps.Copy(m, body)
		return c.do("PUT", "/api/settings", token, m, &got), got
	}
	policy := "Approve removing build/ and dist/.\nEscalate anything under /srv."
	code, got := put(map[string]any{"approvals_mode": "smart", "approvals_reviewer_model": " guard-mini ", "approvals_smart_policy": policy + "\r\n"})
	if code != 200 || *got.ApprovalsMode != "smart" || *got.ApprovalsReviewerModel != "guard-mini" || *got.ApprovalsSmartPolicy != policy {
		t.Fatalf("smart: %d %+v", code, got)
	}
	cfg, _, err := config.Load(e.st.Home.ConfigPath())
	if m, _ := cfg.ApprovalGuard(); err != nil || m != "guard-mini" || cfg.Approvals.SmartPolicy != policy || !cfg.ApprovalsSmart() {
		t.Fatalf("config.yaml: %+v %v", cfg.Approvals, err)
	}
	before, _ := os.ReadFile(e.st.Home.ConfigPath())
	for _, bad := range []map[string]any{{"approvals_reviewer_model": "two\nlines"}, {"approvals_smart_policy": strings.Repeat("x", 4001)}} {
		if code, _ := put(bad); code != 400 {
			t.Fatalf("%v: %d", bad, code)
		}
	}
	if after, _ := os.ReadFile(e.st.Home.ConfigPath()); string(after) != string(before) {
		t.Fatalf("a refused setting changed config.yaml:\n%s\n->\n%s", before, after)
	}
	if code, got := put(map[string]any{"approvals_reviewer_model": "", "approvals_smart_policy": ""}); code != 200 || *got.ApprovalsReviewerModel != "" ||
		*got.ApprovalsSmartPolicy != "" {
		t.Fatalf("emptied: %d %+v", code, got)
	}
	if after, _ := os.ReadFile(e.st.Home.ConfigPath()); strings.Contains(string(after), "smart_policy") || strings.Contains(string(after), "guard-mini") {
		t.Fatalf("emptied keys are still written:\n%s", after)
	}
}
