// Package whoami is the canonical example of a plugin slash command: it
// reports who called it, on which platform, in which session.
//
// It also shows the security rule of commands: Source is identity, not
// authorisation. A sensitive command would decide from Source.UserID or
// Source.ChatID and refuse when Source is nil (a local surface).
package whoami

import (
	"context"
	"fmt"

	"atrium/backend/hooks"
)

// Name is the plugin's name.
const Name = "whoami"

// Register adds /whoami.
func Register(ctx *hooks.Context) error {
	return ctx.RegisterCommand("whoami", Handle, "who am I, on which platform, in which session")
}

// Handle answers /whoami.
func Handle(_ context.Context, _ string, cc hooks.CommandContext) (string, error) {
	who := "local user"
	if cc.Source != nil {
		who = cc.Source.UserID
		if cc.Source.UserName != "" {
			who = fmt.Sprintf("%s (%s)", cc.Source.UserName, cc.Source.UserID)
		}
	}
	session := cc.SessionID
	if session == "" {
		session = "(none yet)"
	}
	return fmt.Sprintf("%s on %s, session %s, key %s", who, cc.Platform, session, cc.SessionKey), nil
}
