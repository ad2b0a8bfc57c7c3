package cli

// One plugin host per profile, tested with real processes: every terminal
// command below is its own atrium process (this test binary re-executed as
// atrium, see TestMain), plugins are real Python children, and the host is
// a real background process, a real `atrium serve`, or the window's code
// path in this process.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"atrium/backend/db"
	"atrium/backend/hooks"
	"atrium/backend/pluginhost"
	"atrium/backend/stack"
)

// pidlog records, for every event it receives, its own pid, its parent's
// and grandparent's (a plugin runs under a guard, a child of its host), the
// event_id and the redelivery flag; each line is on disk before the
// callback returns.
const pidlogCode = `
import json, os

def register(ctx):
    path = os.path.join(ctx.work_dir, "events.jsonl")
    def parent_of(pid):
        try:
            with open("/proc/%d/stat" % pid) as f:
                return int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return 0
    def on_event(event_id, redelivery, hook, **kwargs):
        ppid = os.getppid()  # the plugin's guard, a child of the process that hosts it
        line = json.dumps({"pid": os.getpid(), "ppid": ppid, "gppid": parent_of(ppid), "event_id": event_id,
                           "redelivery": redelivery, "hook": hook, "reason": kwargs.get("reason", "")})
        with open(path, "a") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())
        if kwargs.get("reason") == "slow":
            import time
            time.sleep(3)
    for h in ("on_session_delete", "on_session_finalize", "post_compaction"):
        ctx.register_hook(h, on_event)
`

type pidlogLine struct {
	PID        int    `json:"pid"`
	PPID       int    `json:"ppid"`
	GPPID      int    `json:"gppid"`
	EventID    string `json:"event_id"`
	Redelivery bool   `json:"redelivery"`
	Hook       string `json:"hook"`
}

// hostedBy tells whether the plugin ran in process pid (directly or under
// its guard).
func (l pidlogLine) hostedBy(pid int) bool { return l.PPID == pid || l.GPPID == pid }

func needPython3(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
}

type procRun struct {
	code           int
	stdout, stderr string
	pid            int
}

// atriumProc runs `atrium args... --home home` as a child process.
func atriumProc(t *testing.T, home string, env []string, args ...string) procRun {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append(args, "--home", home)...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run atrium %v: %v", args, err)
	}
	return procRun{code, out.String(), errb.String(), cmd.Process.Pid}
}

func mustProc(t *testing.T, home string, args ...string) procRun {
	t.Helper()
	p := atriumProc(t, home, nil, args...)
	if p.code != 0 {
		t.Fatalf("atrium %v: exit %d: %s", args, p.code, p.stderr)
	}
	return p
}

// hostHome makes a profile with the pidlog plugin installed and enabled,
// memory-rules given rules, and a host that idles out after a minute at
// most; the host is stopped when the test ends.
func hostHome(t *testing.T, extraConfig string) string {
	t.Helper()
	home, src := t.TempDir(), t.TempDir()
	dir := filepath.Join(src, "pidlog")
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "plugin.yaml"), []byte("name: pidlog\nruntime: python\nversion: 0.0.1\nhooks: [on_session_delete, on_session_finalize, post_compaction]\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "__init__.py"), []byte(pidlogCode), 0o644))
	cfg := "plugins:\n  host_idle_minutes: 1\n  entries:\n    memory-rules:\n      settings:\n        rules: \"RULES-11: the API lives at /v2\"\n" + extraConfig
	must(t, os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o644))
	t.Cleanup(func() { stopHost(t, home) })
	mustProc(t, home, "plugins", "install", dir)
	mustProc(t, home, "plugins", "enable", "pidlog")
	return home
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// stopHost stops the home's background host, if any, and waits until no
// process of the home is left.
func stopHost(t *testing.T, home string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Main([]string{"plugins", "host", "stop", "--home", home}, Env{Stdout: &out, Stderr: &errb}); code != 0 && code != ExitRejected {
		t.Errorf("stop the host of %s: exit %d %s", home, code, errb.String())
	}
	waitUntil(t, "no process of the home left", 20*time.Second, func() bool { return len(homeProcs(home)) == 0 })
}

// homeProcs lists the live processes whose command line names home (its
// host, and the plugin runners under it), this process aside.
func homeProcs(home string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(home)) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
				continue // a zombie holds nothing
			}
		}
		out = append(out, pid)
	}
	return out
}

func waitUntil(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func pidlogLines(t *testing.T, home string) []pidlogLine {
	t.Helper()
	return pluginLog[pidlogLine](t, home, "pidlog")
}

// pluginLog reads the events.jsonl a test plugin writes in its working
// folder, one T a line (none before it wrote any).
func pluginLog[T any](t *testing.T, home, plugin string) []T {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, "plugins-data", plugin, "events.jsonl"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []T
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		var x T
		if err := json.Unmarshal([]byte(l), &x); err != nil {
			t.Fatalf("%s line %q: %v", plugin, l, err)
		}
		out = append(out, x)
	}
	return out
}

type loggedEvent struct {
	EventID    string `json:"event_id"`
	Seq        int64  `json:"seq"`
	Hook       string `json:"hook"`
	Delivered  bool   `json:"delivered"`
	Deliveries []struct {
		Subscriber string `json:"subscriber"`
		Status     string `json:"status"`
		Redelivery bool   `json:"redelivery"`
	} `json:"deliveries"`
	Pending []string `json:"pending"`
}

func eventLog(t *testing.T, home string) []loggedEvent {
	t.Helper()
	var evs []loggedEvent
	p := mustProc(t, home, "events", "list", "--json")
	if err := json.Unmarshal([]byte(p.stdout), &evs); err != nil {
		t.Fatalf("events list: %v\n%s", err, p.stdout)
	}
	return evs
}

func hostInfo(t *testing.T, home string) (pluginhost.Info, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	in, err := pluginhost.NewSite(home).NewClient().Hello(ctx)
	return in, err == nil
}

// ppidOf reads a process's parent.
func ppidOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// startServe runs `atrium serve` as a real process until the test ends.
func startServe(t *testing.T, home string) *exec.Cmd {
	t.Helper()
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "serve", "--addr", "127.0.0.1:0", "--home", home)
	cmd.Env = os.Environ()
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, io.Discard
	must(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		pw.Close()
	})
	lines := make(chan string, 1)
	go func() {
		br := bufio.NewReader(pr)
		l, _ := br.ReadString('\n')
		lines <- l
		_, _ = io.Copy(io.Discard, br)
	}()
	select {
	case l := <-lines:
		if !strings.Contains(l, "Atrium dashboard:") {
			t.Fatalf("serve printed %q", l)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start")
	}
	return cmd
}

// hostAsWindow runs the window's code path in this process (everything but
// the Wails window itself, which needs a display): it takes the host lock,
// runs the plugins held until the "first paint", then released, and hosts
// until stop is called.
func hostAsWindow(t *testing.T, home string) (stop func()) {
	t.Helper()
	r := &runner{env: Env{Version: "v9.9.9-test", Stdout: io.Discard, Stderr: io.Discard}, g: &globals{home: home}}
	r.host.kind = pluginhost.KindWindow
	cmd := &cobra.Command{Use: "atrium"}
	ready, quit, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			r.pluginManager(wctx, st)
			r.releasePlugins() // the list is painted
			close(ready)
			<-quit
			return nil
		})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("window path: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the window path did not start hosting")
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(quit)
			if err := <-done; err != nil {
				t.Errorf("window path: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// TestOneHostServesEveryTerminalCommand: with a host running (started in
// the background by a command, by `atrium serve`, by the window's code
// path), terminal commands reach the same running plugin instances:
// memory-rules re-injects its rules once after a terminal compact, a
// terminal delete reaches the host's session-index, and one Python
// instance receives every event, in seq order, once.
func TestOneHostServesEveryTerminalCommand(t *testing.T) {
	needPython3(t)
	t.Parallel()
	for _, variant := range []string{"background", "serve", "window"} {
		t.Run(variant, func(t *testing.T) {
			t.Parallel()
			home := hostHome(t, "")
			wantKind := pluginhost.KindBackground
			switch variant {
			case "serve":
				startServe(t, home)
				wantKind = pluginhost.KindServe
			case "window":
				hostAsWindow(t, home)
				wantKind = pluginhost.KindWindow
			}
			id := strings.TrimSpace(mustProc(t, home, "sessions", "create", "--title", "talk").stdout)
			gone := strings.TrimSpace(mustProc(t, home, "sessions", "create", "--title", "to delete").stdout)
			for i := 0; i < 8; i++ {
				mustProc(t, home, "send", id, "we decided the deploy window is Friday 18:00 and the on-call owner is Grace; please remember the runbook at /ops/deploy.md for later")
			}
			host, ok := hostInfo(t, home)
			if !ok || host.Kind != wantKind {
				t.Fatalf("host %+v (answering %v), want a %s", host, ok, wantKind)
			}
			var res struct {
				Changed   bool   `json:"changed"`
				SessionID string `json:"session_id"`
			}
			p := mustProc(t, home, "compact", id, "--json")
			must(t, json.Unmarshal([]byte(p.stdout), &res))
			if !res.Changed {
				t.Fatalf("compact changed nothing: %s", p.stdout)
			}
			// The compaction was delivered before the command returned.
			for _, e := range eventLog(t, home) {
				if e.Hook == hooks.PostCompaction && !e.Delivered {
					t.Fatalf("compact returned before its event was delivered: %+v", e)
				}
			}
			mustProc(t, home, "send", res.SessionID, "what is the endpoint?")
			mustProc(t, home, "send", res.SessionID, "and again?")
			var msgs []struct {
				Content     string  `json:"content"`
				SentContent *string `json:"sent_content"`
			}
			must(t, json.Unmarshal([]byte(mustProc(t, home, "messages", "list", res.SessionID, "--json").stdout), &msgs))
			injected := 0
			for _, m := range msgs {
				if m.SentContent != nil && strings.Contains(*m.SentContent, "RULES-11") {
					injected++
				}
			}
			if injected != 1 {
				t.Fatalf("memory-rules re-injected %d times after one terminal compaction, want exactly 1", injected)
			}

			mustProc(t, home, "sessions", "delete", gone)
			var st hostStatus
			must(t, json.Unmarshal([]byte(mustProc(t, home, "plugins", "host", "--json").stdout), &st))
			if !st.Running || st.PID != host.PID || st.Kind != wantKind {
				t.Fatalf("plugins host: %+v, want pid %d", st, host.PID)
			}
			var indexPID int
			for _, pr := range st.Plugins {
				if pr.Name == "session-index" {
					indexPID = pr.PID
				}
			}
			if indexPID == 0 || ppidOf(indexPID) != host.PID {
				t.Fatalf("session-index pid %d is not a child of the host %d: %+v", indexPID, host.PID, st.Plugins)
			}
			evs := eventLog(t, home)
			seqOf := map[string]int64{}
			var deletes int
			for _, e := range evs {
				seqOf[e.EventID] = e.Seq
				if e.Hook == hooks.OnSessionDelete {
					deletes++
					if !e.Delivered || len(e.Deliveries) == 0 || !slices.ContainsFunc(e.Deliveries, func(d struct {
						Subscriber string `json:"subscriber"`
						Status     string `json:"status"`
						Redelivery bool   `json:"redelivery"`
					}) bool {
						return d.Subscriber == "session-index" && d.Status == "ok"
					}) {
						t.Fatalf("the delete did not reach session-index: %+v", e)
					}
				}
			}
			if deletes != 1 {
				t.Fatalf("%d delete events", deletes)
			}
			lines := pidlogLines(t, home)
			want := 0
			for _, e := range evs {
				if e.Hook == hooks.OnSessionDelete || e.Hook == hooks.OnSessionFinalize || e.Hook == hooks.PostCompaction {
					want++
				}
			}
			if len(lines) != want {
				t.Fatalf("pidlog got %d events, want %d: %+v", len(lines), want, lines)
			}
			seen := map[string]bool{}
			for i, l := range lines {
				if l.PID != lines[0].PID || !l.hostedBy(host.PID) || l.Redelivery || seen[l.EventID] {
					t.Fatalf("line %d: %+v (first pid %d, host %d)", i, l, lines[0].PID, host.PID)
				}
				seen[l.EventID] = true
				if i > 0 && seqOf[l.EventID] <= seqOf[lines[i-1].EventID] {
					t.Fatalf("out of seq order at line %d", i)
				}
			}
		})
	}
}

// TestKillingTheHostLosesNothing kills the host with SIGKILL 50 times at
// random moments between commits and their delivery: no event is lost, none
// is delivered twice without redelivery: true, no plugin process outlives
// its host, and the next command starts a new host.
func TestKillingTheHostLosesNothing(t *testing.T) {
	needPython3(t)
	t.Parallel()
	home := hostHome(t, "")
	mustProc(t, home, "sessions", "create", "--title", "warm up") // nothing to host yet
	d, err := db.Open(context.Background(), filepath.Join(home, "state.db"), db.Options{})
	must(t, err)
	defer d.Close()
	committer := hooks.NewBus(d, hooks.Options{}) // a client that commits and pokes nobody
	committer.SetRemote(pluginhost.NewSite(home).NewClient())
	must(t, committer.Start(context.Background()))
	defer committer.Close(context.Background())
	commit := func(n int) {
		err := d.InTx(context.Background(), func(tx *db.Tx) error {
			_, err := committer.EnqueueTx(context.Background(), tx, hooks.OnSessionFinalize, hooks.SessionFinalize{SessionID: fmt.Sprint("s", n), Reason: "test"})
			return err
		})
		must(t, err)
	}

	var seeded struct {
		IDs []string `json:"ids"`
	}
	must(t, json.Unmarshal([]byte(mustProc(t, home, "dev", "seed", "--sessions", "51", "--messages", "0", "--json").stdout), &seeded))
	var ids []int
	lastHost := 0
	n := 0
	for round := 0; round < 50; round++ {
		// The next command starts a new host (a terminal end, which needs
		// pidlog: on_session_finalize).
		mustProc(t, home, "sessions", "end", seeded.IDs[round], "--no-wait")
		// The command started it; on a loaded machine its record may come
		// a moment after the command returned.
		var host pluginhost.Info
		var ok bool
		deadline := time.Now().Add(20 * time.Second)
		for host, ok = hostInfo(t, home); (!ok || host.PID == lastHost) && time.Now().Before(deadline); host, ok = hostInfo(t, home) {
			time.Sleep(20 * time.Millisecond)
		}
		if !ok || host.PID == lastHost || host.Kind != pluginhost.KindBackground {
			t.Fatalf("round %d: no new host after the last was killed: %+v %v", round, host, ok)
		}
		lastHost = host.PID
		ids = append(ids, host.PID)
		// The plugin's process up, so the kill lands between commits and
		// their deliveries, not before the plugin could take anything.
		waitUntil(t, "pidlog running in the new host", 20*time.Second, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			st, err := pluginhost.NewSite(home).NewClient().Status(ctx)
			return err == nil && slices.ContainsFunc(st.Plugins, func(p pluginhost.PluginState) bool {
				return p.Name == "pidlog" && p.State == "running"
			})
		})
		for range 1 + rand.IntN(3) {
			n++
			commit(n)
		}
		time.Sleep(time.Duration(rand.IntN(25)) * time.Millisecond)
		must(t, syscall.Kill(host.PID, syscall.SIGKILL))
		waitUntil(t, "the killed host and its plugins gone", 20*time.Second, func() bool { return len(homeProcs(home)) == 0 })
	}
	// A last command waits for every event to be delivered.
	mustProc(t, home, "sessions", "end", seeded.IDs[50])
	evs := eventLog(t, home)
	seqOf := map[string]int64{}
	for _, e := range evs {
		if e.Hook == hooks.OnSessionFinalize {
			seqOf[e.EventID] = e.Seq
			if !e.Delivered {
				t.Fatalf("event %d not delivered: %+v", e.Seq, e)
			}
		}
	}
	if len(seqOf) != n+51 {
		t.Fatalf("%d finalize events in the log, want %d", len(seqOf), n+51)
	}
	firsts := map[string]int{}
	copies := map[string]int{}
	lastSeq := map[int]int64{}
	for _, l := range pidlogLines(t, home) {
		copies[l.EventID]++
		if !l.Redelivery {
			firsts[l.EventID]++
		}
		if s := seqOf[l.EventID]; s <= lastSeq[l.PID] {
			t.Fatalf("plugin process %d got seq %d after %d", l.PID, s, lastSeq[l.PID])
		}
		lastSeq[l.PID] = seqOf[l.EventID]
	}
	redelivered := 0
	for id := range seqOf {
		if copies[id] == 0 {
			t.Fatalf("event %s (seq %d) lost", id, seqOf[id])
		}
		if firsts[id] > 1 {
			t.Fatalf("event %s delivered %d times without redelivery: true", id, firsts[id])
		}
		if copies[id] > 1 {
			redelivered++
		}
	}
	t.Logf("%d hosts killed, %d events, %d delivered more than once (flagged), %d plugin processes", len(ids), len(seqOf), redelivered, len(lastSeq))
}

// TestTenCommandsAndAServeStartOneHostAtATime: ten commands that each need
// the host and an `atrium serve` start at once; every command succeeds,
// every event reaches one instance once, instances never overlap (once
// replaced, a plugin process never delivers again), and serve ends up the
// host.
func TestTenCommandsAndAServeStartOneHostAtATime(t *testing.T) {
	needPython3(t)
	t.Parallel()
	home := hostHome(t, "")
	var ids []string
	for i := 0; i < 10; i++ {
		ids = append(ids, strings.TrimSpace(mustProc(t, home, "sessions", "create", "--title", fmt.Sprint("s", i)).stdout))
	}
	var wg sync.WaitGroup
	results := make([]procRun, len(ids))
	for i, id := range ids {
		wg.Go(func() { results[i] = atriumProc(t, home, nil, "sessions", "delete", id) })
	}
	startServe(t, home)
	wg.Wait()
	for i, r := range results {
		if r.code != 0 {
			t.Fatalf("command %d: exit %d: %s", i, r.code, r.stderr)
		}
	}
	waitUntil(t, "serve hosting", 30*time.Second, func() bool {
		in, ok := hostInfo(t, home)
		return ok && in.Kind == pluginhost.KindServe
	})
	// Every event delivered, once, in order of instances.
	waitUntil(t, "ten deliveries", 30*time.Second, func() bool { return len(pidlogLines(t, home)) >= 10 })
	lines := pidlogLines(t, home)
	if len(lines) != 10 {
		t.Fatalf("pidlog got %d lines: %+v", len(lines), lines)
	}
	seen, retired := map[string]bool{}, map[int]bool{}
	for i, l := range lines {
		if seen[l.EventID] || l.Redelivery {
			t.Fatalf("line %d: %+v delivered twice or flagged", i, l)
		}
		seen[l.EventID] = true
		if retired[l.PID] {
			t.Fatalf("plugin process %d delivered again after another one took over: two hosts at once", l.PID)
		}
		if i > 0 && l.PID != lines[i-1].PID {
			retired[lines[i-1].PID] = true
		}
	}
	// No background host is left: serve took over.
	for _, pid := range homeProcs(home) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if bytes.Contains(cmdline, []byte("host\x00run")) {
			t.Fatalf("a background host is still running next to serve: pid %d", pid)
		}
	}
}

// TestInlineAndSafeModeBehaveAsBefore: plugins.host: inline runs the
// plugins inside the command's own process and starts no host; safe mode
// runs none and starts no host.
func TestInlineAndSafeModeBehaveAsBefore(t *testing.T) {
	needPython3(t)
	t.Parallel()
	home := hostHome(t, "")
	cfg, err := os.ReadFile(filepath.Join(home, "config.yaml"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(home, "config.yaml"), bytes.Replace(cfg, []byte("plugins:\n"), []byte("plugins:\n  host: inline\n"), 1), 0o644))
	id := strings.TrimSpace(mustProc(t, home, "sessions", "create").stdout)
	del := mustProc(t, home, "sessions", "delete", id)
	lines := pidlogLines(t, home)
	if len(lines) != 1 || !lines[0].hostedBy(del.pid) || lines[0].Redelivery {
		t.Fatalf("inline: %+v, want one delivery from a child of the command (pid %d)", lines, del.pid)
	}
	if pluginhost.NewSite(home).Held() || len(homeProcs(home)) != 0 {
		t.Fatal("inline mode started a host or left a process")
	}
	if _, err := os.Stat(pluginhost.NewSite(home).SocketPath()); err == nil {
		t.Fatal("inline mode opened the host socket")
	}
	var st hostStatus
	must(t, json.Unmarshal([]byte(mustProc(t, home, "plugins", "host", "--json").stdout), &st))
	if st.Running || st.Mode != "inline" {
		t.Fatalf("plugins host in inline mode: %+v", st)
	}

	must(t, os.WriteFile(filepath.Join(home, "config.yaml"), cfg, 0o644)) // auto again
	id = strings.TrimSpace(mustProc(t, home, "sessions", "create").stdout)
	if p := atriumProc(t, home, []string{"ATRIUM_SAFE_MODE=1"}, "sessions", "delete", id); p.code != 0 {
		t.Fatalf("safe mode delete: %+v", p)
	}
	if got := pidlogLines(t, home); len(got) != 1 {
		t.Fatalf("safe mode ran a plugin: %+v", got)
	}
	if pluginhost.NewSite(home).Held() || len(homeProcs(home)) != 0 {
		t.Fatal("safe mode started a host or left a process")
	}
}

// TestNoWaitReturnsAtCommit: by default a command returns once its event
// was delivered; with --no-wait it returns at commit, and the host delivers
// afterwards.
func TestNoWaitReturnsAtCommit(t *testing.T) {
	needPython3(t)
	t.Parallel()
	home := hostHome(t, "")
	a := strings.TrimSpace(mustProc(t, home, "sessions", "create").stdout)
	b := strings.TrimSpace(mustProc(t, home, "sessions", "create").stdout)
	mustProc(t, home, "sessions", "end", a, "--reason", "slow", "--no-wait") // pidlog sleeps 3 s on "slow"
	evs := eventLog(t, home)
	if len(evs) != 1 || evs[0].Delivered {
		t.Fatalf("with --no-wait the command waited for delivery: %+v", evs)
	}
	mustProc(t, home, "sessions", "end", b, "--reason", "slow")
	for _, e := range eventLog(t, home) {
		if !e.Delivered {
			t.Fatalf("without --no-wait the command returned before delivery: %+v", e)
		}
	}
}

// A background host exits by itself after plugins.host_idle_minutes; a
// second `atrium serve` is a client of the first and hosts once the first
// ends, and the next command's event reaches its plugins.
func TestAnIdleHostExitsAndASecondServeTakesOver(t *testing.T) {
	needPython3(t)
	t.Parallel()
	home := hostHome(t, "")
	cfg, err := os.ReadFile(filepath.Join(home, "config.yaml"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(home, "config.yaml"), bytes.Replace(cfg, []byte("host_idle_minutes: 1"), []byte("host_idle_minutes: 0.02"), 1), 0o644))
	a := strings.TrimSpace(mustProc(t, home, "sessions", "create").stdout)
	b := strings.TrimSpace(mustProc(t, home, "sessions", "create").stdout)
	mustProc(t, home, "sessions", "end", a)
	if _, ok := hostInfo(t, home); !ok {
		t.Fatal("no background host after a command that needs one")
	}
	waitUntil(t, "the idle host gone by itself", 30*time.Second, func() bool {
		return !pluginhost.NewSite(home).Held() && len(homeProcs(home)) == 0
	})

	first := startServe(t, home)
	second := startServe(t, home)
	if in, ok := hostInfo(t, home); !ok || in.PID != first.Process.Pid || in.Kind != pluginhost.KindServe {
		t.Fatalf("host %+v, want the first serve (pid %d)", in, first.Process.Pid)
	}
	must(t, first.Process.Signal(syscall.SIGTERM))
	_ = first.Wait()
	waitUntil(t, "the second serve hosting", 30*time.Second, func() bool {
		in, ok := hostInfo(t, home)
		return ok && in.PID == second.Process.Pid
	})
	mustProc(t, home, "sessions", "delete", b)
	lines := pidlogLines(t, home)
	last := lines[len(lines)-1]
	if last.Hook != hooks.OnSessionDelete || !last.hostedBy(second.Process.Pid) {
		t.Fatalf("the delete reached %+v, want a plugin of the second serve (pid %d)", last, second.Process.Pid)
	}
}
