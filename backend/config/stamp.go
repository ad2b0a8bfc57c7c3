package config

import (
	"os"
	"syscall"
	"time"
)

// Stamp is what a file was when it was read: enough for a stat to tell
// whether it changed since (another inode, size or modification time;
// every Atrium write replaces the file). A process that follows a file
// another may change (config.yaml) reads it again only when its stamp no
// longer vouches for it.
type Stamp struct {
	ok          bool
	ino, size   int64
	mtime, read time.Time
}

// StatStamp is the file at path as a stat finds it now, not yet read.
func StatStamp(path string) Stamp {
	fi, err := os.Stat(path)
	if err != nil {
		return Stamp{}
	}
	st := Stamp{ok: true, size: fi.Size(), mtime: fi.ModTime()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = int64(sys.Ino)
	}
	return st
}

// ReadNow is s, the file being read now.
func (s Stamp) ReadNow() Stamp {
	s.read = time.Now()
	return s
}

// Vouches says whether what was read under s is still the file now (a
// StatStamp). A file rewritten within the same clock tick keeps its time:
// a stamp read less than a second after the file's time does not vouch for
// it, nor does one never read (the zero Stamp).
func (s Stamp) Vouches(now Stamp) bool {
	return !s.read.IsZero() && now.ok == s.ok && now.ino == s.ino && now.size == s.size && now.mtime.Equal(s.mtime) &&
		s.read.Sub(now.mtime) > time.Second
}
