package sandbox

import (
	"encoding/json"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// TestProtocolEncoding: each message of the host↔PID 1 protocol, and of the
// exec stage's reports, encodes to the line the other side reads, and reads
// back the same.
func TestProtocolEncoding(t *testing.T) {
	t.Parallel()
	code, failed := 3, 127
	cases := []struct {
		v    any
		line string
	}{
		{request{Go: true}, `{"go":true}`},
		{request{Checkpoint: CheckpointPrompt}, `{"checkpoint":"prompt"}`},
		{event{Ready: true}, `{"ready":true}`},
		{event{Started: &commandStarted{Landlock: 6}}, `{"started":{"landlock":6}}`},
		{event{Started: &commandStarted{ExecFailed: &failed}}, `{"started":{"landlock":0,"exec_failed":127}}`},
		{event{Failed: &stepFailure{Step: "mount overlay", Error: "EPERM"}}, `{"failed":{"step":"mount overlay","error":"EPERM"}}`},
		{event{Merging: true}, `{"merging":true}`},
		{event{Checkpointed: &Checkpoint{N: 2, Trigger: CheckpointQuiet}}, ""},
		{event{CheckpointError: "disk full"}, `{"checkpoint_error":"disk full"}`},
		{event{CheckpointNote: "budget"}, `{"checkpoint_note":"budget"}`},
		{event{CheckpointAnswered: CheckpointManual}, `{"checkpoint_answered":"manual"}`},
		{event{End: &runEnd{Exit: 130, Signal: syscall.SIGINT, LayerBytes: 4096, LayerFull: true, StagingError: "ENOSPC"}},
			`{"end":{"exit":130,"signal":2,"layer_bytes":4096,"layer_full":true,"staging_error":"ENOSPC"}}`},
		{event{End: &runEnd{}}, `{"end":{"exit":0}}`},
		// The lines execstage.c writes.
		{stageReport{Confined: true, Landlock: 6}, `{"confined":true,"landlock":6}`},
		{stageReport{Step: "seccomp", Error: "load the command's filter: EINVAL"}, `{"step":"seccomp","error":"load the command's filter: EINVAL"}`},
		{stageReport{Error: "exec /x: ENOENT", Exit: &code}, `{"error":"exec /x: ENOENT","exit":3}`},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		if c.line != "" && string(b) != c.line {
			t.Errorf("%#v encodes as %s, want %s", c.v, b, c.line)
		}
		back := reflect.New(reflect.TypeOf(c.v))
		if err := json.Unmarshal(b, back.Interface()); err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		if !reflect.DeepEqual(back.Elem().Interface(), c.v) {
			t.Errorf("%s decodes as %#v, want %#v", b, back.Elem().Interface(), c.v)
		}
	}
}

// TestProtocolDirections: a request and an event share no field, so that a
// line sent one way is never read as something meant for the other way;
// every field of either type is exercised by TestProtocolEncoding's lines.
func TestProtocolDirections(t *testing.T) {
	t.Parallel()
	keys := func(v any) map[string]bool {
		out := map[string]bool{}
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			out[name] = true
		}
		return out
	}
	req, ev := keys(request{}), keys(event{})
	for k := range req {
		if ev[k] {
			t.Errorf("field %q is both a request's and an event's", k)
		}
	}
	var e event
	if err := json.Unmarshal([]byte(`{"go":true,"checkpoint":"manual"}`), &e); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(e, event{}) {
		t.Errorf("a request read as an event: %#v", e)
	}
}
