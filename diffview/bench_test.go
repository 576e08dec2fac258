package diffview

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

// threadCPU is the CPU time the calling OS thread has used.
func threadCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// bigChange is a Go-like file of n lines and a version with every 7th line
// changed and every 50th line inserted after: with 3 lines of context, one
// hunk of about 100,000 lines, the worst case for per-hunk work.
func bigChange(n int) (old, new []byte) { return spreadChange(n, 7) }

// spreadChange is like bigChange with every nth line changed.
func spreadChange(n, every int) (old, new []byte) {
	var o, w strings.Builder
	for i := 0; i < n; i++ {
		line := fmt.Sprintf("\tx%d := compute(%d, \"value %d\") // step\n", i, i*3, i)
		o.WriteString(line)
		if i%every == 0 {
			w.WriteString(fmt.Sprintf("\tx%d := compute(%d, \"changed %d\") // step\n", i, i*3+1, i))
		} else {
			w.WriteString(line)
		}
		if i%50 == 0 {
			w.WriteString("\t// inserted\n")
		}
	}
	return []byte(o.String()), []byte(w.String())
}

// bigSource holds one file with a 100,000-line diff, computed once.
func bigSource(b testing.TB) (*memSource, File) { return spreadSource(7) }

// spreadSource is bigSource with every nth line changed.
func spreadSource(every int) (*memSource, File) {
	old, new := spreadChange(100_000, every)
	f := File{Path: "big.go", Status: StatusModified, OldMode: diff.ModeFile, NewMode: diff.ModeFile}
	f.Diff = diff.Compute("big.go", old, new, diff.Options{})
	src := &memSource{decisions: map[string]map[string]diff.Decision{}}
	return src, f
}

func BenchmarkCompute100k(b *testing.B) {
	old, new := bigChange(100_000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fd := diff.Compute("big.go", old, new, diff.Options{})
		if len(fd.Hunks) == 0 {
			b.Fatal("no hunks")
		}
	}
}

func BenchmarkOpen100k(b *testing.B) {
	src, f := bigSource(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := New(WithSource(src))
		m.SetSize(160, 48)
		m, _ = m.Update(loadedMsg{files: []File{f}})
		if m.View() == "" {
			b.Fatal("empty view")
		}
	}
}

// BenchmarkKeyToFrame measures one keypress through Update to the next
// View on a 100,000-line diff, cycling through moves, hunk jumps,
// decisions, search and view toggles; it reports the p99.
func BenchmarkKeyToFrame(b *testing.B) {
	b.Run("one-hunk", func(b *testing.B) { keyToFrame(b, 7) })
	b.Run("5000-hunks", func(b *testing.B) { keyToFrame(b, 20) })
}

// keyToFrame runs the keypress benchmark on a diff with every nth line
// changed.
func keyToFrame(b *testing.B, every int) {
	src, f := spreadSource(every)
	m := New(WithSource(src))
	m.SetSize(160, 48)
	m, _ = m.Update(loadedMsg{files: []File{f}})
	m.View()
	m.search = "changed 9999"
	keys := []string{"j", "j", "]", "a", "ctrl+d", "]", "r", "k", "G", "[", "u", "g", "space", "v", "j", "v", ".", "n", "N"}
	times := make([]time.Duration, 0, b.N)
	cpu := make([]time.Duration, 0, b.N)
	// CPU time of this thread per frame, next to wall time: on a shared,
	// loaded machine the wall time includes waiting for a core.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c0 := threadCPU()
		start := time.Now()
		m, _ = m.Update(keyMsg(keys[i%len(keys)]))
		m.View()
		times = append(times, time.Since(start))
		cpu = append(cpu, threadCPU()-c0)
	}
	b.StopTimer()
	sort.Slice(cpu, func(i, j int) bool { return cpu[i] < cpu[j] })
	b.ReportMetric(float64(cpu[len(cpu)*99/100].Microseconds()), "p99-cpu-µs")
	// Decisions are saved by commands the benchmark does not run; drop
	// the queue so it does not grow.
	m.saves = nil
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(times[len(times)-1].Microseconds()), "max-µs")
}
