#!/usr/bin/env bash
# Jail benchmarks of SPEC §9, each a hyperfine run comparing `shadow run` with the same work outside
# (or with bubblewrap for start-up), so the ratios come from one run side by side:
#   1. start-up: `shadow run -- true` vs `bwrap --unshare-all ... true`            (target <= 3x)
#   2. reading 5,000 files in the jail vs outside                                   (target <= 1.10x)
#   3. appending a line to 5,000 files (every file copied up) vs outside           (target <= 5x)
#   4. `go build` of a small module with a warm cache, in the jail vs outside       (target <= 1.10x)
#   5. `shadow run -- true` with 20,000 files staged vs with none                   (target <= 1.3x)
# Needs: go, hyperfine, bubblewrap. Fixtures are generated under $BENCH_DIR (default: a temp dir on
# the same disk as /tmp). Usage: bench/jail.sh [RUNS]; SHADOW=path/to/shadow skips the build.
# On ext4 without a journal, creating files soon after many were deleted is slow (the inode
# allocator skips recently deleted inodes, reading inode blocks to find them), and every run of 3.
# follows the deletion of the last run's staged files: BENCH_DIR on a journaled filesystem shows
# the jail's own cost.
set -euo pipefail

cd "$(dirname "$0")/.."
RUNS=${1:-10}
for tool in go hyperfine bwrap; do
	command -v "$tool" >/dev/null || { echo "bench/jail.sh: $tool is not installed" >&2; exit 1; }
done

work=$(mktemp -d "${BENCH_DIR:-/tmp}/shadow-bench-XXXXXX")
cleanup() {
	# Overlay work dirs are left mode 000 by the kernel.
	chmod -R u+rwx "$work" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

shadow=${SHADOW:-$work/shadow}
if [ -z "${SHADOW:-}" ]; then
	go build -o "$shadow" ./cmd/shadow
	make -s --no-print-directory "$work/shadow-init" BIN="$shadow"
fi
# The jail's PID 1: shadow-init beside shadow (make build), or shadow itself when there is none.
if [ -x "$(dirname "$shadow")/shadow-init" ]; then
	echo "PID 1: $(dirname "$shadow")/shadow-init"
else
	echo "PID 1: $shadow itself (no shadow-init beside it)"
fi
# Sessions of the benchmark live in the temp dir, not in the user's state.
export XDG_STATE_HOME="$work/state" XDG_CONFIG_HOME="$work/config"

echo "== fixtures"
empty="$work/empty"
mkdir -p "$empty"
files="$work/files"
for d in $(seq -w 0 49); do
	mkdir -p "$files/d$d"
	for f in $(seq -w 0 99); do
		printf 'file %s of dir %s\n%0200d\n' "$f" "$d" 0 >"$files/d$d/f$f.txt"
	done
done
mod="$work/mod"
mkdir -p "$mod"
cat >"$mod/go.mod" <<'EOF'
module example.com/benchmod

go 1.22
EOF
cat >"$mod/main.go" <<'EOF'
package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
)

func main() {
	b, _ := json.Marshal(map[string]string{"status": http.StatusText(200)})
	fmt.Fprintln(os.Stdout, string(b))
}
EOF
(cd "$mod" && go build -o /dev/null .) # warm the build cache

# The workloads, as scripts shown to the jail read-only (--ro).
scripts="$work/scripts"
mkdir -p "$scripts"
echo 'find . -type f -exec cat {} + >/dev/null' >"$scripts/read.sh"
echo 'find . -type f -exec sh -c '\''for f; do echo line >> "$f"; done'\'' _ {} +' >"$scripts/append.sh"
jail="$shadow run --ro $scripts"
discard="$shadow discard --yes --project"

echo "== 1. jail start-up"
hyperfine -N --warmup 3 --runs "$RUNS" \
	--command-name "shadow run -- true" "$jail --project $empty -- true" \
	--command-name "bwrap true" "bwrap --unshare-all --die-with-parent --new-session --ro-bind / / --dev /dev --proc /proc true"

echo "== 2. read 5,000 files"
hyperfine --warmup 2 --runs "$RUNS" \
	--command-name "in the jail" "$jail --project $files -- sh $scripts/read.sh 2>/dev/null" \
	--command-name "outside" "cd $files && sh $scripts/read.sh"

echo "== 3. append a line to 5,000 files (copy-up of every file)"
# Each jailed run starts from a fresh session, so that every file is copied up again. The third
# command is the floor of keeping a file per staged file on this disk: the same 5,000 files
# written anew, right after the last copy was deleted, as a run's checkpoint writes them right
# after the discard of the last session (on ext4 without a journal, new inodes are slow for a
# while after many were freed).
hyperfine --warmup 1 --runs "$RUNS" \
	--prepare "$discard $files >/dev/null 2>&1 || true" \
	--command-name "in the jail" "$jail --project $files -- sh $scripts/append.sh 2>/dev/null" \
	--prepare "true" \
	--command-name "outside" "cd $files && sh $scripts/append.sh" \
	--prepare "rm -rf $work/copy" \
	--command-name "outside, as new files" "cp -r $files $work/copy"
rm -rf "$work/copy"
$discard "$files" >/dev/null 2>&1 || true

echo "== 4. go build, warm cache"
# Both sides link: go build skips the link when the -o file is already up to date, and the jail's
# /tmp/out is new on every run, so the outside build starts from a removed output too.
hyperfine --warmup 1 --runs "$RUNS" \
	--command-name "in the jail" "$jail --project $mod -- go build -o /tmp/out . 2>/dev/null" \
	--command-name "outside" "sh -c 'cd $mod && rm -f $work/out && go build -o $work/out .'"

echo "== 5. a run's fixed cost with 20,000 files staged"
staged="$work/staged"
mkdir -p "$staged"
$shadow run --project "$staged" -- sh -c 'for d in $(seq 0 19); do mkdir d$d; for f in $(seq 0 999); do echo x > d$d/f$f; done; done' >/dev/null 2>&1
hyperfine -N --warmup 2 --runs "$RUNS" \
	--command-name "20,000 staged" "$shadow run --project $staged -- true" \
	--command-name "none staged" "$shadow run --project $empty -- true"
