//go:build race

package pane

// raceSlowdown is how much slower the race detector makes the emulator's work: a cost bound
// measured without it is this many times wider with it.
const raceSlowdown = 10
