package db

/*
typedef struct sqlite3 sqlite3;
extern int sqlite3_db_config(sqlite3*, int op, ...);
extern void sqlite3_interrupt(sqlite3*);

static void atrium_interrupt(void *db) { sqlite3_interrupt((sqlite3*)db); }

// atrium_qpsg sets SQLITE_DBCONFIG_ENABLE_QPSG (on: 1, off: 0, read only:
// -1) and returns the setting after the call, or -1 if SQLite refused it.
static int atrium_qpsg(void *db, int on) {
	int v = -1;
	if (sqlite3_db_config((sqlite3*)db, 1007, on, &v) != 0) return -1;
	return v;
}
*/
import "C"

import (
	"errors"
	"reflect"
	"strconv"
	"unsafe"

	"github.com/mattn/go-sqlite3"
)

// stablePlans turns on SQLite's query planner stability guarantee (QPSG)
// for c: its plans no longer depend on bound values, so no statement is
// prepared again because a value changed.
//
// SQLite's planner reads some bound values while it plans (a bound LIMIT,
// an equality it weighs for the plans that do not use it, FTS5's own
// `segid=?`) and marks the statement to be prepared again when they change.
// The driver clears a statement's bindings before every run
// (sqlite3_clear_bindings), which expires such a statement outright: each
// run parsed and planned it anew and a cached statement saved nothing. A
// list page spent a fifth of its time there, a transcript read a quarter,
// and a search prepared FTS5's segment lookup again up to 8 times.
//
// SQLite offers the guarantee only through sqlite3_db_config, which the
// driver does not wrap: the connection's handle is read from the driver's
// struct. TestConnectionsKeepTheirPlans checks that every connection has
// it, so a driver that moves the handle fails the tests rather than slowing
// the store down unnoticed.
func stablePlans(c *sqlite3.SQLiteConn) error {
	h := handle(c)
	if h == nil {
		return errors.New("the driver's connection has no SQLite handle where Atrium looks for it")
	}
	if C.atrium_qpsg(h, 1) != 1 {
		return errors.New("SQLite refused the query planner stability guarantee")
	}
	return nil
}

// plansStable reports whether c's connection has the guarantee (tests).
func plansStable(c *sqlite3.SQLiteConn) bool {
	h := handle(c)
	return h != nil && C.atrium_qpsg(h, -1) == 1
}

// interrupt makes the statement running on the connection of handle h
// stop with SQLITE_INTERRUPT (SQLite allows the call from any thread).
func interrupt(h unsafe.Pointer) { C.atrium_interrupt(h) }

// handle is c's sqlite3 pointer, read from the driver's struct (nil if the
// driver keeps it elsewhere).
func handle(c *sqlite3.SQLiteConn) unsafe.Pointer {
	h := reflect.ValueOf(c).Elem().FieldByName("db")
	if !h.IsValid() || h.Kind() != reflect.Pointer || h.IsNil() {
		return nil
	}
	return h.UnsafePointer()
}

// Limit is a LIMIT clause with n written into the SQL text: the planner
// then knows the limit (with the guarantee on, a bound one is only read at
// run time). n is an int formatted here, never text from outside; a
// caller's few limits (a page of 50, a batch of 1,000) are a few texts.
func Limit(n int) string { return " LIMIT " + strconv.Itoa(n) }
