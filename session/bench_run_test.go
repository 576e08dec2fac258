package session

import (
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/session/statefile"
	"golang.org/x/sys/unix"
)

// BenchmarkEndRun5k records the end of a run that modified 5,000 project files: the pre-image of
// every one is captured into base/, fsyncs included, then the change set of the run's summary is
// computed.
func BenchmarkEndRun5k(b *testing.B) {
	statefile.Durable = true
	defer func() { statefile.Durable = false }()
	var endRun, changes time.Duration
	for b.Loop() {
		b.StopTimer()
		s := runOver5k(b)
		b.StartTimer()
		t0 := time.Now()
		if err := s.EndRun(0); err != nil {
			b.Fatal(err)
		}
		endRun += time.Since(t0)
		b.StopTimer()
		if runs := runsOf(b, s); runs[len(runs)-1].Captured != 5000 {
			b.Fatalf("captured %d pre-images, want 5000", runs[len(runs)-1].Captured)
		}
		b.StartTimer()
		t0 = time.Now()
		cs, err := s.Changes()
		if err != nil || len(cs.Changes) != 5000 {
			b.Fatalf("changes: %v", err)
		}
		changes += time.Since(t0)
	}
	b.ReportMetric(float64(endRun.Milliseconds())/float64(b.N), "endrun-ms/op")
	b.ReportMetric(float64(changes.Milliseconds())/float64(b.N), "changes-ms/op")
}

// BenchmarkEndRunChanges5k is BenchmarkEndRun5k done as `shadow run` ends: the run recorded and its
// change set computed in one EndRunChanges.
func BenchmarkEndRunChanges5k(b *testing.B) {
	statefile.Durable = true
	defer func() { statefile.Durable = false }()
	var end time.Duration
	for b.Loop() {
		b.StopTimer()
		s := runOver5k(b)
		b.StartTimer()
		t0 := time.Now()
		cs, err := s.EndRunChanges(0)
		if err != nil || len(cs.Changes) != 5000 {
			b.Fatalf("end run: %v", err)
		}
		end += time.Since(t0)
		if runs := runsOf(b, s); runs[len(runs)-1].Captured != 5000 {
			b.Fatalf("captured %d pre-images, want 5000", runs[len(runs)-1].Captured)
		}
	}
	b.ReportMetric(float64(end.Milliseconds())/float64(b.N), "end-ms/op")
}

// runOver5k is a session whose active run modified 5,000 project files, with everything written
// so far on disk.
func runOver5k(b *testing.B) *Session {
	f := newFixture(b, nil)
	benchTree(b, f.project, 5000, "line %d\n")
	f.s.Discard()
	s, err := f.lock.Create()
	if err != nil {
		b.Fatal(err)
	}
	benchTree(b, s.UpperDir(), 5000, "line %d\nappended\n")
	if err := s.BeginRun([]string{"agent"}); err != nil {
		b.Fatal(err)
	}
	unix.Sync()
	return s
}

// BenchmarkEndRunEmpty records the end of a run that staged nothing (`shadow run -- true`).
func BenchmarkEndRunEmpty(b *testing.B) {
	statefile.Durable = true
	defer func() { statefile.Durable = false }()
	f := newFixture(b, nil)
	benchTree(b, f.project, 100, "line %d\n")
	f.s.Discard()
	s, err := f.lock.Create()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := s.BeginRun([]string{"true"}); err != nil {
			b.Fatal(err)
		}
		if err := s.EndRun(0); err != nil {
			b.Fatal(err)
		}
	}
}
