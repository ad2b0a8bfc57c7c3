package proc

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain doubles as a tiny Go plugin speaking the protocol when the test
// binary is re-executed with ATRIUM_TEST_PLUGIN=mode.
func TestMain(m *testing.M) {
	// The guard (guard_linux.go) re-executes the binary; these tests run
	// their plugins directly (its end-to-end test is in cli, under a real
	// atrium serve), but a test binary must still answer as a guard.
	if len(os.Args) > 1 && os.Args[1] == GuardCommand {
		os.Exit(Guard(os.Args[2:]))
	}
	if mode := os.Getenv("ATRIUM_TEST_PLUGIN"); mode != "" {
		os.Exit(runTestPlugin(mode))
	}
	if dir := os.Getenv("ATRIUM_TEST_HOST"); dir != "" {
		os.Exit(runTestHost(dir))
	}
	os.Exit(m.Run())
}

type testMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  any             `json:"result,omitempty"`
}

func runTestPlugin(mode string) int {
	out := bufio.NewWriter(os.Stdout)
	send := func(m testMsg) {
		m.JSONRPC = "2.0"
		b, _ := json.Marshal(m)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	if mode == "garbage-first" {
		fmt.Fprintln(os.Stdout, "Loading model weights...") // before its handshake
	}
	workDir := ""
	flagged := map[string]bool{}
	if mode == "garbage-then-exit" {
		// A plugin that prints something (a banner, a traceback) on stdout
		// and dies before its handshake.
		fmt.Fprintln(os.Stdout, "Traceback (most recent call last): boom")
		return 1
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 4<<20)
	for in.Scan() {
		var m testMsg
		if err := json.Unmarshal(in.Bytes(), &m); err != nil {
			fmt.Fprintln(os.Stderr, "bad input:", err)
			return 2
		}
		switch m.Method {
		case "initialize":
			var p InitializeParams
			_ = json.Unmarshal(m.Params, &p)
			workDir = p.WorkDir
			cwd, _ := os.Getwd()
			if cwd != workDir {
				fmt.Fprintln(os.Stderr, "cwd is not the work folder:", cwd)
				return 4
			}
			_ = os.WriteFile(filepath.Join(workDir, "env.txt"), []byte(strings.Join(os.Environ(), "\n")), 0o600)
			fmt.Fprintf(os.Stderr, "hello from %s (%s)\n", p.Name, mode)
			hooksList := []string{"post_compaction", "on_session_delete", "pre_llm_call"}
			if mode == "unknown-hook" {
				hooksList = append(hooksList, "on_moon_landing")
			}
			version := 1
			if mode == "bad-version" {
				version = 99
			}
			send(testMsg{ID: m.ID, Result: map[string]any{"protocol_version": version, "hooks": hooksList,
				"commands": []map[string]string{{"name": cmdName(), "description": "who is asking"}},
				"cancel":   mode == "cancel-ack" || mode == "cancel-deaf"}})
		case "cancel":
			// Recorded whatever the mode: a plugin that did not ask for it
			// must never get one. cancel-ack answers the request at once.
			var p CancelParams
			_ = json.Unmarshal(m.Params, &p)
			f, _ := os.OpenFile(filepath.Join(workDir, "cancels.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
			fmt.Fprintf(f, "%d %s\n", p.ID, p.Reason)
			f.Close()
			if mode == "cancel-ack" {
				out.WriteString(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":{"code":%d,"message":"cancelled"}}`+"\n", p.ID, CodeCancelled))
				out.Flush()
			}
		case "event":
			var ev EventParams
			_ = json.Unmarshal(m.Params, &ev)
			var pl map[string]any
			_ = json.Unmarshal(ev.Payload, &pl)
			switch {
			case mode == "garbage":
				fmt.Fprintln(os.Stdout, "this is not json")
				continue
			case mode == "flood":
				fmt.Fprintln(os.Stdout, strings.Repeat("x", 2<<20))
				continue
			case pl["hang"] == true:
				time.Sleep(time.Hour)
			case pl["crash"] == true:
				marker := filepath.Join(workDir, "crashed")
				if _, err := os.Stat(marker); err != nil {
					_ = os.WriteFile(marker, nil, 0o600)
					fmt.Fprintln(os.Stderr, "crashing on", ev.EventID)
					return 3
				}
			}
			if ev.Hook == "post_compaction" {
				if sid, _ := pl["session_id"].(string); sid != "" {
					flagged[sid] = true
				}
			}
			f, _ := os.OpenFile(filepath.Join(workDir, "events.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
			fmt.Fprintf(f, "%d %s %v %s %d\n", ev.Seq, ev.EventID, ev.Redelivery, ev.Hook, os.Getpid())
			f.Close()
			done := map[string]any{"event_id": ev.EventID}
			if pl["fail"] == true {
				done["error"] = "asked to fail"
			}
			send(testMsg{Method: "event_done", Params: mustJSON(done)})
		case "pre_llm_call":
			var p struct {
				Payload struct {
					SessionID string `json:"session_id"`
				} `json:"payload"`
			}
			_ = json.Unmarshal(m.Params, &p)
			if flagged[p.Payload.SessionID] {
				delete(flagged, p.Payload.SessionID)
				send(testMsg{ID: m.ID, Result: map[string]any{"context": "RULES for " + p.Payload.SessionID}})
			} else {
				send(testMsg{ID: m.ID, Result: map[string]any{"context": nil}})
			}
		case "command":
			var p CommandParams
			_ = json.Unmarshal(m.Params, &p)
			if p.Args == "hang" {
				continue // never answered; the plugin reads on
			}
			if p.Args == "ask-host" {
				// A request of its own to the host (as ctx.llm makes one);
				// the command answers with the host's reply.
				send(testMsg{ID: json.RawMessage(`900`), Method: "llm.complete", Params: mustJSON(map[string]any{"messages": []any{}})})
				for in.Scan() {
					var r struct {
						ID     json.RawMessage `json:"id"`
						Result any             `json:"result"`
						Error  *RPCError       `json:"error"`
					}
					if json.Unmarshal(in.Bytes(), &r) == nil && string(r.ID) == "900" {
						send(testMsg{ID: m.ID, Result: map[string]any{"output": fmt.Sprintf("host answered %v %+v", r.Result, r.Error)}})
						break
					}
				}
				continue
			}
			user := "local user"
			if src, ok := p.Source.(map[string]any); ok {
				user, _ = src["user_id"].(string)
			}
			send(testMsg{ID: m.ID, Result: map[string]any{"output": fmt.Sprintf("%s args=%q session=%s key=%s platform=%s user=%s",
				p.Name, p.Args, p.SessionID, p.SessionKey, p.Platform, user)}})
		case "shutdown":
			if mode != "ignore-shutdown" {
				return 0
			}
		}
	}
	if mode == "ignore-shutdown" {
		time.Sleep(time.Hour)
	}
	return 0
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func cmdName() string {
	if n := os.Getenv("ATRIUM_TEST_CMD"); n != "" {
		return n
	}
	return "whoami"
}
