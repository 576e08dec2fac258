package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command says more in its --help than its one-line summary: what it does, what it
// touches and what it refuses, as `shadow run --help` does.
func TestEveryCommandHasLongHelp(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" || strings.HasPrefix(sub.CommandPath(), "shadow completion") {
				continue
			}
			if lines := strings.Count(strings.TrimSpace(sub.Long), "\n") + 1; sub.Long == "" || lines < 2 {
				t.Errorf("`%s --help` has no more than its one-line summary (Long: %q)", sub.CommandPath(), sub.Long)
			}
			walk(sub)
		}
	}
	walk(newRootCmd())
}
