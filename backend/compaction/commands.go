package compaction

import (
	"context"
	"fmt"

	"atrium/backend/hooks"
)

// RegisterCommands adds /compress, which compaction owns.
func (e *Engine) RegisterCommands(cmds *hooks.Commands) error {
	if _, exists := cmds.Lookup("compress"); exists {
		return nil
	}
	return cmds.RegisterBuiltin("compress", "compact this session now: /compress [focus]", e.cmdCompress)
}

func (e *Engine) cmdCompress(ctx context.Context, args string, cc hooks.CommandContext) (string, error) {
	res, err := e.Compact(ctx, Request{SessionID: cc.SessionID, Kind: KindSummarize, Reason: ReasonManual, Focus: args})
	if err != nil {
		return "", err
	}
	return Describe(res), nil
}

// Describe is a one-line account of a compaction for people.
func Describe(res Result) string {
	if !res.Changed {
		return fmt.Sprintf("nothing compacted (%s): %s", res.Skipped, res.Detail)
	}
	out := fmt.Sprintf("compacted (%s, %s): ~%d → ~%d tokens", res.Kind, res.Reason, deref(res.BeforeTokens), deref(res.AfterTokens))
	if res.MessagesRemoved != nil {
		out += fmt.Sprintf(", %d message(s) folded", *res.MessagesRemoved)
	}
	if res.OldSessionID != "" {
		out += "; continues in session " + res.SessionID
	}
	return out
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
