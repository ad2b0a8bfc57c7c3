package imports_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"atrium/backend/imports"
	"atrium/backend/sessions/sessionstest"
)

// BenchmarkImportHermes imports a familiar agent's store of 1,000 sessions
// x 20 messages (a tool call and its result in every five) into a fresh
// store per iteration, and the same store again (nothing new).
func BenchmarkImportHermes(b *testing.B) {
	h := newHermesB(b)
	none := func(string) string { return "" }
	b.Run("new", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			env := sessionstest.New(b)
			b.StartTimer()
			rep, err := imports.Run(context.Background(), env.Sessions, "hermes", h, none, b.TempDir(), imports.RunOptions{})
			if err != nil || rep.Counts["imported"] != 1000 {
				b.Fatalf("%v %+v", err, rep.Counts)
			}
			if err := env.Sessions.FlushIndex(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			env.Close(b)
			b.StartTimer()
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*20000), "us/msg")
	})
	b.Run("again", func(b *testing.B) {
		env := sessionstest.New(b)
		if _, err := imports.Run(context.Background(), env.Sessions, "hermes", h, none, b.TempDir(), imports.RunOptions{}); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			rep, err := imports.Run(context.Background(), env.Sessions, "hermes", h, none, b.TempDir(), imports.RunOptions{})
			if err != nil || rep.Counts["unchanged"] != 1000 {
				b.Fatalf("%v %+v", err, rep.Counts)
			}
		}
	})
}

func newHermesB(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "state.db")
	d, err := sql.Open("sqlite3", path)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Exec(hermesSchema); err != nil {
		b.Fatal(err)
	}
	tx, _ := d.Begin()
	for i := 0; i < 1000; i++ {
		id := fmt.Sprintf("20260301_%06d_abcdef", i)
		tx.Exec(`INSERT INTO sessions (id, source, started_at) VALUES (?, 'cli', ?)`, id, t0+float64(i*60))
		for j := 0; j < 20; j++ {
			at := t0 + float64(i*60+j)
			switch j % 5 {
			case 3:
				tx.Exec(`INSERT INTO messages (session_id, role, content, tool_calls, timestamp) VALUES (?, 'assistant', '', ?, ?)`, id,
					fmt.Sprintf(`[{"id":"call_%d","type":"function","function":{"name":"terminal","arguments":"{\"command\":\"ls\"}"}}]`, j), at)
			case 4:
				tx.Exec(`INSERT INTO messages (session_id, role, content, tool_call_id, tool_name, timestamp) VALUES (?, 'tool', ?, ?, 'terminal', ?)`, id,
					"total 0 quick brown fox jumps over the lazy dog session agent tool call result memory context", fmt.Sprintf("call_%d", j-1), at)
			default:
				role := "user"
				if j%2 == 1 {
					role = "assistant"
				}
				tx.Exec(`INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)`, id, role,
					"the quick brown fox jumps over the lazy dog session agent tool call result memory context window token model provider gateway", at)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkImportGemini imports 1,000 Gemini CLI conversations (.jsonl, 20
// messages each: a tool call with its result in every fifth model turn, the
// model's message written again once its call had its result, as the CLI
// does) into a fresh store per iteration, and the same again.
func BenchmarkImportGemini(b *testing.B) {
	root := newGeminiB(b)
	none := func(string) string { return "" }
	b.Run("new", func(b *testing.B) {
		msgs := 0
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			env := sessionstest.New(b)
			b.StartTimer()
			rep, err := imports.Run(context.Background(), env.Sessions, "gemini-cli", root, none, b.TempDir(), imports.RunOptions{})
			if err != nil || rep.Counts["imported"] != 1000 || len(rep.Problems) != 0 {
				b.Fatalf("%v %+v %v", err, rep.Counts, rep.Problems)
			}
			msgs += rep.Messages
			if err := env.Sessions.FlushIndex(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			env.Close(b)
			b.StartTimer()
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(msgs), "us/msg")
	})
	b.Run("again", func(b *testing.B) {
		env := sessionstest.New(b)
		if _, err := imports.Run(context.Background(), env.Sessions, "gemini-cli", root, none, b.TempDir(), imports.RunOptions{}); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			rep, err := imports.Run(context.Background(), env.Sessions, "gemini-cli", root, none, b.TempDir(), imports.RunOptions{})
			if err != nil || rep.Counts["unchanged"] != 1000 {
				b.Fatalf("%v %+v", err, rep.Counts)
			}
		}
	})
}

func newGeminiB(b *testing.B) string {
	b.Helper()
	root := b.TempDir()
	text := "the quick brown fox jumps over the lazy dog session agent tool call result memory context window token model provider gateway"
	at := func(i, j int) string {
		return time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i*60+j) * time.Second).Format("2006-01-02T15:04:05.000Z")
	}
	for i := 0; i < 1000; i++ {
		id := fmt.Sprintf("6f1d2c3b-4a59-4e8f-9a0b-%012d", i)
		chats := filepath.Join(root, fmt.Sprintf("project%02d", i%10), "chats")
		if err := os.MkdirAll(chats, 0o755); err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		fmt.Fprintf(&buf, `{"sessionId":%q,"projectHash":"p","startTime":%q,"lastUpdated":%q}`+"\n", id, at(i, 0), at(i, 0))
		for j, n := 0, 0; n < 20; j++ {
			if j%2 == 0 {
				fmt.Fprintf(&buf, `{"id":"m%d","timestamp":%q,"type":"user","content":[{"text":%q}]}`+"\n", j, at(i, j), text)
				n++
				continue
			}
			if j%5 != 3 || n > 17 {
				fmt.Fprintf(&buf, `{"id":"m%d","timestamp":%q,"type":"gemini","content":%q,"model":"gemini-2.5-pro"}`+"\n", j, at(i, j), text)
				n++
				continue
			}
			call := fmt.Sprintf(`{"id":"c%d","name":"run_shell_command","args":{"command":"ls"},"status":"executing","timestamp":%q}`, j, at(i, j))
			done := fmt.Sprintf(`{"id":"c%d","name":"run_shell_command","args":{"command":"ls"},"result":[{"functionResponse":{"id":"c%d","name":"run_shell_command","response":{"output":%q}}}],"status":"success","timestamp":%q}`,
				j, j, "total 0 quick brown fox jumps over the lazy dog", at(i, j))
			for _, tc := range []string{call, done} {
				fmt.Fprintf(&buf, `{"id":"m%d","timestamp":%q,"type":"gemini","content":"","toolCalls":[%s]}`+"\n", j, at(i, j), tc)
			}
			n += 2
		}
		if err := os.WriteFile(filepath.Join(chats, fmt.Sprintf("session-2026-03-01T00-00-%08d.jsonl", i)), buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return root
}
