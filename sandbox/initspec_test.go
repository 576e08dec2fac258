package sandbox

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestReadSpecRefusesUnknownFields: PID 1 reads the spec the host sends whole, and a spec with a
// field it does not know (from a newer shadow than its shadow-init) is refused with a message
// that says so, for a field at every level of the spec.
func TestReadSpecRefusesUnknownFields(t *testing.T) {
	s := jailSpec{Root: "/tmp/r", Seccomp: []byte{1, 2, 3, 4, 5, 6, 7, 8}, Mounts: []mountSpec{{Kind: mountBind}}}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var got jailSpec
	if err := readSpec(json.NewDecoder(strings.NewReader(string(b))), &got); err != nil {
		t.Fatalf("the spec as the host sends it: %v", err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Errorf("read back %+v, want %+v", got, s)
	}
	for _, extra := range []string{
		`{"NewField":1}`,
		`{"Exec":{"NewField":1}}`,
		`{"Mounts":[{"NewField":1}]}`,
		`{"Checkpoints":{"NewField":1}}`,
	} {
		var got jailSpec
		err := readSpec(json.NewDecoder(strings.NewReader(extra)), &got)
		if err == nil || !strings.Contains(err.Error(), "older build than shadow") {
			t.Errorf("%s: %v, want the refusal of an older build", extra, err)
		}
	}
}
