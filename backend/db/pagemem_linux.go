//go:build linux && cgo

package db

/*
#include <stddef.h>
extern int atrium_page_memory(size_t size);
extern long long atrium_page_memory_in_use(void);
extern int atrium_page_memory_check(void);
*/
import "C"

import "fmt"

// SQLite's blocks the size of a cache page come from one region of address
// space the kernel may back with huge pages (pagemem.c): a wrapper in front
// of SQLite's allocator hands them out, everything else goes on to malloc.
//
// A page cache grows by one allocation per page until it holds its
// cache_size (about 480 pages of 4 KiB here); only then does it reuse its
// own pages. Each new page was memory the process never touched, and on
// this kind of machine every first touch of a 4 KiB page is a fault that
// costs ~17 µs: ~3 faults per transcript while a read connection's cache
// filled, each read ~85 µs instead of ~32, over a connection's first ~150
// transcripts (docs/benchmarks.md, issue #15, changes 42 and 46). In a
// region madvised MADV_HUGEPAGE a first touch maps 2 MiB, ~450 pages of
// cache, at once.
//
// Change 42 gave SQLite such a region through SQLITE_CONFIG_PAGECACHE and
// was taken out: SQLite threads its free list through every slot of that
// buffer when it starts, so all of it became resident in every process
// (+15 MB and +3 ms for a one-line command). Here a slot is handed out from
// the region's unused end only when asked for, so the region costs what is
// used, rounded up to 2 MiB; freed slots are kept for the next one.
//
// The region is address space only (mapped without reserving memory);
// pageMemSize covers the caches of several stores' connections. Past it,
// and with transparent huge pages off, blocks come from malloc or 4 KiB
// pages as before.
const pageMemSize = 256 << 20

// pageMemErr says why the wrapper is not in use (nil: it is).
var pageMemErr error

// pageMemInUse is how many of the region's slots are handed out and not
// freed.
func pageMemInUse() int64 { return int64(C.atrium_page_memory_in_use()) }

// pageMemCheck takes a block of the region through SQLite's allocator,
// reallocates it within its slot and out of the region, and frees it,
// checking its bytes (a test's; nil when all went as it should).
func pageMemCheck() error {
	if rc := C.atrium_page_memory_check(); rc != 0 {
		return fmt.Errorf("the page memory region failed its check at step %d", int(rc))
	}
	return nil
}

// SQLite takes a new allocator only before it starts, which the first
// connection or VFS registration does; this package's init runs before any.
func init() {
	if rc := C.atrium_page_memory(C.size_t(pageMemSize)); rc != 0 {
		pageMemErr = fmt.Errorf("SQLite's page memory region: code %d", int(rc))
	}
}
