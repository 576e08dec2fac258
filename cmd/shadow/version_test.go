package main

import (
	"runtime/debug"
	"testing"
)

// TestBuildVersion: the commit comes from the Makefile's linker flags, else from the build's VCS
// stamp; only a build with neither says it is unknown.
func TestBuildVersion(t *testing.T) {
	stamped := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}}
	installed := &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}
	for _, tc := range []struct {
		name                      string
		version, commit, modified string
		bi                        *debug.BuildInfo
		wantV, wantC              string
	}{
		{"make build", "v0.3-2-gdeadbee", "deadbeef", "", stamped, "v0.3-2-gdeadbee", "deadbeef"},
		{"make build, edited tree", "v0.3-dirty", "deadbeef", "true", nil, "v0.3-dirty", "deadbeef (modified)"},
		{"go build in a checkout", "dev", "", "", stamped, "dev", "abc123 (modified)"},
		{"go install @v1.2.3", "dev", "", "", installed, "v1.2.3", "unknown (built outside a git checkout, or without `make build`)"},
	} {
		v, c := buildVersion(tc.version, tc.commit, tc.modified, tc.bi)
		if v != tc.wantV || c != tc.wantC {
			t.Errorf("%s: %q, %q; want %q, %q", tc.name, v, c, tc.wantV, tc.wantC)
		}
	}
}
