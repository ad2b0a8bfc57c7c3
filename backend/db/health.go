package db

import (
	"errors"
	"path/filepath"
	"syscall"

	"github.com/mattn/go-sqlite3"
	"gorm.io/gorm"

	"atrium/backend/apperr"
)

// ErrDamaged, ErrReadOnly and ErrDiskFull are wrapped by the store's
// one-line errors for the three ways its file can fail; callers test them
// with errors.Is. Their code is apperr.Rejected: the store refused, and the
// message (not "internal error") is what the person needs to read.
var (
	ErrDamaged  = errors.New("the store is damaged")
	ErrReadOnly = errors.New("the store cannot be written")
	ErrDiskFull = errors.New("the disk is full")
	ErrBusy     = errors.New("another process holds the store's write lock")
)

// Writable returns nil if this process may write to the store, else the
// one-line reason: read-only, or damaged (nothing more is written to a store
// once a statement met a malformed page).
func (d *DB) Writable() error {
	if d.damaged.Load() {
		return d.damagedErr()
	}
	if d.Write == nil {
		return d.writeErr
	}
	return nil
}

// Damaged reports whether a statement of this process met a malformed page.
func (d *DB) Damaged() bool { return d.damaged.Load() }

// storeError is one of the store's one-line errors: a coded error whose
// message says everything (the SQLite error it stands for is not repeated),
// matching its kind (ErrDamaged, ...) with errors.Is.
type storeError struct {
	coded *apperr.Error
	kind  error
}

func (e *storeError) Error() string   { return e.coded.Message }
func (e *storeError) Unwrap() []error { return []error{e.coded, e.kind} }

func newStoreError(kind error, format string, args ...any) error {
	return &storeError{coded: apperr.New(apperr.Rejected, format, args...), kind: kind}
}

func (d *DB) damagedErr() error {
	return newStoreError(ErrDamaged,
		"the store %s is damaged (database disk image is malformed), so Atrium writes nothing more to it: "+
			"see what is wrong with sqlite3 %s 'PRAGMA integrity_check', then restore your latest backup of it, "+
			"or keep a copy of the damaged file and save what can still be read with sqlite3 %s .recover",
		d.Path, d.Path, d.Path)
}

// classify turns SQLite's errors about the file itself (damaged, read-only,
// disk full) into the store's one-line errors; others pass through. A
// damaged page latches: from then on the store is not written.
func (d *DB) classify(err error) error {
	if err == nil {
		return nil
	}
	var done *storeError
	if errors.As(err, &done) {
		return err // classified already
	}
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return err
	}
	switch {
	case se.Code == sqlite3.ErrCorrupt || se.Code == sqlite3.ErrNotADB:
		d.damaged.Store(true)
		return d.damagedErr()
	case se.Code == sqlite3.ErrFull || se.SystemErrno == syscall.ENOSPC:
		return d.diskFull()
	case isBusy(err):
		return newStoreError(ErrBusy, "the store %s is busy: another process has been writing to it for more than %s "+
			"(nothing was changed; try again)", d.Path, d.busy)
	case se.Code == sqlite3.ErrReadonly || se.Code == sqlite3.ErrCantOpen || se.Code == sqlite3.ErrPerm ||
		se.SystemErrno == syscall.EROFS || se.SystemErrno == syscall.EACCES:
		return d.cannotWrite(err, "write")
	}
	return err
}

// isBusy reports whether err is SQLite's busy or locked answer.
func isBusy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}

func (d *DB) diskFull() error {
	return newStoreError(ErrDiskFull,
		"the store %s cannot be written: the disk is full (free some space and try again; nothing was changed)", d.Path)
}

// cannotWrite says why the store cannot be created or written, from what
// the file system says of its folder and file.
func (d *DB) cannotWrite(err error, verb string) error {
	dir := filepath.Dir(d.Path)
	for _, p := range []string{dir, d.Path} {
		aerr := syscall.Access(p, 2 /* W_OK */)
		switch {
		case errors.Is(aerr, syscall.EROFS):
			return newStoreError(ErrReadOnly,
				"cannot %s the store %s: %s is on a read-only file system (reads still work)", verb, d.Path, dir)
		case errors.Is(aerr, syscall.EACCES), errors.Is(aerr, syscall.EPERM):
			return newStoreError(ErrReadOnly,
				"cannot %s the store %s: no permission to write %s (reads still work)", verb, d.Path, p)
		}
	}
	var st syscall.Statfs_t
	if errors.Is(err, syscall.ENOSPC) || (syscall.Statfs(dir, &st) == nil && st.Bavail == 0) {
		return d.diskFull()
	}
	return newStoreError(ErrReadOnly, "cannot %s the store %s: %v", verb, d.Path, err)
}

// watch classifies the errors of every statement run through g, so a read
// that meets a damaged page both says so and stops later writes.
func (d *DB) watch(g *gorm.DB) {
	fix := func(tx *gorm.DB) {
		if tx.Error != nil {
			tx.Error = d.classify(tx.Error)
		}
	}
	cb := g.Callback()
	_ = cb.Query().After("gorm:query").Register("atrium:classify_query", fix)
	_ = cb.Row().After("gorm:row").Register("atrium:classify_row", fix)
	_ = cb.Raw().After("gorm:raw").Register("atrium:classify_raw", fix)
	_ = cb.Create().After("gorm:create").Register("atrium:classify_create", fix)
	_ = cb.Update().After("gorm:update").Register("atrium:classify_update", fix)
	_ = cb.Delete().After("gorm:delete").Register("atrium:classify_delete", fix)
}
