package preset

import (
	"testing"
	"time"
)

// TestSelectEveryCommand: Select, which parses only the presets whose file may list the command,
// finds the preset of every command of every embedded preset, as the parse of them all lists
// them; for a command of none (true: a word the files hold as values) it parses none; and a file
// that names its commands in any other form is parsed.
func TestSelectEveryCommand(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range all {
		for _, c := range p.Commands {
			n++
			got, err := Select("", "/usr/bin/"+c)
			if err != nil || got == nil || got.Name != p.Name {
				t.Errorf("Select(%q) = %v, %v; want preset %s", c, got, err, p.Name)
			}
		}
	}
	if n < len(all) {
		t.Fatalf("%d commands in %d presets", n, len(all))
	}
	parsed, err := embedded(func(b []byte) bool { return mayList(b, "true") })
	if err != nil || len(parsed) != 0 {
		t.Errorf("a run of true parses %d presets (%v), want none", len(parsed), err)
	}
	for _, b := range []string{
		"commands = [\"x\"]\n[t]\ncommands = [\"true\"]\n",           // twice
		"commands = [\n  \"true\",\n]\n",                             // over lines
		"commands = [\"\\u0074rue\"]\n",                              // an escape
		"\"commands\" = [\"true\"]\n",                                // a quoted key
		"x = 1 # commands = []\ncommands = [\"true\"]\n",             // named in a comment too
		"[t]\ncommands = [\"x\"]\n",                                  // in a table
		"x = \"\"\"\ncommands = []\n\"\"\"\ncommands = [\"true\"]\n", // a multi-line string
	} {
		if !mayList([]byte(b), "true") {
			t.Errorf("a file of another form is not parsed:\n%s", b)
		}
	}
	if mayList([]byte("name = \"x\"\ncommands = [\"xx\", 'truex']\nenv = \"true\"\n"), "true") {
		t.Error("a file listing other commands is parsed")
	}
	// What it saves: the parse of every preset, on each run of a command of none.
	start := time.Now()
	for range 10 {
		if _, err := All(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("parsing every preset: %v", time.Since(start)/10)
}
