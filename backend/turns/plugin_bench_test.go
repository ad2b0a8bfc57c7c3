//go:build unix

package turns_test

// BenchmarkPythonPlugin measures, with a warm Python plugin process (the
// real runner, a real child), what a memory provider costs per turn and
// what one plugin tool call through the loop costs (docs/benchmarks.md):
//
//	go test -tags sqlite_fts5 -run '^$' -bench 'BenchmarkPythonPlugin' -benchtime=300x -count=5 ./backend/turns/
//
// Turn/baseline is a turn with no plugin; Turn/memory_provider the same turn
// with the plugin's provider selected (is_available/initialize once, then
// per turn on_turn_start, prefetch, get_tool_schemas, sync_turn,
// queue_prefetch); MemoryCalls is only prefetch + sync_turn through the bus.
// Tool/builtin_echo is a turn whose model asks for the built-in echo tool;
// Tool/plugin_tool the same with the plugin's tool (offered, called with its
// parsed arguments, its result stored).

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"atrium/backend/compaction"
	"atrium/backend/hooks"
	"atrium/backend/llm"
	"atrium/backend/plugins/proc"
	"atrium/backend/plugins/runner"
	"atrium/backend/sessions/sessionstest"
	"atrium/backend/turns"
)

const benchPluginSource = `
import json
from agent.memory_provider import MemoryProvider

class Bench(MemoryProvider):
    name = "bench"
    def __init__(self):
        self.facts = []
    def is_available(self):
        return True
    def initialize(self, session_id, **kwargs):
        self.session = session_id
    def prefetch(self, query, *, session_id=""):
        return "RECALLED: " + "; ".join(self.facts[-3:]) if self.facts else ""
    def sync_turn(self, user_content, assistant_content, *, session_id="", messages=None):
        self.facts.append(user_content[:40])
    def get_tool_schemas(self):
        return []

def lookup(args, **kw):
    return json.dumps({"port": 8080, "q": args.get("q")})

def register(ctx):
    ctx.register_memory_provider(Bench())
    ctx.register_tool(name="lookup", toolset="bench", schema={"name": "lookup", "description": "Look a value up",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}, handler=lookup)
`

type pyBench struct {
	e    *sessionstest.Env
	host *proc.Host
}

func newPyBench(b *testing.B) *pyBench {
	b.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		b.Skip("python3 is not installed")
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "__init__.py"), []byte(benchPluginSource), 0o644); err != nil {
		b.Fatal(err)
	}
	path, err := runner.WriteTo(filepath.Join(b.TempDir(), "runner"))
	if err != nil {
		b.Fatal(err)
	}
	pb := &pyBench{}
	var addErr error
	pb.e = sessionstest.NewWith(b, hooks.Options{Timeout: 30 * time.Second}, func(bus *hooks.Bus) {
		pb.host = proc.NewHost(bus, nil)
		addErr = pb.host.Add(proc.Spec{Name: "bench", Dir: dir, Argv: []string{py, path, dir},
			Env: []string{"PATH=" + os.Getenv("PATH"), "HERMES_HOME=" + dir}, WorkDir: filepath.Join(b.TempDir(), "work"), Timeout: 30 * time.Second})
	})
	if addErr != nil {
		b.Fatal(addErr)
	}
	b.Cleanup(func() { _ = pb.host.Stop(context.Background()) })
	return pb
}

func (pb *pyBench) loop(b *testing.B, memory string) *turns.Loop {
	eng := compaction.NewEngine(pb.e.DB, pb.e.Sessions, pb.e.Bus, llm.OfflineSummarizer{}, compaction.DefaultConfig())
	if err := eng.RegisterCommands(pb.e.Bus.Commands()); err != nil {
		b.Fatal(err)
	}
	loop, err := turns.New(pb.e.DB, pb.e.Sessions, eng, pb.e.Bus, turns.Options{Provider: llm.OfflineProvider{Window: 1_000_000}, MemoryProvider: memory})
	if err != nil {
		b.Fatal(err)
	}
	return loop
}

// sendAll runs b.N turns of text, a fresh session every benchPerSess turns.
func (pb *pyBench) sendAll(b *testing.B, loop *turns.Loop, text string, check func(turns.Turn)) {
	var id string
	var cpu cpuMeter
	b.ResetTimer()
	cpu.start()
	for i := 0; i < b.N; i++ {
		if i%benchPerSess == 0 {
			cpu.stop()
			b.StopTimer()
			if err := pb.e.Bus.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			id = benchSession(b, pb.e)
			b.StartTimer()
			cpu.start()
		}
		turn, err := loop.Send(ctx, id, text, hooks.LocalContext("cli", id))
		if err != nil {
			b.Fatal(err)
		}
		check(turn)
	}
	cpu.stop()
	b.StopTimer()
	cpu.report(b)
}

func BenchmarkPythonPlugin(b *testing.B) {
	pb := newPyBench(b)
	b.Run("Turn/baseline", func(b *testing.B) {
		pb.sendAll(b, pb.loop(b, ""), "what port does the service use?", func(t turns.Turn) {
			if strings.Contains(t.SentText, "RECALLED") {
				b.Fatal("no provider, yet a recall")
			}
		})
	})
	b.Run("Turn/memory_provider", func(b *testing.B) {
		turnsSeen := 0
		pb.sendAll(b, pb.loop(b, "bench"), "what port does the service use?", func(t turns.Turn) {
			// The provider remembers from its first sync_turn on.
			if turnsSeen++; turnsSeen > 1 && !strings.Contains(t.SentText, "RECALLED") {
				b.Fatalf("the provider's recall did not reach the turn: %q", t.SentText)
			}
		})
	})
	b.Run("MemoryCalls/prefetch+sync_turn", func(b *testing.B) {
		c, ok := pb.e.Bus.MemoryProvider("bench")
		if !ok {
			b.Fatal("no provider")
		}
		call := hooks.MemoryCall{SessionID: "s1", Platform: "cli"}
		var cpu cpuMeter
		b.ResetTimer()
		cpu.start()
		for i := 0; i < b.N; i++ {
			call.Args, call.Kwargs = []any{"what port?"}, map[string]any{"session_id": "s1"}
			if _, err := pb.e.Bus.CallMemory(ctx, c, "prefetch", call); err != nil {
				b.Fatal(err)
			}
			call.Args, call.Kwargs = []any{"what port?", "8080"}, map[string]any{"session_id": "s1", "messages": []any{}}
			if _, err := pb.e.Bus.CallMemory(ctx, c, "sync_turn", call); err != nil {
				b.Fatal(err)
			}
		}
		cpu.stop()
		b.StopTimer()
		cpu.report(b)
	})
	b.Run("Tool/builtin_echo", func(b *testing.B) {
		pb.sendAll(b, pb.loop(b, ""), `use tool echo: {"text": "port"}`, func(t turns.Turn) {
			if len(t.ToolCalls) != 1 || !strings.Contains(t.Reply, "The tool echo returned: port") {
				b.Fatalf("turn %+v", t)
			}
		})
	})
	b.Run("Tool/plugin_tool", func(b *testing.B) {
		pb.sendAll(b, pb.loop(b, ""), `use tool lookup: {"q": "port"}`, func(t turns.Turn) {
			if len(t.ToolCalls) != 1 || !strings.Contains(t.Reply, `The tool lookup returned: {"port": 8080, "q": "port"}`) {
				b.Fatalf("turn %+v", t)
			}
		})
	})
}
