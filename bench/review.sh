#!/usr/bin/env bash
# Whole-process comparisons for the review pipeline (SPEC §9), as ratios in one run:
#   shadow diff --stat over N changed files  vs  git diff --no-index --stat of the same two trees
#   shadow apply --all of N files            vs  cp -a of the same files
# (shadow apply journals and fsyncs what it writes; cp -a does neither. Both start from a synced
# disk, so neither pays for the other's writeback.)
# Usage: bench/review.sh [PATH/TO/shadow] [N]   (needs hyperfine)
set -euo pipefail
shadow=$(realpath "${1:-bin/shadow}")
n=${2:-10000}
command -v hyperfine >/dev/null || { echo "bench/review.sh: hyperfine is not installed (apt-get install hyperfine)" >&2; exit 1; }

work=$(mktemp -d /tmp/shadow-bench-review.XXXXXX)
trap 'chmod -R u+rwX "$work" 2>/dev/null; rm -rf "$work"' EXIT
export XDG_STATE_HOME="$work/state"
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

out="${BENCH_OUT:-bench/out}"
mkdir -p "$out"
hyperfine --warmup 1 --runs 5 --export-markdown "$out/diff-stat.md" \
  -n "shadow diff --stat" "$shadow diff --project $project --stat >/dev/null" \
  -n "git diff --no-index --stat" "cd $work && git diff --no-index --stat base agent >/dev/null || true"

rm -rf "$work/copy"
hyperfine --runs 5 --export-markdown "$out/apply.md" \
  --prepare "$shadow apply --project $project --rollback --yes >/dev/null 2>&1 || true; sync" \
  -n "shadow apply --all" "$shadow apply --project $project --all --yes >/dev/null 2>&1" \
  --prepare "rm -rf $work/copy; sync" \
  -n "cp -a" "cp -a $work/agent $work/copy"
cat "$out/diff-stat.md" "$out/apply.md"
