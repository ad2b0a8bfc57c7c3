package gateway_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"atrium/backend/gateway/gatewaytest"
	"atrium/backend/tools"
	"atrium/backend/turns"
)

// clarifyChat is a Telegram chat whose loop offers the clarify tool,
// asked through the gateway, with timeout to answer.
func clarifyChat(t *testing.T, timeout time.Duration) (*env, *gatewaytest.Telegram) {
	t.Helper()
	e := newEnv(t, 8192, 0.9)
	dir := t.TempDir()
	e.useLoop(t, turns.Options{Machine: func() tools.Settings { return tools.Settings{Cwd: dir, Toolsets: []string{"clarify"}} },
		Clarify:        func(ctx context.Context, q turns.Question) (turns.Reply, error) { return e.gw.Clarify(ctx, q) },
		ClarifyTimeout: func() time.Duration { return timeout }})
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "5", "6"))
	return e, f
}

// pastATurn waits until a turn of a fixed turnTime would have ended
// (three of them).
func pastATurn(turnTime time.Duration) {
	w, cancel := context.WithTimeout(context.Background(), 3*turnTime)
	defer cancel()
	<-w.Done()
}

// toolResult is what the model read of the last tool call (a result a
// later turn pruned from the context, as the turn after a background
// process's end may, is not a call).
func (e *env) toolResult(t *testing.T) string {
	t.Helper()
	var out string
	if err := e.db.Read.Raw(`SELECT content FROM messages WHERE role = 'tool' AND content NOT LIKE '[tool output pruned]%'
		ORDER BY id DESC LIMIT 1`).Scan(&out).Error; err != nil {
		t.Fatal(err)
	}
	return out
}

// The clarify tool's question goes to the chat with its choices numbered;
// the next message of the sender whose message started the turn is the
// answer (a number picks a choice, numbers several, other words are their
// own), another member's message is not; the answer reaches no turn of
// its own. A command is no answer: /stop stops the turn that waits.
func TestGatewayAsksTheSendersQuestion(t *testing.T) {
	t.Parallel()
	e, f := clarifyChat(t, time.Hour)
	sent := sentTo(t, f)
	f.Push(5, "Cy", -100, "supergroup", `use tool clarify: {"question": "Which target?", "choices": ["staging", "prod"]}`)
	// agent.clarify_timeout, whole: the turn's 10 minutes stand still while
	// the sender is waited for (TestGatewayWaitsForTheSenderBeyondTheTurnsTime).
	want := "❓ Which target?\n1. staging (Recommended)\n2. prod\nReply with a number, or in your own words. Within 1h0m0s, or the agent decides itself."
	if got := sent(1, "the question"); got != want {
		t.Fatalf("the question:\n%q\nwant\n%q", got, want)
	}
	f.Push(6, "Di", -100, "supergroup", "1") // another member: not the answer, a message of its own after the turn
	f.Push(5, "Cy", -100, "supergroup", "2")
	sent(2, "the turn's reply")
	if got := e.toolResult(t); got != `{"question":"Which target?","choices_offered":["staging","prod"],"user_response":"prod"}` {
		t.Fatalf("the model read %s", got)
	}
	sent(3, "the other member's message answered")
	if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE role = 'user' AND content = '2'`); n != 0 {
		t.Fatalf("the answer was stored as a message (%d)", n)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE role = 'user' AND content = '1'`); n != 1 {
		t.Fatalf("the other member's message: %d stored", n)
	}

	// Several of a multi-select question, by number; then their own words.
	f.Push(5, "Cy", 5, "private", `use tool clarify: {"question": "Which checks?", "choices": ["lint", "test", "e2e"], "multi_select": true}`)
	if got := sent(4, "the multi-select question"); !strings.HasSuffix(got, "3. e2e\nReply with the numbers of your choices (1, 3), or in your own words. Within 1h0m0s, or the agent decides itself.") {
		t.Fatalf("the multi-select question: %q", got)
	}
	f.Push(5, "Cy", 5, "private", "1, 3")
	sent(5, "the reply")
	if got := e.toolResult(t); got != `{"question":"Which checks?","choices_offered":["lint","test","e2e"],"user_response":["lint","e2e"]}` {
		t.Fatalf("the model read %s", got)
	}
	f.Push(5, "Cy", 5, "private", `use tool clarify: {"question": "Which target?", "choices": ["staging", "prod"]}`)
	sent(6, "the question again")
	f.Push(5, "Cy", 5, "private", "2 if it is quiet, else staging")
	sent(7, "the reply")
	if got := e.toolResult(t); got != `{"question":"Which target?","choices_offered":["staging","prod"],"user_response":"2 if it is quiet, else staging"}` {
		t.Fatalf("the model read %s", got)
	}

	// /stop is a command, not an answer: the turn stops.
	f.Push(5, "Cy", 5, "private", `use tool clarify: {"question": "Go on?"}`)
	if got := sent(8, "the open question"); got != "❓ Go on?\nReply with your answer. Within 1h0m0s, or the agent decides itself." {
		t.Fatalf("the open question: %q", got)
	}
	f.Push(5, "Cy", 5, "private", "/stop")
	if got := sent(9, "the stopped turn"); !strings.Contains(got, "Stopped") {
		t.Fatalf("after /stop: %q", f.SentTexts())
	}
	if !strings.Contains(e.toolResult(t), "the turn was stopped") {
		t.Fatalf("the stopped call: %s", e.toolResult(t))
	}
}

// A gateway turn's time (TurnTimeout) does not count the sender's: a
// question and an approval answered three turn-lengths after they were
// put to the chat still reach the model, and the turn replies.
func TestGatewayWaitsForTheSenderBeyondTheTurnsTime(t *testing.T) {
	t.Parallel()
	const turnTime = 300 * time.Millisecond
	e := newEnv(t, 8192, 0.9, guardEcho(t))
	e.turnTimeout = turnTime
	dir := t.TempDir()
	e.useLoop(t, turns.Options{Machine: func() tools.Settings { return tools.Settings{Cwd: dir, Toolsets: []string{"clarify"}} },
		Approve:        func(ctx context.Context, a turns.Approval) (turns.Answer, error) { return e.gw.Approve(ctx, a) },
		Clarify:        func(ctx context.Context, q turns.Question) (turns.Reply, error) { return e.gw.Clarify(ctx, q) },
		ClarifyTimeout: func() time.Duration { return time.Hour }})
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "5"))
	sent := sentTo(t, f)
	late := func() { pastATurn(turnTime) }
	f.Push(5, "Cy", 5, "private", `use tool clarify: {"question": "Which target?", "choices": ["staging", "prod"]}`)
	sent(1, "the question")
	late()
	f.Push(5, "Cy", 5, "private", "2")
	if got := sent(2, "the turn's reply"); strings.Contains(got, "took too long") {
		t.Fatalf("the turn ended while the sender was asked: %q", got)
	}
	if got := e.toolResult(t); got != `{"question":"Which target?","choices_offered":["staging","prod"],"user_response":"prod"}` {
		t.Fatalf("the model read %s", got)
	}
	f.Push(5, "Cy", 5, "private", "use tool echo: late yes")
	if got := sent(3, "the approval request"); !strings.Contains(got, "Approval needed") {
		t.Fatalf("the approval request: %q", got)
	}
	late()
	f.Push(5, "Cy", 5, "private", "/approve")
	if got := sent(4, "the turn's reply"); !strings.Contains(got, "returned: late yes") {
		t.Fatalf("after a late /approve: %q", f.SentTexts())
	}
}

// A question nobody answers in time: the chat is told the agent goes on,
// and the model reads the familiar agent's sentence.
func TestGatewayQuestionRunsOutOfTime(t *testing.T) {
	t.Parallel()
	e, f := clarifyChat(t, 200*time.Millisecond)
	f.Push(5, "Cy", 5, "private", `use tool clarify: {"question": "Which target?", "choices": ["staging", "prod"]}`)
	waitFor(t, "the timeout", func() bool { return len(f.SentTexts()) == 3 })
	got := f.SentTexts()
	if !strings.HasPrefix(got[0], "❓ Which target?") || got[1] != "No answer within 200ms: the agent goes on with its own choice." {
		t.Fatalf("timeout: %q", got)
	}
	if r := e.toolResult(t); r != `{"question":"Which target?","choices_offered":["staging","prod"],"user_response":"`+tools.ClarifyTimedOut+`"}` {
		t.Fatalf("the model read %s", r)
	}
}
