package plugins

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"atrium/backend/apperr"
	"atrium/backend/limits"
)

// Install limits: an archive past them is refused before anything is written.
const (
	maxInstallFiles = 10000
	maxInstallBytes = 256 << 20
	// maxInstallRatio bounds how much one archive entry may expand (a zip
	// bomb), for entries over ratioFloor; source and data rarely pass 20:1.
	maxInstallRatio = 200
	ratioFloor      = 1 << 20
	// maxEntryName and maxEntryPath bound an archive entry's name: a part
	// (NAME_MAX on Linux, macOS and Windows) and the whole path.
	maxEntryName = 255
	maxEntryPath = 1024
)

// errCorrupt marks an archive entry whose data does not match its header
// (a lying size, a bad checksum): invalid input, not an internal error.
var errCorrupt = errors.New("does not match its header (a corrupt or forged archive)")

// file is one regular file or folder to install, at a slash path relative
// to the plugin's folder.
type file struct {
	rel  string
	dir  bool
	exec bool
	size int64
	open func() (io.ReadCloser, error)
}

// install validates src (a folder or a .zip) and copies it to
// <pluginsDir>/<name>; it returns the plugin's name.
func install(ctx context.Context, src, pluginsDir, atriumVersion string, force bool) (string, error) {
	info, err := os.Stat(src)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", apperr.New(apperr.NotFound, "install: %s does not exist", src)
		}
		return "", apperr.Wrap(apperr.Invalid, err, "install: cannot read %s", src)
	}
	var files []file
	var closer io.Closer
	switch {
	case info.IsDir():
		files, err = folderFiles(src)
	case strings.EqualFold(filepath.Ext(src), ".zip"):
		var zr *zip.ReadCloser
		if zr, err = zip.OpenReader(src); err != nil {
			return "", apperr.Wrap(apperr.Invalid, err, "install: %s is not a readable zip", src)
		}
		closer = zr
		files, err = zipFiles(&zr.Reader)
	default:
		return "", apperr.New(apperr.Invalid, "install: %s is neither a folder nor a .zip", src)
	}
	if closer != nil {
		defer closer.Close()
	}
	if err != nil {
		return "", fmt.Errorf("install %s: %w", src, err)
	}

	m, err := manifestOf(files, filepath.Join(src, ManifestFile))
	if err != nil {
		return "", fmt.Errorf("install %s: %w", src, err)
	}
	if m.Runtime == RuntimeGo {
		return "", apperr.New(apperr.Invalid, "install %s: runtime go is only for bundled plugins (use python or command)", src)
	}
	if err := m.CheckAtrium(atriumVersion); err != nil {
		return "", fmt.Errorf("install %s: %w", src, err)
	}

	target := filepath.Join(pluginsDir, m.Name)
	_, statErr := os.Lstat(target)
	exists := statErr == nil
	if exists && !force {
		return "", apperr.New(apperr.Conflict, "plugin %s is already installed in %s (use --force to replace it)", m.Name, target)
	}
	if err := os.MkdirAll(pluginsDir, 0o755); err != nil {
		return "", apperr.Wrap(apperr.Internal, err, "install: create %s", pluginsDir)
	}
	tmp, err := os.MkdirTemp(pluginsDir, ".install-*")
	if err != nil {
		return "", apperr.Wrap(apperr.Internal, err, "install: create a staging folder")
	}
	defer os.RemoveAll(tmp)
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		if err := writeFile(tmp, f); err != nil {
			if errors.Is(err, errCorrupt) {
				return "", apperr.Wrap(apperr.Invalid, err, "install %s: entry %s", src, limits.Echo(f.rel))
			}
			return "", apperr.Wrap(apperr.Internal, err, "install %s: write %s", src, f.rel)
		}
	}
	if exists {
		old := tmp + ".old"
		if err := os.Rename(target, old); err != nil {
			return "", apperr.Wrap(apperr.Internal, err, "install: move the old %s aside", m.Name)
		}
		defer os.RemoveAll(old)
	}
	if err := os.Rename(tmp, target); err != nil {
		return "", apperr.Wrap(apperr.Internal, err, "install: put %s in place", m.Name)
	}
	return m.Name, nil
}

func manifestOf(files []file, label string) (Manifest, error) {
	hasPackage := false
	for _, f := range files {
		if f.rel == PythonPackageFile && !f.dir {
			hasPackage = true
		}
	}
	for _, f := range files {
		if (f.rel != ManifestFile && f.rel != ManifestFileAlt) || f.dir {
			continue
		}
		rc, err := f.open()
		if err != nil {
			return Manifest{}, apperr.Wrap(apperr.Invalid, err, "read %s", ManifestFile)
		}
		data, err := readManifestFrom(rc, label)
		rc.Close()
		if err != nil {
			if apperr.CodeOf(err) == apperr.Invalid {
				return Manifest{}, err
			}
			return Manifest{}, apperr.Wrap(apperr.Invalid, err, "read %s", ManifestFile)
		}
		m, _, err := parseManifest(data, label)
		if err != nil {
			return m, err
		}
		if err := m.ResolveRuntime(hasPackage); err != nil {
			return m, apperr.Wrap(apperr.Invalid, err, "%s", label)
		}
		return m, nil
	}
	return Manifest{}, apperr.New(apperr.Invalid, "no %s at the top of the plugin", ManifestFile)
}

// folderFiles lists a folder's tree; symlinks and special files are refused.
func folderFiles(root string) ([]file, error) {
	var out []file
	var total int64
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			return apperr.New(apperr.Invalid, "%s is a symlink: plugins may not contain symlinks", rel)
		case d.IsDir():
			out = append(out, file{rel: rel, dir: true})
		case info.Mode().IsRegular():
			total += info.Size()
			out = append(out, file{rel: rel, exec: info.Mode()&0o111 != 0, size: info.Size(),
				open: func() (io.ReadCloser, error) { return os.Open(p) }})
		default:
			return apperr.New(apperr.Invalid, "%s is not a regular file", rel)
		}
		if len(out) > maxInstallFiles || total > maxInstallBytes {
			return apperr.New(apperr.Invalid, "the plugin is too large (over %d files or %d MiB)", maxInstallFiles, maxInstallBytes>>20)
		}
		return nil
	})
	var ae *apperr.Error
	if err != nil && !errors.As(err, &ae) {
		err = apperr.Wrap(apperr.Invalid, err, "read the folder")
	}
	return out, err
}

// zipFiles lists an archive's entries. Entries with "..", absolute paths,
// backslashes, symlinks or special files are refused. A single top-level
// folder holding plugin.yaml is stripped (zip -r plugin.zip myplugin/).
func zipFiles(zr *zip.Reader) ([]file, error) {
	var out []file
	var total uint64
	seen := map[string]bool{} // clean path -> is a folder
	for _, zf := range zr.File {
		name := zf.Name
		mode := zf.Mode()
		switch {
		case strings.ContainsFunc(name, unicode.IsControl):
			// A NUL cannot be in a file name at all (found by FuzzInstallZip:
			// it was an internal error); other control bytes only hide.
			return nil, apperr.New(apperr.Invalid, "zip entry %s has a control character in its name", limits.Echo(name))
		case strings.Contains(name, `\`):
			return nil, apperr.New(apperr.Invalid, "zip entry %s has a backslash", limits.Echo(name))
		case strings.HasPrefix(name, "/") || filepath.IsAbs(name) || filepath.VolumeName(name) != "":
			return nil, apperr.New(apperr.Invalid, "zip entry %s is an absolute path", limits.Echo(name))
		case hasDotDot(name):
			return nil, apperr.New(apperr.Invalid, "zip entry %s escapes the plugin folder", limits.Echo(name))
		case mode&fs.ModeSymlink != 0:
			return nil, apperr.New(apperr.Invalid, "zip entry %s is a symlink: plugins may not contain symlinks", limits.Echo(name))
		case !mode.IsDir() && !mode.IsRegular():
			return nil, apperr.New(apperr.Invalid, "zip entry %s is not a regular file", limits.Echo(name))
		case zf.Method != zip.Store && zf.Method != zip.Deflate && !mode.IsDir():
			// Go reads stored and deflated entries (what zip, Python's
			// zipfile and every packer write by default), nothing else.
			return nil, apperr.New(apperr.Invalid, "zip entry %s is compressed with method %d, which Atrium cannot read: pack the plugin with deflate (zip -r, or Python's zipfile with ZIP_DEFLATED)",
				limits.Echo(name), zf.Method)
		}
		clean := path.Clean(name)
		if clean == "." {
			continue
		}
		if !filepath.IsLocal(filepath.FromSlash(clean)) {
			return nil, apperr.New(apperr.Invalid, "zip entry %s escapes the plugin folder", limits.Echo(name))
		}
		// Names no file system takes (found by a test beside FuzzInstallZip:
		// "file name too long" was an internal error).
		if len(clean) > maxEntryPath || slices.ContainsFunc(strings.Split(clean, "/"), func(part string) bool { return len(part) > maxEntryName }) {
			return nil, apperr.New(apperr.Invalid, "zip entry %s: its name is too long (over %d bytes, or a part of it over %d)",
				limits.Echo(name), maxEntryPath, maxEntryName)
		}
		total += zf.UncompressedSize64
		if len(out) >= maxInstallFiles || total > maxInstallBytes || zf.UncompressedSize64 > maxInstallBytes {
			return nil, apperr.New(apperr.Invalid, "the archive is too large (over %d files or %d MiB)", maxInstallFiles, maxInstallBytes>>20)
		}
		if zf.UncompressedSize64 > ratioFloor && zf.UncompressedSize64/max(zf.CompressedSize64, 1) > maxInstallRatio {
			return nil, apperr.New(apperr.Invalid, "zip entry %s expands %d times (over %d:1): refused as a zip bomb",
				limits.Echo(name), zf.UncompressedSize64/max(zf.CompressedSize64, 1), maxInstallRatio)
		}
		isDir := mode.IsDir() || strings.HasSuffix(name, "/")
		if wasDir, dup := seen[clean]; dup {
			if wasDir && isDir {
				continue // the same folder listed twice is harmless
			}
			return nil, apperr.New(apperr.Invalid, "zip entry %s appears twice in the archive", limits.Echo(clean))
		}
		seen[clean] = isDir
		zf := zf
		f := file{rel: clean, dir: isDir, exec: mode&0o111 != 0, size: int64(zf.UncompressedSize64)}
		if !f.dir {
			f.open = func() (io.ReadCloser, error) {
				rc, err := zf.Open()
				if err != nil {
					// A local header past the end or unreadable: bad input.
					return nil, fmt.Errorf("%w: %v", errCorrupt, err)
				}
				return rc, nil
			}
		}
		out = append(out, f)
	}
	// A file that is also the parent of another entry ("a" and "a/b").
	for rel := range seen {
		for dir := path.Dir(rel); dir != "."; dir = path.Dir(dir) {
			if isDir, ok := seen[dir]; ok && !isDir {
				return nil, apperr.New(apperr.Invalid, "zip entry %s is a file and the folder of %s", limits.Echo(dir), limits.Echo(rel))
			}
		}
	}
	return stripTop(out), nil
}

func hasDotDot(name string) bool {
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}

// stripTop removes a single top-level folder when the manifest is inside it
// and not at the root.
func stripTop(files []file) []file {
	top := ""
	for _, f := range files {
		if f.rel == ManifestFile {
			return files
		}
		first, _, _ := strings.Cut(f.rel, "/")
		if top != "" && first != top {
			return files
		}
		top = first
	}
	if top == "" {
		return files
	}
	var out []file
	for _, f := range files {
		if f.rel == top {
			continue
		}
		f.rel = strings.TrimPrefix(f.rel, top+"/")
		out = append(out, f)
	}
	return out
}

func writeFile(root string, f file) error {
	target := filepath.Join(root, filepath.FromSlash(f.rel))
	if rel, err := filepath.Rel(root, target); err != nil || !filepath.IsLocal(rel) {
		return fmt.Errorf("%s escapes the plugin folder", f.rel)
	}
	if f.dir {
		return os.MkdirAll(target, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if f.exec {
		mode = 0o755
	}
	rc, err := f.open()
	if err != nil {
		return err
	}
	defer rc.Close()
	w, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	n, err := io.Copy(w, &readErr{io.LimitReader(rc, f.size+1)})
	if err == nil && n != f.size {
		err = fmt.Errorf("%w: %d bytes where its header says %d", errCorrupt, n, f.size)
	}
	if err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// readErr marks every read error of an entry as errCorrupt, so a failed
// write stays an internal error and bad data is invalid input.
type readErr struct{ r io.Reader }

func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%w: %v", errCorrupt, err)
	}
	return n, err
}
