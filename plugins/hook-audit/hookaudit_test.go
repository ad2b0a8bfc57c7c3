package hookaudit_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"atrium/backend/hooks"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
	hookaudit "atrium/plugins/hook-audit"
)

func TestAuditLogsEveryEventAsOneJSONLine(t *testing.T) {
	t.Parallel()
	logs := filepath.Join(t.TempDir(), "logs")
	e := sessionstest.New(t, func(bus *hooks.Bus) {
		if err := hookaudit.Register(bus.Plugin(hookaudit.Name), logs); err != nil {
			t.Fatal(err)
		}
	})
	s := e.MustCreate(t, sessions.CreateParams{Title: "audited"})
	e.MustEnd(t, s.ID)
	if _, err := e.Sessions.Delete(context.Background(), []string{s.ID}, nil); err != nil {
		t.Fatal(err)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionFinalize: 1, hooks.OnSessionDelete: 1, "*": 0})
	f, err := os.Open(filepath.Join(logs, "hook-audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l hookaudit.Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("not JSON: %q", sc.Text())
		}
		got = append(got, l.Hook)
		if l.EventID == "" || len(l.Payload) == 0 {
			t.Fatalf("line %+v", l)
		}
	}
	if len(got) != 2 || got[0] != "on_session_finalize" || got[1] != "on_session_delete" {
		t.Fatalf("audit lines %v", got)
	}
}
