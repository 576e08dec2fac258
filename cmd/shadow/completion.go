package main

import (
	"github.com/spf13/cobra"

	"github.com/shadow-sandbox/shadow/sandbox/preset"
)

// registerCompletions adds the completion of flag values to every command that has the flag:
// `--preset <TAB>` lists the agent presets.
func registerCompletions(root *cobra.Command) {
	presets := func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return preset.Names(), cobra.ShellCompDirectiveNoFileComp
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("preset") != nil {
			_ = c.RegisterFlagCompletionFunc("preset", presets)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
