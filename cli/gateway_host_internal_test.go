package cli

// The gateway and the profile's one plugin host, with real processes: a
// gateway turn reaches the plugin instance of the process that hosts the
// plugins (atrium serve), and when that one ends, `atrium gateway run`
// hosts them itself.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"atrium/backend/gateway"
	"atrium/backend/pluginhost"
)

// gwlog records the gateway hooks it sees with the process it runs in, and
// rewrites "ping" into /whoami (pre_gateway_dispatch is a control hook).
const gwlogCode = `
import json, os

def register(ctx):
    path = os.path.join(ctx.work_dir, "events.jsonl")
    def parent_of(pid):
        try:
            with open("/proc/%d/stat" % pid) as f:
                return int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return 0
    def log(hook, **fields):
        ppid = os.getppid()
        fields.update({"pid": os.getpid(), "ppid": ppid, "gppid": parent_of(ppid), "hook": hook})
        with open(path, "a") as f:
            f.write(json.dumps(fields) + "\n")
            f.flush()
            os.fsync(f.fileno())
    def on_dispatch(event=None, **kw):
        log("pre_gateway_dispatch", platform=kw.get("platform", ""), user_id=event.source.user_id, text=event.text)
        if event.text == "ping":
            return {"action": "rewrite", "text": "/whoami"}
        return None
    def on_start(**kw):
        log("on_session_start", platform=kw.get("platform") or "", session_id=kw.get("session_id", ""))
    ctx.register_hook("pre_gateway_dispatch", on_dispatch)
    ctx.register_hook("on_session_start", on_start)
`

type gwlogLine struct {
	PID      int    `json:"pid"`
	PPID     int    `json:"ppid"`
	GPPID    int    `json:"gppid"`
	Hook     string `json:"hook"`
	Platform string `json:"platform"`
	UserID   string `json:"user_id"`
	Text     string `json:"text"`
}

func gwlogLines(t *testing.T, home string) []gwlogLine {
	t.Helper()
	return pluginLog[gwlogLine](t, home, "gwlog")
}

// replySink is the other end of a webhook adapter: it keeps the replies
// whose signature checks out.
type replySink struct {
	mu      sync.Mutex
	replies []gateway.WebhookReply
}

func (s *replySink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if err := gateway.Verify(gwSecret, r.Header, body, time.Now()); err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var m gateway.WebhookReply
	if err := json.Unmarshal(body, &m); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.replies = append(s.replies, m)
	s.mu.Unlock()
}

func (s *replySink) texts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.replies {
		out = append(out, r.Text)
	}
	return out
}

const gwSecret = "cli-webhook-secret-never-logged"

// postWebhook sends one signed message to the adapter.
func postWebhook(t *testing.T, url, id, user, name, text string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"id": id, "text": text, "user_id": user, "user_name": name, "chat_id": "c-" + user, "chat_type": "dm"})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	ts := time.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(gateway.HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(gateway.HeaderSignature, gateway.Sign(gwSecret, ts, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("webhook POST %s: HTTP %d", id, resp.StatusCode)
	}
}

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// TestGatewayTurnsReachTheHostsPlugin: with `atrium serve` hosting the
// plugins, `atrium gateway run` is its client: pre_gateway_dispatch (a
// control hook: its rewrite decides what runs), the plugin's command and
// the gateway session's on_session_start all reach the one plugin instance
// serve runs. When serve ends, gateway run takes the host lock and runs
// the plugin itself; the next gateway turn, and a terminal `cron run`,
// reach it there.
func TestGatewayTurnsReachTheHostsPlugin(t *testing.T) {
	needPython3(t)
	t.Parallel()
	sink := &replySink{}
	srv := httptest.NewServer(sink)
	t.Cleanup(srv.Close)
	listen := freeLoopbackAddr(t)
	url := "http://" + listen + gateway.WebhookPath

	home, src := t.TempDir(), t.TempDir()
	dir := filepath.Join(src, "gwlog")
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "plugin.yaml"), []byte("name: gwlog\nruntime: python\nversion: 0.0.1\nhooks: [pre_gateway_dispatch, on_session_start]\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "__init__.py"), []byte(gwlogCode), 0o644))
	cfg := fmt.Sprintf("plugins:\n  host_idle_minutes: 1\ngateway:\n  webhook:\n    platform: bridge\n    secret_env: CLI_GW_SECRET\n    listen: %s\n    reply_url: %s\n    allowed_users: [u-ada]\n", listen, srv.URL)
	must(t, os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o644))
	t.Cleanup(func() { stopHost(t, home) })
	mustProc(t, home, "plugins", "install", dir)
	mustProc(t, home, "plugins", "enable", "gwlog")

	serve := startServe(t, home)
	waitUntil(t, "serve hosting the plugins", 30*time.Second, func() bool {
		in, ok := hostInfo(t, home)
		return ok && in.Kind == pluginhost.KindServe && in.PID == serve.Process.Pid
	})

	exe, _ := os.Executable()
	gw := exec.Command(exe, "gateway", "run", "--json", "--home", home)
	gw.Env = append(os.Environ(), "CLI_GW_SECRET="+gwSecret)
	logs := &lockedLog{}
	gw.Stdout, gw.Stderr = logs, logs
	must(t, gw.Start())
	t.Cleanup(func() { _ = gw.Process.Signal(syscall.SIGTERM); _ = gw.Wait() })
	deadline := time.Now().Add(90 * time.Second) // a race-built process on a loaded machine
	for !strings.Contains(logs.String(), `"state":"connected"`) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for the gateway connected; its log:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "the plugins run in another process") {
		t.Fatalf("gateway run did not say who hosts the plugins:\n%s", logs.String())
	}

	// "ping" is rewritten by the plugin into /whoami, which the host's
	// whoami answers with the sender's id and platform.
	postWebhook(t, url, "m1", "u-ada", "Ada", "ping")
	waitUntil(t, "the reply", 30*time.Second, func() bool { return len(sink.texts()) == 1 })
	if got := sink.texts()[0]; !strings.Contains(got, "Ada (u-ada) on bridge") {
		t.Fatalf("reply %q (the rewrite did not route /whoami)", got)
	}
	postWebhook(t, url, "m2", "u-ada", "Ada", "hello there")
	waitUntil(t, "the second reply", 30*time.Second, func() bool { return len(sink.texts()) == 2 })
	waitUntil(t, "the plugin saw both dispatches and the session start", 30*time.Second, func() bool {
		n := map[string]int{}
		for _, l := range gwlogLines(t, home) {
			n[l.Hook]++
		}
		return n["pre_gateway_dispatch"] == 2 && n["on_session_start"] == 1
	})
	lines := gwlogLines(t, home)
	pids := map[int]bool{}
	for _, l := range lines {
		pids[l.PID] = true
		if l.PPID != serve.Process.Pid && l.GPPID != serve.Process.Pid {
			t.Fatalf("%s ran outside serve (pid %d): %+v", l.Hook, serve.Process.Pid, l)
		}
		if l.Hook == "pre_gateway_dispatch" && (l.Platform != "bridge" || l.UserID != "u-ada") {
			t.Fatalf("dispatch payload %+v", l)
		}
		if l.Hook == "on_session_start" && l.Platform != "bridge" {
			t.Fatalf("session start %+v", l)
		}
	}
	if len(pids) != 1 {
		t.Fatalf("%d plugin instances, want one: %+v", len(pids), lines)
	}

	// serve ends: gateway run hosts the plugins from then on.
	must(t, serve.Process.Signal(syscall.SIGTERM))
	_ = serve.Wait()
	waitUntil(t, "gateway run hosting the plugins", 30*time.Second, func() bool {
		in, ok := hostInfo(t, home)
		return ok && in.Kind == pluginhost.KindGateway && in.PID == gw.Process.Pid && in.Process == "atrium gateway run"
	})
	postWebhook(t, url, "m3", "u-ada", "Ada", "ping")
	waitUntil(t, "the reply with gateway run hosting", 30*time.Second, func() bool { return len(sink.texts()) == 3 })
	if got := sink.texts()[2]; !strings.Contains(got, "Ada (u-ada) on bridge") {
		t.Fatalf("reply %q", got)
	}
	waitUntil(t, "the dispatch in gateway run's plugin", 30*time.Second, func() bool { return len(gwlogLines(t, home)) == 4 })
	last := gwlogLines(t, home)[3]
	if last.Hook != "pre_gateway_dispatch" || (last.PPID != gw.Process.Pid && last.GPPID != gw.Process.Pid) {
		t.Fatalf("after the handover: %+v (gateway run is pid %d)", last, gw.Process.Pid)
	}
	// A terminal `cron run` is a client of gateway run: the cron session's
	// start reaches the same instance.
	mustProc(t, home, "cron", "add", "digest", "--schedule", "0 9 * * *", "--tz", "UTC", "--prompt", "say hi")
	mustProc(t, home, "cron", "run", "digest")
	waitUntil(t, "the cron session's start in gateway run's plugin", 30*time.Second, func() bool { return len(gwlogLines(t, home)) == 5 })
	if l := gwlogLines(t, home)[4]; l.Hook != "on_session_start" || l.Platform != "cron" || (l.PPID != gw.Process.Pid && l.GPPID != gw.Process.Pid) {
		t.Fatalf("cron run: %+v (gateway run is pid %d)", l, gw.Process.Pid)
	}
	if strings.Contains(logs.String(), gwSecret) {
		t.Fatal("the webhook secret reached the log")
	}
	must(t, gw.Process.Signal(syscall.SIGTERM))
	if err := gw.Wait(); err != nil {
		t.Fatalf("gateway run after SIGTERM: %v\n%s", err, logs.String())
	}
}

type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
