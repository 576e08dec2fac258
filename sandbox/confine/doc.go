// Package confine holds the kernel confinement layers the jail applies to
// itself before it starts the command: the seccomp deny list, Landlock file
// rules, and the removal of every capability.
package confine
