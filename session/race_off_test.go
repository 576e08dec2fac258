//go:build !race

package session

// raceEnabled: the race detector is on, and allocation bounds do not hold under it.
const raceEnabled = false
