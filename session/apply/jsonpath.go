package apply

import (
	"encoding/json"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/session/changeset"
)

// File names and symlink targets are bytes, not text: encoding/json would replace invalid UTF-8
// with U+FFFD and so point a record at another path. Every path shadow stores in JSON goes
// through changeset.EncS/changeset.DecS: valid UTF-8 is kept as it is, anything else becomes "\x00b64:" + base64 (a
// path never holds a NUL byte, so the prefix is unambiguous).

// MarshalJSON keeps non-UTF-8 paths and edited hunks exact.
func (d Decisions) MarshalJSON() ([]byte, error) {
	type plain Decisions
	return json.Marshal(plain{Version: d.Version, Files: encDecisions(d.Files, changeset.EncS)})
}

// UnmarshalJSON reverses MarshalJSON.
func (d *Decisions) UnmarshalJSON(b []byte) error {
	type plain Decisions
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	d.Version, d.Files = p.Version, encDecisions(p.Files, changeset.DecS)
	return nil
}

func encDecisions(m map[string]FileDecision, f func(string) string) map[string]FileDecision {
	out := make(map[string]FileDecision, len(m))
	for k, fd := range m {
		out[f(k)] = codeFileDecision(fd, f)
	}
	return out
}

func codeFileDecision(fd FileDecision, f func(string) string) FileDecision {
	if len(fd.Hunks) > 0 {
		hs := make(map[string]diff.Decision, len(fd.Hunks))
		for id, d := range fd.Hunks {
			d.Edit = f(d.Edit)
			hs[id] = d
		}
		fd.Hunks = hs
	}
	return fd
}

func codeFileDecisions(m map[string]*FileDecision, f func(string) string) map[string]*FileDecision {
	if m == nil {
		return nil
	}
	out := make(map[string]*FileDecision, len(m))
	for k, fd := range m {
		if fd != nil {
			c := codeFileDecision(*fd, f)
			fd = &c
		}
		out[f(k)] = fd
	}
	return out
}

func (e *JournalEntry) coded(f func(string) string) *JournalEntry {
	c := *e
	c.Paths = make([]journalPath, len(e.Paths))
	for i, jp := range e.Paths {
		jp.Path, jp.Target, jp.Prior.Target = f(jp.Path), f(jp.Target), f(jp.Prior.Target)
		if jp.PriorBase != nil {
			pb := *jp.PriorBase
			pb.Target = f(pb.Target)
			jp.PriorBase = &pb
		}
		c.Paths[i] = jp
	}
	c.Dirs = make([]string, len(e.Dirs))
	for i, d := range e.Dirs {
		c.Dirs[i] = f(d)
	}
	c.RemovedDirs = make([]removedDir, len(e.RemovedDirs))
	for i, d := range e.RemovedDirs {
		d.Path = f(d.Path)
		c.RemovedDirs[i] = d
	}
	c.Decisions = codeFileDecisions(e.Decisions, f)
	c.PriorDecisions = codeFileDecisions(e.PriorDecisions, f)
	return &c
}

// MarshalJSON keeps non-UTF-8 paths exact.
func (e JournalEntry) MarshalJSON() ([]byte, error) {
	type plain JournalEntry
	return json.Marshal(plain(*e.coded(changeset.EncS)))
}

// UnmarshalJSON reverses MarshalJSON.
func (e *JournalEntry) UnmarshalJSON(b []byte) error {
	type plain JournalEntry
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	x := JournalEntry(p)
	*e = *x.coded(changeset.DecS)
	return nil
}
