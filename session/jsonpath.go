package session

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

// File names and symlink targets are bytes, not text: encoding/json would replace invalid UTF-8
// with U+FFFD and so point a record at another path. Every path shadow stores in JSON goes
// through encS/decS: valid UTF-8 is kept as it is, anything else becomes "\x00b64:" + base64 (a
// path never holds a NUL byte, so the prefix is unambiguous).

const binPrefix = "\x00b64:"

func encS(s string) string {
	if utf8.ValidString(s) && !strings.HasPrefix(s, "\x00") {
		return s
	}
	return binPrefix + base64.StdEncoding.EncodeToString([]byte(s))
}

func decS(s string) string {
	if !strings.HasPrefix(s, binPrefix) {
		return s
	}
	b, err := base64.StdEncoding.DecodeString(s[len(binPrefix):])
	if err != nil {
		return s
	}
	return string(b)
}

// MarshalJSON keeps non-UTF-8 paths exact. It writes what encoding/json would write for the
// index (keys sorted, fields in order, empty ones left out) without reflection: the index is saved
// at the end of every run that took a pre-image, and holds thousands of entries.
func (x baseIndex) MarshalJSON() ([]byte, error) {
	type key struct{ coded, path string }
	keys := make([]key, 0, len(x.Paths))
	for k := range x.Paths {
		keys = append(keys, key{encS(k), k})
	}
	slices.SortFunc(keys, func(a, b key) int { return strings.Compare(a.coded, b.coded) })
	out := make([]byte, 0, 64+len(keys)*256)
	out = append(out, `{"version":`...)
	out = strconv.AppendInt(out, int64(x.Version), 10)
	out = append(out, `,"paths":`...)
	if x.Paths == nil {
		return append(out, "null}"...), nil
	}
	out = append(out, '{')
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendJSONString(out, k.coded)
		out = append(out, ':')
		out = appendBaseEntry(out, x.Paths[k.path])
	}
	return append(out, "}}"...), nil
}

// appendBaseEntry appends e as encoding/json encodes it (its Target coded with encS).
func appendBaseEntry(out []byte, e baseEntry) []byte {
	num := func(name string, v int64) {
		if v != 0 {
			out = append(out, `,"`+name+`":`...)
			out = strconv.AppendInt(out, v, 10)
		}
	}
	str := func(name, v string) {
		if v != "" {
			out = append(out, `,"`+name+`":`...)
			out = appendJSONString(out, v)
		}
	}
	out = append(out, `{"k":`...)
	out = appendJSONString(out, string(e.Kind))
	num("t", int64(e.Type))
	num("m", int64(e.Mode))
	str("h", e.Hash)
	str("l", encS(e.Target))
	str("p", e.Pack)
	num("o", e.Off)
	num("n", e.Len)
	if e.Bin {
		out = append(out, `,"b":true`...)
	}
	num("z", e.Holes)
	out = append(out, `,"s":{"Type":`...)
	out = strconv.AppendUint(out, uint64(e.Host.Type), 10)
	out = append(out, `,"Mode":`...)
	out = strconv.AppendUint(out, uint64(e.Host.Mode), 10)
	out = append(out, `,"Size":`...)
	out = strconv.AppendInt(out, e.Host.Size, 10)
	out = append(out, `,"Mtime":`...)
	out = strconv.AppendInt(out, e.Host.Mtime, 10)
	out = append(out, `,"Ino":`...)
	out = strconv.AppendUint(out, e.Host.Ino, 10)
	return append(out, "}}"...)
}

// appendJSONString appends s as a JSON string the way encoding/json writes it: plain printable
// ASCII as it is, anything else through encoding/json itself.
func appendJSONString(out []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(out, q...)
		}
	}
	out = append(out, '"')
	out = append(out, s...)
	return append(out, '"')
}

// UnmarshalJSON reverses MarshalJSON.
func (x *baseIndex) UnmarshalJSON(b []byte) error {
	type plain baseIndex
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	x.Version, x.Paths = p.Version, make(map[string]baseEntry, len(p.Paths))
	for k, e := range p.Paths {
		e.Target = decS(e.Target)
		x.Paths[decS(k)] = e
	}
	return nil
}

// MarshalJSON keeps non-UTF-8 paths and edited hunks exact.
func (d Decisions) MarshalJSON() ([]byte, error) {
	type plain Decisions
	return json.Marshal(plain{Version: d.Version, Files: encDecisions(d.Files, encS)})
}

// UnmarshalJSON reverses MarshalJSON.
func (d *Decisions) UnmarshalJSON(b []byte) error {
	type plain Decisions
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	d.Version, d.Files = p.Version, encDecisions(p.Files, decS)
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

func (e *journalEntry) coded(f func(string) string) *journalEntry {
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
func (e journalEntry) MarshalJSON() ([]byte, error) {
	type plain journalEntry
	return json.Marshal(plain(*e.coded(encS)))
}

// UnmarshalJSON reverses MarshalJSON.
func (e *journalEntry) UnmarshalJSON(b []byte) error {
	type plain journalEntry
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	x := journalEntry(p)
	*e = *x.coded(decS)
	return nil
}
