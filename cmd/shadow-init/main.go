// Command shadow-init is the jail's PID 1 and its exec stage, apart from the shadow command so
// that every jail starts a small program: it links the jail's side of the sandbox package and
// none of the app. shadow starts it from beside its own executable, or from ../libexec/shadow,
// and re-executes itself when it finds none.
package main

import (
	"fmt"
	"os"

	"github.com/shadow-sandbox/shadow/sandbox"
)

func main() {
	if sandbox.IsReexec() {
		sandbox.ReexecMain()
	}
	fmt.Fprintln(os.Stderr, "shadow-init is started by shadow as PID 1 of its jail; run shadow instead")
	os.Exit(2)
}
