package layers

import "golang.org/x/sys/unix"

// Footprint is what the trees below some directories hold: the space on
// disk (each inode once, as du counts it: a checkpoint's file shares its
// inode with the staging layer's), the number of entries, and the latest
// change time of any of them. A write, truncate, rename, chmod or removal
// moves Latest (the entry's or its directory's ctime), where a filesystem's
// block and inode counts may stay the same: a rewrite of a file with as
// many bytes, a rename onto a file of the same size.
type Footprint struct {
	Bytes   int64
	Entries int
	Latest  int64 // nanoseconds
}

// Measure is the footprint of the trees below the directories fds, their
// own entries included; what cannot be read counts nothing.
func Measure(fds ...int) Footprint {
	m := measure{seen: map[[2]uint64]bool{}}
	for _, fd := range fds {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil {
			m.count(&st)
			m.walk(fd)
		}
	}
	return m.Footprint
}

type measure struct {
	Footprint
	seen map[[2]uint64]bool // device and inode
}

func (m *measure) count(st *unix.Stat_t) {
	m.Entries++
	m.Latest = max(m.Latest, st.Ctim.Nano())
	id := [2]uint64{st.Dev, st.Ino}
	if !m.seen[id] {
		m.seen[id] = true
		m.Bytes += st.Blocks * 512
	}
}

func (m *measure) walk(fd int) {
	names, err := readDirNames(fd)
	if err != nil {
		return
	}
	for _, name := range names {
		var st unix.Stat_t
		if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		m.count(&st)
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			if sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
				m.walk(sub)
				unix.Close(sub)
			}
		}
	}
}
