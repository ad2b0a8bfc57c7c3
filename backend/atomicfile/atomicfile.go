// Package atomicfile replaces a file whole: the data is written to a
// temporary file beside it, synced, given its mode, optionally checked, and
// renamed over the target, so a reader, a crash or a full disk sees the old
// file or the new one, never half of one.
package atomicfile

import (
	"os"
	"path/filepath"
	"syscall"
)

// Write replaces path with data (mode perm). check, when not nil, runs on
// the written temporary file before the rename and can refuse it. The
// folder must exist. On any error the temporary file is removed and path is
// left as it was.
func Write(path string, data []byte, perm os.FileMode, check func(tmp string) error) (err error) {
	return write(path, data, perm, check, true)
}

// WriteUnsynced is Write without the sync: for a file whose last change
// costs little to lose at a power cut (the process crashing still leaves
// the old file or the new one), where a sync would be most of the cost of
// writing it. After a power cut it may be empty: a reader takes an empty
// file as none.
func WriteUnsynced(path string, data []byte, perm os.FileMode) error {
	return write(path, data, perm, nil, false)
}

func write(path string, data []byte, perm os.FileMode, check func(tmp string) error, sync bool) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	_, err = f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Chmod(tmp, perm); err != nil {
		return err
	}
	if check != nil {
		if err := check(tmp); err != nil {
			return err
		}
	}
	return os.Rename(tmp, path)
}

// Replace is Write for a file a person keeps: a path that is a link stays
// one (the file it names is replaced), and the file keeps its mode; a new
// file gets perm.
func Replace(path string, data []byte, perm os.FileMode) error {
	target := path
	if t, err := filepath.EvalSymlinks(path); err == nil {
		target = t
	}
	if fi, err := os.Stat(target); err == nil {
		perm = fi.Mode().Perm()
	}
	return Write(target, data, perm, nil)
}

// Lock takes an exclusive lock on path+".lock" (created if missing), so
// that processes changing path (read, change, Write) do so one at a time;
// unlock releases it. It waits for the lock.
func Lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
