package turns

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A budget spent ends the turn as a WithTimeout does: Err and Cause are
// context.DeadlineExceeded, also through a context derived from it (the
// gateway's, which a /stop cancels), and the turn reads it as its
// deadline.
func TestABudgetSpentIsTheTurnsDeadline(t *testing.T) {
	t.Parallel()
	ctx, cancel := WithBudget(context.Background(), 30*time.Millisecond)
	defer cancel()
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > 30*time.Millisecond {
		t.Fatalf("deadline %v %v", dl, ok)
	}
	child, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	<-child.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(context.Cause(ctx), context.DeadlineExceeded) ||
		!errors.Is(child.Err(), context.DeadlineExceeded) || !errors.Is(context.Cause(child), context.DeadlineExceeded) {
		t.Fatalf("ended with %v / %v, child %v / %v", ctx.Err(), context.Cause(ctx), child.Err(), context.Cause(child))
	}
	if s := stopOf(child); s != stopByDeadline {
		t.Fatalf("the turn read its end as %+v", s)
	}
	if _, ok := ctx.Deadline(); ok {
		t.Fatal("an ended budget still reports a deadline")
	}
}

// While a person is waited for the clock stands: a wait three times the
// budget does not end the turn; the turn has no deadline meanwhile; holds
// nest (parallel calls asking at once) and a release twice counts once;
// once the last wait is over the clock runs on with what was left.
func TestABudgetStandsStillWhileAPersonIsWaitedFor(t *testing.T) {
	t.Parallel()
	const d = 200 * time.Millisecond
	start := time.Now()
	ctx, cancel := WithBudget(context.Background(), d)
	defer cancel()
	first := waitingForPerson(ctx)
	held := time.Since(start) // at most this much of the budget is spent
	second := waitingForPerson(ctx)
	if _, ok := ctx.Deadline(); ok {
		t.Fatal("a deadline while a person is waited for")
	}
	// What a fixed deadline of three budgets would have ended by now.
	witness, wcancel := context.WithTimeout(context.Background(), 3*d)
	defer wcancel()
	select {
	case <-ctx.Done():
		t.Fatalf("the turn ended while its person was waited for: %v", ctx.Err())
	case <-witness.Done():
	}
	first()
	first() // twice: counts once
	if _, ok := ctx.Deadline(); ok {
		t.Fatal("the clock runs while the second wait is not over")
	}
	select {
	case <-ctx.Done():
		t.Fatalf("the turn ended while its second wait was not over: %v", ctx.Err())
	case <-time.After(d):
	}
	second()
	resumed := time.Now()
	dl, ok := ctx.Deadline()
	if !ok {
		t.Fatal("no deadline once the waits are over")
	}
	if left := dl.Sub(resumed); left > d || left < d-held-20*time.Millisecond {
		t.Fatalf("left after the waits: %v, want %v less at most %v", left, d, held)
	}
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("ended with %v", ctx.Err())
	}
	if ran := time.Since(resumed); ran < d-held-20*time.Millisecond {
		t.Fatalf("ended %v after the waits, before what was left", ran)
	}
}

// The parent's end ends the budget, with the parent's cause (a person's
// Stop); cancel ends it as Canceled; a budget of an ended parent starts
// ended; a hold on an ended budget is harmless.
func TestABudgetEndsWithItsParent(t *testing.T) {
	t.Parallel()
	parent, stop := context.WithCancelCause(context.Background())
	ctx, cancel := WithBudget(parent, time.Hour)
	defer cancel()
	release := waitingForPerson(ctx)
	stop(StopByPerson)
	<-ctx.Done()
	release()
	if !errors.Is(ctx.Err(), context.Canceled) || !errors.Is(context.Cause(ctx), StopByPerson) {
		t.Fatalf("ended with %v, cause %v", ctx.Err(), context.Cause(ctx))
	}

	ctx2, cancel2 := WithBudget(context.Background(), time.Hour)
	cancel2()
	<-ctx2.Done()
	if !errors.Is(ctx2.Err(), context.Canceled) {
		t.Fatalf("cancel ended it with %v", ctx2.Err())
	}
	ctx3, cancel3 := WithBudget(ctx2, time.Hour)
	defer cancel3()
	select {
	case <-ctx3.Done():
	default:
		t.Fatal("a budget of an ended parent runs")
	}
	if pausesForPerson(context.Background()) || !pausesForPerson(ctx3) {
		t.Fatal("pausesForPerson")
	}
	waitingForPerson(context.Background())() // no budget: nothing to hold
}

// What a turn's budget costs beside the context.WithTimeout it replaced:
// made, held and released once (an approval), a child derived (as the
// gateway derives its stop), cancelled. Run with -bench TurnLimit
// (docs/benchmarks.md, "A turn's clock").
func BenchmarkTurnLimit(b *testing.B) {
	parent, stop := context.WithCancel(context.Background())
	defer stop()
	b.Run("budget", func(b *testing.B) {
		for b.Loop() {
			ctx, cancel := WithBudget(parent, time.Minute)
			waitingForPerson(ctx)()
			child, end := context.WithCancelCause(ctx)
			end(nil)
			cancel()
			<-child.Done()
		}
	})
	b.Run("timeout", func(b *testing.B) {
		for b.Loop() {
			ctx, cancel := context.WithTimeout(parent, time.Minute)
			waitingForPerson(ctx)()
			child, end := context.WithCancelCause(ctx)
			end(nil)
			cancel()
			<-child.Done()
		}
	})
}

// A subagent's turn has its own budget inside its parent turn's: a person
// waited for there stands both clocks still, and releases both.
func TestAWaitStandsEveryBudgetAroundItStill(t *testing.T) {
	t.Parallel()
	const d = 100 * time.Millisecond
	outer, cancelOuter := WithBudget(context.Background(), d)
	defer cancelOuter()
	inner, cancelInner := WithBudget(outer, d)
	defer cancelInner()
	release := waitingForPerson(inner)
	if _, ok := outer.Deadline(); ok {
		t.Fatal("the parent turn's clock runs while its subagent waits for a person")
	}
	if _, ok := inner.Deadline(); ok {
		t.Fatal("the subagent's clock runs while it waits for a person")
	}
	witness, wcancel := context.WithTimeout(context.Background(), 3*d)
	defer wcancel()
	select {
	case <-outer.Done():
		t.Fatalf("the parent turn ended while its subagent waited: %v", outer.Err())
	case <-witness.Done():
	}
	release()
	if _, ok := outer.Deadline(); !ok {
		t.Fatal("the parent turn's clock did not run on")
	}
	<-inner.Done()
	<-outer.Done()
	if !errors.Is(outer.Err(), context.DeadlineExceeded) || !errors.Is(inner.Err(), context.DeadlineExceeded) {
		t.Fatalf("ended with %v, %v", outer.Err(), inner.Err())
	}
}
