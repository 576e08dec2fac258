package sandbox

// The exec stage is C (execstage.c): it runs as a constructor of the binary,
// before the Go runtime and the package initialisation that would otherwise
// cost the stage tens of milliseconds of every jail start.

// #cgo CFLAGS: -Wall -O2
import "C"

import (
	"errors"
	"strconv"
	"strings"
)

// encodeExecSpec is what PID 1 sends the exec stage on its descriptor 3:
// NUL-terminated fields, the executable's path, the argument and environment
// lists (each a count, then the strings), the Landlock ABI of the ruleset on
// descriptor 5 (0: none), and the seccomp program (its length in bytes, then
// the raw instructions).
func encodeExecSpec(path string, argv, env []string, abi int, bpf []byte) ([]byte, error) {
	var b []byte
	field := func(s string) error {
		if strings.IndexByte(s, 0) >= 0 {
			return errors.New("a NUL byte in the command, its arguments or its environment")
		}
		b = append(append(b, s...), 0)
		return nil
	}
	list := func(l []string) error {
		_ = field(strconv.Itoa(len(l)))
		for _, s := range l {
			if err := field(s); err != nil {
				return err
			}
		}
		return nil
	}
	if err := field(path); err != nil {
		return nil, err
	}
	if err := list(argv); err != nil {
		return nil, err
	}
	if err := list(env); err != nil {
		return nil, err
	}
	_ = field(strconv.Itoa(abi))
	_ = field(strconv.Itoa(len(bpf)))
	return append(b, bpf...), nil
}
