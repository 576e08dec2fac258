package sandbox

import "fmt"

// JailError reports that the jail could not be built; the command was not
// started. The CLI maps it to exit status 125.
type JailError struct {
	Step string // the step that failed, e.g. "mount overlay"
	Err  error
}

// Error says which step of building the jail failed and why.
func (e *JailError) Error() string {
	return fmt.Sprintf("cannot build the jail: %s: %v", e.Step, e.Err)
}

// Unwrap returns the underlying error.
func (e *JailError) Unwrap() error { return e.Err }

// humanBytes writes n in the largest binary unit that keeps it at least 1.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
