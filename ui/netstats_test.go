package ui

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

// TestSessionStatsCountsDenied: the status bar's counts come from the
// session's network log: every request, and those the proxy refused.
func TestSessionStatsCountsDenied(t *testing.T) {
	ts := newTestSession(t, map[string]string{"a.txt": "a\n"})
	log := `{"host":"a","allowed":true}` + "\n" + `{"host":"b","allowed":false}` + "\n" + `{"host":"c","allowed":false}` + "\n"
	if err := os.WriteFile(ts.s.NetLog(), []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := SessionStats(ts.s)(); got.Requests != 3 || got.Denied != 2 {
		t.Errorf("stats = %+v, want 3 requests, 2 denied", got)
	}
}

// TestStatusBarShowsDenied: a refused request is counted in the status bar
// at every width that shows the network count, and nothing is added when
// none was refused.
func TestStatusBarShowsDenied(t *testing.T) {
	for _, sz := range sizes {
		t.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(t *testing.T) {
			m := newModel(t, testOptions(nil, idleAgent).withReview(t))
			m = step(t, m, tea.WindowSizeMsg{Width: sz.w, Height: sz.h})
			m.phase = phaseAgent
			m.started, m.now = fixedNow, fixedNow.Add(83*time.Second)
			m.opts.Now = func() time.Time { return fixedNow.Add(83 * time.Second) }
			m.stats = Stats{Files: 3, Requests: 5, Denied: 2}
			want := "5 net (2 DENIED)"
			if !strings.Contains(screenText(m), " │ 3 staged") {
				want = "3+5!2" // the narrowest bar
			}
			if s := screenText(m); !strings.Contains(s, want) {
				t.Errorf("status bar lacks the denied count:\n%s", s)
			}
			m.stats.Denied = 0
			if s := screenText(m); strings.Contains(s, "DENIED") || strings.Contains(s, "3+5!") {
				t.Errorf("status bar shows denials that are not:\n%s", s)
			}
		})
	}
}
