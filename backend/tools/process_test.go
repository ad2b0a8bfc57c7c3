package tools

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// bg runs the terminal or the process tool for owner with ps.
func bg(t *testing.T, ps *Processes, owner, dir string, tool Tool, args map[string]any) map[string]any {
	t.Helper()
	m, _ := runToolWith(t, tool, &Call{Dir: dir, Processes: ps, Owner: owner}, args)
	return m
}

func newPS(t *testing.T) *Processes {
	t.Helper()
	ps := NewProcesses()
	t.Cleanup(ps.Close)
	return ps
}

func startBG(t *testing.T, ps *Processes, owner, dir, command string) string {
	t.Helper()
	out := bg(t, ps, owner, dir, terminalTool(), map[string]any{"command": command, "background": true})
	id, _ := out["session_id"].(string)
	if !strings.HasPrefix(id, "proc_") || out["output"] != "Background process started" || out["error"] != nil {
		t.Fatalf("start %q: %v", command, out)
	}
	return id
}

// A background command returns at once with its session_id; wait gives its
// output and exit code; list shows it; a poll after that has nothing new.
func TestBackgroundProcessRunsAndIsWaitedFor(t *testing.T) {
	t.Parallel()
	ps, dir := newPS(t), t.TempDir()
	began := time.Now()
	id := startBG(t, ps, "cli:a", dir, "echo start; sleep 0.3; echo end; exit 4")
	if time.Since(began) > 2*time.Second {
		t.Fatalf("the start waited for the command: %v", time.Since(began))
	}
	out := bg(t, ps, "cli:a", dir, processTool(), map[string]any{"action": "wait", "session_id": id, "timeout": 10})
	if out["status"] != "exited" || out["exit_code"] != 4.0 || out["output"] != "start\nend" || out["timed_out"] != nil || out["cwd"] != dir {
		t.Fatalf("wait: %v", out)
	}
	list := bg(t, ps, "cli:a", dir, processTool(), map[string]any{"action": "list"})
	if procs := list["processes"].([]any); len(procs) != 1 || procs[0].(map[string]any)["session_id"] != id || procs[0].(map[string]any)["command"] == "" {
		t.Fatalf("list: %v", list)
	}
	if out := bg(t, ps, "cli:a", dir, processTool(), map[string]any{"action": "poll", "session_id": id}); out["output"] != "" || out["status"] != "exited" {
		t.Fatalf("poll after wait: %v", out)
	}
}

// A wait that runs out of time says so and gives what was written so far;
// the process runs on.
func TestWaitTimesOutWithPartialOutput(t *testing.T) {
	t.Parallel()
	ps, dir := newPS(t), t.TempDir()
	id := startBG(t, ps, "cli:a", dir, "echo begun; sleep 60")
	waitFor(t, 10*time.Second, "the first line", func() bool {
		p, _ := ps.get("cli:a", id)
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.written > 0
	})
	out := bg(t, ps, "cli:a", dir, processTool(), map[string]any{"action": "wait", "session_id": id, "timeout": 1})
	if out["timed_out"] != true || out["status"] != "running" || out["output"] != "begun" {
		t.Fatalf("wait: %v", out)
	}
}

// A process reading its input gets what write and submit send; close ends
// its input.
func TestProcessInput(t *testing.T) {
	t.Parallel()
	ps, dir := newPS(t), t.TempDir()
	id := startBG(t, ps, "cli:a", dir, "cat")
	if out := bg(t, ps, "cli:a", dir, processTool(), map[string]any{"action": "submit", "session_id": id, "data": "hello"}); out["bytes_written"] != 6.0 {
		t.Fatalf("submit: %v", out)
	}
	var seen string
	waitFor(t, 10*time.Second, "the echo of the input", func() bool {
		out := bg(t, ps, "cli:a", dir, processTool(), map[string]any{"action": "poll", "session_id": id})
		seen += out["output"].(string)
		return strings.Contains(seen, "hello")
	})
	bg(t, ps, "cli:a", dir, processTool(), map[string]any{"action": "write", "session_id": id, "data": "tail"})
	if out := bg(t, ps, "cli:a", dir, processTool(), map[string]any{"action": "close", "session_id": id}); out["stdin"] != "closed" {
		t.Fatalf("close: %v", out)
	}
	out := bg(t, ps, "cli:a", dir, processTool(), map[string]any{"action": "wait", "session_id": id, "timeout": 10})
	if out["status"] != "exited" || out["exit_code"] != 0.0 || out["output"] != "tail" {
		t.Fatalf("after close: %v", out)
	}
	if out := bg(t, ps, "cli:a", dir, processTool(), map[string]any{"action": "write", "session_id": id, "data": "late"}); !strings.Contains(fmt.Sprint(out["error"]), "exited") {
		t.Fatalf("write after exit: %v", out)
	}
}

// kill ends the whole process group; Close ends every process left.
func TestKillAndClose(t *testing.T) {
	t.Parallel()
	ps, dir := NewProcesses(), t.TempDir()
	id := startBG(t, ps, "cli:a", dir, "sleep 60 & echo $! > child.pid; wait")
	waitFor(t, 10*time.Second, "the child's pid", func() bool { return fileHas(dir + "/child.pid") })
	child := readPid(t, dir+"/child.pid")
	out := bg(t, ps, "cli:a", dir, processTool(), map[string]any{"action": "kill", "session_id": id})
	if out["status"] != "killed" {
		t.Fatalf("kill: %v", out)
	}
	waitFor(t, 10*time.Second, "the child to end", func() bool { return gone(child) })
	other := startBG(t, ps, "cli:a", dir, "sleep 60")
	p, _ := ps.get("cli:a", other)
	pid := p.cmd.Process.Pid
	ps.Close()
	if !gone(pid) {
		t.Fatalf("Close left %d running", pid)
	}
	if out := bg(t, ps, "cli:a", dir, terminalTool(), map[string]any{"command": "sleep 1", "background": true}); !strings.Contains(fmt.Sprint(out["error"]), "stopping") {
		t.Fatalf("a start after Close: %v", out)
	}
}

// A conversation sees and touches only its own processes; one Atrium
// process keeps at most MaxProcesses running.
func TestProcessesAreTheConversations(t *testing.T) {
	t.Parallel()
	ps, dir := newPS(t), t.TempDir()
	id := startBG(t, ps, "cli:a", dir, "sleep 60")
	if out := bg(t, ps, "telegram:b", dir, processTool(), map[string]any{"action": "kill", "session_id": id}); !strings.Contains(fmt.Sprint(out["error"]), "no background process") {
		t.Fatalf("another conversation's kill: %v", out)
	}
	if out := bg(t, ps, "telegram:b", dir, processTool(), map[string]any{"action": "list"}); len(out["processes"].([]any)) != 0 {
		t.Fatalf("another conversation's list: %v", out)
	}
	for i := 1; i < MaxProcesses; i++ {
		startBG(t, ps, "cli:a", dir, "sleep 60")
	}
	out := bg(t, ps, "cli:a", dir, terminalTool(), map[string]any{"command": "sleep 60", "background": true})
	if !strings.Contains(fmt.Sprint(out["error"]), "16 background processes run already") {
		t.Fatalf("the 17th: %v", out)
	}
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"action": "poll"}, "session_id is required for poll"},
		{map[string]any{"action": "dance", "session_id": id}, "Unknown process action: dance"},
		{map[string]any{"action": "poll", "session_id": "proc_nothing"}, "no background process proc_nothing"},
	} {
		if out := bg(t, ps, "cli:a", dir, processTool(), c.args); !strings.Contains(fmt.Sprint(out["error"]), c.want) {
			t.Errorf("%v: %v", c.args, out)
		}
	}
}

// log pages through the output by lines (its last 200 by default); a flood
// is kept bounded.
func TestProcessLog(t *testing.T) {
	t.Parallel()
	ps, dir := newPS(t), t.TempDir()
	id := startBG(t, ps, "cli:a", dir, "seq 1 500")
	bg(t, ps, "cli:a", dir, processTool(), map[string]any{"action": "wait", "session_id": id, "timeout": 10})
	out := bg(t, ps, "cli:a", dir, processTool(), map[string]any{"action": "log", "session_id": id})
	if out["total_lines"] != 500.0 || out["showing"] != "lines 301-500 of 500" || !strings.HasPrefix(out["output"].(string), "301\n") {
		t.Fatalf("log: %v", out["showing"])
	}
	out = bg(t, ps, "cli:a", dir, processTool(), map[string]any{"action": "log", "session_id": id, "offset": 0, "limit": 3})
	if out["output"] != "1\n2\n3" || out["showing"] != "lines 1-3 of 500" {
		t.Fatalf("log from the start: %v", out)
	}
	flood := startBG(t, ps, "cli:a", dir, "yes | head -c 5000000")
	bg(t, ps, "cli:a", dir, processTool(), map[string]any{"action": "wait", "session_id": flood, "timeout": 20})
	p, _ := ps.get("cli:a", flood)
	p.mu.Lock()
	kept := len(p.out.head) + len(p.out.tail)
	p.mu.Unlock()
	if kept > logBytes {
		t.Fatalf("kept %d bytes of a flood", kept)
	}
}

// A turn's stop ends a wait, not the process.
func TestAStoppedWaitLeavesTheProcess(t *testing.T) {
	t.Parallel()
	ps, dir := newPS(t), t.TempDir()
	id := startBG(t, ps, "cli:a", dir, "sleep 60")
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }() // the stop arrives while it waits
	m, _ := runToolCtxWith(t, ctx, processTool(), &Call{Dir: dir, Processes: ps, Owner: "cli:a"}, map[string]any{"action": "wait", "session_id": id, "timeout": 30})
	if !strings.Contains(fmt.Sprint(m["error"]), "stopped with the turn") {
		t.Fatalf("wait: %v", m)
	}
	p, _ := ps.get("cli:a", id)
	if p.hasExited() || syscall.Kill(p.cmd.Process.Pid, 0) != nil {
		t.Fatal("the process ended with the wait")
	}
}

// Processes that ignore SIGTERM are killed together after one grace
// period, not one after another.
func TestCloseKillsStubbornProcessesAtOnce(t *testing.T) {
	t.Parallel()
	ps, dir := NewProcesses(), t.TempDir()
	var pids []int
	for range 3 {
		id := startBG(t, ps, "cli:a", dir, "trap '' TERM; echo ready; while :; do sleep 0.1; done")
		p, _ := ps.get("cli:a", id)
		waitFor(t, 10*time.Second, "the trap set", func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.written > 0 })
		pids = append(pids, p.cmd.Process.Pid)
	}
	began := time.Now()
	ps.Close()
	if took := time.Since(began); took > 4*time.Second {
		t.Fatalf("Close took %v", took)
	}
	for _, pid := range pids {
		if !gone(pid) {
			t.Fatalf("%d still runs", pid)
		}
	}
}
