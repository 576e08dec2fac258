package ui

import (
	"slices"
	"testing"

	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/ui/agenthost"
)

// TestAttachShowsTheHostsLayers: an app attached to a running agent host shows the layers of the
// agent's jail as its host started it (agenthost.State), not those of the policy the attaching
// command resolved, whatever that policy is.
func TestAttachShowsTheHostsLayers(t *testing.T) {
	ts := newTestSession(t, map[string]string{"a.txt": "a\n"})
	host := []agenthost.Layer{{Name: "userns", On: true}, {Name: "netns+proxy", On: true}, {Name: "overlay", On: true}}
	for _, p := range []sandbox.Policy{{Project: ts.project}, {Project: ts.project, AllowNetwork: true}} {
		j := &Jail{Lock: ts.lock, Session: ts.s, Policy: p, Attach: &agenthost.State{Layers: host}}
		opts := WithJail(Options{}, j)
		want := make([]Layer, len(host))
		for i, l := range host {
			want[i] = Layer(l)
		}
		if !slices.Equal(opts.Layers, want) {
			t.Errorf("AllowNetwork %v: the attached app shows %v, want the host's %v", p.AllowNetwork, opts.Layers, want)
		}
	}
}
