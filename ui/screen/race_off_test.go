//go:build !race

package screen

// raceEnabled: the race detector sees bubbletea's own shutdown after a panic (below).
const raceEnabled = false
