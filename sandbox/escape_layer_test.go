package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEscapeStagingLimit: the run's layer is a tmpfs of Policy.MaxUpperBytes, so the kernel
// refuses every write past it: through a plain file, a file unlinked while open, a directory the
// host user cannot read, and data written far into a sparse file. What fits is staged; a sparse
// file stays sparse on disk.
func TestEscapeStagingLimit(t *testing.T) {
	t.Parallel()
	j := newTestJail(t)
	p := j.policy()
	p.MaxUpperBytes = 2 << 20
	const fill = `head -c 8000000 /dev/zero`
	script := strings.Join([]string{
		`echo small > fits; echo fits=$?`,
		fill + ` > plain 2>/dev/null; echo plain=$?; rm -f plain`,
		`exec 3>gone; rm gone; ` + fill + ` >&3 2>/dev/null; echo unlinked=$?; exec 3>&-`,
		`mkdir hidden && ` + fill + ` > hidden/x 2>/dev/null; echo hidden=$?; rm -f hidden/x; chmod 0300 hidden`,
		`truncate -s 1G sparse; echo truncate=$?`,
		`dd if=/dev/zero of=sparse bs=1M count=8 seek=100 conv=notrunc 2>/dev/null; echo sparse=$?`,
	}, "\n")
	start := time.Now()
	res, out, errOut := j.run(t, p, "/bin/sh", "-c", script)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s%s", res.ExitCode, out, errOut)
	}
	want := "fits=0\nplain=1\nunlinked=1\nhidden=1\ntruncate=0\nsparse=1\n"
	if out != want {
		t.Errorf("writes past the limit:\n%s\nwant\n%s", out, want)
	}
	if !res.LayerFull || res.LayerBytes > p.MaxUpperBytes {
		t.Errorf("LayerFull %v, LayerBytes %d: want the layer reported full at %d", res.LayerFull, res.LayerBytes, p.MaxUpperBytes)
	}
	if res.StagingError != "" {
		t.Errorf("staging: %s", res.StagingError)
	}
	if d := time.Since(start); d > 90*time.Second { // writes past the limit fail at once; the bound is for a busy machine
		t.Errorf("the run took %v", d)
	}
	// What fits is staged, with the agent's modes; the sparse file keeps its holes on disk.
	if b, err := os.ReadFile(filepath.Join(j.upper, "fits")); err != nil || string(b) != "small\n" {
		t.Errorf("staged fits = %q, %v", b, err)
	}
	if fi, err := os.Lstat(filepath.Join(j.upper, "hidden")); err != nil || fi.Mode().Perm() != 0o300 {
		t.Errorf("staged hidden: %v, %v; want a directory of mode 0300", fi, err)
	}
	fi, err := os.Lstat(filepath.Join(j.upper, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); fi.Size() < 1<<30 || st.Blocks*512 > 4<<20 {
		t.Errorf("staged sparse file: size %d, %d bytes stored; want 1 GiB or more in holes", fi.Size(), st.Blocks*512)
	}
}
