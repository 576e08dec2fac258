package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	seccomp "github.com/seccomp/libseccomp-golang"
	"github.com/spf13/cobra"

	"github.com/shadow-sandbox/shadow/sandbox/confine"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print shadow's version, commit, Go and libseccomp versions and the Landlock ABI",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			commit, dirty := "unknown", ""
			if bi, ok := debug.ReadBuildInfo(); ok {
				for _, s := range bi.Settings {
					switch s.Key {
					case "vcs.revision":
						commit = s.Value
					case "vcs.modified":
						if s.Value == "true" {
							dirty = " (modified)"
						}
					}
				}
			}
			maj, min, micro := seccomp.GetLibraryVersion()
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "shadow %s\n", version)
			fmt.Fprintf(w, "commit:       %s%s\n", commit, dirty)
			fmt.Fprintf(w, "go:           %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
			fmt.Fprintf(w, "libseccomp:   %d.%d.%d\n", maj, min, micro)
			if abi := confine.LandlockABI(); abi > 0 {
				fmt.Fprintf(w, "landlock ABI: %d\n", abi)
			} else {
				fmt.Fprintln(w, "landlock ABI: none (the kernel does not offer Landlock)")
			}
			return nil
		},
	}
}
