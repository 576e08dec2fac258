package session

import (
	"fmt"

	"github.com/shadow-sandbox/shadow/diffview/diff"
	"github.com/shadow-sandbox/shadow/internal/quote"
	"github.com/shadow-sandbox/shadow/session/changeset"
)

// Patches turns changes into what diff.WritePatch needs (old/new path, git modes,
// both contents, binary flag; a symlink's content is its target). Its output applies with
// `git apply` to the project as the session's base holds it (the project at session start, until
// an apply moves the base). Special files have no git form and are left out.
func (s *Session) Patches(changes []*changeset.Change) ([]diff.FilePatch, error) {
	host, b, err := s.source().OpenView()
	if err != nil {
		return nil, err
	}
	defer host.Close()
	defer b.Close()
	var out []diff.FilePatch
	for _, c := range changes {
		if c.Old.Kind == changeset.KindSpecial || c.New.Kind == changeset.KindSpecial {
			continue
		}
		fp := diff.FilePatch{OldPath: c.Path, NewPath: c.Path, OldMode: gitMode(c.Old), NewMode: gitMode(c.New), Binary: c.Binary}
		if c.From != "" {
			fp.OldPath = c.From
		}
		fp.Note = c.Note()
		if c.Old.Size > changeset.MaxPatchBytes || c.New.Size > changeset.MaxPatchBytes || fp.Note != "" {
			// Too large to hold in memory, sparse, or unreadable: shown as a binary change, never
			// read.
			fp.TooLarge, fp.OldSize, fp.NewSize, fp.Binary = true, c.Old.Size, c.New.Size, true
			out = append(out, fp)
			continue
		}
		old, new, err := s.source().Contents(b, host, c, changeset.MaxPatchBytes)
		if err != nil {
			return nil, fmt.Errorf("diff %s: %w", quote.Path(c.Path), err)
		}
		fp.Old, fp.New = old, new
		if c.Old.Kind == changeset.KindSymlink {
			fp.Old = []byte(c.Old.Target)
		}
		if c.New.Kind == changeset.KindSymlink {
			fp.New = []byte(c.New.Target)
		}
		out = append(out, fp)
	}
	return out, nil
}

// DiffDoc is the `shadow diff --json` document, version 1:
//
//	{
//	  "version": 1, "session": "<id>", "project": "/abs/path",
//	  "files": [{
//	    "path": "a/b.go", "from": "old/name.go" (renames only),
//	    "status": "A|M|D|R|T",
//	    "old": {"kind": "file|symlink|special", "mode": 420, "size": 12, "target": "...", "sha256": "...",
//	            "holes": 1099511627776 (a sparse file: its bytes in holes)},
//	    "new": { same fields },
//	    "binary", "mode_only", "ignored", "protected", "conflict", "conflict_reason",
//	    "outside_link", "special", "setid", "base_unknown": flags, present when true,
//	    "unreadable": why the staged entry could not be read (never applied),
//	    "decision": "accept|reject" (whole-file verdict, when one holds),
//	    "hunks": [{"id": "8 hex bytes", "header": "@@ -1,3 +1,4 @@",
//	               "old_start": 1, "old_count": 3, "new_start": 1, "new_count": 4,
//	               "lines": [" context\n", "-removed\n", "+added\n"],
//	               "decision": "accept|reject" (absent when undecided)}]
//	  }]
//	}
//
// Modes are decimal numbers holding the permission bits (0o7777). Lines keep their exact bytes
// including the newline ("\ No newline at end of file" is implied by a line without one). Hunks
// are present for text files that are decided hunk by hunk.
type DiffDoc struct {
	Version int        `json:"version"`
	Session string     `json:"session"`
	Project string     `json:"project"`
	Files   []DiffFile `json:"files"`
}

// DiffFile is one change of a DiffDoc.
type DiffFile struct {
	changeset.Change
	Decision diff.Verdict `json:"decision,omitempty"`
	Hunks    []DiffHunk   `json:"hunks,omitempty"`
}

// DiffHunk is one hunk of a DiffFile.
type DiffHunk struct {
	ID       string       `json:"id"`
	Header   string       `json:"header"`
	OldStart int          `json:"old_start"`
	OldCount int          `json:"old_count"`
	NewStart int          `json:"new_start"`
	NewCount int          `json:"new_count"`
	Lines    []string     `json:"lines"`
	Decision diff.Verdict `json:"decision,omitempty"`
}

// Doc builds the `shadow diff --json` document of the given changes.
func (s *Session) Doc(changes []*changeset.Change) (*DiffDoc, error) {
	decs, err := s.LoadDecisions()
	if err != nil {
		return nil, err
	}
	// One load of the bases serves every file.
	host, b, err := s.source().OpenView()
	if err != nil {
		return nil, err
	}
	defer host.Close()
	defer b.Close()
	doc := &DiffDoc{Version: 1, Session: s.Meta.ID, Project: s.Meta.Project, Files: []DiffFile{}}
	for _, c := range changes {
		fd := decs.For(c)
		f := DiffFile{Change: *c, Decision: fd.File}
		d, err := s.applier().DiffIn(b, host, c)
		if err != nil {
			return nil, err
		}
		for _, h := range d.Hunks {
			dh := DiffHunk{ID: h.ID, Header: h.Header(), OldStart: h.OldStart, OldCount: h.OldCount,
				NewStart: h.NewStart, NewCount: h.NewCount, Decision: fd.Hunks[h.ID].Verdict}
			for _, l := range h.Lines {
				dh.Lines = append(dh.Lines, string(l.Op)+l.Text)
			}
			f.Hunks = append(f.Hunks, dh)
		}
		doc.Files = append(doc.Files, f)
	}
	return doc, nil
}

// gitMode is the git mode of one side of a change (0 when it does not exist).
func gitMode(s changeset.Side) uint32 {
	switch s.Kind {
	case changeset.KindFile:
		if s.Mode&0o100 != 0 {
			return diff.ModeExecutable
		}
		return diff.ModeFile
	case changeset.KindSymlink:
		return diff.ModeSymlink
	}
	return 0
}
