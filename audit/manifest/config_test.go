package manifest

import (
	"reflect"
	"testing"
)

func TestParseNpmrc(t *testing.T) {
	n, err := ParseNpmrc(".npmrc", readFixture(t, "npmrc"))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := n.Get("registry"); v != "https://registry.npmjs.org/" {
		t.Errorf("registry = %q", v)
	}
	if v, _ := n.Get("ignore-scripts"); v != "false" {
		t.Errorf("ignore-scripts = %q", v)
	}
	if v, _ := n.Get("script-shell"); v != "/bin/bash" {
		t.Errorf("script-shell = %q", v)
	}
	if v, ok := n.Get("always-auth"); !ok || v != "true" {
		t.Errorf("always-auth = %q %v", v, ok)
	}
	if _, ok := n.Get("missing"); ok {
		t.Error("missing key found")
	}
	if got := n.ScopeRegistries(); !reflect.DeepEqual(got, map[string]string{"@acme": "https://npm.acme.invalid/"}) {
		t.Errorf("scope registries = %v", got)
	}
	var unmasked, masked []NpmrcEntry
	for _, e := range n.Entries {
		if e.IsSecret() {
			if e.Unmasked() {
				unmasked = append(unmasked, e)
			} else {
				masked = append(masked, e)
			}
		}
	}
	if len(unmasked) != 1 || unmasked[0].Host != "//npm.acme.invalid/" || unmasked[0].Name != "_authToken" || unmasked[0].Line != 4 {
		t.Errorf("unmasked = %+v", unmasked)
	}
	if len(masked) != 1 || masked[0].Value != "${NPM_TOKEN}" {
		t.Errorf("masked = %+v", masked)
	}
}

func TestNpmrcEdgeCases(t *testing.T) {
	n, err := ParseNpmrc(".npmrc", []byte("registry=http://a\r\nregistry = http://b\n_auth=\n[section]\nkey=v\n//h/:_password=\"c2VjcmV0\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := n.Get("registry"); v != "http://b" {
		t.Errorf("last registry wins: %q", v)
	}
	if v, _ := n.Get("section.key"); v != "v" {
		t.Errorf("section key = %q", v)
	}
	for _, e := range n.Entries {
		switch e.Key {
		case "_auth":
			if !e.IsSecret() || e.Unmasked() {
				t.Errorf("empty _auth: secret %v unmasked %v", e.IsSecret(), e.Unmasked())
			}
		case "section.//h/:_password":
			if !e.Unmasked() || e.Value != "c2VjcmV0" {
				t.Errorf("_password = %+v", e)
			}
		}
	}
	if _, err := ParseNpmrc(".npmrc", []byte("a=b\x00")); err == nil {
		t.Error("NUL byte accepted")
	}
}

func TestIsEnvReference(t *testing.T) {
	for v, want := range map[string]bool{
		"${NPM_TOKEN}":  true,
		" ${A_1} ":      true,
		"${NPM_TOKEN?}": true,
		"$NPM_TOKEN":    false,
		"abc${X}":       false,
		"${X}${Y}":      false,
		"npm_abc":       false,
		"":              false,
	} {
		if IsEnvReference(v) != want {
			t.Errorf("IsEnvReference(%q) = %v", v, !want)
		}
	}
}

func TestParseYarnrc(t *testing.T) {
	y, err := ParseYarnrc(".yarnrc.yml", readFixture(t, "yarnrc.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if y.NpmRegistryServer != "https://registry.acme.invalid" || y.NpmAuthToken != "${NPM_TOKEN}" || !IsEnvReference(y.NpmAuthToken) {
		t.Errorf("top level = %+v", y)
	}
	if y.EnableScripts == nil || *y.EnableScripts {
		t.Errorf("enableScripts = %v", y.EnableScripts)
	}
	if y.YarnPath != ".yarn/releases/yarn-4.1.0.cjs" || y.Lines["yarnPath"] != 5 {
		t.Errorf("yarnPath = %q line %d", y.YarnPath, y.Lines["yarnPath"])
	}
	acme := y.NpmScopes["acme"]
	if acme.NpmAuthToken != "abc123secret" || acme.NpmRegistryServer != "https://npm.acme.invalid" || acme.Line != 8 {
		t.Errorf("acme scope = %+v", acme)
	}
	if !reflect.DeepEqual(y.Plugins, []string{".yarn/plugins/plugin-typescript.cjs"}) {
		t.Errorf("plugins = %v", y.Plugins)
	}
	if !reflect.DeepEqual(y.UnsafeHTTPWhitelist, []string{"*.acme.invalid"}) {
		t.Errorf("unsafeHttpWhitelist = %v", y.UnsafeHTTPWhitelist)
	}
	if _, err := ParseYarnrc(".yarnrc.yml", []byte("npmAuthToken: \"abc\n")); err == nil {
		t.Error("unterminated string accepted")
	}
}

func TestParseYarnrcClassic(t *testing.T) {
	y, err := ParseYarnrcClassic(".yarnrc", []byte("# yarn lockfile v1\nregistry \"https://r.acme.invalid/\"\nyarn-path \".yarn/releases/yarn-1.22.19.cjs\"\n--ignore-scripts false\n\"@acme:registry\" \"https://npm.acme.invalid/\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"registry":         "https://r.acme.invalid/",
		"yarn-path":        ".yarn/releases/yarn-1.22.19.cjs",
		"--ignore-scripts": "false",
		"@acme:registry":   "https://npm.acme.invalid/",
	} {
		if v, ok := y.Get(key); !ok || v != want {
			t.Errorf("%s = %q %v, want %q", key, v, ok, want)
		}
	}
	if y.Entries[1].Line != 3 {
		t.Errorf("yarn-path line = %d", y.Entries[1].Line)
	}
	if _, err := ParseYarnrcClassic(".yarnrc", []byte("registry \"open\n")); err == nil {
		t.Error("unterminated value accepted")
	}
}
