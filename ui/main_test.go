package ui

import (
	"os"
	"testing"

	"github.com/shadow-sandbox/shadow/sandbox"
	"github.com/shadow-sandbox/shadow/ui/agenthost"
)

// TestMain lets the test binary act as the shadow binary where the ui
// re-executes it: the jail's stages (sandbox.Run) and the agent host.
func TestMain(m *testing.M) {
	if sandbox.IsReexec() {
		sandbox.ReexecMain()
		return
	}
	if len(os.Args) > 1 && os.Args[1] == agenthost.Arg {
		os.Exit(agenthost.Main())
	}
	os.Exit(m.Run())
}
