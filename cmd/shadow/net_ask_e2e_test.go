package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// askAgent is a scripted agent that asks, through the jail's proxy, twice for a host off the
// allow-list ($ASK_URL), says what it got each time, and ends on a line from its terminal. Its
// words are printed with printf so that its command line, which the preflight shows, never
// matches them.
const askAgent = `get() { curl -s -o /dev/null -w '%{http_code}' --noproxy '' -x "$HTTP_PROXY" "$1"; }
printf 'agent-%s\n' ready
printf 'first-%s\n' "$(get "$ASK_URL/first")"
printf 'second-%s\n' "$(get "$ASK_URL/second")"
printf 'prompt-%s> ' end; read last; printf 'agent-%s\n' bye`

// TestAskInTmux drives `shadow tui --ask` over a scripted agent in a real terminal: each request
// it makes off the allow-list is put to the user in a dialog over the pane, naming where it goes
// and its method and path; "o" lets exactly that request through (the server receives it, the
// agent gets 200), and the next request to the same destination is asked again; esc denies it
// (403, and the server never sees it). `shadow net` lists both with the answer as their rule.
func TestAskInTmux(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed (Debian: apt install curl)")
	}
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path)
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "a\n"})
	env := []string{"SHADOW_TEST_CLI=1", "TERM=xterm-256color", "ASK_URL=http://127.0.0.1:" + port}
	for _, e := range c.env {
		if strings.HasPrefix(e, "XDG_") {
			env = append(env, e)
		}
	}
	// 127.0.0.1:1 is the allow-list, so that the jail has its proxy; the server is off it.
	scr := newTmux(t, p, env, "sh", "-c", shellQuote(c.bin)+" tui --ask --allow-domain 127.0.0.1:1 --env ASK_URL -- sh -c "+
		shellQuote(askAgent)+"; echo SHADOW-EXIT=$?")
	scr.waitFor("allowed")
	scr.keys("Enter", "network request off the allow-list")
	if d := scr.waitFor("GET /first"); !strings.Contains(d, "127.0.0.1:"+port) || !strings.Contains(d, "o once") ||
		!strings.Contains(d, "d/esc deny") || !strings.Contains(d, "an address of this machine") {
		t.Errorf("the dialog does not say where the request goes, or how to answer:\n%s", d)
	}
	scr.keys("o", "first-200")
	scr.waitFor("GET /second")
	scr.keys("Escape", "second-403")
	scr.keys("Enter", "exited with status 0")
	scr.keys("q", "SHADOW-EXIT=")
	if end := scr.screen(); !strings.Contains(end, "SHADOW-EXIT=0") {
		t.Fatalf("shadow tui did not exit 0:\n%s", end)
	}
	mu.Lock()
	if !slices.Equal(seen, []string{"/first"}) {
		t.Errorf("the server received %q, want only the request let through once", seen)
	}
	mu.Unlock()
	out := c.must(p, "net")
	for _, want := range []string{
		`(?m) GET +http://127\.0\.0\.1:` + port + `/first +200 .* allowed by asked: once$`,
		`(?m) GET +http://127\.0\.0\.1:` + port + `/second +403 .* DENIED: not in the allow-list; asked: denied`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("shadow net: want %s in\n%s", want, out)
		}
	}
}
