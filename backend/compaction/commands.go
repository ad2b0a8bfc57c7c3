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
	return cmds.RegisterBuiltinHint("compress", "compact this session now", "[focus]", e.cmdCompress)
}

func (e *Engine) cmdCompress(ctx context.Context, args string, cc hooks.CommandContext) (string, error) {
	res, err := e.Compact(ctx, Request{SessionID: cc.SessionID, Kind: KindSummarize, Reason: ReasonManual, Focus: args,
		Platform: cc.Platform, SessionKey: cc.SessionKey})
	if err != nil {
		return "", err
	}
	return Describe(res), nil
}

// Describe is a one-line account of a compaction for people, in plain
// words: no internal codes, no ids.
func Describe(res Result) string {
	if !res.Changed {
		switch res.Skipped {
		case SkipNothing:
			return "Nothing to compact yet: " + res.Detail
		case SkipCooldown:
			return "Not compacted: an automatic compaction just failed or did not help, so it waits a little before trying again."
		case SkipWouldGrow:
			return "Not compacted: the summary would not have been shorter than what it replaces."
		case SkipAborted:
			return "Not compacted: " + res.Detail + ". Nothing was changed."
		}
		return "Nothing was compacted."
	}
	out := fmt.Sprintf("Compacted the conversation: about %d → %d tokens", deref(res.BeforeTokens), deref(res.AfterTokens))
	switch {
	case res.Engine != "":
		// An engine's result may drop messages or keep them elsewhere: say
		// who did it, not how.
		out += " by the context engine " + res.Engine
		if res.MessagesRemoved != nil && *res.MessagesRemoved > 0 {
			out += fmt.Sprintf(", %d fewer message(s)", *res.MessagesRemoved)
		}
	case res.MessagesRemoved != nil && *res.MessagesRemoved > 0:
		out += fmt.Sprintf(", %d earlier message(s) folded into a summary", *res.MessagesRemoved)
	}
	if res.OldSessionID != "" {
		out += "; it continues in a new part of this conversation"
	}
	return out + "."
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
