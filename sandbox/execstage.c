// The exec stage of the jail, in C so that it runs before the Go runtime
// starts: PID 1 starts it in the command's user namespace as
// `/run/shadow-init __shadow-exec`, and this constructor takes over before
// any Go code (and before the binary's package initialisation, which costs
// a Go process tens of milliseconds). It drops every capability, enforces
// the Landlock ruleset PID 1 built, loads the seccomp program PID 1
// compiled, and execs the command. It never returns to Go.
//
// Descriptors, set up by PID 1 (sandbox/init_exec.go, startCommand):
//   3  the command spec, read to EOF (see encodeExecSpec in execstage.go)
//   4  status: JSON lines read by PID 1; closed on exec
//   5  the Landlock ruleset, when the spec's ABI is not 0

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SPEC_FD 3
#define STATUS_FD 4
#define RULESET_FD 5
#define MAX_SPEC (64 << 20)

#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

// The securebits that make uid 0 an ordinary user for good: NOROOT (uid 0
// gains no capabilities at exec), NO_SETUID_FIXUP (changing uids neither
// drops nor raises any) and NO_CAP_AMBIENT_RAISE, each with its lock so
// that nothing in the jail can clear it.
#define LOCKED_SECUREBITS ((1 << 0) | (1 << 1) | (1 << 2) | (1 << 3) | (1 << 6) | (1 << 7))

// json_string writes s as a JSON string to the status descriptor.
static void json_string(FILE *f, const char *s) {
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\') {
			fputc('\\', f);
			fputc(*p, f);
		} else if (*p < 0x20) {
			fprintf(f, "\\u%04x", *p);
		} else {
			fputc(*p, f);
		}
	}
	fputc('"', f);
}

// errno_text is strerror as Go spells it: lower-case first letter.
static const char *errno_text(int e, char *buf, size_t n) {
	snprintf(buf, n, "%s", strerror(e));
	if (buf[0] >= 'A' && buf[0] <= 'Z' && !(buf[1] >= 'A' && buf[1] <= 'Z')) {
		buf[0] = buf[0] - 'A' + 'a';
	}
	return buf;
}

// jail_fail reports a step of the jail that failed and ends the stage: the
// command is never started.
static void jail_fail(const char *step, const char *what, int e) {
	char eb[128], msg[512];
	snprintf(msg, sizeof msg, "%s: %s", what, errno_text(e, eb, sizeof eb));
	FILE *f = fdopen(STATUS_FD, "w");
	if (f) {
		fputs("{\"step\":", f);
		json_string(f, step);
		fputs(",\"error\":", f);
		json_string(f, msg);
		fputs("}\n", f);
		fflush(f);
	}
	_exit(125);
}

// drop_privileges empties the bounding, ambient, inheritable, permitted and
// effective sets, locks the securebits and sets no_new_privs. Capabilities
// are per thread: this is done here, on the stage's single thread, before
// any other exists.
static void drop_privileges(void) {
	for (int c = 0; c < 64; c++) {
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0) {
			if (errno == EINVAL) {
				break; // beyond what this kernel knows
			}
			if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 0) {
				continue; // already gone
			}
			jail_fail("drop privileges", "drop a capability from the bounding set", errno);
		}
	}
	int cur = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
	if (cur < 0) {
		jail_fail("drop privileges", "read securebits", errno);
	}
	if ((cur & LOCKED_SECUREBITS) != LOCKED_SECUREBITS &&
	    prctl(PR_SET_SECUREBITS, cur | LOCKED_SECUREBITS, 0, 0, 0) != 0) {
		jail_fail("drop privileges", "lock securebits", errno);
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) {
		jail_fail("drop privileges", "clear ambient capabilities", errno);
	}
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	if (syscall(SYS_capset, &hdr, data) != 0) {
		jail_fail("drop privileges", "clear capability sets", errno);
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		jail_fail("drop privileges", "set no_new_privs", errno);
	}
}

// read_all reads descriptor fd to EOF.
static char *read_all(int fd, size_t *len) {
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	if (!buf) {
		jail_fail("read command spec", "allocate", ENOMEM);
	}
	for (;;) {
		if (n == cap) {
			if (cap >= MAX_SPEC) {
				jail_fail("read command spec", "spec too large", E2BIG);
			}
			cap *= 2;
			char *b = realloc(buf, cap);
			if (!b) {
				jail_fail("read command spec", "allocate", ENOMEM);
			}
			buf = b;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR) {
			continue;
		}
		if (r < 0) {
			jail_fail("read command spec", "read", errno);
		}
		if (r == 0) {
			break;
		}
		n += (size_t)r;
	}
	*len = n;
	return buf;
}

// spec is the parsing state of the command spec: NUL-terminated fields.
struct spec {
	char *p, *end;
};

static char *next_field(struct spec *s) {
	char *start = s->p;
	char *nul = memchr(start, 0, (size_t)(s->end - start));
	if (!nul) {
		jail_fail("read command spec", "truncated spec", EINVAL);
	}
	s->p = nul + 1;
	return start;
}

static long next_number(struct spec *s, long max) {
	char *f = next_field(s), *endp;
	errno = 0;
	long v = strtol(f, &endp, 10);
	if (errno || *f == 0 || *endp != 0 || v < 0 || v > max) {
		jail_fail("read command spec", "bad number in spec", EINVAL);
	}
	return v;
}

static char **next_list(struct spec *s) {
	long n = next_number(s, 1 << 20);
	char **v = calloc((size_t)n + 1, sizeof *v);
	if (!v) {
		jail_fail("read command spec", "allocate", ENOMEM);
	}
	for (long i = 0; i < n; i++) {
		v[i] = next_field(s);
	}
	return v;
}

static void exec_stage(void) {
	size_t len;
	char *buf = read_all(SPEC_FD, &len);
	struct spec s = {buf, buf + len};
	char *path = next_field(&s);
	char **argv = next_list(&s);
	char **envp = next_list(&s);
	long abi = next_number(&s, 1 << 16);
	long bpf_len = next_number(&s, 1 << 20);
	if (bpf_len == 0 || bpf_len % sizeof(struct sock_filter) != 0 ||
	    bpf_len / sizeof(struct sock_filter) > BPF_MAXINSNS || s.end - s.p != bpf_len) {
		jail_fail("read command spec", "bad seccomp program in spec", EINVAL);
	}
	struct sock_filter *insns = malloc((size_t)bpf_len);
	if (!insns) {
		jail_fail("read command spec", "allocate", ENOMEM);
	}
	memcpy(insns, s.p, (size_t)bpf_len);
	struct sock_fprog prog = {.len = (unsigned short)(bpf_len / sizeof(struct sock_filter)), .filter = insns};

	drop_privileges();
	if (abi > 0) {
		if (syscall(SYS_landlock_restrict_self, RULESET_FD, 0) != 0) {
			jail_fail("landlock", "enforce the command's ruleset", errno);
		}
		close(RULESET_FD);
	}
	// Nothing but stdio reaches the command; the spec and status
	// descriptors close on exec.
	if (syscall(SYS_close_range, RULESET_FD, ~0U, 0) != 0 && errno != ENOSYS) {
		jail_fail("close descriptors", "close_range", errno);
	}
	if (fcntl(SPEC_FD, F_SETFD, FD_CLOEXEC) != 0 || fcntl(STATUS_FD, F_SETFD, FD_CLOEXEC) != 0) {
		jail_fail("close descriptors", "set close-on-exec", errno);
	}
	char line[64];
	int n = snprintf(line, sizeof line, "{\"confined\":true,\"landlock\":%ld}\n", abi);
	if (write(STATUS_FD, line, (size_t)n) != n) {
		_exit(125);
	}
	// seccomp last: from here on only execve remains to be done.
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) {
		jail_fail("seccomp", "load the command's filter", errno);
	}
	execve(path, argv, envp);
	int e = errno, code = e == ENOENT ? 127 : 126;
	char eb[128], msg[4200];
	snprintf(msg, sizeof msg, "exec %s: %s", path, errno_text(e, eb, sizeof eb));
	dprintf(2, "shadow: %s\n", msg);
	FILE *f = fdopen(STATUS_FD, "w");
	if (f) {
		fputs("{\"error\":", f);
		json_string(f, msg);
		fprintf(f, ",\"exit\":%d}\n", code);
		fflush(f);
	}
	_exit(code);
}

// shadow_exec_stage runs as the binary's constructor, before the Go runtime.
__attribute__((constructor)) static void shadow_exec_stage(int argc, char **argv, char **envp) {
	(void)envp;
	if (argc == 2 && argv[1] != NULL && strcmp(argv[1], "__shadow-exec") == 0) {
		exec_stage();
	}
}
