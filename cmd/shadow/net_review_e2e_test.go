package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// netStepsAgent is a scripted agent that, answering two prompts, makes in each step one request
// through the jail's proxy and one edit: to the allowed server ($NET_URL) in the first, to a port
// off the allow-list in the second. Its words are printed with printf so that its command line,
// which the preflight shows, never matches them.
const netStepsAgent = `get() { curl -s -o /dev/null -w '%{http_code}' --noproxy '' -x "$HTTP_PROXY" "$1"; }
printf 'agent-%s\n' ready
printf 'prompt-%s> ' one; read first
printf 'got-%s\n' "$(get "$NET_URL/one")"; echo one > f1; sleep 0.2; printf 'agent-did-%s\n' one
printf 'prompt-%s> ' two; read second
printf 'got-%s\n' "$(get http://127.0.0.1:1/off-list)"; echo two > f2; sleep 0.2; printf 'agent-did-%s\n' two
printf 'prompt-%s> ' end; read last; printf 'agent-%s\n' bye`

// TestNetReviewInTmux drives `shadow tui` over a scripted agent whose two steps each make a
// request, the first allowed and the second refused: the review narrowed to each step lists that
// step's request beside its files (the refused one marked DENIED) and not the other's, and
// `shadow net` lists each in its step.
func TestNetReviewInTmux(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed (Debian: apt install curl)")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	c := newCLI(t)
	p := fixture(t, map[string]string{"a.txt": "a\n"})
	env := []string{"SHADOW_TEST_CLI=1", "TERM=xterm-256color", "NET_URL=http://127.0.0.1:" + port}
	for _, e := range c.env {
		if strings.HasPrefix(e, "XDG_") {
			env = append(env, e)
		}
	}
	scr := newTmux(t, p, env, "sh", "-c", shellQuote(c.bin)+" tui --allow-domain 127.0.0.1:"+port+" --env NET_URL -- sh -c "+
		shellQuote(netStepsAgent)+"; echo SHADOW-EXIT=$?")
	scr.waitFor("allowed")
	scr.keys("Enter", "prompt-one>")
	scr.typeText("fetch")
	scr.keys("Enter", "agent-did-one")
	scr.typeText("refused")
	scr.keys("Enter", "agent-did-two")
	// The status bar (100 columns: its narrow form) counts the denial and names the latest checkpoint.
	scr.waitFor("2 net (1 DENIED) c2 ")
	scr.keys("Enter", "exited with status 0")

	// The review, narrowed to the last step, then to the first.
	scr.keys("Enter", "file 1/")
	scr.keys("<", " c2 2/2 ")
	step2 := scr.waitFor("c2: 1 request (1 DENIED)")
	if !strings.Contains(step2, "✗ GET DENIED") || !strings.Contains(step2, "127.0.0.1:1/off") || strings.Contains(step2, "✓ GET") ||
		!strings.Contains(step2, "f2") || strings.Contains(step2, "f1 ") {
		t.Errorf("the review narrowed to c2 does not list its request, refused, beside its file alone:\n%s", step2)
	}
	scr.keys("<", " c1 1/2 ")
	step1 := scr.waitFor("c1: 1 request")
	if !strings.Contains(step1, "✓ GET 200") || strings.Contains(step1, "DENIED") || strings.Contains(step1, "off-list") {
		t.Errorf("the review narrowed to c1 does not list its request, allowed, alone:\n%s", step1)
	}
	scr.keys("q", "SHADOW-EXIT=")
	if end := scr.screen(); !strings.Contains(end, "SHADOW-EXIT=0") {
		t.Fatalf("shadow tui did not exit 0:\n%s", end)
	}

	out := c.must(p, "net")
	for _, want := range []string{
		`(?m)^c1 .* GET +http://127\.0\.0\.1:` + port + `/one +200 .* allowed by 127\.0\.0\.1:` + port + `$`,
		`(?m)^c2 .* GET +http://127\.0\.0\.1:1/off-list +403 .* DENIED: not in the allow-list$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("shadow net: want %s in\n%s", want, out)
		}
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 {
		t.Errorf("shadow net lists other requests than the two:\n%s", out)
	}
}
