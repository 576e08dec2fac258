//go:build race

package layers

// raceEnabled: the race detector drops a quarter of what is put back into a sync.Pool, on
// purpose, so a pooled buffer is made again that often.
const raceEnabled = true
