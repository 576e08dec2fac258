package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether w is a terminal (colour and escaping decisions depend on it).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
