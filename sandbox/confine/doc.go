// Package confine holds the kernel confinement layers of the jail: the
// seccomp deny list (loaded in-process, or compiled to BPF for the exec
// stage), the Landlock file rules (enforced in-process, or built as a
// ruleset the exec stage enforces), and non-dumpable PID 1. The command's
// capabilities are dropped by the exec stage itself (sandbox/execstage.c).
package confine
