package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// TestSecretFlag: --secret NAME=HOST gives the jail a placeholder, and the server at HOST gets the
// real value where the command put the placeholder; the network log shows the placeholder's
// secret by name, never the value. A variable that is not set, or passed with --env too, is
// refused; --env for a preset's secret warns that the agent will see the value.
func TestSecretFlag(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed (Debian: apt install curl)")
	}
	const value = "sk-cli-secret-value-77"
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("X-Api-Key"))
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	c := newCLI(t)
	c.env = append(c.env, "API_KEY="+value, "ANTHROPIC_API_KEY=sk-ant-cli")
	dir := fixture(t, map[string]string{"a.txt": "a\n"})
	out := c.must(dir, "run", "--allow-domain", "127.0.0.1:"+port, "--secret", "API_KEY=127.0.0.1", "--", "sh", "-c",
		`echo "jail=$API_KEY"; curl -s --noproxy '' -x "$HTTP_PROXY" -H "X-Api-Key: $API_KEY" http://127.0.0.1:`+port+`/`)
	if !regexp.MustCompile(`jail=shadow-secret-API_KEY-[0-9a-f]{16}\n`).MatchString(out) || strings.Contains(out, value) {
		t.Errorf("the jail's API_KEY: %s", out)
	}
	mu.Lock()
	if len(got) != 1 || got[0] != value {
		t.Errorf("the server got X-Api-Key %q, want the real value", got)
	}
	mu.Unlock()
	js := c.must(dir, "net", "--json")
	if strings.Contains(js, value) || !regexp.MustCompile(`"secrets": \[\s*"API_KEY"\s*\]`).MatchString(js) {
		t.Errorf("shadow net --json: %s", js)
	}

	for _, bad := range [][]string{{"--secret", "NOT_SET_ANYWHERE=x.test"}, {"--secret", "API_KEY=x.test", "--env", "API_KEY"},
		{"--secret", "API_KEY"}, {"--secret", "API_KEY=http://x.test/"}} {
		args := append(append([]string{"run", "--allow-domain", "x.test"}, bad...), "--", "true")
		if _, errOut, code := c.run(dir, args...); code != 2 || !strings.Contains(errOut, "--secret") {
			t.Errorf("shadow %v: exit %d, %s", args, code, errOut)
		}
	}
	_, errOut, _ := c.run(dir, "run", "--preset", "claude", "--env", "ANTHROPIC_API_KEY", "--", "true")
	if !strings.Contains(errOut, "shadow: warning: --env ANTHROPIC_API_KEY passes the real value of ANTHROPIC_API_KEY into the jail") {
		t.Errorf("no warning for --env of a preset's secret: %s", errOut)
	}
}
