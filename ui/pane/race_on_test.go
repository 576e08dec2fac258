//go:build race

package pane

// raceEnabled slows tests that push megabytes through the emulator down.
const raceEnabled = true
