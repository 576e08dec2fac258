package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/sandbox/proxy"
	"github.com/shadow-sandbox/shadow/ui/reviewsrc"
)

// The review's step carries the step's requests through the proxy, as `shadow net` puts them in
// steps: counted, the refused ones' destinations named once each, and each listed with its method,
// destination and status, escaped.
func TestReviewStepsCountRequests(t *testing.T) {
	_, lk, s, project := checkpointSession(t)
	defer lk.Release()
	j := &Jail{Lock: lk, Session: s, Policy: sandbox.Policy{Project: project, NoCache: true}}
	for _, step := range []string{"echo A > a.txt", "echo B > b.txt"} {
		app := newAppPty(t)
		if e := waitEnd(t, runAgent(JailAgent(j, []string{"/bin/sh", "-c", step}), context.Background(), app.tty)); e.err != nil || e.res.ExitCode != 0 {
			t.Fatalf("run %q ended with %+v", step, e)
		}
	}
	cps, err := s.Checkpoints()
	if err != nil || len(cps) != 2 {
		t.Fatalf("checkpoints %+v, %v", cps, err)
	}
	before := func(c int) time.Time { return cps[c].Time.Add(-time.Millisecond) }
	var log []byte
	for _, e := range []proxy.Entry{
		{Time: before(0), Method: "CONNECT", Target: "api.test:443", Host: "api.test", Port: 443, Allowed: true, Status: 200},
		{Time: before(0), Host: "evil.test", Port: 443},
		{Time: before(0), Host: "evil.test", Port: 443},
		{Time: before(1), Method: "GET", Scheme: "http", Host: "bad\x1b]0;x\x07.test", Port: 80, Path: "/p", Status: 403},
		{Time: cps[1].Time.Add(time.Second), Host: "later.test", Port: 443},
	} {
		b, _ := json.Marshal(e)
		log = append(append(log, b...), '\n')
	}
	if err := os.WriteFile(s.NetLog(), log, 0o600); err != nil {
		t.Fatal(err)
	}
	src := reviewsrc.New(lk, s)
	for _, want := range []struct {
		id               string
		requests, denied int
		deniedTo         []string
		sent             string // the requests listed beside the step's files
	}{
		{"c1", 3, 2, []string{"evil.test:443"}, "[{CONNECT api.test:443 200 true} { evil.test:443 0 false} { evil.test:443 0 false}]"},
		{"c2", 1, 1, []string{`"bad\x1b]0;x\a.test:80"`}, `[{GET "http://bad\x1b]0;x\a.test:80/p" 403 false}]`},
	} {
		sc, err := src.StepChanges(want.id)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Requests != want.requests || sc.Denied != want.denied || !slices.Equal(sc.DeniedTo, want.deniedTo) {
			t.Errorf("step %s: %d requests, %d denied to %q; want %d, %d to %q", want.id, sc.Requests, sc.Denied, sc.DeniedTo,
				want.requests, want.denied, want.deniedTo)
		}
		if got := fmt.Sprint(sc.Sent); got != want.sent {
			t.Errorf("step %s lists %s, want %s", want.id, got, want.sent)
		}
	}
}
