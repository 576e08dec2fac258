package manifest

import (
	"fmt"
	"strings"
	"testing"
)

// pnpmLockOf is a pnpm-lock.yaml (version 9) of a workspace with n packages, each with a
// dependency, an integrity and engines, as pnpm writes them.
func pnpmLockOf(n int) []byte {
	var b strings.Builder
	b.WriteString("lockfileVersion: '9.0'\n\nsettings:\n  autoInstallPeers: true\n  excludeLinksFromLockfile: false\n\nimporters:\n\n  .:\n    dependencies:\n")
	for i := 0; i < n; i += 10 {
		fmt.Fprintf(&b, "      pkg-%05d:\n        specifier: ^1.%d.0\n        version: 1.%d.0\n", i, i, i)
	}
	b.WriteString("\npackages:\n\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  '@scope/pkg-%05d@1.%d.0':\n    resolution: {integrity: sha512-%088d==}\n    engines: {node: '>=14'}\n", i, i, i)
		if i%5 == 0 {
			b.WriteString("    hasBin: true\n    requiresBuild: true\n")
		}
		b.WriteString("\n")
	}
	b.WriteString("snapshots:\n\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  '@scope/pkg-%05d@1.%d.0':\n    dependencies:\n      pkg-%05d: 1.0.0\n\n", i, i, (i+1)%n)
	}
	return []byte(b.String())
}

// BenchmarkParsePnpmLock parses a lockfile of 5,000 packages (about 1.1 MB).
func BenchmarkParsePnpmLock(b *testing.B) {
	data := pnpmLockOf(5000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		l, err := ParsePnpmLock("pnpm-lock.yaml", data)
		if err != nil || len(l.Packages) != 5000 {
			b.Fatalf("parse: %v", err)
		}
	}
}
