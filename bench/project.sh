#!/usr/bin/env bash
# Costs that must follow the change, not the project (SPEC §2, §9), as ratios in one run:
#   1. shadow diff --stat, 10 files changed in a 100,000-file project  vs  git status --porcelain   (<= 1.5x)
#   2. shadow apply --all of those 10 files                             vs  git status --porcelain   (<= 1.5x)
#   3. the session's first run (the run that edits the 10 files)        vs  git status               (<= 1.5x)
#   4. shadow diff --stat of a 200 MB file changed in one line          vs  git diff --no-index --stat
#      of the same two files                                                                         (<= 2x)
# The project is a git repository just committed, its index fresh as a clone's, so git status is
# the git status of a fresh clone. The two commands of a target are interleaved, one run of each a
# round, so that a change of the machine's load falls on both; each ratio is of the medians.
# Usage: bench/project.sh [PATH/TO/shadow] [ROUNDS]   (needs hyperfine, jq, git)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${2:-7}
. bench/lib.sh
bench_init project "${1:-}" git

# File creation is slow on some disks: the fixture is made once, small files, by one process.
echo "== fixtures: 100,000 files in 1,000 directories, a git repository; a 200 MB file"
proj=$work/project
mkdir -p "$proj"
(cd "$proj" && mkdir $(printf 'd%03d ' $(seq 0 999)) &&
	awk 'BEGIN { for (d = 0; d < 1000; d++) for (f = 0; f < 100; f++) {
		p = sprintf("d%03d/f%02d.txt", d, f); printf "file %d of dir %d\nline two\n", f, d > p; close(p) } }' &&
	git init -q && git add -A && git -c user.name=bench -c user.email=bench@example.com commit -qm fixture)
big=$work/big
mkdir -p "$big"
awk 'BEGIN { for (i = 0; i < 3278689; i++) printf "line %09d of the big file, with some text to pad it out\n", i }' >"$big/big.txt"

scripts=$work/scripts
mkdir -p "$scripts"
# The agent's 10 edits: a line appended to 10 files of 10 directories.
echo 'for i in 0 1 2 3 4 5 6 7 8 9; do echo edited >>d${i}00/f0$i.txt; done' >"$scripts/edit.sh"
echo 'sed -i "s/^line 001400000 of/line 001400000 OF/" big.txt' >"$scripts/editbig.sh"
run="$shadow run --ro $scripts --project"
fresh="$shadow discard --yes --project $proj >/dev/null 2>&1 || true; $run $proj -- sh $scripts/edit.sh >/dev/null 2>&1"

$run "$big" -- sh "$scripts/editbig.sh" >/dev/null 2>&1
staged=$(ls -d "$XDG_STATE_HOME"/shadow/sessions/*/upper/big.txt)
# The mask cache and the page cache warm, as for anyone's second command.
eval "$fresh"
git -C "$proj" status --porcelain >/dev/null

echo "== measuring ($rounds rounds)"
measure "diff --stat, 10 of 100,000 changed" "true" "$shadow diff --stat --project $proj" \
	"true" "git -C $proj status --porcelain" 1.5
# Each apply applies a session of its own; git status then sees the 10 files the applies changed.
measure "apply --all, 10 of 100,000 changed" "$fresh" "$shadow apply --all --yes --project $proj" \
	"true" "git -C $proj status --porcelain" 1.5
measure "a session's first run, 10 edits" "$shadow discard --yes --project $proj >/dev/null 2>&1 || true" \
	"$run $proj -- sh $scripts/edit.sh" "true" "git -C $proj status --porcelain" 1.5
# Not a target: the fixed cost of any run, on an empty project, for scale (the first run pays it
# on top of the manifest, a stat of every file as git status makes).
empty=$work/empty
mkdir -p "$empty"
measure "(scale) run -- true, empty project" "true" "$shadow run --project $empty -- true" \
	"true" "git -C $proj status --porcelain" -
measure "diff --stat, 200 MB file, one line changed" "true" "$shadow diff --stat --project $big" \
	"true" "git diff --no-index --stat $big/big.txt $staged" 2
print_table
