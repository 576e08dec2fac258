package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A `truncate -s 1T` in the jail costs what it stores: run, diff --stat, apply and rollback each
// return in seconds (hashing the terabyte would take a quarter of an hour each), the run's summary
// and the diffstat say the file is sparse, and the applied file keeps its holes.
func TestSparseTerabyte(t *testing.T) {
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "1\n"})
	timed := func(args ...string) (string, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, c.bin, args...)
		cmd.Dir, cmd.Env = p, c.env
		// Killed at the deadline, shadow leaves its jail's PID 1 to end the run, holding the
		// output pipes: the test stops waiting for them, and fails, rather than hang.
		cmd.WaitDelay = 10 * time.Second
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		start := time.Now()
		err := cmd.Run()
		if ctx.Err() != nil {
			t.Fatalf("shadow %v did not return in 30 s", args)
		}
		if err != nil {
			t.Fatalf("shadow %v: %v\n%s%s", args, err, out.String(), errb.String())
		}
		t.Logf("shadow %s: %v", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
		return out.String(), errb.String()
	}
	_, errs := timed("run", "--", "sh", "-c", "truncate -s 1T huge.img && printf x | dd of=huge.img bs=1 seek=1000000 conv=notrunc 2>/dev/null")
	if !strings.Contains(errs, "huge.img (sparse: 1.0 TiB apparent") {
		t.Errorf("the run's summary does not say huge.img is sparse:\n%s", errs)
	}
	stat, _ := timed("diff", "--stat")
	if !strings.Contains(stat, "Bin 0 -> 1099511627776 bytes (sparse file: staged 1.0 TiB apparent, 4.0 KiB stored; not shown as text)") {
		t.Errorf("diff --stat:\n%s", stat)
	}
	timed("apply", "--all", "--yes")
	huge := filepath.Join(p, "huge.img")
	fi, err := os.Stat(huge)
	if err != nil || fi.Size() != 1<<40 {
		t.Fatalf("applied huge.img: %v, %v", fi, err)
	}
	if blocks := fi.Sys().(*syscall.Stat_t).Blocks * 512; blocks > 4<<20 {
		t.Errorf("apply wrote %d bytes for a file that stores 4 KiB", blocks)
	}
	timed("apply", "--rollback", "--yes")
	if _, err := os.Stat(huge); !os.IsNotExist(err) {
		t.Errorf("huge.img after rollback: %v", err)
	}
}
