package session

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
)

// A lack of space under the state directory is explained with the directory and the way out; one
// elsewhere (the project's disk), or another error, is left as it is.
func TestExplainFull(t *testing.T) {
	root := "/home/u/.local/state/shadow"
	inState := fmt.Errorf("write %s/sessions/x/session.json: %w", root,
		&fs.PathError{Op: "write", Path: root + "/sessions/x/.session.json.tmp123", Err: syscall.ENOSPC})
	inProject := fmt.Errorf("apply a.txt: write: %w", &fs.PathError{Op: "write", Path: "/work/p/.shadow-apply-1", Err: syscall.ENOSPC})
	other := fmt.Errorf("write %s/x: %w", root, &fs.PathError{Op: "write", Path: root + "/x", Err: syscall.EIO})
	quota := &fs.PathError{Op: "write", Path: root + "/sessions/x/runs.jsonl", Err: syscall.EDQUOT}

	for _, err := range []error{inState, quota} {
		got := ExplainFull(err, root)
		var full *StateFullError
		if !errors.As(got, &full) || !errors.Is(got, err) {
			t.Fatalf("ExplainFull(%v) = %v, want a StateFullError wrapping it", err, got)
		}
		msg := got.Error()
		if !strings.HasPrefix(msg, "shadow's state directory "+root+" is full (") || !strings.Contains(msg, "shadow discard") || strings.Contains(msg, ".tmp") {
			t.Errorf("message: %s", msg)
		}
	}
	for _, err := range []error{inProject, other, nil} {
		if got := ExplainFull(err, root); got != err {
			t.Errorf("ExplainFull(%v) = %v, want it unchanged", err, got)
		}
	}
}
