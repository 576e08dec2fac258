#!/usr/bin/env bash
# Jail benchmarks of SPEC §9, each a row of the table: shadow against the same work outside (or
# bubblewrap, or script), interleaved a run of each a round, the ratio of the medians:
#   1. start-up: `shadow run -- true` vs `bwrap --unshare-all ... true`                   (<= 3x)
#   2. reading 5,000 files in the jail vs outside, each less a run of true on its side   (<= 1.10x)
#      (its floor: the same read through a bare overlay mount, as fresh as the jail's)
#   3. appending a line to 5,000 files (every file copied up), the whole run, vs outside (<= 5x)
#   4. `go build` of a small module, warm cache, in the jail vs outside, each less true  (<= 1.10x)
#   5. `shadow run -- true` with 20,000 files staged vs with none                        (<= 1.3x)
#   6. relaying 10 MB of coloured output to a terminal vs `script -qc CMD /dev/null`, each
#      less the same tool running true; the terminal is an outer `script` on both sides  (<= 1.1x)
# Needs: go, hyperfine, jq, bubblewrap, script (util-linux). Fixtures are generated under
# $BENCH_DIR (default: a temp dir on the same disk as /tmp). Usage: bench/jail.sh [ROUNDS];
# SHADOW=path/to/shadow skips the build.
# On ext4 without a journal, creating files soon after many were deleted is slow (the inode
# allocator skips recently deleted inodes, reading inode blocks to find them), and every run of 3.
# follows the deletion of the last run's staged files: the "(floor)" row writes the same 5,000
# files anew outside right after a deletion, and BENCH_DIR on a journaled filesystem shows the
# jail's own cost.
set -euo pipefail

cd "$(dirname "$0")/.."
rounds=${1:-10}
. bench/lib.sh
bench_init jail "${SHADOW:-}" go bwrap script
# The jail's PID 1: shadow-init beside shadow (make build), or shadow itself when there is none.
if [ -x "$(dirname "$shadow")/shadow-init" ]; then
	echo "PID 1: $(dirname "$shadow")/shadow-init"
else
	echo "PID 1: $shadow itself (no shadow-init beside it)"
fi

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
outside=$work/outside
cp -r "$files" "$outside"
# 10 MB of coloured output, as a build prints it.
relay=$work/relay
mkdir -p "$relay"
awk 'BEGIN { l = "\033[32m✓\033[0m compiled \033[1mpackage\033[0m ok: 12 files \033[38;5;244m(0.41s)\033[0m naïve résumé"
	for (n = 0; n < 10 * 1024 * 1024; n += length(l) + 1) print l }' >"$relay/out.txt"
staged=$work/staged
mkdir -p "$staged"

jail="$shadow run --ro $scripts"
discard="$shadow discard --yes --project"
$jail --project "$staged" -- sh -c 'for d in $(seq 0 19); do mkdir d$d; for f in $(seq 0 999); do echo x > d$d/f$f; done; done' >/dev/null 2>&1
$jail --project "$empty" -- true >/dev/null 2>&1 # the mask cache warm, as for anyone's second run
sync # the fixtures on disk: their writeback would fall on the first rows

echo "== measuring ($rounds rounds; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
hyperfine_flags=-N measure "start: shadow run -- true vs bwrap true" \
	true "$jail --project $empty -- true" \
	true "bwrap --unshare-all --die-with-parent --new-session --ro-bind / / --dev /dev --proc /proc true" 3
measure_less "read 5,000 files, each less true" \
	"$jail --project $files -- sh $scripts/read.sh" "$jail --project $files -- true" \
	"cd $outside && sh $scripts/read.sh" "cd $outside && true" 1.10
# The floor of 2.: the same read through a bare overlay of the project (upper on tmpfs), mounted
# afresh for each run as each jail mounts its own, in a user and mount namespace of its own.
if unshare -Urm true 2>/dev/null; then
	echo "mount -t tmpfs tmpfs $work/ovl && mkdir $work/ovl/u $work/ovl/w &&
		mount -t overlay overlay -o lowerdir=$files,upperdir=$work/ovl/u,workdir=$work/ovl/w,userxattr $files &&
		cd $files && \"\$@\"" >"$scripts/overlay.sh"
	mkdir -p "$work/ovl"
	measure_less "(floor) the same read through a bare overlay" \
		"unshare -Urm sh $scripts/overlay.sh sh $scripts/read.sh" "unshare -Urm sh $scripts/overlay.sh true" \
		"cd $outside && sh $scripts/read.sh" "cd $outside && true" -
fi
# Each jailed run starts from a fresh session, so that every file is copied up again.
measure "append a line to 5,000 files, the whole run" \
	"$discard $files >/dev/null 2>&1 || true" "$jail --project $files -- sh $scripts/append.sh" \
	true "cd $outside && sh $scripts/append.sh" 5
measure "(floor) the 5,000 files written anew outside" \
	"rm -rf $work/copy" "cp -r $files $work/copy" true "cd $outside && sh $scripts/append.sh" -
rm -rf "$work/copy"
$discard "$files" >/dev/null 2>&1 || true
# Both sides link: go build skips the link when the -o file is already up to date, and the jail's
# /tmp/out is new on every run, so the outside build starts from a removed output too.
measure_less "go build, warm cache, each less true" \
	"$jail --project $mod -- go build -o /tmp/out ." "$jail --project $mod -- true" \
	"cd $mod && rm -f $work/out && go build -o $work/out ." "cd $mod && true" 1.10
hyperfine_flags=-N measure "a run's fixed cost: 20,000 files staged vs none" \
	true "$jail --project $staged -- true" true "$jail --project $empty -- true" 1.3
measure_less "relay 10 MB of colour to a terminal vs script" \
	"script -qec '$jail --project $relay -- cat $relay/out.txt' /dev/null" \
	"script -qec '$jail --project $relay -- true' /dev/null" \
	"script -qec \"script -qec 'cat $relay/out.txt' /dev/null\" /dev/null" \
	"script -qec \"script -qec true /dev/null\" /dev/null" 1.1
print_table
