// Atrium's VFS over SQLite's default one: it writes a transaction's WAL
// frames with one system call instead of two per page. See walvfs.go for
// why and for the rules that keep it safe; this file only follows them.
//
// The declarations below are SQLite's public VFS interface (sqlite3_vfs
// version 3, sqlite3_io_methods version 3), whose layout SQLite keeps
// stable; the package links against the SQLite the driver compiles.

#include <stdlib.h>
#include <string.h>
#include <stdint.h>

typedef long long atrium_i64;

typedef struct sqlite3_file sqlite3_file;
typedef struct sqlite3_io_methods sqlite3_io_methods;
typedef struct sqlite3_vfs sqlite3_vfs;
typedef void (*atrium_syscall_ptr)(void);

struct sqlite3_file {
	const sqlite3_io_methods *pMethods;
};

struct sqlite3_io_methods {
	int iVersion;
	int (*xClose)(sqlite3_file *);
	int (*xRead)(sqlite3_file *, void *, int, atrium_i64);
	int (*xWrite)(sqlite3_file *, const void *, int, atrium_i64);
	int (*xTruncate)(sqlite3_file *, atrium_i64);
	int (*xSync)(sqlite3_file *, int);
	int (*xFileSize)(sqlite3_file *, atrium_i64 *);
	int (*xLock)(sqlite3_file *, int);
	int (*xUnlock)(sqlite3_file *, int);
	int (*xCheckReservedLock)(sqlite3_file *, int *);
	int (*xFileControl)(sqlite3_file *, int, void *);
	int (*xSectorSize)(sqlite3_file *);
	int (*xDeviceCharacteristics)(sqlite3_file *);
	int (*xShmMap)(sqlite3_file *, int, int, int, void volatile **);
	int (*xShmLock)(sqlite3_file *, int, int, int);
	void (*xShmBarrier)(sqlite3_file *);
	int (*xShmUnmap)(sqlite3_file *, int);
	int (*xFetch)(sqlite3_file *, atrium_i64, int, void **);
	int (*xUnfetch)(sqlite3_file *, atrium_i64, void *);
};

struct sqlite3_vfs {
	int iVersion;
	int szOsFile;
	int mxPathname;
	sqlite3_vfs *pNext;
	const char *zName;
	void *pAppData;
	int (*xOpen)(sqlite3_vfs *, const char *, sqlite3_file *, int, int *);
	int (*xDelete)(sqlite3_vfs *, const char *, int);
	int (*xAccess)(sqlite3_vfs *, const char *, int, int *);
	int (*xFullPathname)(sqlite3_vfs *, const char *, int, char *);
	void *(*xDlOpen)(sqlite3_vfs *, const char *);
	void (*xDlError)(sqlite3_vfs *, int, char *);
	void (*(*xDlSym)(sqlite3_vfs *, void *, const char *))(void);
	void (*xDlClose)(sqlite3_vfs *, void *);
	int (*xRandomness)(sqlite3_vfs *, int, char *);
	int (*xSleep)(sqlite3_vfs *, int);
	int (*xCurrentTime)(sqlite3_vfs *, double *);
	int (*xGetLastError)(sqlite3_vfs *, int, char *);
	int (*xCurrentTimeInt64)(sqlite3_vfs *, atrium_i64 *);
	int (*xSetSystemCall)(sqlite3_vfs *, const char *, atrium_syscall_ptr);
	atrium_syscall_ptr (*xGetSystemCall)(sqlite3_vfs *, const char *);
	const char *(*xNextSystemCall)(sqlite3_vfs *, const char *);
};

extern sqlite3_vfs *sqlite3_vfs_find(const char *);
extern int sqlite3_vfs_register(sqlite3_vfs *, int);
extern sqlite3_file *sqlite3_database_file_object(const char *);

#define A_OK 0
#define A_NOMEM 7
#define A_ERROR 1
#define A_OPEN_WAL 0x00080000
#define A_SHM_UNLOCK 1
#define A_WAL_WRITE_LOCK 0 // the wal-index lock a writer holds (wal.c)
#define A_FRAME_HDR 24     // a WAL frame's header (wal.c)
#define A_MAX_BUF (1 << 20)
// The unix VFS writes at most 128 KiB - 1 bytes a call (it masks the
// length: SQLite itself never writes more than a page at once).
#define A_MAX_WRITE (120 * 1024)
#define A_FILE_SZ ((int)((sizeof(AFile) + 7) & ~(size_t)7))

typedef struct AFile AFile;
struct AFile {
	sqlite3_file base;
	sqlite3_file *real; // the default VFS's file, right after this struct
	int isWal;
	AFile *wal; // a database file: its connection's WAL file, while open
	AFile *db;  // a WAL file: its connection's database file
	// A WAL file's pending frames: len bytes from off, contiguous.
	char *buf;
	int len, cap;
	atrium_i64 off;
	// Where the page of the commit frame whose header is pending starts
	// (-1: none); direct: write through until the next wal-index lock call.
	atrium_i64 commitAt;
	int direct;
};

static sqlite3_vfs *realVfs;
static sqlite3_vfs atriumVfs;
static sqlite3_io_methods methods[4]; // by the real file's iVersion

static volatile atrium_i64 statCommits, statWrites, statAtLock;

static int isOurs(sqlite3_file *f) {
	return f && f->pMethods && f->pMethods >= &methods[0] && f->pMethods <= &methods[3];
}

// flush writes the pending frames. On an error they stay pending (the
// transaction still holds the write lock and fails); drop discards them.
static int flush(AFile *p) {
	int done = 0;
	while (done < p->len) {
		int n = p->len - done;
		if (n > A_MAX_WRITE) n = A_MAX_WRITE;
		int rc = p->real->pMethods->xWrite(p->real, p->buf + done, n, p->off + done);
		if (rc != A_OK) {
			// Keep what is left pending, from where it starts.
			memmove(p->buf, p->buf + done, p->len - done);
			p->len -= done;
			p->off += done;
			return rc;
		}
		done += n;
		__atomic_add_fetch(&statWrites, 1, __ATOMIC_RELAXED);
	}
	p->len = 0;
	return A_OK;
}

static void drop(AFile *p) { p->len = 0; p->commitAt = -1; }

// beforeShmLock runs before every wal-index lock call of a database
// file. The WAL's pending bytes may only reach the file while this
// connection holds the write lock: write them now (normally there are none:
// a commit writes its frames at once), and when the call gives up the write
// lock, forget what could not be written, so that it can never land on
// frames another writer commits later.
static int beforeShmLock(AFile *db, int offset, int n, int flags) {
	AFile *w = db->wal;
	if (!w) return A_OK;
	if (w->len > 0) __atomic_add_fetch(&statAtLock, 1, __ATOMIC_RELAXED);
	int rc = flush(w);
	w->direct = 0;
	int releasesWrite = (flags & A_SHM_UNLOCK) && offset <= A_WAL_WRITE_LOCK && offset + n > A_WAL_WRITE_LOCK;
	if (releasesWrite && rc != A_OK) drop(w);
	if (releasesWrite) rc = A_OK;
	return rc;
}

static AFile *af(sqlite3_file *f) { return (AFile *)f; }
#define REAL(f) (af(f)->real)
#define RM(f) (af(f)->real->pMethods)

static int xClose(sqlite3_file *f) {
	AFile *p = af(f);
	if (p->isWal) {
		flush(p);
		if (p->db) p->db->wal = NULL;
	} else if (p->wal) {
		p->wal->db = NULL;
	}
	int rc = RM(f)->xClose(REAL(f));
	free(p->buf);
	p->buf = NULL;
	p->len = p->cap = 0;
	return rc;
}

static int xRead(sqlite3_file *f, void *b, int n, atrium_i64 off) {
	if (af(f)->isWal) {
		int rc = flush(af(f));
		if (rc) return rc;
	}
	return RM(f)->xRead(REAL(f), b, n, off);
}

static int grow(AFile *p, int need) {
	if (need <= p->cap) return A_OK;
	int c = p->cap ? p->cap : 64 * 1024;
	while (c < need) c *= 2;
	char *nb = realloc(p->buf, c);
	if (!nb) return A_NOMEM;
	p->buf = nb;
	p->cap = c;
	return A_OK;
}

static int xWrite(sqlite3_file *f, const void *b, int n, atrium_i64 off) {
	AFile *p = af(f);
	if (!p->isWal || p->direct || n > A_MAX_BUF) {
		int rc = flush(p);
		if (rc) return rc;
		return RM(f)->xWrite(REAL(f), b, n, off);
	}
	if (p->len > 0 && (off != p->off + p->len || p->len + n > A_MAX_BUF)) {
		int rc = flush(p);
		if (rc) return rc;
	}
	if (grow(p, p->len + n) != A_OK) {
		int rc = flush(p);
		if (rc) return rc;
		if (off == p->commitAt) {
			p->commitAt = -1;
			p->direct = 1;
		}
		return RM(f)->xWrite(REAL(f), b, n, off);
	}
	if (p->len == 0) p->off = off;
	memcpy(p->buf + p->len, b, n);
	p->len += n;
	if (n == A_FRAME_HDR) {
		// A frame's header: bytes 4-7 are the database size after a commit,
		// zero in every frame but a transaction's last.
		const unsigned char *h = b;
		uint32_t commit = ((uint32_t)h[4] << 24) | ((uint32_t)h[5] << 16) | ((uint32_t)h[6] << 8) | h[7];
		p->commitAt = commit ? off + A_FRAME_HDR : -1;
		return A_OK;
	}
	if (off == p->commitAt) {
		// The commit frame's page: the transaction's frames go out now, with
		// the error (a full disk) reported to the commit. What SQLite writes
		// after it before publishing the commit (checksums rewritten, a sync's
		// padding) goes straight through.
		p->commitAt = -1;
		p->direct = 1;
		__atomic_add_fetch(&statCommits, 1, __ATOMIC_RELAXED);
		return flush(p);
	}
	return A_OK;
}

static int xTruncate(sqlite3_file *f, atrium_i64 size) {
	int rc = flush(af(f));
	if (rc) return rc;
	return RM(f)->xTruncate(REAL(f), size);
}

static int xSync(sqlite3_file *f, int flags) {
	int rc = flush(af(f));
	if (rc) return rc;
	return RM(f)->xSync(REAL(f), flags);
}

static int xFileSize(sqlite3_file *f, atrium_i64 *size) {
	int rc = flush(af(f));
	if (rc) return rc;
	return RM(f)->xFileSize(REAL(f), size);
}

static int xLock(sqlite3_file *f, int l) { return RM(f)->xLock(REAL(f), l); }
static int xUnlock(sqlite3_file *f, int l) { return RM(f)->xUnlock(REAL(f), l); }
static int xCheckReservedLock(sqlite3_file *f, int *out) { return RM(f)->xCheckReservedLock(REAL(f), out); }

static int xFileControl(sqlite3_file *f, int op, void *arg) {
	int rc = flush(af(f));
	if (rc) return rc;
	return RM(f)->xFileControl(REAL(f), op, arg);
}

static int xSectorSize(sqlite3_file *f) { return RM(f)->xSectorSize(REAL(f)); }
static int xDeviceCharacteristics(sqlite3_file *f) { return RM(f)->xDeviceCharacteristics(REAL(f)); }

static int xShmMap(sqlite3_file *f, int pg, int sz, int extend, void volatile **pp) {
	if (af(f)->wal) flush(af(f)->wal);
	return RM(f)->xShmMap(REAL(f), pg, sz, extend, pp);
}

static int xShmLock(sqlite3_file *f, int offset, int n, int flags) {
	int rc = beforeShmLock(af(f), offset, n, flags);
	if (rc) return rc;
	return RM(f)->xShmLock(REAL(f), offset, n, flags);
}

static void xShmBarrier(sqlite3_file *f) {
	if (af(f)->wal) flush(af(f)->wal);
	RM(f)->xShmBarrier(REAL(f));
}

static int xShmUnmap(sqlite3_file *f, int del) {
	if (af(f)->wal) flush(af(f)->wal);
	return RM(f)->xShmUnmap(REAL(f), del);
}

static int xFetch(sqlite3_file *f, atrium_i64 off, int n, void **pp) { return RM(f)->xFetch(REAL(f), off, n, pp); }
static int xUnfetch(sqlite3_file *f, atrium_i64 off, void *pp) { return RM(f)->xUnfetch(REAL(f), off, pp); }

static int vOpen(sqlite3_vfs *v, const char *name, sqlite3_file *f, int flags, int *outFlags) {
	AFile *p = af(f);
	memset(p, 0, sizeof(*p));
	p->real = (sqlite3_file *)((char *)p + A_FILE_SZ);
	p->commitAt = -1;
	int rc = realVfs->xOpen(realVfs, name, p->real, flags, outFlags);
	if (!p->real->pMethods) {
		p->base.pMethods = NULL;
		return rc;
	}
	int ver = p->real->pMethods->iVersion;
	if (ver < 1) ver = 1;
	if (ver > 3) ver = 3;
	p->base.pMethods = &methods[ver];
	if (rc == A_OK && (flags & A_OPEN_WAL) && name) {
		p->isWal = 1;
		sqlite3_file *db = sqlite3_database_file_object(name);
		if (isOurs(db) && !af(db)->isWal) {
			p->db = af(db);
			af(db)->wal = p;
		}
	}
	return rc;
}

static int vDelete(sqlite3_vfs *v, const char *z, int s) { return realVfs->xDelete(realVfs, z, s); }
static int vAccess(sqlite3_vfs *v, const char *z, int fl, int *o) { return realVfs->xAccess(realVfs, z, fl, o); }
static int vFullPathname(sqlite3_vfs *v, const char *z, int n, char *o) { return realVfs->xFullPathname(realVfs, z, n, o); }
static void *vDlOpen(sqlite3_vfs *v, const char *z) { return realVfs->xDlOpen(realVfs, z); }
static void vDlError(sqlite3_vfs *v, int n, char *z) { realVfs->xDlError(realVfs, n, z); }
static void (*vDlSym(sqlite3_vfs *v, void *h, const char *z))(void) { return realVfs->xDlSym(realVfs, h, z); }
static void vDlClose(sqlite3_vfs *v, void *h) { realVfs->xDlClose(realVfs, h); }
static int vRandomness(sqlite3_vfs *v, int n, char *z) { return realVfs->xRandomness(realVfs, n, z); }
static int vSleep(sqlite3_vfs *v, int us) { return realVfs->xSleep(realVfs, us); }
static int vCurrentTime(sqlite3_vfs *v, double *t) { return realVfs->xCurrentTime(realVfs, t); }
static int vGetLastError(sqlite3_vfs *v, int n, char *z) { return realVfs->xGetLastError(realVfs, n, z); }
static int vCurrentTimeInt64(sqlite3_vfs *v, atrium_i64 *t) { return realVfs->xCurrentTimeInt64(realVfs, t); }

// atrium_wal_vfs_register registers the VFS under name over the default
// one, once; it returns 0 or an SQLite error code.
int atrium_wal_vfs_register(const char *name) {
	if (realVfs) return A_OK;
	sqlite3_vfs *r = sqlite3_vfs_find(NULL);
	if (!r) return A_ERROR;
	if (r->iVersion < 2 || !r->xCurrentTimeInt64) return A_ERROR;
	for (int v = 1; v <= 3; v++) {
		sqlite3_io_methods *m = &methods[v];
		m->iVersion = v;
		m->xClose = xClose;
		m->xRead = xRead;
		m->xWrite = xWrite;
		m->xTruncate = xTruncate;
		m->xSync = xSync;
		m->xFileSize = xFileSize;
		m->xLock = xLock;
		m->xUnlock = xUnlock;
		m->xCheckReservedLock = xCheckReservedLock;
		m->xFileControl = xFileControl;
		m->xSectorSize = xSectorSize;
		m->xDeviceCharacteristics = xDeviceCharacteristics;
		if (v >= 2) {
			m->xShmMap = xShmMap;
			m->xShmLock = xShmLock;
			m->xShmBarrier = xShmBarrier;
			m->xShmUnmap = xShmUnmap;
		}
		if (v >= 3) {
			m->xFetch = xFetch;
			m->xUnfetch = xUnfetch;
		}
	}
	sqlite3_vfs *a = &atriumVfs;
	a->iVersion = 2;
	a->szOsFile = A_FILE_SZ + r->szOsFile;
	a->mxPathname = r->mxPathname;
	a->zName = name;
	a->xOpen = vOpen;
	a->xDelete = vDelete;
	a->xAccess = vAccess;
	a->xFullPathname = vFullPathname;
	a->xDlOpen = vDlOpen;
	a->xDlError = vDlError;
	a->xDlSym = vDlSym;
	a->xDlClose = vDlClose;
	a->xRandomness = vRandomness;
	a->xSleep = vSleep;
	a->xCurrentTime = vCurrentTime;
	a->xGetLastError = vGetLastError;
	a->xCurrentTimeInt64 = vCurrentTimeInt64;
	realVfs = r;
	int rc = sqlite3_vfs_register(a, 0);
	if (rc != A_OK) realVfs = NULL;
	return rc;
}

// atrium_wal_vfs_stats reports the commits written at once, the writes
// that carried pending frames, and the wal-index lock calls that found
// frames pending (a rolled-back transaction's).
void atrium_wal_vfs_stats(atrium_i64 *commits, atrium_i64 *writes, atrium_i64 *atLock) {
	*commits = __atomic_load_n(&statCommits, __ATOMIC_RELAXED);
	*writes = __atomic_load_n(&statWrites, __ATOMIC_RELAXED);
	*atLock = __atomic_load_n(&statAtLock, __ATOMIC_RELAXED);
}
