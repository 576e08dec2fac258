#!/usr/bin/env bash
# Whole-process comparisons for the review pipeline (SPEC §9), as ratios of medians, interleaved:
#   shadow diff --stat over N changed files  vs  git diff --no-index --stat of the same two trees
#   shadow apply --all of N files            vs  cp -a of the same files
# (shadow apply journals and fsyncs what it writes; cp -a does neither. Both start from a synced
# disk, so neither pays for the other's writeback.)
# Usage: bench/review.sh [PATH/TO/shadow] [N] [ROUNDS]   (needs hyperfine, jq, git)
set -euo pipefail
n=${2:-10000}
rounds=${3:-5}
. "$(dirname "$0")/lib.sh"
bench_init review "${1:-bin/shadow}" git
project="$work/project"
mkdir -p "$project"
echo "generating $n files..."
for ((d = 0; d < n / 100; d++)); do
  mkdir -p "$project/d$d"
  for ((f = 0; f < 100; f++)); do
    printf 'line one of %d/%d\nline two\nline three\n' "$d" "$f" >"$project/d$d/f$f.txt"
  done
done
git -C "$project" init -q
# The agent: append a line to every file, in the jail.
"$shadow" run --project "$project" -- sh -c 'for f in d*/f*.txt; do echo appended >> "$f"; done' >/dev/null 2>&1
# The same two trees for git: the base and the agent's result.
cp -a "$project" "$work/base"
cp -a "$project" "$work/agent"
(cd "$work/agent" && for f in d*/f*.txt; do echo appended >>"$f"; done)

measure "diff --stat, $n files changed" \
  true "$shadow diff --project $project --stat >/dev/null" \
  true "cd $work && git diff --no-index --stat base agent >/dev/null || true" 1.5
rm -rf "$work/copy"
measure "apply --all of $n files (journal included) vs cp -a" \
  "$shadow apply --project $project --rollback --yes >/dev/null 2>&1 || true; sync" "$shadow apply --project $project --all --yes >/dev/null 2>&1" \
  "rm -rf $work/copy; sync" "cp -a $work/agent $work/copy" 3
print_table
