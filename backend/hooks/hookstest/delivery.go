package hookstest

import (
	"context"
	"testing"

	"atrium/backend/db"
	"atrium/backend/hooks"
)

// Delivery is subscriber's recorded outcome for the event at seq, as the
// event log holds it (the zero Delivery when there is none yet).
func Delivery(t testing.TB, d *db.DB, seq int64, subscriber string) hooks.Delivery {
	t.Helper()
	evs, err := hooks.ListEvents(context.Background(), d, hooks.LogFilter{Seqs: []int64{seq}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		for _, x := range ev.Deliveries {
			if x.Subscriber == subscriber {
				return x
			}
		}
	}
	return hooks.Delivery{}
}
