package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"atrium/app"
)

func TestImportOverHTTPReadsOnlyTheDefaultPlaces(t *testing.T) {
	// Not parallel: the agents' places come from the environment.
	cc, hh, cx, gh := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("CLAUDE_CONFIG_DIR", cc)
	t.Setenv("HERMES_HOME", hh)
	t.Setenv("CODEX_HOME", cx)
	t.Setenv("GEMINI_CLI_HOME", gh)
	t.Setenv("XDG_DATA_HOME", t.TempDir()) // no opencode there
	chats := filepath.Join(gh, ".gemini", "tmp", "9b2e6d1f", "chats")
	if err := os.MkdirAll(chats, 0o700); err != nil {
		t.Fatal(err)
	}
	conv := `{"sessionId":"4b0c5d6e-7f80-4912-a3b4-c5d6e7f80912","projectHash":"9b2e6d1f","startTime":"2026-03-02T09:00:00.000Z","lastUpdated":"2026-03-02T09:00:00.000Z"}
{"id":"u1","timestamp":"2026-03-02T09:00:01.000Z","type":"user","content":"why is the build red?"}
{"id":"g1","timestamp":"2026-03-02T09:00:02.000Z","type":"gemini","content":"A missing import."}
`
	if err := os.WriteFile(filepath.Join(chats, "session-2026-03-02T09-00-4b0c5d6e.jsonl"), []byte(conv), 0o600); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(cc, "projects", "-home-u-app")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	line := `{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"7d1e9c2a-2222-4c2b-9a55-0a1b2c3d4e5f","timestamp":"2026-03-01T09:00:00.000Z","isSidechain":false,"message":{"role":"user","content":"tidy the imports"}}`
	if err := os.WriteFile(filepath.Join(proj, "7d1e9c2a-2222-4c2b-9a55-0a1b2c3d4e5f.jsonl"), []byte(line+"\nnot json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, c := newServer(t)

	var sources []app.ImportSourceDTO
	if code := c.do("GET", "/api/storage/import", token, nil, &sources); code != 200 || len(sources) != 5 {
		t.Fatalf("sources = %d %+v", code, sources)
	}
	found := map[string]bool{}
	for _, s := range sources {
		found[s.Kind] = s.Found
		if s.Label == "" || s.Path == "" {
			t.Errorf("source %+v", s)
		}
	}
	if !found["claude-code"] || found["hermes"] || found["codex"] || !found["gemini-cli"] || found["opencode"] {
		t.Fatalf("found %v", found)
	}

	var rep app.ImportDTO
	if code := c.do("POST", "/api/storage/import", token, map[string]any{"kind": "claude-code", "dry_run": true}, &rep); code != 200 ||
		!rep.DryRun || rep.Counts["imported"] != 1 || rep.Messages != 1 || rep.Skipped != 1 || !strings.Contains(rep.Problems[0], ":2: ") {
		t.Fatalf("dry run = %d %+v", code, rep)
	}
	var page struct{ Sessions []struct{ ID string } }
	if c.do("GET", "/api/sessions", token, nil, &page); len(page.Sessions) != 0 {
		t.Fatalf("a dry run wrote %+v", page)
	}
	if code := c.do("POST", "/api/storage/import", token, map[string]any{"kind": "claude-code"}, &rep); code != 200 || rep.Counts["imported"] != 1 {
		t.Fatalf("import = %d %+v", code, rep)
	}
	if c.do("GET", "/api/sessions", token, nil, &page); len(page.Sessions) != 1 || page.Sessions[0].ID != "7d1e9c2a-2222-4c2b-9a55-0a1b2c3d4e5f" {
		t.Fatalf("after the import %+v", page)
	}
	if code := c.do("POST", "/api/storage/import", token, map[string]any{"kind": "claude-code"}, &rep); code != 200 || rep.Counts["unchanged"] != 1 || rep.Messages != 0 {
		t.Fatalf("again = %d %+v", code, rep)
	}

	if code := c.do("POST", "/api/storage/import", token, map[string]any{"kind": "gemini-cli"}, &rep); code != 200 || rep.Counts["imported"] != 1 ||
		rep.Messages != 2 || !strings.HasSuffix(rep.Path, filepath.Join(".gemini", "tmp")) {
		t.Fatalf("gemini-cli = %d %+v", code, rep)
	}
	if c.do("GET", "/api/sessions?platform=gemini-cli", token, nil, &page); len(page.Sessions) != 1 || page.Sessions[0].ID != "4b0c5d6e-7f80-4912-a3b4-c5d6e7f80912" {
		t.Fatalf("the gemini-cli session %+v", page)
	}

	// A browser names no file: a path is refused, as an unknown kind and a
	// place with nothing in it are.
	var bad struct{ Code, Message string }
	if code := c.do("POST", "/api/storage/import", token, map[string]any{"kind": "claude-code", "path": "/etc"}, &bad); code != 400 {
		t.Fatalf("a path = %d %+v", code, bad)
	}
	if code := c.do("POST", "/api/storage/import", token, map[string]any{"kind": "openclaw"}, &bad); code != 400 || !strings.Contains(bad.Message, "unknown import kind") {
		t.Fatalf("unknown kind = %d %+v", code, bad)
	}
	if code := c.do("POST", "/api/storage/import", token, map[string]any{"kind": "hermes"}, &bad); code != 404 || !strings.Contains(bad.Message, "does not exist") {
		t.Fatalf("nothing there = %d %+v", code, bad)
	}
}
