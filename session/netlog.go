package session

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"

	"github.com/shadow-sandbox/shadow/sandbox/proxy"
	"github.com/shadow-sandbox/shadow/session/history"
)

// Request is one request of the session's network log (SPEC §14) with the
// step it falls in.
type Request struct {
	proxy.Entry
	// Checkpoint is the step's checkpoint: the first taken after the
	// request began. Empty: the request came after the last checkpoint.
	Checkpoint string `json:"checkpoint"`
}

// Destination is where the request went, unescaped: the URL where the proxy saw one, the
// CONNECT target (or host:port) otherwise.
func (r Request) Destination() string {
	hp := net.JoinHostPort(r.Host, strconv.Itoa(r.Port))
	switch {
	case r.Scheme != "" && r.Path != "":
		return r.Scheme + "://" + hp + r.Path
	case r.Target != "":
		return r.Target
	}
	return hp
}

// StepRequests is a step's share of the network log.
type StepRequests struct {
	Checkpoint string // "" for the requests since the last checkpoint
	Requests   int
	Denied     int
}

// Requests reads the session's network log and puts each request in its
// step; a session without a log has none.
func (s *Session) Requests() ([]Request, error) {
	f, err := os.Open(s.NetLog())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open network log: %w", err)
	}
	defer f.Close()
	entries, err := proxy.ReadLog(f)
	if err != nil {
		return nil, err
	}
	cps, err := s.Checkpoints()
	if err != nil {
		return nil, err
	}
	return InSteps(entries, cps), nil
}

// InSteps puts each entry in the step of the first checkpoint taken after
// it began; those after the last checkpoint are in none. cps are in the
// order they were taken.
func InSteps(entries []proxy.Entry, cps []history.Checkpoint) []Request {
	out := make([]Request, len(entries))
	for i, e := range entries {
		out[i].Entry = e
		for _, c := range cps {
			if !c.Time.IsZero() && !c.Time.Before(e.Time) {
				out[i].Checkpoint = c.ID
				break
			}
		}
	}
	return out
}

// CountSteps counts the requests and the denied ones of each step, in the
// order the steps first appear.
func CountSteps(reqs []Request) []StepRequests {
	var out []StepRequests
	at := map[string]int{}
	for _, r := range reqs {
		i, ok := at[r.Checkpoint]
		if !ok {
			i = len(out)
			at[r.Checkpoint] = i
			out = append(out, StepRequests{Checkpoint: r.Checkpoint})
		}
		out[i].Requests++
		if !r.Allowed {
			out[i].Denied++
		}
	}
	return out
}
