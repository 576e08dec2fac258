package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	seccomp "github.com/seccomp/libseccomp-golang"
	"github.com/spf13/cobra"

	"github.com/shadow-sandbox/shadow/sandbox/confine"
)

// version, commit and modified are set at build time by the Makefile, with -ldflags
// "-X main.version=... -X main.commit=... -X main.modified=true"; commit also comes from the
// build's VCS stamp when the linker was not told (go build in a git checkout, without
// -buildvcs=false).
var (
	version  = "dev"
	commit   = ""
	modified = ""
)

// buildVersion is the version and commit `shadow version` prints: the linker's, else the module's
// version (`go install …@v1.2.3`) and the VCS stamp of the build, else "dev" and "unknown".
func buildVersion(version, commit, modified string, bi *debug.BuildInfo) (string, string) {
	dirty := modified == "true"
	if bi != nil {
		if version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version = bi.Main.Version
		}
		if commit == "" {
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					commit = s.Value
				case "vcs.modified":
					dirty = s.Value == "true"
				}
			}
		}
	}
	if commit == "" {
		return version, "unknown (built outside a git checkout, or without `make build`)"
	}
	if dirty {
		commit += " (modified)"
	}
	return version, commit
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print shadow's version, commit, Go and libseccomp versions and the Landlock ABI",
		Long: `version prints what a bug report needs: shadow's version and the commit it was built from
(marked modified when the tree had uncommitted changes), the Go version, the libseccomp version
linked in, and the Landlock ABI this kernel offers (0: none).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi, _ := debug.ReadBuildInfo()
			v, c := buildVersion(version, commit, modified, bi)
			maj, min, micro := seccomp.GetLibraryVersion()
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "shadow %s\n", v)
			fmt.Fprintf(w, "commit:       %s\n", c)
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
