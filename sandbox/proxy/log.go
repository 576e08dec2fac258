package proxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
)

// ReadLog reads a request log (JSON lines, one Entry each). A torn last
// line, as a run killed mid-write leaves, is skipped; any other bad line is
// an error naming its number.
func ReadLog(r io.Reader) ([]Entry, error) {
	var out []Entry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var bad error
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		if bad != nil {
			return nil, bad
		}
		var e Entry
		if err := json.Unmarshal(line, &e); err != nil {
			bad = fmt.Errorf("network log line %d: %w", n, err)
			continue
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read network log: %w", err)
	}
	return out, nil
}

// HostSummary is the traffic to one host:port in a request log.
type HostSummary struct {
	Host    string `json:"host"` // host:port
	Allowed int    `json:"allowed"`
	Denied  int    `json:"denied"`
	Up      int64  `json:"bytes_up"`
	Down    int64  `json:"bytes_down"`
}

// LogSummary totals a request log.
type LogSummary struct {
	Requests, Denied int
	Up, Down         int64
	Hosts            []HostSummary // most requests first
}

// Summarize totals entries per destination, for a run's summary or the TUI.
func Summarize(entries []Entry) LogSummary {
	var s LogSummary
	by := map[string]*HostSummary{}
	for _, e := range entries {
		key := e.Host + ":" + strconv.Itoa(e.Port)
		h := by[key]
		if h == nil {
			h = &HostSummary{Host: key}
			by[key] = h
		}
		s.Requests++
		if e.Allowed {
			h.Allowed++
		} else {
			h.Denied++
			s.Denied++
		}
		h.Up += e.Up
		h.Down += e.Down
		s.Up += e.Up
		s.Down += e.Down
	}
	for _, h := range by {
		s.Hosts = append(s.Hosts, *h)
	}
	sort.Slice(s.Hosts, func(i, j int) bool {
		a, b := s.Hosts[i], s.Hosts[j]
		if a.Allowed+a.Denied != b.Allowed+b.Denied {
			return a.Allowed+a.Denied > b.Allowed+b.Denied
		}
		return a.Host < b.Host
	})
	return s
}
