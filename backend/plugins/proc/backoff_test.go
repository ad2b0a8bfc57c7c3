package proc

import (
	"testing"
	"time"
)

func TestBackoffNext(t *testing.T) {
	ms := time.Millisecond
	b := backoff{Min: 100 * ms, Max: 5 * time.Second, Stable: 30 * time.Second}
	cases := []struct {
		name           string
		cur, uptime    time.Duration
		delay, follows time.Duration
	}{
		{"first crash", 100 * ms, time.Second, 100 * ms, 200 * ms},
		{"doubles", 200 * ms, time.Second, 200 * ms, 400 * ms},
		{"a failed start doubles too", 400 * ms, 0, 400 * ms, 800 * ms},
		{"capped at max", 4 * time.Second, 0, 4 * time.Second, 5 * time.Second},
		{"stays at max", 5 * time.Second, time.Second, 5 * time.Second, 5 * time.Second},
		{"a stable run starts over", 5 * time.Second, 31 * time.Second, 100 * ms, 200 * ms},
		{"exactly stable is not yet stable", 800 * ms, 30 * time.Second, 800 * ms, 1600 * ms},
		{"below min is raised", 0, 0, 100 * ms, 200 * ms},
		{"above max is lowered", time.Minute, 0, 5 * time.Second, 5 * time.Second},
	}
	for _, c := range cases {
		d, f := b.next(c.cur, c.uptime)
		if d != c.delay || f != c.follows {
			t.Errorf("%s: next(%s, %s) = %s, %s; want %s, %s", c.name, c.cur, c.uptime, d, f, c.delay, c.follows)
		}
	}
	// A sequence of crashes of a short-lived child: 100, 200, 400, ... 5s.
	cur, got := b.Min, []time.Duration{}
	for range 8 {
		var d time.Duration
		d, cur = b.next(cur, time.Second)
		got = append(got, d)
	}
	want := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 5 * time.Second, 5 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("crash sequence = %v, want %v", got, want)
		}
	}
}
