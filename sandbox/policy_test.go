package sandbox

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/shadow-sandbox/shadow/sandbox/proxy"
)

// TestPolicyIsData: every field of Policy is data (no stream, channel,
// function or interface: those are IO's), and a policy with every field
// set survives a JSON round trip whole.
func TestPolicyIsData(t *testing.T) {
	t.Parallel()
	var check func(path string, rt reflect.Type)
	check = func(path string, rt reflect.Type) {
		switch rt.Kind() {
		case reflect.Func, reflect.Chan, reflect.Interface, reflect.UnsafePointer:
			t.Errorf("Policy%s is a %s: wiring, not data", path, rt.Kind())
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			check(path+"[]", rt.Elem())
		case reflect.Struct:
			if rt == reflect.TypeOf(time.Time{}) {
				return
			}
			for i := range rt.NumField() {
				f := rt.Field(i)
				if !f.IsExported() {
					continue
				}
				if tag := f.Tag.Get("json"); tag == "-" && path == "" {
					t.Errorf("Policy.%s is hidden from JSON", f.Name)
				}
				check(path+"."+f.Name, f.Type)
			}
		}
	}
	check("", reflect.TypeOf(Policy{}))

	rules, err := proxy.ParseRules([]string{"api.example.com", "*.npmjs.org:443"})
	if err != nil {
		t.Fatal(err)
	}
	p := Policy{
		Project: "/p", Dir: "/p/sub", Upper: "/s/upper", CacheDir: "/s/cache", MaskCache: "/c", RuntimeDir: "/s/run",
		Home: "/home/u", Env: []string{"A=1"}, ReadOnly: []string{"/ro"}, ReadWrite: []string{"/rw"},
		GitWritable: true, NoCache: true, AllowNetwork: true, Publish: []int{8080}, AllowDomains: rules,
		NetLog: "/s/net.log", StateBinds: []StateBind{{Src: "/a", Dst: "/home/u/.a"}},
		AgentCaches: []AgentCache{{Dst: "/home/u/.cache/a", Layer: "/s/a"}}, Timeout: time.Minute,
		KillGrace: time.Second, Checkpoints: "/s/cp", NextCheckpoint: 4, CheckpointBudget: 1 << 30,
		QuietCheckpoint: 2 * time.Second, MaxUpperBytes: 1 << 20, TmpSize: 1 << 21, HomeSize: 1 << 22,
		NetHelpers: []string{"slirp4netns"}, Command: []string{"claude"},
		// A secret's value is never written out (json:"-"): the round trip keeps the rest.
		Secrets: []proxy.Secret{{Name: "API_KEY", Placeholder: "shadow-secret-API_KEY-0", Hosts: []string{"api.example.com"}}},
	}
	fill(t, reflect.ValueOf(&p).Elem())
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back Policy
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, p) {
		t.Errorf("a policy changed in a JSON round trip:\n%s\n%+v\n%+v", b, p, back)
	}
}

// fill checks that every exported field of the policy the test built is set,
// so that the round trip covers each.
func fill(t *testing.T, v reflect.Value) {
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.IsExported() && v.Field(i).IsZero() {
			t.Errorf("the round trip leaves Policy.%s unset: set it", f.Name)
		}
	}
}
