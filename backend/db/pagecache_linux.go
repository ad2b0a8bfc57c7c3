//go:build linux && cgo

package db

/*
#include <stdint.h>
#include <sys/mman.h>

extern int sqlite3_config(int, ...);
extern int sqlite3_status64(int, long long *, long long *, int);

// atrium_page_cache_used is how many of the region's slots are in use (SQLITE_STATUS_PAGECACHE_USED).
static long long atrium_page_cache_used(void) {
	long long cur = 0, hi = 0;
	if (sqlite3_status64(1, &cur, &hi, 0) != 0) return -1;
	return cur;
}

#define ATRIUM_CONFIG_PAGECACHE    7  // SQLITE_CONFIG_PAGECACHE
#define ATRIUM_CONFIG_PCACHE_HDRSZ 24 // SQLITE_CONFIG_PCACHE_HDRSZ
#define ATRIUM_HUGE ((size_t)2 << 20)

// atrium_page_cache gives SQLite's page caches n slots of pageSize bytes
// (plus SQLite's header) in one region the kernel may back with huge pages.
// It returns 0, or -1 when the region could not be mapped, or SQLite's
// error when it refused the configuration (after SQLite started). On a
// failure nothing is kept: the caches allocate with malloc, as before.
static int atrium_page_cache(int pageSize, int n) {
	int hdr = 0;
	int rc = sqlite3_config(ATRIUM_CONFIG_PCACHE_HDRSZ, &hdr);
	if (rc != 0) return rc;
	int sz = (pageSize + hdr + 7) & ~7;
	size_t want = (size_t)sz * (size_t)n;
	size_t len = (want + ATRIUM_HUGE - 1) & ~(ATRIUM_HUGE - 1);
	// Map a huge page more, to start on a huge page's boundary.
	char *raw = mmap(NULL, len + ATRIUM_HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED) return -1;
	char *p = (char *)(((uintptr_t)raw + ATRIUM_HUGE - 1) & ~(uintptr_t)(ATRIUM_HUGE - 1));
	if (p > raw) munmap(raw, p - raw);
	size_t tail = (raw + len + ATRIUM_HUGE) - (p + len);
	if (tail > 0) munmap(p + len, tail);
	madvise(p, len, MADV_HUGEPAGE); // a hint: THP off or "never", it changes nothing
	rc = sqlite3_config(ATRIUM_CONFIG_PAGECACHE, (void *)p, sz, n);
	if (rc != 0) munmap(p, len);
	return rc;
}
*/
import "C"

import "fmt"

// SQLite's page caches live in one region the kernel may back with huge
// pages (transparent huge pages, which Linux grants on request by default).
//
// A page cache grows by one malloc per page until it holds its cache_size
// (about 480 pages of 4 KiB here); only then does it reuse its own pages.
// Each new page is memory the process never touched, and on this kind of
// machine every first touch of a 4 KiB page is a fault that costs ~17 µs
// (measured: ~3 faults per transcript read while a read connection's cache
// filled, each read 85 µs instead of 32). A read connection's cache fills
// over its first ~150 transcripts, so every process paid that on its first
// reads, and the workload of issue #15 (200 transcripts after the writes)
// measured mostly that. In one region of huge pages, a first touch maps
// 2 MiB, about 450 pages of cache, at once.
//
// The region is address space only until used: it is mapped without
// reserving memory, and a huge page becomes resident when a cache first
// puts a page in it. Its slots are shared by every connection of the
// process: pageCacheSlots covers the eight connections of an open store
// (the writer and its spare, four readers, the checkpointer, a tool's)
// at SQLite's default cache_size; past that, and for pages larger than 4
// KiB, SQLite falls back to malloc as before.
const (
	pageCacheSlots    = 4096
	pageCachePageSize = 4096
)

// pageCacheErr says why the region is not in use (nil: it is).
var pageCacheErr error

// pageCacheUsed is how many of the region's slots hold pages now.
func pageCacheUsed() int64 { return int64(C.atrium_page_cache_used()) }

func init() {
	if rc := C.atrium_page_cache(pageCachePageSize, pageCacheSlots); rc != 0 {
		pageCacheErr = fmt.Errorf("SQLite's page cache region: code %d", int(rc))
	}
}
