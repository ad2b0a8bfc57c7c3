// Command storebench runs the shared session-store workload (bench/README.md)
// through Atrium's own services, the way the product runs them (stack.Open:
// the store, the hook bus, the session service), and prints one JSON line with
// the same keys as bench/peer_sessiondb.py and bench/rawsqlite, plus a few of
// its own (see README). `make bench-peer` runs it beside the Python store and
// the raw-SQLite floor.
//
//	go run -tags sqlite_fts5 ./cmd/storebench -n 10000 -m 20 -trash-days 0
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"atrium/backend/config"
	"atrium/backend/sessions"
	"atrium/backend/stack"
)

const (
	dayS        = 86400.0
	contentPool = 1000
	needle      = "needlexyz"
)

// spec is one session of the workload (bench/rawsqlite/workload.go).
type spec struct {
	ID, Source, Platform, Parent, Relation string
	StartedAt                              float64 // Unix seconds
	Ended                                  bool
	NMsg, Group, Slot                      int
}

// layout mirrors the shared workload: N sessions in groups of ten (a tree of
// five: r1 continues r0 by compression, r2 continues r1, r3 and r4 are
// delegates of r0; three cron sessions 100 days old and ended; two telegram
// sessions, the bulk-delete and bulk-archive targets) plus N/20 ended empty
// sessions. Atrium has no "telegram" or "tui" source: telegram sessions come
// through the gateway (platform telegram), tui ones are terminal sessions.
func layout(n, m int, now float64) []spec {
	out := make([]spec, 0, n+n/20)
	for i := 0; i < n; i++ {
		g, r := i/10, i%10
		s := spec{ID: fmt.Sprintf("s%06d", i), NMsg: m, Group: g, Slot: r, StartedAt: now - float64(n-i)}
		switch {
		case r < 5:
			s.Source = "cli"
			switch r {
			case 1:
				s.Parent, s.Relation = fmt.Sprintf("s%06d", g*10), sessions.RelationCompression
			case 2:
				s.Parent, s.Relation = fmt.Sprintf("s%06d", g*10+1), sessions.RelationCompression
			case 3, 4:
				s.Parent, s.Relation = fmt.Sprintf("s%06d", g*10), sessions.RelationDelegate
			}
		case r < 8:
			s.Source = "cron"
			s.StartedAt = now - 100*dayS - float64(n-i)
			s.Ended = true
		default:
			s.Source, s.Platform = "gateway", "telegram"
		}
		out = append(out, s)
	}
	for j := 0; j < n/20; j++ {
		out = append(out, spec{ID: fmt.Sprintf("e%06d", j), Source: "cli", StartedAt: now - 2*dayS - float64(j), Ended: true, Slot: -1})
	}
	return out
}

var words = strings.Fields("the quick brown fox jumps over lazy dog session agent tool call result memory " +
	"context window token model provider gateway desktop plugin hook delete archive prune compact summary " +
	"transcript message user assistant search index retention lineage parent child branch")

// contents is the deterministic pool of ~200-byte bodies (the same LCG as the
// other implementations); pool[7] holds the needle.
func contents() []string {
	pool := make([]string, contentPool)
	var x uint32 = 12345
	for i := range pool {
		var b strings.Builder
		fmt.Fprintf(&b, "msg%d:", i)
		if i == 7 {
			b.WriteString(" " + needle)
		}
		for b.Len() < 200 {
			x = x*1103515245 + 12345
			b.WriteString(" ")
			b.WriteString(words[(x>>16)%uint32(len(words))])
		}
		pool[i] = b.String()
	}
	return pool
}

func roleFor(j int) string {
	if j%2 == 0 {
		return "user"
	}
	return "assistant"
}

func slotIDs(specs []spec, slot int) []string {
	var out []string
	for _, s := range specs {
		if s.Slot == slot {
			out = append(out, s.ID)
		}
	}
	return out
}

// clock stamps transactions with the workload's times during the load, and
// with the real time (ms == 0) afterwards.
type clock struct{ ms atomic.Int64 }

func (c *clock) Now() time.Time {
	if ms := c.ms.Load(); ms != 0 {
		return time.UnixMilli(ms).UTC()
	}
	return time.Now().UTC()
}
func (c *clock) set(sec float64) { c.ms.Store(int64(sec * 1000)) }

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "storebench:", err)
		os.Exit(1)
	}
}

// meanUS times reps calls of f and returns the mean in microseconds.
func meanUS(reps int, f func(i int) error) float64 {
	t := time.Now()
	for i := 0; i < reps; i++ {
		must(f(i))
	}
	return float64(time.Since(t).Nanoseconds()) / 1e3 / float64(reps)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// cpuTime is the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func fileSize(p string) int64 {
	if fi, err := os.Stat(p); err == nil {
		return fi.Size()
	}
	return 0
}

// writePlans writes EXPLAIN QUERY PLAN of every statement the store's hot
// paths ran (db.Statements), as Markdown.
func writePlans(ctx context.Context, st *stack.Stack, path string, n, m int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Query plans of the store workload (N=%d x M=%d)\n\n", n, m)
	fmt.Fprintf(&b, "Every statement the workload ran through the store's hot paths, with EXPLAIN QUERY PLAN on the store it left\n")
	fmt.Fprintf(&b, "(`go run -tags sqlite_fts5 ./cmd/storebench -n %d -m %d -plans FILE`).\n\n", n, m)
	for _, q := range st.DB.Statements() {
		plan, err := st.DB.QueryPlan(ctx, q)
		fmt.Fprintf(&b, "```sql\n%s\n```\n\n", strings.Join(strings.Fields(q), " "))
		if err != nil {
			fmt.Fprintf(&b, "(no plan: %v)\n\n", err)
			continue
		}
		if len(plan) == 0 {
			plan = []string{"(no table searched: a plain INSERT, its triggers not shown)"}
		}
		fmt.Fprintf(&b, "```\n%s\n```\n\n", strings.Join(plan, "\n"))
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// checkpoint brings the WAL back into the database file (untimed), on the
// writer's connection, between its transactions.
func checkpoint(st *stack.Stack) {
	must(st.DB.Checkpoint(context.Background()))
}

func main() {
	n := flag.Int("n", 1000, "sessions with messages")
	m := flag.Int("m", 50, "messages per session")
	reads := flag.Int("reads", 200, "repetitions of each read")
	trees := flag.Int("trees", 20, "trees of five deleted (mean reported)")
	dir := flag.String("dir", "", "base folder for the temporary home (default the system's)")
	trashDays := flag.Int("trash-days", 0, "sessions.trash_days: 0 deletes at once (what the other stores do); > 0 moves user deletes, the retention prune and the empty sweep to the trash")
	sync := flag.String("sync", "normal", "storage.synchronous: normal (Atrium's default) or full")
	keep := flag.Bool("keep", false, "keep the home (printed as \"home\")")
	plans := flag.String("plans", "", "write here, in Markdown, EXPLAIN QUERY PLAN of every statement the workload ran through the store's hot paths, on the loaded store")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile here; each phase is labelled op=<key> (go tool pprof -tagfocus op=list_page_us)")
	flag.Parse()
	ctx := context.Background()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		must(err)
		must(pprof.StartCPUProfile(f))
		defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
	}
	// phase runs f under the pprof label op=key.
	phase := func(key string, f func()) { pprof.Do(ctx, pprof.Labels("op", key), func(context.Context) { f() }) }

	root, err := os.MkdirTemp(*dir, "storebench-")
	must(err)
	if !*keep {
		defer os.RemoveAll(root)
	}
	home, err := config.ResolveHome(root, "default")
	must(err)
	must(home.Ensure())
	must(os.WriteFile(home.ConfigPath(), fmt.Appendf(nil, "storage:\n  synchronous: %s\nsessions:\n  trash_days: %d\nmaintenance:\n  disabled: true\n", *sync, *trashDays), 0o644))
	clk := &clock{}
	st, err := stack.Open(ctx, home, stack.Options{Clock: clk.Now})
	must(err)
	svc := st.Sessions

	k := *n / 10
	now := float64(time.Now().UnixMilli()) / 1000
	specs := layout(*n, *m, now)
	pool := contents()
	res := map[string]any{"impl": "atrium", "n": *n, "m": *m, "k": k, "e": *n / 20, "insert_mode": "perop", "fts": true,
		"trash_days": *trashDays, "compact_ms": nil, "go": runtime.Version()}
	if *keep {
		res["home"] = home.Dir
	}
	var ver, jm string
	var syncv, av int
	r := st.DB.Read
	must(r.Raw(`SELECT sqlite_version()`).Scan(&ver).Error)
	must(st.DB.Write.Raw(`PRAGMA journal_mode`).Scan(&jm).Error)
	must(st.DB.Write.Raw(`PRAGMA synchronous`).Scan(&syncv).Error)
	must(st.DB.Write.Raw(`PRAGMA auto_vacuum`).Scan(&av).Error)
	res["sqlite_version"], res["journal_mode"], res["synchronous"], res["auto_vacuum"] = ver, jm, syncv, av

	// took runs f once under the pprof label op=key and returns its wall
	// time in milliseconds; mean runs f reps times and returns the mean in
	// microseconds.
	// Each also records <key>_cpu: the process's CPU time (every goroutine,
	// SQLite included) in the unit of its key, per op: on a shared machine it
	// moves much less with the load than the wall time does.
	took := func(key string, f func()) float64 {
		t0, c0 := time.Now(), cpuTime()
		phase(key, f)
		res[key+"_cpu"] = ms(cpuTime() - c0)
		return ms(time.Since(t0))
	}
	mean := func(key string, reps int, f func(i int) error) float64 {
		var us float64
		c0 := cpuTime()
		phase(key, func() { us = meanUS(reps, f) })
		res[key+"_cpu"] = float64((cpuTime() - c0).Nanoseconds()) / 1e3 / float64(reps)
		return us
	}

	// (1) insert: Create, then AppendMessage per message, each in its own
	// transaction (as a live agent writes), stamped with the workload's times.
	ins := took("insert_us_per_msg", func() {
		gm := 0
		for _, s := range specs {
			clk.set(s.StartedAt)
			_, err := svc.Create(ctx, sessions.CreateParams{ID: s.ID, Source: s.Source, Platform: s.Platform, ParentID: s.Parent, Relation: s.Relation})
			must(err)
			for j := 0; j < s.NMsg; j++ {
				clk.set(s.StartedAt + float64(j))
				_, err := svc.AppendMessage(ctx, s.ID, sessions.NewMessage{Role: roleFor(j), Content: pool[gm%contentPool]})
				must(err)
				gm++
			}
		}
	}) / 1000
	clk.ms.Store(0)
	nmsg := *n * *m
	res["insert_us_per_msg_cpu"] = res["insert_us_per_msg_cpu"].(float64) * 1000 / float64(nmsg)
	// The search index catches up in the background: how long until it has
	// (the appends returned before).
	catchUp := func() {
		for {
			more, err := svc.IndexPending(ctx)
			must(err)
			if !more {
				return
			}
		}
	}
	indexed := ins + took("index_drain_ms", catchUp)/1000
	// walBack copies every WAL frame into the file as the background
	// checkpointer does (a PASSIVE checkpoint; while that one runs, this one
	// answers busy and is asked again). Atrium checkpoints 200 ms after a
	// commit, off the committing call: without this, that checkpoint lands
	// in whichever phase comes next and is paid there.
	walBack := func() {
		deadline := time.Now().Add(10 * time.Second)
		for {
			var busy, frames, done int64
			must(st.DB.Write.Raw(`PRAGMA wal_checkpoint(PASSIVE)`).Row().Scan(&busy, &frames, &done))
			if (busy == 0 && done >= frames) || time.Now().After(deadline) {
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	// writePhase times f under key, then how long the search index takes to
	// catch up with what f removed (a delete's removals from the index are
	// applied in the background, in batches), then how long its WAL takes
	// to go back into the file: <key> is what the caller waited for,
	// <key>_indexed that plus the catch-up, <key>_at_rest that plus the
	// checkpoint (the Python store checkpoints inside its commits). Each
	// write phase thus pays for its own deferred work, not for an earlier
	// phase's. (The indexer applies removals once 500 are queued; fewer
	// stay queued.)
	writePhase := func(key string, f func()) {
		ms := took(key, f)
		base := strings.TrimSuffix(key, "_ms")
		catch := took(base+"_catch_up_ms", catchUp)
		back := took(base+"_checkpoint_ms", walBack)
		res[key], res[base+"_catch_up_ms"], res[base+"_indexed_ms"] = ms, catch, ms+catch
		res[base+"_checkpoint_ms"], res[base+"_at_rest_ms"] = back, ms+catch+back
	}
	res["insert_indexed_us_per_msg"] = indexed * 1e6 / float64(nmsg)
	res["insert_s"] = ins
	res["insert_msgs"] = nmsg
	res["insert_sessions"] = len(specs)
	res["insert_msgs_per_s"] = float64(nmsg) / ins
	res["insert_us_per_msg"] = ins * 1e6 / float64(nmsg)
	// Untimed: bring the WAL back into the file, so the size is the store's.
	checkpoint(st)
	res["db_bytes_after_insert"] = fileSize(home.StatePath())

	// End the cron and the empty sessions (prune and the sweep take only
	// ended ones), as the peer does: one call each.
	var toEnd []string
	for _, s := range specs {
		if s.Ended {
			toEnd = append(toEnd, s.ID)
		}
	}
	res["end_session_us"] = mean("end_session_us", len(toEnd), func(i int) error { _, _, err := svc.End(ctx, toEnd[i], "done"); return err })
	res["end_session_checkpoint_ms"] = took("end_session_checkpoint_ms", walBack)
	res["end_session_at_rest_us"] = res["end_session_us"].(float64) + res["end_session_checkpoint_ms"].(float64)*1000/float64(len(toEnd))

	// (4) list, count, transcript, search.
	res["list_page_us"] = mean("list_page_us", *reads, func(int) error { _, err := svc.List(ctx, sessions.Filter{Limit: 50}); return err })
	gw := sessions.Filter{Limit: 50, Rule: sessions.Rule{Sources: []string{"gateway"}}}
	res["list_source_us"] = mean("list_source_us", *reads, func(int) error { _, err := svc.List(ctx, gw); return err })
	res["count_us"] = mean("count_us", *reads, func(int) error { _, err := svc.Count(ctx, sessions.Filter{}); return err })
	res["get_messages_us"] = mean("get_messages_us", *reads, func(i int) error {
		id := specs[((i+1)*7919)%*n].ID
		msgs, err := svc.Messages(ctx, id, false)
		if err == nil && len(msgs) != *m {
			err = fmt.Errorf("transcript of %s: %d messages, want %d", id, len(msgs), *m)
		}
		return err
	})
	var hits int
	res["fts_search_us"] = mean("fts_search_us", *reads/4, func(int) error {
		h, err := svc.Search(ctx, needle, sessions.SearchOptions{Limit: 20})
		hits = len(h)
		return err
	})
	res["fts_hits"] = hits

	// (2) delete a tree of five: Delete of its root takes its compression
	// chain and its delegates (one call, one event per tree).
	var roots []string
	for _, s := range specs {
		if s.Slot == 0 && s.Group >= 2**trees && len(roots) < *trees {
			roots = append(roots, s.ID)
		}
	}
	if len(roots) == 0 {
		must(fmt.Errorf("-n %d holds no tree of five to delete: raise -n or lower -trees", *n))
	}
	deleted := 0
	res["delete_tree_ms"] = mean("delete_tree_ms", len(roots), func(i int) error {
		out, err := svc.Delete(ctx, []string{roots[i]}, nil)
		deleted += len(out.AffectedIDs)
		return err
	}) / 1000
	res["delete_tree_sessions"] = deleted / len(roots)
	res["delete_tree_catch_up_ms"] = took("delete_tree_catch_up_ms", catchUp)
	res["delete_tree_checkpoint_ms"] = took("delete_tree_checkpoint_ms", walBack)
	res["delete_tree_at_rest_ms"] = res["delete_tree_ms"].(float64) +
		(res["delete_tree_catch_up_ms"].(float64)+res["delete_tree_checkpoint_ms"].(float64))/float64(len(roots))
	res["delete_tree_ms_cpu"] = res["delete_tree_ms_cpu"].(float64) / 1000

	// Bulk archive of the K slot-9 sessions, then bulk delete of the K
	// slot-8 ones: one call (one transaction, one event) each.
	var out sessions.Result
	arch := slotIDs(specs, 9)
	writePhase("bulk_archive_ms", func() { out, err = svc.Archive(ctx, arch); must(err) })
	res["bulk_archive_count"] = len(out.AffectedIDs)
	del := slotIDs(specs, 8)
	writePhase("bulk_delete_ms", func() { out, err = svc.Delete(ctx, del, nil); must(err) })
	res["bulk_delete_count"] = len(out.AffectedIDs)

	// (5) retention prune (ended, last active over 90 days ago) and the
	// empty sweep.
	writePhase("prune_ms", func() { out, err = svc.Prune(ctx, 90, nil); must(err) })
	res["prune_count"] = len(out.AffectedIDs)
	writePhase("empty_sweep_ms", func() { out, err = svc.SweepEmpty(ctx, nil); must(err) })
	res["empty_sweep_count"] = len(out.AffectedIDs)
	var left int64
	must(r.Raw(`SELECT count(*) FROM sessions`).Scan(&left).Error)
	res["sessions_left"] = left

	// Atrium's own: the archived slot-9 sessions deleted one by one (K calls,
	// K events), then, with a trash, emptying it (the purge for good).
	writePhase("delete_each_ms", func() {
		for _, id := range arch {
			_, err := svc.Delete(ctx, []string{id}, nil)
			must(err)
		}
	})
	res["delete_each_count"] = len(arch)
	if *trashDays > 0 {
		writePhase("empty_trash_ms", func() { out, err = svc.EmptyTrash(ctx, 0, nil); must(err) })
		res["empty_trash_count"] = len(out.AffectedIDs)
	}

	if *plans != "" {
		must(writePlans(ctx, st, *plans, *n, *m))
	}

	// Space: what the deletes left, and what maintenance's vacuum gives back.
	must(st.Bus.Flush(ctx))
	checkpoint(st)
	res["db_bytes_end"] = fileSize(home.StatePath())
	// What a maintenance run does after deletes (backend/maintenance, same
	// bounds): merge the search index (which drops deleted entries), then
	// give free pages back (incremental vacuum).
	res["index_merge_ms"] = took("index_merge_ms", func() {
		n, err := svc.MergeIndex(ctx, 3*time.Second)
		must(err)
		res["index_merge_steps"] = n
	})
	checkpoint(st)
	res["db_bytes_after_merge"] = fileSize(home.StatePath())
	res["vacuum_ms"] = took("vacuum_ms", func() { _, err = st.DB.IncrementalVacuum(ctx, 1<<18); must(err) })
	res["vacuum_mode"] = "incremental_vacuum"
	checkpoint(st)
	res["db_bytes_after_vacuum"] = fileSize(home.StatePath())
	// A full VACUUM (atrium storage vacuum; it also rewrites half-empty
	// pages), for comparison.
	res["full_vacuum_ms"] = took("full_vacuum_ms", func() { must(st.DB.VacuumFull(context.Background())) })
	checkpoint(st)
	res["db_bytes_after_full_vacuum"] = fileSize(home.StatePath())

	must(st.Close(ctx))
	for k, v := range res {
		if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			must(fmt.Errorf("%s is %v: the workload is too small for it", k, f))
		}
	}
	raw, err := json.Marshal(res)
	must(err)
	fmt.Println(string(raw))
}
