package db

import "strconv"

// Statements SQLite would prepare again at every run.
//
// SQLite's planner reads some bound values while it plans, and marks the
// statement to be prepared again when they change. The driver clears a
// statement's bindings before every run (sqlite3_clear_bindings), which
// expires such a statement outright: each run parses and plans it anew, and
// a cached statement saves nothing (a list page spent a fifth of its time
// there). Two shapes do it in Atrium's queries:
//
//   - a bound LIMIT or OFFSET (`LIMIT ?`): write it with Limit;
//   - an equality with a bound value on a column no unique index covers
//     (`session_id = ?`), which the planner weighs for the plans that do
//     not use it: write `session_id = +?`. The unary plus hides the value
//     from that estimate only; the plan and the comparison's affinity are
//     the same.
//
// storebench's plans test refuses a bound LIMIT on the store's hot paths.
// A statement that still does it shows under a probe on sqlite3Reprepare
// (docs/benchmarks.md, change 30, says how).

// Limit is a LIMIT clause with n written into the SQL text. n is an int
// formatted here, never text from outside; a caller's few limits (a page
// of 50, a batch of 1,000) are a few texts.
func Limit(n int) string { return " LIMIT " + strconv.Itoa(n) }
