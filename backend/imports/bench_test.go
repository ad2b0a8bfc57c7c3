package imports_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

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
