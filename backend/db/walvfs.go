package db

/*
extern int atrium_wal_vfs_register(const char *name);
extern void atrium_wal_vfs_stats(long long *commits, long long *writes, long long *atLock);
*/
import "C"

import (
	"fmt"
	"sync"
)

// The writer's connections open the store through a VFS of Atrium's own
// (walvfs.c) over SQLite's default one, which writes a transaction's WAL
// frames with one system call.
//
// SQLite appends each page of a commit to the WAL in two writes, the
// frame's 24-byte header and then the page. A single-session delete is ~15
// pages: 30 pwrite calls, ~56 µs on this kind of machine, where one pwrite
// of the same 62 KB takes ~6 µs (a C loop, same file). Every write path
// paid it: the append, the end, each delete.
//
// The VFS keeps a connection's WAL writes in memory while they are
// contiguous and writes them at once when the transaction's commit frame
// (the one whose header carries the database size) is complete: the commit
// gets the write's error, a full disk included, as before. Frames become
// visible to other connections only when SQLite then publishes the new
// wal-index header, by which time they are in the file. Everything else
// writes the pending bytes first: a read or any other call on the WAL, a
// write that does not continue them, every wal-index lock call of the
// connection's database file. Frames a transaction wrote and then rolled
// back are written before its write lock is released, as SQLite would have
// written them, or dropped if that write fails: they can never land later,
// over frames another writer has committed.
const walVFSName = "atrium-wal"

var (
	walVFSOnce sync.Once
	walVFSErr  error
)

// walVFS registers the VFS once and returns the DSN parameter that selects
// it ("" when it could not be registered: the connections use SQLite's
// default VFS, as before).
func walVFS() string {
	walVFSOnce.Do(func() {
		if rc := C.atrium_wal_vfs_register(C.CString(walVFSName)); rc != 0 {
			walVFSErr = fmt.Errorf("register the WAL VFS: SQLite code %d", int(rc))
		}
	})
	if walVFSErr != nil {
		return ""
	}
	return walVFSName
}

// walVFSStats reports, for the process, the commits the VFS wrote at once,
// the writes that carried pending frames, and the wal-index lock calls that
// found frames pending (a rolled-back transaction's).
func walVFSStats() (commits, writes, atLock int64) {
	var c, w, l C.longlong
	C.atrium_wal_vfs_stats(&c, &w, &l)
	return int64(c), int64(w), int64(l)
}
