// Package atomicfile replaces a file whole: the data is written to a
// temporary file beside it, synced, given its mode, optionally checked, and
// renamed over the target, so a reader, a crash or a full disk sees the old
// file or the new one, never half of one.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path with data (mode perm). check, when not nil, runs on
// the written temporary file before the rename and can refuse it. The
// folder must exist. On any error the temporary file is removed and path is
// left as it was.
func Write(path string, data []byte, perm os.FileMode, check func(tmp string) error) (err error) {
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
	if err == nil {
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
