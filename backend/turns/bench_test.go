//go:build unix

package turns_test

// BenchmarkPreLLMCall10Plugins measures what ten in-process pre_llm_call
// plugins add to a turn (docs/benchmarks-compaction.md):
//
//	go test -tags sqlite_fts5 -run '^$' -bench 'BenchmarkPreLLMCall10Plugins/CallSync' -benchtime=20000x -count=5 ./backend/turns/
//	go test -tags sqlite_fts5 -run '^$' -bench 'BenchmarkPreLLMCall10Plugins/Send' -benchtime=2000x -count=5 ./backend/turns/
//
// CallSync/plugins=N is the bare bus.CallSync of a turn's payload (a 20-message
// history); Send/plugins=N is a whole loop.Send with the offline provider. The
// per-turn overhead is plugins=10 minus plugins=0 of the same group. Besides
// ns/op (wall clock) each reports cpu-ns/op: the process's CPU time (user+sys,
// every goroutine and SQLite included) while the timer runs.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"atrium/backend/compaction"
	"atrium/backend/db"
	"atrium/backend/hooks"
	"atrium/backend/llm"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
	"atrium/backend/tools"
	"atrium/backend/turns"
)

const (
	benchHistory = 20 // messages of history in every benchmark session
	benchPerSess = 25 // Send iterations per session before a fresh one (history stays 20..70 messages)
)

// benchPlugins registers n plugins that each answer pre_llm_call with a short
// string. decode makes each one also decode the payload, as a real plugin does.
func benchPlugins(n int, decode bool) func(*hooks.Bus) {
	return func(bus *hooks.Bus) {
		for i := 0; i < n; i++ {
			answer := fmt.Sprintf("plugin %02d: remember the team conventions", i)
			if _, err := bus.RegisterSync(fmt.Sprintf("bench%02d", i), hooks.PreLLMCall, func(_ context.Context, raw json.RawMessage) (any, error) {
				if decode {
					var p hooks.LLMCall
					if err := json.Unmarshal(raw, &p); err != nil {
						return nil, err
					}
				}
				return answer, nil
			}); err != nil {
				panic(err)
			}
		}
	}
}

func benchHistoryMessages() []sessions.NewMessage {
	out := make([]sessions.NewMessage, 0, benchHistory)
	for i := 0; i < benchHistory; i++ {
		if i%2 == 0 {
			out = append(out, sessions.NewMessage{Role: "user", Content: fmt.Sprintf("question %d: we decided the service listens on port %d and the owner is Alice; keep that in mind for the rest of the work", i, 8000+i)})
		} else {
			out = append(out, sessions.NewMessage{Role: "assistant", Content: fmt.Sprintf("answer %d: noted, port %d, owner Alice, and I will follow the conventions you described earlier in detail", i, 8000+i)})
		}
	}
	return out
}

func benchSession(b *testing.B, e *sessionstest.Env) string {
	b.Helper()
	s := e.MustCreate(b, sessions.CreateParams{Title: "bench"})
	err := e.DB.InTx(ctx, func(tx *db.Tx) error {
		for _, m := range benchHistoryMessages() {
			if _, err := e.Sessions.AppendMessageTx(ctx, tx, s.ID, m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return s.ID
}

func BenchmarkPreLLMCall10Plugins(b *testing.B) {
	variants := []struct {
		name   string
		n      int
		decode bool
	}{{"plugins=0", 0, false}, {"plugins=10", 10, false}, {"plugins=10_decode", 10, true}}

	b.Run("CallSync", func(b *testing.B) {
		for _, v := range variants {
			b.Run(v.name, func(b *testing.B) {
				e := sessionstest.NewWith(b, hooks.Options{Timeout: 30 * time.Second}, benchPlugins(v.n, v.decode))
				hist := make([]map[string]any, 0, benchHistory)
				for _, m := range benchHistoryMessages() {
					hist = append(hist, map[string]any{"role": m.Role, "content": m.Content})
				}
				payload := hooks.LLMCall{SessionID: "0190a000-0000-7000-8000-000000000000", UserMessage: "what port does the service use?",
					ConversationHistory: hist, Model: "offline", Platform: "cli"}
				var cpu cpuMeter
				b.ReportAllocs()
				b.ResetTimer()
				cpu.start()
				for i := 0; i < b.N; i++ {
					res, err := e.Bus.CallSync(ctx, hooks.PreLLMCall, payload)
					if err != nil {
						b.Fatal(err)
					}
					if len(res) != v.n {
						b.Fatalf("%d answers, want %d", len(res), v.n)
					}
				}
				cpu.stop()
				b.StopTimer()
				cpu.report(b)
			})
		}
	})

	b.Run("Send", func(b *testing.B) {
		for _, v := range variants {
			b.Run(v.name, func(b *testing.B) {
				e := sessionstest.NewWith(b, hooks.Options{Timeout: 30 * time.Second}, benchPlugins(v.n, v.decode))
				// A window large enough that no threshold compaction fires: the
				// turn still runs its between-turns prune check.
				eng := compaction.NewEngine(e.DB, e.Sessions, e.Bus, llm.OfflineSummarizer{}, compaction.DefaultConfig())
				if err := eng.RegisterCommands(e.Bus.Commands()); err != nil {
					b.Fatal(err)
				}
				loop, err := turns.New(e.DB, e.Sessions, eng, e.Bus, turns.Options{Provider: llm.OfflineProvider{Window: 1_000_000}})
				if err != nil {
					b.Fatal(err)
				}
				var id string
				var cpu cpuMeter
				b.ReportAllocs()
				b.ResetTimer()
				cpu.start()
				for i := 0; i < b.N; i++ {
					if i%benchPerSess == 0 {
						cpu.stop()
						b.StopTimer()
						if err := e.Bus.Flush(ctx); err != nil {
							b.Fatal(err)
						}
						id = benchSession(b, e)
						b.StartTimer()
						cpu.start()
					}
					turn, err := loop.Send(ctx, id, "what port does the service use?", hooks.LocalContext("cli", id))
					if err != nil {
						b.Fatal(err)
					}
					if len(turn.Compactions) != 0 || turn.SessionID != id {
						b.Fatalf("unexpected compaction: %+v", turn.Compactions)
					}
					if got := strings.Count(turn.SentText, "\n\nplugin "); got != v.n {
						b.Fatalf("%d injected contexts, want %d", got, v.n)
					}
				}
				cpu.stop()
				b.StopTimer()
				cpu.report(b)
				if err := e.Bus.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			})
		}
	})
}

// cpuMeter adds up the process's CPU time over the timed sections.
type cpuMeter struct{ total, mark time.Duration }

func procCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (c *cpuMeter) start() { c.mark = procCPU() }
func (c *cpuMeter) stop()  { c.total += procCPU() - c.mark }

func (c *cpuMeter) report(b *testing.B) {
	b.ReportMetric(float64(c.total.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkSendRuns is a turn with and without Runs (the file that lets a
// stop reach it from another process), on the offline provider, no plugin:
// what writing a turn down adds to the cheapest turn there is.
func BenchmarkSendRuns(b *testing.B) {
	for _, runs := range []bool{false, true} {
		b.Run(fmt.Sprintf("runs=%v", runs), func(b *testing.B) {
			e := sessionstest.NewWith(b, hooks.Options{Timeout: 30 * time.Second}, benchPlugins(0, false))
			eng := compaction.NewEngine(e.DB, e.Sessions, e.Bus, llm.OfflineSummarizer{}, compaction.DefaultConfig())
			o := turns.Options{Provider: llm.OfflineProvider{Window: 1_000_000}}
			if runs {
				o.Runs = turns.NewRuns(filepath.Join(b.TempDir(), "turns"))
			}
			loop, err := turns.New(e.DB, e.Sessions, eng, e.Bus, o)
			if err != nil {
				b.Fatal(err)
			}
			var id string
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%benchPerSess == 0 {
					b.StopTimer()
					if err := e.Bus.Flush(ctx); err != nil {
						b.Fatal(err)
					}
					id = benchSession(b, e)
					b.StartTimer()
				}
				if _, err := loop.Send(ctx, id, "what port does the service use?", hooks.LocalContext("cli", id)); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if err := e.Bus.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkSessionSearch is the agent's recall on a store of 2,000
// conversations of 20 messages: a turn whose tool call is session_search
// (discover, 3 results), beside the same turn calling echo (the turn's own
// floor) and the store's search alone (what the tool is built on).
func BenchmarkSessionSearch(b *testing.B) {
	e, newLoop := benchToolsEnv(b)
	loop := newLoop(tools.Settings{Toolsets: []string{"session_search"}})
	for i := range 2000 {
		s, err := e.Sessions.Create(ctx, sessions.CreateParams{Title: fmt.Sprintf("conversation %d", i)})
		if err != nil {
			b.Fatal(err)
		}
		for j := range 20 {
			text := fmt.Sprintf("message %d of conversation %d about the build and the tests", j, i)
			if i%200 == 0 && j == 10 {
				text = "the deploy window is Friday evening, after the freeze"
			}
			if _, err := e.Sessions.AppendMessage(ctx, s.ID, sessions.NewMessage{Role: []string{"user", "assistant"}[j%2], Content: text}); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := e.Bus.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.Run("turn-session_search", func(b *testing.B) { benchTurns(b, e, loop, `use tool session_search: {"query": "deploy window"}`) })
	b.Run("turn-echo", func(b *testing.B) {
		benchTurns(b, e, newLoop(tools.Settings{Toolsets: []string{}}), `use tool echo: {"text": "deploy window"}`)
	})
	b.Run("store-search", func(b *testing.B) {
		for b.Loop() {
			if hits, err := e.Sessions.Search(ctx, "deploy window", sessions.SearchOptions{Limit: 50, Scope: sessions.ScopeAll}); err != nil || len(hits) < 10 {
				b.Fatal(len(hits), err)
			}
		}
	})
}

// BenchmarkMemoryTurn is a turn whose tool call is the memory tool (an
// entry added; the next turn's call removes it, so the file stays near its
// size), one whose call is refused (nothing written), the same turn
// calling echo (with the memory tool offered and without), and the first
// turn of a new conversation, whose system prompt carries the memory's
// snapshot, beside one with no memory.
func BenchmarkMemoryTurn(b *testing.B) {
	e, newLoop := benchToolsEnv(b)
	mem := tools.Memory{Dir: b.TempDir()}
	for i := range 14 {
		if err := mem.Remember(tools.TargetMemory, fmt.Sprintf("Note %02d: the service at port %d is started with make run-%d, never by hand; its logs are in logs/%d", i, 9000+i, i, i)); err != nil {
			b.Fatal(err)
		}
	}
	with, without := newLoop(tools.Settings{Toolsets: []string{"memory"}, Memory: mem}), newLoop(tools.Settings{Toolsets: []string{"memory"}})
	b.Run("turn-memory", func(b *testing.B) {
		benchTurns(b, e, with, `use tool memory: {"action": "add", "content": "The staging database is read-only after 18:00"}`,
			`use tool memory: {"action": "remove", "old_text": "staging database"}`)
	})
	b.Run("turn-memory-refused", func(b *testing.B) {
		benchTurns(b, e, with, `use tool memory: {"action": "remove", "old_text": "nothing holds this"}`)
	})
	b.Run("turn-echo", func(b *testing.B) { benchTurns(b, e, without, `use tool echo: {"text": "staging"}`) })
	b.Run("turn-echo-memory-offered", func(b *testing.B) { benchTurns(b, e, with, `use tool echo: {"text": "staging"}`) })
	first := func(b *testing.B, l *turns.Loop) {
		for b.Loop() {
			b.StopTimer()
			id := e.MustCreate(b, sessions.CreateParams{Title: "new"}).ID
			b.StartTimer()
			if _, err := l.Send(ctx, id, "hello", hooks.LocalContext("cli", id)); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("first-turn-with-memory", func(b *testing.B) { first(b, with) })
	b.Run("first-turn-without", func(b *testing.B) { first(b, without) })
}

// benchToolsEnv is a store and a maker of turn loops on the offline model
// whose tools are as settings says (the machine's, memory, todo, recall),
// its other options as opts set them.
func benchToolsEnv(b *testing.B) (*sessionstest.Env, func(settings tools.Settings, opts ...func(*turns.Options)) *turns.Loop) {
	e := sessionstest.NewWith(b, hooks.Options{Timeout: 30 * time.Second})
	eng := compaction.NewEngine(e.DB, e.Sessions, e.Bus, llm.OfflineSummarizer{}, compaction.DefaultConfig())
	return e, func(settings tools.Settings, opts ...func(*turns.Options)) *turns.Loop {
		o := turns.Options{Provider: llm.OfflineProvider{Window: 1_000_000}, Machine: func() tools.Settings { return settings }}
		for _, set := range opts {
			set(&o)
		}
		l, err := turns.New(e.DB, e.Sessions, eng, e.Bus, o)
		if err != nil {
			b.Fatal(err)
		}
		return l
	}
}

// benchTurns sends texts in turn, one a turn, each conversation taking
// benchPerSess turns on a history of its own.
func benchTurns(b *testing.B, e *sessionstest.Env, l *turns.Loop, texts ...string) {
	benchEach(b, e, func(i int, id string) {
		if _, err := l.Send(ctx, id, texts[i%len(texts)], hooks.LocalContext("cli", id)); err != nil {
			b.Fatal(err)
		}
	})
}

// benchEach runs op once an iteration, in a conversation that takes
// benchPerSess iterations on a history of its own (made off the clock).
func benchEach(b *testing.B, e *sessionstest.Env, op func(i int, id string)) {
	var id string
	for i := 0; b.Loop(); i++ {
		if i%benchPerSess == 0 {
			b.StopTimer()
			id = benchSession(b, e)
			b.StartTimer()
		}
		op(i, id)
	}
}

// BenchmarkTodoTurn is a turn whose tool call changes one item of a task
// list of ten (read from beside the session, written back) beside the
// same turn calling echo, with a short text and with one the size of the
// list.
func BenchmarkTodoTurn(b *testing.B) {
	e, newLoop := benchToolsEnv(b)
	l := newLoop(tools.Settings{Toolsets: []string{"todo"}})
	var items []string
	for i := range 10 {
		items = append(items, fmt.Sprintf(`{"id": "%d", "content": "step %d of the migration: move table %d and check its counts", "status": "pending"}`, i, i, i))
	}
	plan := `use tool todo: {"todos": [` + strings.Join(items, ", ") + `]}`
	b.Run("turn-todo", func(b *testing.B) {
		benchTurns(b, e, l, plan, `use tool todo: {"merge": true, "todos": [{"id": "3", "status": "in_progress"}]}`,
			`use tool todo: {"merge": true, "todos": [{"id": "3", "status": "completed"}]}`)
	})
	b.Run("turn-echo", func(b *testing.B) { benchTurns(b, e, l, `use tool echo: {"text": "step 3"}`) })
	// echo with a text the size of the list: what storing and indexing the
	// call and its answer cost, the tool aside.
	_, answer := tools.Todos{}.Call(map[string]any{"todos": "[" + strings.Join(items, ", ") + "]"})
	quoted, _ := json.Marshal(answer)
	b.Run("turn-echo-list-sized", func(b *testing.B) { benchTurns(b, e, l, `use tool echo: {"text": `+string(quoted)+`}`) })
}

// BenchmarkClarifyTurn is a turn whose tool call asks the person a
// question with two choices, answered at once by another goroutine (as a
// surface's answer reaches the waiting turn), beside the same turn
// calling echo with a text the size of the answer the model reads.
func BenchmarkClarifyTurn(b *testing.B) {
	e, newLoop := benchToolsEnv(b)
	asked := make(chan turns.Question)
	answers := make(chan turns.Reply)
	go func() {
		for q := range asked {
			answers <- turns.Reply{Text: q.Choices[1]}
		}
	}()
	b.Cleanup(func() { close(asked) })
	l := newLoop(tools.Settings{Toolsets: []string{"clarify"}}, func(o *turns.Options) {
		o.Clarify = func(ctx context.Context, q turns.Question) (turns.Reply, error) {
			asked <- q
			return <-answers, nil
		}
	})
	b.Run("turn-clarify", func(b *testing.B) {
		benchTurns(b, e, l, `use tool clarify: {"question": "Which target should the release go to?", "choices": ["staging", "prod"]}`)
	})
	answer := `{"question":"Which target should the release go to?","choices_offered":["staging","prod"],"user_response":"prod"}`
	quoted, _ := json.Marshal(answer)
	b.Run("turn-echo-answer-sized", func(b *testing.B) { benchTurns(b, e, l, `use tool echo: {"text": `+string(quoted)+`}`) })
}

// BenchmarkWebSearchTurn is a turn whose tool call is web_search, asked of
// a loopback fake of Firecrawl's API (its answer at once: what Atrium
// adds to a provider's time), beside the same turn calling echo with a
// text the size of the answer the model reads.
func BenchmarkWebSearchTurn(b *testing.B) {
	fc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		var web []string
		for i := range 5 {
			web = append(web, fmt.Sprintf(`{"url": "https://docs.example/%d", "title": "Result %d", "description": "What page %d says about the write-ahead log and its checkpoints"}`, i, i, i))
		}
		_, _ = io.WriteString(w, `{"success": true, "data": {"web": [`+strings.Join(web, ",")+`]}}`)
	}))
	b.Cleanup(fc.Close)
	e, newLoop := benchToolsEnv(b)
	env := map[string]string{"FIRECRAWL_API_KEY": "fc-bench", "FIRECRAWL_API_URL": fc.URL}
	l := newLoop(tools.Settings{Toolsets: []string{"web"}, Web: tools.Web{Getenv: func(n string) string { return env[n] }}})
	b.Run("turn-web_search", func(b *testing.B) { benchTurns(b, e, l, `use tool web_search: {"query": "sqlite wal checkpoint"}`) })
	search := tools.All()[slices.IndexFunc(tools.All(), func(t tools.Tool) bool { return t.Name == tools.WebSearchTool })]
	answer, _ := json.Marshal(search.Run(ctx, &tools.Call{Args: map[string]any{"query": "sqlite wal checkpoint"},
		Settings: tools.Settings{Web: tools.Web{Getenv: func(n string) string { return env[n] }}}}))
	b.Run("turn-echo-answer-sized", func(b *testing.B) { benchTurns(b, e, l, `use tool echo: {"text": `+string(answer)+`}`) })
}

// BenchmarkDelegate is a turn that hands one task to a subagent with
// delegate_task beside the same work done by hand through the store and
// the loop (a turn calling echo, a delegate child session created, a turn
// in it, the session ended): what the tool itself adds. Then, with a model
// that takes 20 ms a call, three tasks in one call beside three subagents
// run one after the other:
//
//	go test -tags sqlite_fts5 -run '^$' -bench 'BenchmarkDelegate' -benchtime=200x -count=5 ./backend/turns/
func BenchmarkDelegate(b *testing.B) {
	e, newLoop := benchToolsEnv(b)
	byHand := func(l *turns.Loop, n int) func(b *testing.B) {
		return func(b *testing.B) {
			benchEach(b, e, func(_ int, id string) {
				if _, err := l.Send(ctx, id, `use tool echo: {"text": "three summaries"}`, hooks.LocalContext("cli", id)); err != nil {
					b.Fatal(err)
				}
				for range n {
					c, err := e.Sessions.Create(ctx, sessions.CreateParams{Title: "summarize the release notes", ParentID: id, Relation: sessions.RelationDelegate})
					if err != nil {
						b.Fatal(err)
					}
					if _, err := l.Send(ctx, c.ID, "summarize the release notes", hooks.LocalContext("cli", c.ID)); err != nil {
						b.Fatal(err)
					}
					if _, _, err := e.Sessions.End(ctx, c.ID, "completed"); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	l := newLoop(tools.Settings{Toolsets: []string{"delegation"}})
	b.Run("delegate-1", func(b *testing.B) {
		benchTurns(b, e, l, `use tool delegate_task: {"goal": "summarize the release notes"}`)
	})
	b.Run("by-hand-1", byHand(l, 1))
	slow := newLoop(tools.Settings{Toolsets: []string{"delegation"}}, func(o *turns.Options) {
		o.Provider = llm.OfflineProvider{Window: 1_000_000, Delay: 20 * time.Millisecond}
	})
	task := `{"goal": "summarize the release notes"}`
	b.Run("delegate-3-slow-model", func(b *testing.B) {
		benchTurns(b, e, slow, `use tool delegate_task: {"tasks": [`+task+`, `+task+`, `+task+`]}`)
	})
	b.Run("one-after-another-3-slow-model", byHand(slow, 3))
}

// BenchmarkSmartApproval is a turn whose terminal call the guard flags
// (rm -r of a folder that is not there), answered at once: by a person
// (approvals.mode: manual), or by the reviewing model of
// approvals.mode: smart (the offline model answering APPROVE); beside the
// same turn with a command nobody is asked about. Each turn is a fresh
// conversation's (made off the clock), so that no "for this session"
// grant spares the next its review:
//
//	go test -tags sqlite_fts5 -run '^$' -bench 'BenchmarkSmartApproval' -benchtime=300x -count=5 ./backend/turns/
func BenchmarkSmartApproval(b *testing.B) {
	e, newLoop := benchToolsEnv(b)
	dir := b.TempDir()
	settings := tools.Settings{Toolsets: []string{"terminal"}, Cwd: dir}
	person := newLoop(settings, func(o *turns.Options) {
		o.Approve = func(context.Context, turns.Approval) (turns.Answer, error) { return turns.AnswerOnce, nil }
	})
	rev := &reviewerModel{OfflineProvider: llm.OfflineProvider{Window: 1_000_000},
		answer: func(context.Context, string) (string, error) { return "APPROVE", nil }}
	smart := newLoop(settings, func(o *turns.Options) {
		o.Provider = rev
		o.Guardian = func() (turns.Guardian, bool) { return turns.Guardian{}, true }
	})
	run := func(l *turns.Loop, command string) func(b *testing.B) {
		return func(b *testing.B) {
			text := `use tool terminal: {"command": "` + command + `"}`
			for b.Loop() {
				b.StopTimer()
				id := benchSession(b, e)
				b.StartTimer()
				if _, err := l.Send(ctx, id, text, hooks.LocalContext("cli", id)); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("flagged-asked-of-a-person", run(person, "rm -r build 2>/dev/null; true"))
	b.Run("flagged-reviewed-by-the-model", run(smart, "rm -r build 2>/dev/null; true"))
	b.Run("not-flagged", run(person, "ls build 2>/dev/null; true"))
	if reqs, _ := rev.reviews(); len(reqs) == 0 {
		b.Fatal("the reviewer was never asked")
	}
}
