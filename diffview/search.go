package diffview

import (
	"strings"

	"github.com/shadow-sandbox/shadow/diffview/diff"
)

// Search: finding a text across the files' rows, and marking its matches.

// find moves to the next (dir 1) or previous match of the search, across
// files, wrapping around.
func (m *Model) find(dir int, skipCurrent bool) {
	if m.search == "" || len(m.files) == 0 {
		return
	}
	needle := asciiLower(m.search)
	fi := m.cur
	start := m.files[fi].cursor
	if skipCurrent {
		start += dir
	}
	for n := 0; n <= len(m.files); n++ {
		f := m.files[fi]
		if f.hidden() {
			fi = (fi + dir + len(m.files)) % len(m.files)
			continue
		}
		rows := f.rows(m.sideBySide)
		if n > 0 {
			start = 0
			if dir < 0 {
				start = len(rows) - 1
			}
		}
		for i := start; i >= 0 && i < len(rows); i += dir {
			if containsFold(f.lineText(rows[i]), needle) {
				m.cur = fi
				f.cursor = i
				m.focus = diffPane
				m.clampAll()
				m.revealMatch(f, rows[i], needle)
				m.setStatus("/" + diff.EscapeLine(m.search))
				return
			}
		}
		fi = (fi + dir + len(m.files)) % len(m.files)
	}
	m.setError("not found: " + diff.EscapeLine(m.search))
}

// containsFold reports whether hay contains needle (already lower-case),
// ignoring ASCII case, without allocating: search runs over every row of a
// file on each n, so candidates are found with IndexByte.
func containsFold(hay, needle string) bool {
	if needle == "" {
		return true
	}
	first := needle[0]
	upper := first
	if first >= 'a' && first <= 'z' {
		upper = first - 'a' + 'A'
	}
	for pos := 0; pos+len(needle) <= len(hay); {
		i := strings.IndexByte(hay[pos:], first)
		if upper != first {
			if j := strings.IndexByte(hay[pos:], upper); j >= 0 && (i < 0 || j < i) {
				i = j
			}
		}
		if i < 0 || pos+i+len(needle) > len(hay) {
			return false
		}
		at := pos + i
		match := true
		for k := 1; k < len(needle); k++ {
			c := hay[at+k]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != needle[k] {
				match = false
				break
			}
		}
		if match {
			return true
		}
		pos = at + 1
	}
	return false
}

// searchMatches marks the bytes of text inside a match of the search
// (case-insensitive for ASCII), or returns nil when there is none.
func searchMatches(text, search string) []bool {
	if search == "" {
		return nil
	}
	hay, needle := asciiLower(text), asciiLower(search)
	var marks []bool
	for at := 0; at <= len(hay)-len(needle); {
		i := strings.Index(hay[at:], needle)
		if i < 0 {
			break
		}
		if marks == nil {
			marks = make([]bool, len(text))
		}
		for k := at + i; k < at+i+len(needle); k++ {
			marks[k] = true
		}
		at += i + max(1, len(needle))
	}
	return marks
}

// asciiLower lowers ASCII letters only, keeping byte offsets.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
