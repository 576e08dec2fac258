package apply

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/session/changeset"
)

// Decisions survive their file byte for byte whatever a path holds: a name that is not UTF-8
// (which encoding/json would turn into U+FFFD, deciding another path) comes back as it was.
func TestDecisionsKeepEveryPath(t *testing.T) {
	d := Decisions{Version: 1, Files: map[string]FileDecision{
		"plain.txt":       {File: diff.Accepted, BaseHash: "b", StagedHash: "s"},
		"bad\xffname.txt": {File: diff.Rejected},
		"\x00b64:x":       {Hunks: map[string]diff.Decision{"h1": {Verdict: diff.Accepted}}},
		"dir/ü.go":        {File: diff.Accepted},
	}}
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back Decisions
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, d) {
		t.Errorf("decisions after their file:\n%+v\nwant\n%+v", back, d)
	}
}

// A decision holds only for the content it was made about: once the base or the staged file
// changed, the change is undecided again.
func TestDecisionForIsStaleOnceEitherSideChanged(t *testing.T) {
	c := &changeset.Change{Path: "a.txt", New: changeset.Side{Kind: changeset.KindFile, Hash: "staged"}}
	fd := FileDecision{File: diff.Accepted, BaseHash: c.DecisionBase(), StagedHash: changeset.ContentKey(c.New)}
	d := Decisions{Version: 1, Files: map[string]FileDecision{"a.txt": fd}}
	if got := d.For(c); got.File != diff.Accepted {
		t.Fatalf("For = %+v, want the decision made", got)
	}
	restaged := *c
	restaged.New.Hash = "staged again"
	if got := d.For(&restaged); got.File != diff.Undecided {
		t.Errorf("after the agent changed the file again: %+v, want undecided", got)
	}
	stale := d
	stale.Files = map[string]FileDecision{"a.txt": {File: diff.Accepted, BaseHash: "another base", StagedHash: fd.StagedHash}}
	if got := stale.For(c); got.File != diff.Undecided {
		t.Errorf("a decision about another base: %+v, want undecided", got)
	}
}
