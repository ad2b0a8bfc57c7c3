//go:build !desktop

package desktop

import (
	"context"

	"atrium/backend/apperr"
	"atrium/backend/stack"
)

// Available reports whether this build has the window.
const Available = false

// Run reports that this build has no window.
func Run(context.Context, *stack.Stack, Options) error {
	return apperr.New(apperr.Rejected, "this atrium was built without the desktop window: build it with `make build`, or use a subcommand (atrium --help)")
}
