package sandbox

import (
	"os"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// The user's terminal is raw while the jail relays it (no echo, no line editing, no signals
// from keys, no output processing, bytes of 8 bits one at a time) and exactly as it was after;
// a stdin that is not a terminal is left alone.
func TestMakeRawAndRestore(t *testing.T) {
	m, s, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	defer m.Close()
	defer s.Close()
	fd := int(s.Fd())
	before, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	restore := makeRaw(s)
	raw, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	for name, on := range map[string]bool{
		"ICANON": raw.Lflag&unix.ICANON != 0, "ECHO": raw.Lflag&unix.ECHO != 0, "ISIG": raw.Lflag&unix.ISIG != 0,
		"IEXTEN": raw.Lflag&unix.IEXTEN != 0, "ICRNL": raw.Iflag&unix.ICRNL != 0, "IXON": raw.Iflag&unix.IXON != 0,
		"OPOST": raw.Oflag&unix.OPOST != 0, "PARENB": raw.Cflag&unix.PARENB != 0,
	} {
		if on {
			t.Errorf("raw mode keeps %s", name)
		}
	}
	if raw.Cflag&unix.CSIZE != unix.CS8 || raw.Cc[unix.VMIN] != 1 || raw.Cc[unix.VTIME] != 0 {
		t.Errorf("raw mode: CSIZE %#x VMIN %d VTIME %d", raw.Cflag&unix.CSIZE, raw.Cc[unix.VMIN], raw.Cc[unix.VTIME])
	}
	restore()
	after, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if *after != *before {
		t.Errorf("restored %+v, was %+v", *after, *before)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	makeRaw(r)() // not a terminal: nothing to do, nothing to undo
}
