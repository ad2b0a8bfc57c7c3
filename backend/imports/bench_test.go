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
func BenchmarkImportHermes(b *testing.B) { benchImport(b, "hermes", newHermesB(b)) }

// benchImport imports the 1,000 sessions of kind at path into a fresh store
// per iteration ("new", reporting the time a message took), and into one
// that has them already ("again": nothing new).
func benchImport(b *testing.B, kind, path string) {
	none := func(string) string { return "" }
	run := func(b *testing.B, env *sessionstest.Env, status string) imports.Report {
		b.Helper()
		rep, err := imports.Run(context.Background(), env.Sessions, kind, path, none, b.TempDir(), imports.RunOptions{})
		if err != nil || rep.Counts[status] != 1000 || len(rep.Problems) != 0 {
			b.Fatalf("%v %+v %v", err, rep.Counts, rep.Problems)
		}
		return rep
	}
	b.Run("new", func(b *testing.B) {
		msgs := 0
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			env := sessionstest.New(b)
			b.StartTimer()
			msgs += run(b, env, "imported").Messages
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
		run(b, env, "imported")
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			run(b, env, "unchanged")
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
func BenchmarkImportGemini(b *testing.B) { benchImport(b, "gemini-cli", newGeminiB(b)) }

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

// BenchmarkImportOpenCode imports an OpenCode store of 1,000 sessions (20
// messages each once converted: a tool call with its result in every fifth
// assistant message, each assistant message with OpenCode's step parts)
// into a fresh store per iteration, and the same again.
func BenchmarkImportOpenCode(b *testing.B) { benchImport(b, "opencode", newOpenCodeB(b)) }

func newOpenCodeB(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	d, err := sql.Open("sqlite3", filepath.Join(dir, "opencode.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	for _, q := range []string{
		`CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, parent_id TEXT, slug TEXT NOT NULL, directory TEXT NOT NULL,
			title TEXT NOT NULL, version TEXT NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL)`,
		`CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL)`,
		`CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id)`,
		`CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL)`,
		`CREATE INDEX part_message_id_id_idx ON part (message_id, id)`,
		`CREATE INDEX part_session_idx ON part (session_id)`,
	} {
		if _, err := d.Exec(q); err != nil {
			b.Fatal(err)
		}
	}
	text := "the quick brown fox jumps over the lazy dog session agent tool call result memory context window token model provider gateway"
	tx, _ := d.Begin()
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	part := func(sid, mid string, n int, data string) {
		tx.Exec(`INSERT INTO part VALUES (?, ?, ?, 0, 0, ?)`, fmt.Sprintf("prt_%s_%02d", mid, n), mid, sid, data)
	}
	for i := 0; i < 1000; i++ {
		sid := fmt.Sprintf("ses_%06dffeBenchSession", i)
		at := t0 + int64(i)*60_000
		tx.Exec(`INSERT INTO session VALUES (?, 'p', NULL, 's', '/src', ?, '1.2.6', ?, ?)`, sid, fmt.Sprintf("Session %d", i), at, at)
		for j, n := 0, 0; n < 20; j++ {
			mid := fmt.Sprintf("msg_%06d_%03d", i, j)
			at := at + int64(j)*1000
			if j%2 == 0 {
				tx.Exec(`INSERT INTO message VALUES (?, ?, ?, 0, ?)`, mid, sid, at, fmt.Sprintf(`{"role":"user","time":{"created":%d},"agent":"build","model":{"providerID":"p","modelID":"m"}}`, at))
				part(sid, mid, 0, fmt.Sprintf(`{"type":"text","text":%q}`, text))
				n++
				continue
			}
			tx.Exec(`INSERT INTO message VALUES (?, ?, ?, 0, ?)`, mid, sid, at, fmt.Sprintf(`{"role":"assistant","time":{"created":%d,"completed":%d},"modelID":"m","providerID":"p","mode":"build","cost":0,"tokens":{"input":1,"output":1,"reasoning":0,"cache":{"read":0,"write":0}}}`, at, at+500))
			part(sid, mid, 0, `{"type":"step-start"}`)
			if j%5 == 3 && n <= 17 {
				part(sid, mid, 1, fmt.Sprintf(`{"type":"tool","callID":"call_%d","tool":"bash","state":{"status":"completed","input":{"command":"ls"},"output":"total 0 quick brown fox","title":"ls","metadata":{},"time":{"start":%d,"end":%d}}}`, j, at, at+100))
				n += 2
			} else {
				part(sid, mid, 1, fmt.Sprintf(`{"type":"text","text":%q}`, text))
				n++
			}
			part(sid, mid, 2, `{"type":"step-finish","reason":"stop","cost":0,"tokens":{"input":1,"output":1,"reasoning":0,"cache":{"read":0,"write":0}}}`)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	return dir
}
