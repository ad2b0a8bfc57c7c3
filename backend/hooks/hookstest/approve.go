package hookstest

import (
	"context"
	"encoding/json"

	"atrium/backend/hooks"
)

// WantApproval registers, as plugin, a pre_tool_call callback that wants a
// person to approve every call of tool ({"action": "approve"} with
// message) and decides nothing for the others.
func WantApproval(bus *hooks.Bus, plugin, tool, message string) error {
	_, err := bus.RegisterSync(plugin, hooks.PreToolCall, func(_ context.Context, raw json.RawMessage) (any, error) {
		var p hooks.ToolCallPayload
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		if p.ToolName == tool {
			return map[string]any{"action": "approve", "message": message}, nil
		}
		return nil, nil
	})
	return err
}
