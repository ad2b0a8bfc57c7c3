package tools

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"atrium/backend/atomicfile"
)

// What a tool call costs beside what the familiar agent's tools do: a shell
// started by hand for the terminal, and grep as a child process for a
// search. Run with -bench 'Tool' (docs/benchmarks.md, "The machine's
// tools").

func BenchmarkToolTerminal(b *testing.B) {
	dir := b.TempDir()
	b.Run("terminal", func(b *testing.B) {
		for b.Loop() {
			c := &Call{Args: map[string]any{"command": "echo hi"}, Dir: dir}
			if out := terminalTool().Run(context.Background(), c); !strings.Contains(out, `"output":"hi"`) {
				b.Fatal(out)
			}
		}
	})
	b.Run("bare-shell", func(b *testing.B) {
		bash, err := exec.LookPath("bash")
		if err != nil {
			b.Skip("no bash")
		}
		for b.Loop() {
			cmd := exec.Command(bash, "-c", "echo hi")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil || string(out) != "hi\n" {
				b.Fatal(string(out), err)
			}
		}
	})
}

// BenchmarkToolGuard is the dangerous-command check every terminal call
// makes, on a long safe command (every rule tried) and on a dangerous one.
func BenchmarkToolGuard(b *testing.B) {
	safe := "cd project && go test ./... 2>&1 | tail -n 40 && git status --short && ls -la build/ | grep -v '^total'"
	for _, c := range []struct{ name, command string }{{"safe", safe}, {"dangerous", "git push --force origin main"}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				Check(c.command, []string{"/home/someone/.atrium/config.yaml"})
			}
		})
	}
}

// BenchmarkToolSearch searches 2,000 files of 200 lines for a word in 20 of
// them; grep -rn is the baseline.
func BenchmarkToolSearch(b *testing.B) {
	dir := b.TempDir()
	var body strings.Builder
	for i := range 200 {
		fmt.Fprintf(&body, "line %d of a file that says nothing in particular\n", i)
	}
	for i := range 2000 {
		sub := filepath.Join(dir, fmt.Sprintf("pkg%02d", i%40))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		text := body.String()
		if i%100 == 0 {
			text += "the needle is here\n"
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%04d.txt", i)), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("search_files", func(b *testing.B) {
		for b.Loop() {
			// with a secret, as the turn loop sets one (the profile's .env)
			c := &Call{Args: map[string]any{"pattern": "needle"}, Dir: dir, Settings: Settings{Secrets: []string{filepath.Join(dir, ".env")}}}
			if out := searchFilesTool().Run(context.Background(), c); !strings.Contains(out, `"total_count":20`) {
				b.Fatal(out)
			}
		}
	})
	b.Run("grep-rn", func(b *testing.B) {
		for b.Loop() {
			out, err := exec.Command("grep", "-rn", "needle", dir).Output()
			if err != nil || strings.Count(string(out), "\n") != 20 {
				b.Fatal(string(out), err)
			}
		}
	})
}

// BenchmarkToolReadFile reads 500 lines of a 10,000-line file from the
// middle; sed -n as a child process is the baseline (the familiar agent
// reads through its terminal backend).
func BenchmarkToolReadFile(b *testing.B) {
	dir := b.TempDir()
	var body strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&body, "func line%d() { return %d } // a line of code of ordinary length\n", i, i)
	}
	path := filepath.Join(dir, "big.go")
	if err := os.WriteFile(path, []byte(body.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("read_file", func(b *testing.B) {
		for b.Loop() {
			c := &Call{Args: map[string]any{"path": "big.go", "offset": 5000.0, "limit": 500.0}, Dir: dir}
			if out := readFileTool().Run(context.Background(), c); !strings.Contains(out, `"total_lines":10000`) {
				b.Fatal(out[:200])
			}
		}
	})
	b.Run("sed-n", func(b *testing.B) {
		for b.Loop() {
			out, err := exec.Command("sed", "-n", "5000,5499p", path).Output()
			if err != nil || strings.Count(string(out), "\n") != 500 {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkToolMemory is the memory tool on files near their budgets: an
// entry added and removed (two calls, two whole-file writes under the
// lock) beside the I/O floor (the file read and replaced twice the same
// way, with no parsing, checks or lock), and the system prompt's snapshot
// of both files beside reading them.
func BenchmarkToolMemory(b *testing.B) {
	m := Memory{Dir: b.TempDir()}
	for i := range 14 {
		if err := m.Remember(TargetMemory, fmt.Sprintf("Note %02d: the service at port %d is started with make run-%d, never by hand; its logs are in logs/%d", i, 9000+i, i, i)); err != nil {
			b.Fatal(err)
		}
		if i < 9 {
			if err := m.Remember(TargetUser, fmt.Sprintf("Preference %d: prefers short answers with commands first, tabs, and metric units %d", i, i)); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("add-remove", func(b *testing.B) {
		for b.Loop() {
			if out, _ := m.Call(map[string]any{"action": "add", "content": "The staging database is read-only after 18:00"}, nil); !strings.Contains(out, `"success":true`) {
				b.Fatal(out)
			}
			if out, _ := m.Call(map[string]any{"action": "remove", "old_text": "staging database"}, nil); !strings.Contains(out, `"success":true`) {
				b.Fatal(out)
			}
		}
	})
	b.Run("io-floor", func(b *testing.B) {
		path := m.Path(TargetMemory)
		for b.Loop() {
			for range 2 {
				data, err := os.ReadFile(path)
				if err != nil {
					b.Fatal(err)
				}
				if err := atomicfile.Replace(path, data, 0o600); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("snapshot", func(b *testing.B) {
		for b.Loop() {
			if s, err := m.Snapshot(); err != nil || len(s) < 2000 {
				b.Fatal(len(s), err)
			}
		}
	})
	b.Run("read-floor", func(b *testing.B) {
		for b.Loop() {
			for _, t := range []string{TargetMemory, TargetUser} {
				if _, err := os.ReadFile(m.Path(t)); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// What being told of a background process's end costs beside waiting for
// it with the process tool: the same short command started in the
// background, then its Completion handed to a listener and taken, or a
// wait. Run with -bench 'BackgroundEnd' (docs/benchmarks.md, "A process's
// end, told").
func BenchmarkBackgroundEnd(b *testing.B) {
	dir := b.TempDir()
	ps := NewProcesses()
	defer ps.Close()
	ends := make(chan Completion, 1)
	ps.Listen(func(owner string) func(Completion) { return func(c Completion) { ends <- c } })
	start := func(b *testing.B, notify bool) string {
		c := &Call{Args: map[string]any{"command": "echo done", "background": true, "notify_on_complete": notify}, Dir: dir, Processes: ps, Owner: "cli:b"}
		out := terminalTool().Run(context.Background(), c)
		i := strings.Index(out, `"session_id":"`)
		if i < 0 {
			b.Fatal(out)
		}
		return out[i+14 : i+14+17]
	}
	b.Run("told", func(b *testing.B) {
		for b.Loop() {
			start(b, true)
			if c := <-ends; !c.Take() || c.Output != "done" {
				b.Fatalf("%+v", c)
			}
		}
	})
	b.Run("waited", func(b *testing.B) {
		for b.Loop() {
			id := start(b, false)
			c := &Call{Args: map[string]any{"action": "wait", "session_id": id}, Dir: dir, Processes: ps, Owner: "cli:b"}
			if out := processTool().Run(context.Background(), c); !strings.Contains(out, `"output":"done"`) {
				b.Fatal(out)
			}
		}
	})
}

// What watch_patterns costs a background process's output: a 32 KiB chunk
// of log lines (as the pipe hands them over) written to a process with no
// watch, and to one watching for 3 and for 32 strings that none of its
// lines hold (the common case: a server's log between its rare signals).
// Run with -bench 'WatchedOutput' (docs/benchmarks.md, "watch_patterns").
func BenchmarkWatchedOutput(b *testing.B) {
	var chunk []byte
	for i := 0; len(chunk) < 32<<10; i++ {
		chunk = fmt.Appendf(chunk, "2026-12-07T12:00:%02d.%03dZ INFO http: GET /api/items/%d 200 in %dms (worker %d)\n", i%60, i%1000, i, i%97, i%8)
	}
	chunk = chunk[:32<<10]
	for _, n := range []int{0, 3, 32} {
		b.Run(fmt.Sprintf("patterns-%d", n), func(b *testing.B) {
			ps := NewProcesses()
			p := &proc{ps: ps, id: "proc_bench", out: capped{limit: logBytes}, deliver: func(Completion) { b.Fatal("told") }}
			if n > 0 {
				w := &watcher{}
				for i := range n {
					w.patterns = append(w.patterns, fmt.Sprintf("Application startup complete %d", i))
				}
				p.watch = w
			}
			b.SetBytes(int64(len(chunk)))
			for b.Loop() {
				if _, err := p.Write(chunk); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// What the skills cost a conversation's first turn: the system prompt's
// index of 200 skills in 12 categories, each SKILL.md ~3 KB (the familiar
// agent ships about a hundred), built from the folder as a first turn
// builds it. Run with -bench 'SkillIndex' (docs/benchmarks.md, "Skills").
// SKILL_BENCH_DIR=<dir> keeps the folder there (for the familiar agent's
// index on the same files).
func BenchmarkSkillIndex(b *testing.B) {
	dir := b.TempDir()
	if d := os.Getenv("SKILL_BENCH_DIR"); d != "" {
		dir = d
	}
	body := strings.Repeat("A step of the procedure, with the exact command to run and what to check after it.\n", 36)
	for i := range 200 {
		sk := filepath.Join(dir, fmt.Sprintf("category-%02d", i%12), fmt.Sprintf("skill-%03d", i))
		if err := os.MkdirAll(sk, 0o755); err != nil {
			b.Fatal(err)
		}
		md := fmt.Sprintf("---\nname: skill-%03d\ndescription: Does task number %d the way that worked last time, with its pitfalls\n"+
			"version: 1.0.0\nmetadata:\n  hermes:\n    tags: [one, two]\n---\n\n# Skill %d\n\n%s", i, i, i, body)
		if err := os.WriteFile(filepath.Join(sk, "SKILL.md"), []byte(md), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	s := Skills{Dir: dir}
	// cold: every frontmatter parsed (a process's first listing); warm: the
	// files unchanged since the last listing.
	for _, cold := range []bool{true, false} {
		b.Run(map[bool]string{true: "cold", false: "warm"}[cold], func(b *testing.B) {
			for b.Loop() {
				if cold {
					skillHeads.Lock()
					clear(skillHeads.m)
					skillHeads.Unlock()
				}
				if idx := s.SkillIndex("cli", true); !strings.Contains(idx, "skill-199: Does task number 199") {
					b.Fatal(idx)
				}
			}
		})
	}
}

// What the project context costs a conversation's first turn: a repository
// of 200 folders and 2,000 files (a node_modules of 1,000 more), an
// AGENTS.md at its top and in 3 folders, the conversation working two
// folders down where one of them is. Run with -bench 'ContextFiles'
// (docs/benchmarks.md, "Skills"); CONTEXT_BENCH_DIR=<dir> keeps the
// project there.
func BenchmarkContextFiles(b *testing.B) {
	dir := b.TempDir()
	if d := os.Getenv("CONTEXT_BENCH_DIR"); d != "" {
		dir = d
	}
	write := func(rel, content string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	rules := strings.Repeat("Run the tests before you commit; keep functions small and named for what they do.\n", 40)
	write(".git/HEAD", "ref: refs/heads/main\n")
	write("AGENTS.md", rules)
	for i := range 2000 {
		write(fmt.Sprintf("pkg%03d/file%02d.go", i/10, i%10), "package p\n")
	}
	for _, d := range []string{"pkg010", "pkg100", "pkg150/sub"} {
		write(d+"/AGENTS.md", d+": "+rules)
	}
	for i := range 1000 {
		write(fmt.Sprintf("node_modules/m%03d/index.js", i), "x\n")
	}
	work := filepath.Join(dir, "pkg150", "sub")
	for b.Loop() {
		if got := ContextFiles(work, 0); !strings.Contains(got, "## ../../AGENTS.md") || !strings.Contains(got, "## AGENTS.md") {
			b.Fatal(got[:200])
		}
	}
}
