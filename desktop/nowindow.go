//go:build !desktop

package desktop

import (
	"context"

	"atrium/backend/apperr"
	"atrium/backend/config"
	"atrium/backend/stack"
)

// Available reports whether this build has the window.
const Available = false

// Run reports that this build has no window.
func Run(context.Context, *stack.Stack, Options) error {
	return apperr.New(apperr.Rejected, "this atrium was built without the desktop window: build it with `make build`, or use a subcommand (atrium --help)")
}

// ShowStartError has no window to show the error in: it says no.
func ShowStartError(config.Home, error) bool { return false }
