//go:build linux && cgo

package db

/*
#include <malloc.h>

// atrium_tune_malloc keeps freed C heap in the process instead of handing it
// back to the kernel after every statement (glibc only; elsewhere a no-op).
static void atrium_tune_malloc(void) {
#if defined(__GLIBC__) && defined(M_TRIM_THRESHOLD) && defined(M_TOP_PAD) && defined(M_MMAP_THRESHOLD)
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
	mallopt(M_TOP_PAD, 16 << 20);
	mallopt(M_MMAP_THRESHOLD, 4 << 20);
#endif
}
*/
import "C"

// SQLite allocates page-cache memory with malloc for every ephemeral table a
// statement builds (each `IN (SELECT value FROM json_each(?))`, each UNION
// of a recursive closure) and frees it when the statement ends. With glibc's
// defaults (trim above 128 KiB, mmap above a threshold that moves) the heap
// shrank with brk or madvise after nearly every write transaction and the
// next statement faulted the pages back in; in this VM each shrink also
// flushes the other core's TLB. A perf profile of 1,000 single-session
// deletes put 36 % of the process's time there (brk 13 %, madvise 12 %,
// page faults under pcache1FetchStage2 11 %). Keeping up to 64 MiB of free
// heap (the store's caches are larger than that anyway) removes it:
// docs/benchmarks.md, issue #15, "malloc".
func init() { C.atrium_tune_malloc() }
