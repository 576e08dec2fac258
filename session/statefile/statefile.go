// Package statefile writes the session's own files (its records, indexes and journals) so that a
// crash leaves the old content or the new, never a part, and a line appended is never spoilt by
// one a crash cut short.
package statefile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// WriteFileAtomic replaces path with data so that readers see the old or the new file, never a part.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return WriteFileReplace(path, data, perm, true)
}

// WriteFileReplace is WriteFileAtomic; with syncParent unset, the rename itself is not made durable
// (no fsync of the directory).
func WriteFileReplace(path string, data []byte, perm os.FileMode, syncParent bool) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := Fsync(f); err != nil {
		return fmt.Errorf("write %s: fsync: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	ok = true
	if !syncParent {
		return nil
	}
	return SyncDir(dir)
}

// AppendLine appends line and a line feed to the file at path, durably. With create, a missing
// file is made (and its directory synced); without, a missing file is an fs.ErrNotExist error. A line that a
// crash or a failed write cut short is ended first, so that it spoils no other, and a write that
// fails is taken back.
func AppendLine(path string, line []byte, create bool) error {
	return AppendLineSync(path, line, create, true)
}

// AppendLineSync is AppendLine; with sync unset, neither the file nor its directory is fsynced:
// the line is in the page cache, as durable as any write outside the jail, and a power loss may
// lose it (a kill does not).
func AppendLineSync(path string, line []byte, create, sync bool) error {
	flags := os.O_RDWR | os.O_APPEND
	if create {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	rec := make([]byte, 0, len(line)+2)
	if size > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, size-1); err != nil {
			return err
		}
		if last[0] != '\n' {
			rec = append(rec, '\n')
		}
	}
	rec = append(append(rec, line...), '\n')
	if _, err := f.Write(rec); err != nil {
		_ = f.Truncate(size)
		return err
	}
	if !sync {
		if create && size == 0 {
			// The line need not last, but the file may be new: its name must, or a later
			// line that is fsynced would be in a file a power loss can take away.
			return SyncDir(filepath.Dir(path))
		}
		return nil
	}
	if err := Fsync(f); err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	if create && size == 0 {
		return SyncDir(filepath.Dir(path)) // the file may be new
	}
	return nil
}

// SyncDir makes the names in dir durable (fsync of the directory).
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := Fsync(d); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// Durable makes every fsync and syncfs happen; tests that only kill processes (the page cache
// survives that) turn it off to run faster.
var Durable = true

// Fsync syncs f, unless Durable is off.
func Fsync(f *os.File) error {
	if !Durable {
		return nil
	}
	return f.Sync()
}

// WriteJSON replaces path with v in JSON, as WriteFileAtomic does.
func WriteJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return WriteFileAtomic(path, data, 0o600)
}

// SyncFS flushes the whole filesystem holding dir, batching the fsync of many files.
func SyncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncfs %s: %w", dir, err)
	}
	defer f.Close()
	if !Durable {
		return nil
	}
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("syncfs %s: %w", dir, err)
	}
	return nil
}
