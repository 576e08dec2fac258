package layers

import (
	"github.com/shadow-sandbox/shadow/internal/termseq"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shadow-sandbox/shadow/internal/quote"
)

// Checkpoint is one checkpoint of a session, as PID 1 of the jail wrote it: directory c<N> of the
// checkpoint directory, holding layer/ (what changed in the run's layer
// since the last checkpoint, as a layer over it) and meta.json (this).
type Checkpoint struct {
	ID      string    `json:"id"` // "c3"
	N       int       `json:"n"`
	Time    time.Time `json:"time"`
	Trigger string    `json:"trigger"` // CheckpointRunEnd, CheckpointPrompt, ...
	Argv    []string  `json:"argv"`    // the command run, with what its preset added
	// Command is the command as the user gave it, before its preset's arguments (nil: Argv).
	Command []string `json:"command,omitempty"`
	Paths   []string `json:"paths"` // what the step changed, added or deleted
	// Prompt is the first line of the prompt the step answered: the last one submitted to the
	// agent in the run before the checkpoint was taken ("": none yet), as its pane showed it
	// (see PromptLine).
	Prompt string `json:"prompt,omitempty"`
	// Sums is the SHA-256 of the checkpoint's SumsFile ("": written before checkpoints were
	// checked).
	Sums string `json:"sums,omitempty"`
	// Damage, when set, says what of the checkpoint was found damaged when it was read; it is
	// never written.
	Damage string `json:"damage,omitempty"`
}

// Typed is the step's command as the user gave it: Command, or Argv when the run added nothing.
func (c Checkpoint) Typed() []string {
	if c.Command != nil {
		return c.Command
	}
	return c.Argv
}

// What takes a checkpoint.
const (
	CheckpointRunEnd = "run end" // the end of every run
	CheckpointPrompt = "prompt"  // input submitted to the agent
	CheckpointQuiet  = "quiet"   // writes, then a few seconds without any
	CheckpointManual = "manual"  // asked for
	CheckpointTake   = "take"    // another session's version of some paths, taken (shadow compare --take)
)

// MergedFile, in the checkpoint directory, holds the number of the last
// checkpoint whose changes the staging layer holds: later ones are merged
// into it by whoever finds them (a run that died before merging).
const MergedFile = "merged"

// A request for a checkpoint is what takes it; a prompt's carries the prompt's first line after
// a newline, so that PID 1 can name the steps that answer it.

// PromptRequest is the request for the checkpoint of a prompt submitted to the agent whose first
// line is line ("": a bare Enter, which names no step).
func PromptRequest(line string) string {
	if line = PromptLine(line); line != "" {
		return CheckpointPrompt + "\n" + line
	}
	return CheckpointPrompt
}

// SplitRequest returns what took a requested checkpoint and, for a prompt, the prompt's line
// (PromptLine of it: a request comes from the app, and the line from the agent's screen).
func SplitRequest(r string) (trigger, prompt string) {
	trigger, prompt, _ = strings.Cut(r, "\n")
	return trigger, PromptLine(prompt)
}

// MaxPromptLine bounds the characters a checkpoint keeps of its prompt.
const MaxPromptLine = 120

// PromptLine is the first line of text, as a checkpoint keeps it: escape sequences, and every
// control, format (bidi) character and byte of invalid UTF-8, removed, runs of spaces made one, at
// most MaxPromptLine characters (the last "…" when cut).
func PromptLine(text string) string {
	text, _, _ = strings.Cut(text, "\n")
	text = termseq.Strip(text)
	var b strings.Builder
	n, space := 0, false
	for i, r := range text {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(text[i:]); size == 1 {
				continue // a byte of invalid UTF-8
			}
		}
		if r == '\t' || r == ' ' || r == 0xa0 {
			space = b.Len() > 0
			continue
		}
		if quote.Unsafe(r) {
			continue
		}
		if space {
			if n++; n > MaxPromptLine {
				break
			}
			b.WriteByte(' ')
			space = false
		}
		if n++; n > MaxPromptLine {
			break
		}
		b.WriteRune(r)
	}
	out := b.String()
	if n > MaxPromptLine {
		out = string([]rune(out)[:MaxPromptLine-1]) + "…"
	}
	return out
}
