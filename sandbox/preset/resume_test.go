package preset

import (
	"slices"
	"testing"
)

// Each CLI's resume hint, as it prints it when it ends, gives the arguments that resume the
// conversation; another agent's hint, or none, gives nothing.
func TestResumeArgs(t *testing.T) {
	for _, c := range []struct {
		preset, text string
		want         []string
	}{
		{"claude", "\nResume this session with:\nclaude --resume 0b7c4f2e-1c0a-4a57-9d0e-2f6a8c1b3d45\n", []string{"--resume", "0b7c4f2e-1c0a-4a57-9d0e-2f6a8c1b3d45"}},
		{"claude", `Resume this session with:` + "\n" + `claude --resume "my-session-name"`, []string{"--resume", "my-session-name"}},
		{"codex", "Token usage: total=8,895 input=8,880 output=15\nTo continue this session, run codex resume 019ba81f-93dc-7d62-a5b7-535d23a15e3d", []string{"resume", "019ba81f-93dc-7d62-a5b7-535d23a15e3d"}},
		{"gemini", "To resume this session: gemini --resume 3f2a9c1e-77aa-4b1e-9b0e-5c3d2e1f0a9b", []string{"--resume", "3f2a9c1e-77aa-4b1e-9b0e-5c3d2e1f0a9b"}},
		{"opencode", "  Session   Fix the cart\n  Continue  opencode -s ses_5f1d2c3b4a5e6f7a8b9c0d1e2f", []string{"-s", "ses_5f1d2c3b4a5e6f7a8b9c0d1e2f"}},
		// The last one counts: an earlier conversation's hint scrolled by.
		{"codex", "codex resume old-1\n...\ncodex resume new-2", []string{"resume", "new-2"}},
		{"claude", "To continue this session, run codex resume 019ba81f", nil},
		{"codex", "bye", nil},
		{"aider", "aider --resume x", nil},
	} {
		if got := ResumeArgs(c.preset, c.text); !slices.Equal(got, c.want) {
			t.Errorf("ResumeArgs(%s, %q) = %q, want %q", c.preset, c.text, got, c.want)
		}
	}
	for _, name := range []string{"claude", "codex", "gemini", "opencode"} {
		if resumeHints[name] == nil {
			t.Errorf("no resume hint for %s", name)
		}
		if _, err := Lookup(name); err != nil {
			t.Errorf("resume hint for %s, which is not a preset: %v", name, err)
		}
	}
}
