#!/usr/bin/env bash
# make bench: the Go benchmarks, then every whole-process benchmark script, then SPEC §9's table
# with each target, its figures, its ratio and whether it holds, as measured in this one run.
# Usage: bench/all.sh PATH/TO/shadow PACKAGE...
set -euo pipefail
cd "$(dirname "$0")/.."
shadow=$1
shift
BENCH_TABLE=$(mktemp)
export BENCH_TABLE
gout=$(mktemp)
trap 'rm -f "$BENCH_TABLE" "$gout"' EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }
started=$(load)

go test -run '^$' -bench . -benchmem -benchtime 3x "$@" | tee "$gout"
# The targets the Go benchmarks measure: an absolute figure against its limit, in milliseconds.
awk '
function ms(name, metric, unit,    i) {
	for (i = 3; i < NF; i++) if ($(i + 1) == metric) v[name] = $i / unit
}
$1 ~ /^BenchmarkOpen100k-/ { ms("open", "ns/op", 1e6) }
$1 ~ /^BenchmarkKeyToFrame\/5000-hunks-/ { ms("key", "p99-µs", 1e3) }
$1 ~ /^BenchmarkProxyInJail-/ { ms("proxy", "ns/req-added", 1e6) }
$1 ~ /^BenchmarkTerminated\/direct-/ { ms("tlsdirect", "ns/op", 1e6) }
$1 ~ /^BenchmarkTerminated\/proxy-/ { ms("tlsproxy", "ns/op", 1e6) }
function out(what, value, limit) {
	printf "%-52s %8.3f ms %11s %7s  < %s ms  %s\n", what, value, "-", "-", limit, (value < limit ? "ok" : "MISSED")
}
END {
	if ("open" in v) out("review: open a 100,000-line diff", v["open"], 200)
	if ("key" in v) out("review: key to next frame, p99", v["key"], 16)
	if ("proxy" in v) out("proxy: added per request, kept alive", v["proxy"], 1)
	if ("tlsproxy" in v && "tlsdirect" in v) out("proxy: added per request, TLS terminated", v["tlsproxy"] - v["tlsdirect"], 1)
}' "$gout" >>"$BENCH_TABLE"

SHADOW=$shadow bash bench/jail.sh 5
bash bench/review.sh "$shadow" 10000
bash bench/audit.sh "$shadow"
bash bench/project.sh "$shadow"
bash bench/sessions.sh "$shadow"

echo
echo "== SPEC §9, every target of this run ($(nproc) cores; load at the start $started, at the end $(load))"
printf '%-52s %11s %11s %7s  %s\n' "target" "shadow" "reference" "ratio" "limit"
cat "$BENCH_TABLE"
