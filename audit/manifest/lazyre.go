package manifest

import (
	"regexp"
	"sync"
)

// lazyRE compiles a pattern on its first use rather than at package
// initialisation: every process of the shadow binary (the jail's own stages
// too) would otherwise pay for compiling every rule's pattern at start.
func lazyRE(pattern string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
}
