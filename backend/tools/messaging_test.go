package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// send_message: offered only when the profile has a chat platform (said
// where toolsets name it); its arguments checked before anything is sent;
// what Send and Targets answer is what the model reads, an error as the
// familiar tool's {"error"}.
func TestSendMessageTool(t *testing.T) {
	t.Parallel()
	var sent []string
	m := Messaging{Platforms: []string{"telegram"},
		Send: func(_ context.Context, target, message string) (map[string]any, error) {
			if target == "slack" {
				return nil, errors.New("Platform 'slack' is not configured")
			}
			sent = append(sent, target+" "+message)
			return map[string]any{"success": true, "message_id": "7"}, nil
		},
		Targets: func(context.Context) (map[string]any, error) {
			return map[string]any{"targets": []string{"telegram"}}, nil
		}}
	call := func(m Messaging, args map[string]any) map[string]any {
		var out map[string]any
		_ = json.Unmarshal([]byte(sendMessageTool().Run(context.Background(), &Call{Args: args, Settings: Settings{Messaging: m}})), &out)
		return out
	}
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"target": "telegram", "message": "hi"}, `{"message_id":"7","success":true}`},
		{map[string]any{"action": "send", "target": " telegram:42 ", "message": "hi"}, `{"message_id":"7","success":true}`},
		{map[string]any{"action": "list"}, `{"targets":["telegram"]}`},
		{map[string]any{"target": "telegram"}, `{"error":"Both 'target' and 'message' are required when action='send'"}`},
		{map[string]any{"message": "hi"}, `{"error":"Both 'target' and 'message' are required when action='send'"}`},
		{map[string]any{"action": "delete"}, `{"error":"unknown action \"delete\": it is send or list"}`},
		{map[string]any{"target": "slack", "message": "hi"}, `{"error":"Platform 'slack' is not configured"}`},
	} {
		b, _ := json.Marshal(call(m, c.args))
		if string(b) != c.want {
			t.Errorf("%v: %s, want %s", c.args, b, c.want)
		}
	}
	if strings.Join(sent, "|") != "telegram hi|telegram:42 hi" {
		t.Fatalf("sent %q", sent)
	}

	none := Messaging{}
	if got := call(none, map[string]any{"target": "telegram", "message": "hi"}); !strings.HasPrefix(got["error"].(string), "send_message needs a chat platform") {
		t.Fatalf("without a platform: %v", got)
	}
	s := Settings{Toolsets: []string{"messaging", "file"}}
	on, warnings := s.Enabled("cli")
	if on[SendMessageTool] || len(warnings) != 1 || !strings.Contains(warnings[0], "needs a chat platform") {
		t.Fatalf("named without a platform: %v %v", on, warnings)
	}
	s.Messaging = m
	if on, warnings := s.Enabled("cli"); !on[SendMessageTool] || len(warnings) != 0 {
		t.Fatalf("named with a platform: %v %v", on, warnings)
	}
	if on, warnings := (Settings{}).Enabled("cli"); on[SendMessageTool] || len(warnings) != 0 {
		t.Fatalf("all, without a platform: offered %v, warnings %v (none named it)", on[SendMessageTool], warnings)
	}
}
