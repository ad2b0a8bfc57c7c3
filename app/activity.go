package app

import (
	"context"

	"github.com/samber/lo"

	"atrium/backend/hooks"
	"atrium/backend/stack"
)

// Activity reads the hook event log.
type Activity struct {
	base
	st *stack.Stack
}

// NewActivity binds st.
func NewActivity(ctx context.Context, st *stack.Stack) *Activity {
	return &Activity{base: base{ctx: ctx}, st: st}
}

// Recent returns up to limit events with seq above afterSeq, oldest first.
func (a *Activity) Recent(afterSeq int64, limit int) ([]EventDTO, error) {
	ctx, cancel := a.with(readTimeout)
	defer cancel()
	evs, err := hooks.ListEvents(ctx, a.st.DB, hooks.LogFilter{AfterSeq: afterSeq, Limit: limit})
	if err != nil {
		return nil, err
	}
	return lo.Map(evs, toEvent), nil
}
