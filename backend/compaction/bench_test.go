//go:build unix

package compaction_test

// BenchmarkCompact5000 measures one compaction of a fresh 5,000-message
// session for every kind (docs/benchmarks-compaction.md):
//
//	go test -tags sqlite_fts5 -run '^$' -bench BenchmarkCompact5000 -benchtime=4x -count=5 ./backend/compaction/
//
// The session is built outside the timer in one transaction; the timer covers
// Compact only (read, plan/summary, commit). The bus is flushed outside the
// timer after every iteration so a post_compaction delivery never overlaps the
// next measurement. Besides ns/op (wall clock) it reports cpu-ns/op: the
// process's CPU time (user+sys, every goroutine and SQLite included) while the
// timer runs, which moves less than wall time on a shared machine.

import (
	"fmt"
	"math/rand/v2"
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
)

const benchMessages = 5000

var (
	benchWords = strings.Fields(`the service listens on port deploy config database index migration cache
		token request response handler worker queue retry timeout schema table column user owner team review
		branch release build test failure latency budget limit window summary plugin session transcript`)
	benchNames = []string{"Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "/v2/users", "/etc/atrium/config.yaml",
		"backend/turns/loop.go", "api.example.com", "max_retries", "cache.ttl"}
	benchLead = []string{"we decided that", "please remember", "note that", "you must never", "the convention is that",
		"can you check whether", "I think", "it turned out that", "for the record,", "next step:"}
)

// benchText is a varied ~200-byte sentence: a lead, a name, a number and
// filler words, so the offline summarizer has real scoring work to do.
func benchText(r *rand.Rand, target int) string {
	var b strings.Builder
	b.WriteString(benchLead[r.IntN(len(benchLead))])
	for b.Len() < target {
		switch r.IntN(6) {
		case 0:
			fmt.Fprintf(&b, " %s", benchNames[r.IntN(len(benchNames))])
		case 1:
			fmt.Fprintf(&b, " %d", r.IntN(65536))
		default:
			b.WriteString(" " + benchWords[r.IntN(len(benchWords))])
		}
		if r.IntN(12) == 0 {
			b.WriteString(".")
		}
	}
	return b.String()
}

// benchToolOutput is a ~2 KB log-like tool result.
func benchToolOutput(r *rand.Rand, i int) string {
	var b strings.Builder
	for line := 0; b.Len() < 2000; line++ {
		fmt.Fprintf(&b, "%04d INFO request=%d path=%s status=%d took=%dms %s\n", line, i*100+line,
			benchNames[r.IntN(len(benchNames))], 200+r.IntN(4)*100, r.IntN(900), benchWords[r.IntN(len(benchWords))])
	}
	return b.String()
}

// benchTranscript is a system prompt followed by alternating user/assistant
// messages, 5,000 in all. withTools makes every 5th message a ~2 KB tool
// result answering the assistant tool call just before it.
func benchTranscript(withTools bool) []sessions.NewMessage {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]sessions.NewMessage, 0, benchMessages)
	out = append(out, sessions.NewMessage{Role: "system", Content: "You are a careful assistant. Follow the project conventions."})
	for k := 0; len(out) < benchMessages; k++ {
		switch {
		case withTools && k%5 == 3: // user, assistant, user, assistant tool call, tool result
			out = append(out, sessions.NewMessage{Role: "assistant", ToolName: "search", ToolCallID: fmt.Sprintf("call_%d", k),
				Content: fmt.Sprintf(`{"text":"%s"}`, benchWords[r.IntN(len(benchWords))])})
		case withTools && k%5 == 4:
			out = append(out, sessions.NewMessage{Role: "tool", ToolName: "search", ToolCallID: fmt.Sprintf("call_%d", k-1),
				Content: benchToolOutput(r, k)})
		case (withTools && k%5%2 == 0) || (!withTools && k%2 == 0):
			out = append(out, sessions.NewMessage{Role: "user", Content: benchText(r, 200)})
		default:
			out = append(out, sessions.NewMessage{Role: "assistant", Content: benchText(r, 200)})
		}
	}
	return out
}

// benchSession creates a session holding msgs, in one transaction.
func benchSession(b *testing.B, e *sessionstest.Env, msgs []sessions.NewMessage) string {
	b.Helper()
	s := e.MustCreate(b, sessions.CreateParams{Title: "bench"})
	err := e.DB.InTx(ctx, func(tx *db.Tx) error {
		for _, m := range msgs {
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

func BenchmarkCompact5000(b *testing.B) {
	plain, tools := benchTranscript(false), benchTranscript(true)
	cases := []struct {
		name   string
		kind   string
		reason string
		rotate bool
		msgs   []sessions.NewMessage
		native llm.NativeCompactor
	}{
		{"summarize_rotate", compaction.KindSummarize, compaction.ReasonManual, true, plain, nil},
		{"summarize_inplace", compaction.KindSummarize, compaction.ReasonManual, false, plain, nil},
		{"micro_summarize", compaction.KindMicroSummarize, compaction.ReasonBetweenTurns, false, plain, nil},
		{"prune_tool_results", compaction.KindPruneToolResults, compaction.ReasonProactivePrune, false, tools, nil},
		{"provider_native", compaction.KindProviderNative, compaction.ReasonProvider, false, plain, llm.OfflineProvider{Window: 10_000_000}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			e := sessionstest.NewWith(b, hooks.Options{Timeout: 30 * time.Second})
			cfg := compaction.DefaultConfig()
			cfg.Rotate = c.rotate
			eng := compaction.NewEngine(e.DB, e.Sessions, e.Bus, llm.OfflineSummarizer{}, cfg)
			var last compaction.Result
			var cpu cpuMeter
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				id := benchSession(b, e, c.msgs)
				b.StartTimer()
				cpu.start()
				res, err := eng.Compact(ctx, compaction.Request{SessionID: id, Kind: c.kind, Reason: c.reason, Native: c.native})
				cpu.stop()
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				if !res.Changed {
					b.Fatalf("%s changed nothing: %s (%s)", c.kind, res.Skipped, res.Detail)
				}
				if err := e.Bus.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				last = res
				b.StartTimer()
			}
			b.StopTimer()
			var replaced int
			if evs := e.Rec.Events(hooks.PostCompaction); len(evs) > 0 {
				var p hooks.PostCompactionPayload
				if err := evs[len(evs)-1].Decode(&p); err != nil {
					b.Fatal(err)
				}
				if p.MessagesReplaced != nil {
					replaced = *p.MessagesReplaced
				}
			}
			cpu.report(b)
			b.ReportMetric(float64(deref(last.MessagesRemoved)), "msgs_removed")
			b.ReportMetric(float64(replaced), "msgs_replaced")
			b.ReportMetric(float64(deref(last.BeforeTokens)), "tokens_before")
			b.ReportMetric(float64(deref(last.AfterTokens)), "tokens_after")
		})
	}
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
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
