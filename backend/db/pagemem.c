//go:build linux && cgo

// SQLite's allocator, wrapped: blocks the size of a cache page come from one
// region the kernel may back with huge pages; everything else goes to the
// allocator SQLite had (pagemem_linux.go says why).

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

typedef struct pm_methods {
	void *(*xMalloc)(int);
	void (*xFree)(void *);
	void *(*xRealloc)(void *, int);
	int (*xSize)(void *);
	int (*xRoundup)(int);
	int (*xInit)(void *);
	void (*xShutdown)(void *);
	void *pAppData;
} pm_methods; // sqlite3_mem_methods

extern int sqlite3_config(int, ...);

#define PM_CONFIG_MALLOC 4    // SQLITE_CONFIG_MALLOC
#define PM_CONFIG_GETMALLOC 5 // SQLITE_CONFIG_GETMALLOC
#define PM_HUGE ((size_t)2 << 20)

// A slot holds a page of 4 KiB with pcache1's headers (4,096 + ~300 bytes
// for the default build); requests between PM_MIN and PM_SLOT bytes take
// one.
#define PM_MIN 4097
#define PM_SLOT 4608

static pm_methods orig;
static char *base, *limit; // the region; [base, bump) has been handed out
static char *bump;
static void *freeList; // freed slots, the next one in each slot's first word
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long long inUse; // slots handed out and not freed

static int inRegion(void *p) { return (char *)p >= base && (char *)p < limit; }

static void *pmMalloc(int n) {
	if (n >= PM_MIN && n <= PM_SLOT) {
		void *p = NULL;
		pthread_mutex_lock(&mu);
		if (freeList) {
			p = freeList;
			freeList = *(void **)p;
		} else if (bump + PM_SLOT <= limit) {
			p = bump;
			bump += PM_SLOT;
		}
		if (p) inUse++;
		pthread_mutex_unlock(&mu);
		if (p) return p;
	}
	return orig.xMalloc(n);
}

static void pmFree(void *p) {
	if (!inRegion(p)) {
		orig.xFree(p);
		return;
	}
	pthread_mutex_lock(&mu);
	*(void **)p = freeList;
	freeList = p;
	inUse--;
	pthread_mutex_unlock(&mu);
}

static int pmSize(void *p) { return inRegion(p) ? PM_SLOT : orig.xSize(p); }

static void *pmRealloc(void *p, int n) {
	if (!inRegion(p)) return orig.xRealloc(p, n);
	if (n <= PM_SLOT) return p;
	void *q = orig.xMalloc(n);
	if (!q) return NULL; // p stays valid, as realloc leaves it
	memcpy(q, p, PM_SLOT);
	pmFree(p);
	return q;
}

static int pmRoundup(int n) {
	if (n >= PM_MIN && n <= PM_SLOT) return n;
	return orig.xRoundup(n);
}

static int pmInit(void *app) { return orig.xInit(orig.pAppData); }
static void pmShutdown(void *app) { orig.xShutdown(orig.pAppData); }

// atrium_page_memory maps the region (size bytes of address space, no
// memory reserved) and puts the wrapper in front of SQLite's allocator. It
// returns 0, -1 when the region could not be mapped, or SQLite's error when
// it refused (after it started). On a failure SQLite keeps its allocator.
int atrium_page_memory(size_t size) {
	int rc = sqlite3_config(PM_CONFIG_GETMALLOC, &orig);
	if (rc != 0) return rc;
	size = (size + PM_HUGE - 1) & ~(PM_HUGE - 1);
	// A huge page more, to start on a huge page's boundary.
	char *raw = mmap(NULL, size + PM_HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED) return -1;
	char *p = (char *)(((uintptr_t)raw + PM_HUGE - 1) & ~(uintptr_t)(PM_HUGE - 1));
	if (p > raw) munmap(raw, p - raw);
	size_t tail = (raw + size + PM_HUGE) - (p + size);
	if (tail > 0) munmap(p + size, tail);
	madvise(p, size, MADV_HUGEPAGE); // a hint: with THP off it changes nothing
	base = bump = p;
	limit = p + size;
	static pm_methods wrap = {pmMalloc, pmFree, pmRealloc, pmSize, pmRoundup, pmInit, pmShutdown, NULL};
	rc = sqlite3_config(PM_CONFIG_MALLOC, &wrap);
	if (rc != 0) {
		munmap(p, size);
		base = bump = limit = NULL;
	}
	return rc;
}

// atrium_page_memory_in_use reports how many of the region's slots are
// handed out and not freed.
long long atrium_page_memory_in_use(void) {
	pthread_mutex_lock(&mu);
	long long n = inUse;
	pthread_mutex_unlock(&mu);
	return n;
}

extern void *sqlite3_malloc(int);
extern void *sqlite3_realloc(void *, int);
extern void sqlite3_free(void *);

// atrium_page_memory_check takes a block of the region through SQLite's
// public allocator, shrinks it, grows it past the slot (out of the region)
// and frees it, checking its bytes at each step, then takes a slot again. It returns the step that
// failed, or 0.
int atrium_page_memory_check(void) {
	unsigned char *p = sqlite3_malloc(4400);
	if (!p) return 1;
	if (!inRegion(p)) {
		sqlite3_free(p);
		return 2;
	}
	for (int i = 0; i < 4400; i++) p[i] = (unsigned char)(i * 7);
	unsigned char *q = sqlite3_realloc(p, 4200); // stays in its slot
	if (q != p) return 3;
	q = sqlite3_realloc(p, 9000);
	if (!q) return 4;
	if (inRegion(q)) return 5;
	for (int i = 0; i < 4200; i++)
		if (q[i] != (unsigned char)(i * 7)) return 6;
	sqlite3_free(q);
	unsigned char *r = sqlite3_malloc(4500); // p's slot, or another of the region's
	if (!inRegion(r)) {
		sqlite3_free(r);
		return 7;
	}
	sqlite3_free(r);
	return 0;
}
