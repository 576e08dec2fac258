package sandbox

import (
	"encoding/json"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// The host-side caches beside the mask cache (the git scrub cache, the project's directories)
// are JSON files that only this user can have written: the jail never can, and a file another
// user could write would let them decide what the jail hides.

// readOwnJSON decodes dir/name into v; false when it is missing, not this user's, writable by
// group or others, or not JSON.
func readOwnJSON(dir, name string, v any) bool {
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return false
	}
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return false
	}
	return json.NewDecoder(f).Decode(v) == nil
}

// writeJSONAtomic writes v as dir/name through a temporary file and a rename, best effort: a
// cache that cannot be written is only read again from its sources next time.
func writeJSONAtomic(dir, name string, v any) {
	if os.MkdirAll(dir, 0o700) != nil {
		return
	}
	f, err := os.CreateTemp(dir, "."+name+"-*")
	if err != nil {
		return
	}
	err = json.NewEncoder(f).Encode(v)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(f.Name())
	}
}
