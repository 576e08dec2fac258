package diffview

import "fmt"

// humanSize is a byte count as people read it: "812 B", "1.5 KiB", "70.0 MiB".
func humanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 5 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[i])
}

// sizes are a file's sizes as the review shows them: the side that exists,
// or "old → new".
func (f File) sizes() string {
	switch f.Status {
	case StatusAdded:
		return humanSize(f.NewSize)
	case StatusDeleted:
		return humanSize(f.OldSize)
	}
	return humanSize(f.OldSize) + " → " + humanSize(f.NewSize)
}
