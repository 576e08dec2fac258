package proxy

import (
	"strings"
	"testing"
)

func TestReadLogAndSummarize(t *testing.T) {
	log := `{"method":"GET","host":"api.test","port":80,"allowed":true,"status":200,"bytes_up":10,"bytes_down":100}
{"method":"CONNECT","host":"api.test","port":443,"allowed":true,"status":200,"bytes_up":5,"bytes_down":50}

{"method":"GET","host":"evil.test","port":80,"allowed":false,"status":403}
{"method":"GET","host":"api.test","port":80,"allowed":true,"status":200,"bytes_up":1,"bytes_down":2}
{"method":"GET","host":"torn`
	entries, err := ReadLog(strings.NewReader(log))
	if err != nil || len(entries) != 4 {
		t.Fatalf("ReadLog: %d entries, %v", len(entries), err)
	}
	s := Summarize(entries)
	if s.Requests != 4 || s.Denied != 1 || s.Up != 16 || s.Down != 152 {
		t.Errorf("summary %+v", s)
	}
	if len(s.Hosts) != 3 || s.Hosts[0].Host != "api.test:80" || s.Hosts[0].Allowed != 2 || s.Hosts[2].Host != "evil.test:80" || s.Hosts[2].Denied != 1 {
		t.Errorf("hosts %+v", s.Hosts)
	}
	// A bad line in the middle is an error, not silently skipped.
	if _, err := ReadLog(strings.NewReader("{}\nnot json\n{}\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad middle line: %v", err)
	}
}
