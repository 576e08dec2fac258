package screen

import "time"

// Pacer spaces frames: the first Burst frames after a quiet spell go at
// once, and a flood gets one frame an Interval. An agent writes the echo of a
// key in a few small writes a millisecond or two apart, each worth drawing at
// once; an agent printing a build log needs no more frames than the terminal
// shows.
type Pacer struct {
	Interval time.Duration
	Burst    int
	// next is when the budget of frames is spent: a frame at or after
	// next-(Burst-1)*Interval goes at once.
	next time.Time
}

// Wait is how long a frame ready at now waits for its turn (0: at once).
func (p *Pacer) Wait(now time.Time) time.Duration {
	burst := max(p.Burst, 1)
	return max(p.next.Add(-time.Duration(burst-1)*p.Interval).Sub(now), 0)
}

// Take counts a frame drawn at now.
func (p *Pacer) Take(now time.Time) {
	if p.next.Before(now) {
		p.next = now
	}
	p.next = p.next.Add(p.Interval)
}
