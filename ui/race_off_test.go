//go:build !race

package ui

// raceEnabled slows tests that push megabytes through the emulator down.
const raceEnabled = false
