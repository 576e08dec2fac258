package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/shadow-sandbox/shadow/session"
)

// TestNetByStep: the requests of two runs through the allow-list proxy are
// listed by 'shadow net' in the step each falls in, allowed and denied, as
// text and JSON, filtered by checkpoint and by verdict; 'shadow log' counts them per step.
func TestNetByStep(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed (Debian: apt install curl)")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	c := newCLI(t)
	dir := fixture(t, map[string]string{"a.txt": "a\n"})
	get := func(path, p string) string {
		return `curl -s -o /dev/null --noproxy '' -x "$HTTP_PROXY" http://127.0.0.1:` + p + path + `; `
	}
	c.must(dir, "run", "--allow-domain", "127.0.0.1:"+port, "--", "sh", "-c", get("/one", port)+get("/off-list", "1")+"echo 1 > f1")
	c.must(dir, "run", "--allow-domain", "127.0.0.1:"+port, "--", "sh", "-c", get("/two", port)+"echo 2 > f2")

	out := c.must(dir, "net")
	for _, want := range []string{
		`(?m)^c1 .* GET +http://127\.0\.0\.1:` + port + `/one +200 .* allowed by 127\.0\.0\.1:` + port + `$`,
		`(?m)^c1 .* GET +http://127\.0\.0\.1:1/off-list +403 .* DENIED: not in the allow-list$`,
		`(?m)^c2 .* GET +http://127\.0\.0\.1:` + port + `/two +200 `,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("shadow net: want %s in\n%s", want, out)
		}
	}
	js := c.must(dir, "net", "--checkpoint", "c1", "--denied", "--json")
	var reqs []session.Request
	if err := json.Unmarshal([]byte(js), &reqs); err != nil {
		t.Fatalf("shadow net --json: %v\n%s", err, js)
	}
	if len(reqs) != 1 || reqs[0].Checkpoint != "c1" || reqs[0].Allowed || reqs[0].Path != "/off-list" || reqs[0].Port != 1 {
		t.Errorf("shadow net --checkpoint c1 --denied --json: %s", js)
	}
	if out := c.must(dir, "net", "--checkpoint", "now"); !strings.Contains(out, "no request since the last checkpoint") {
		t.Errorf("shadow net --checkpoint now: %s", out)
	}
	if _, errOut, code := c.run(dir, "net", "--checkpoint", "c9"); code != 2 || !strings.Contains(errOut, "no such checkpoint") {
		t.Errorf("shadow net --checkpoint c9: exit %d, %s", code, errOut)
	}
	// shadow log counts each step's requests.
	log := c.must(dir, "log")
	for _, want := range []string{`(?m)^c1 .*2 requests \(1 DENIED\)$`, `(?m)^c2 .*1 request$`} {
		if !regexp.MustCompile(want).MatchString(log) {
			t.Errorf("shadow log: want %s in\n%s", want, log)
		}
	}
}
