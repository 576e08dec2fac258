package changeset

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

const binPrefix = "\x00b64:"

func EncS(s string) string {
	if utf8.ValidString(s) && !strings.HasPrefix(s, "\x00") {
		return s
	}
	return binPrefix + base64.StdEncoding.EncodeToString([]byte(s))
}

func DecS(s string) string {
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
func (x BaseIndex) MarshalJSON() ([]byte, error) {
	type key struct{ coded, path string }
	keys := make([]key, 0, len(x.Paths))
	for k := range x.Paths {
		keys = append(keys, key{EncS(k), k})
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

// appendBaseEntry appends e as encoding/json encodes it (its Target coded with EncS).
func appendBaseEntry(out []byte, e BaseEntry) []byte {
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
	str("l", EncS(e.Target))
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
func (x *BaseIndex) UnmarshalJSON(b []byte) error {
	type plain BaseIndex
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	x.Version, x.Paths = p.Version, make(map[string]BaseEntry, len(p.Paths))
	for k, e := range p.Paths {
		e.Target = DecS(e.Target)
		x.Paths[DecS(k)] = e
	}
	return nil
}
