# The part every bench script shares (sourced): its work directory, the shadow it measures, and
# the rows of SPEC §9's table. Each row is printed, kept in the script's table and, when
# BENCH_TABLE names a file (make bench sets it), appended there, so that make bench ends with
# every target of every script in one table.
#
# Two commands of a row are interleaved, one run of each a round, so that a change of the
# machine's load falls on both; each ratio is of the medians.

# bench_init NAME SHADOW TOOL...: checks the tools, makes $work (removed at exit) and sets
# $shadow: SHADOW, or a build of ./cmd/shadow in $work. Sessions live in $work.
bench_init() {
	local name=$1 given=$2 tool
	shift 2
	for tool in "$@" hyperfine jq awk; do
		command -v "$tool" >/dev/null || { echo "bench/$name.sh: $tool is not installed" >&2; exit 1; }
	done
	work=$(mktemp -d "${BENCH_DIR:-/tmp}/shadow-bench-$name.XXXXXX")
	# Overlay work dirs are left mode 000 by the kernel.
	trap 'chmod -R u+rwX "$work" 2>/dev/null; rm -rf "$work"' EXIT
	if [ -n "$given" ]; then
		shadow=$(realpath "$given")
	else
		shadow=$work/shadow
		go build -o "$shadow" ./cmd/shadow
		make -s --no-print-directory "$work/shadow-init" BIN="$shadow"
	fi
	export XDG_STATE_HOME="$work/state" XDG_CONFIG_HOME="$work/config"
	table=$work/table
	: >"$table"
}

# median FILE: the median of the numbers in FILE, one a line.
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# row NAME A B LIMIT: the table's line for NAME: A and B in seconds, A/B, LIMIT ("-": a figure
# for scale, no target) and whether it holds.
row() {
	awk -v n="$1" -v a="$2" -v b="$3" -v lim="$4" 'BEGIN {
		r = (b > 0 ? a / b : 0)
		printf "%-52s %9.3f s %9.3f s %6.2fx  <= %sx  %s\n", n, a, b, r, lim, (lim == "-" ? "" : b > 0 && r <= lim ? "ok" : "MISSED") }' |
		tee -a "$table" ${BENCH_TABLE:+"$BENCH_TABLE"}
}

# timed ROUND PREPARE CMD [PREPARE CMD ...]: one hyperfine run of each CMD, its PREPARE before it;
# the seconds of the i-th CMD are appended to $work/t.i.
timed() {
	local round=$1 args=() n=0 i
	shift
	while [ $# -ge 2 ]; do
		args+=(--prepare "$1" "$2")
		n=$((n + 1))
		shift 2
	done
	# shellcheck disable=SC2086 # $hyperfine_flags: words, e.g. -N (no shell) for a start-up row
	hyperfine ${hyperfine_flags:-} --style none --ignore-failure --warmup $((round == 0)) --runs 1 \
		--export-json "$work/h.json" "${args[@]}" >/dev/null 2>"$work/h.err" || { cat "$work/h.err" >&2; return 1; }
	for ((i = 0; i < n; i++)); do
		jq -r ".results[$i].times[]" "$work/h.json" >>"$work/t.$i"
	done
}

# measure NAME PREPARE CMD REF_PREPARE REF LIMIT: CMD against REF, rounds of one run of each.
measure() {
	local r
	rm -f "$work"/t.*
	for ((r = 0; r < rounds; r++)); do
		timed "$r" "$2" "$3" "$4" "$5"
	done
	row "$1" "$(median "$work/t.0")" "$(median "$work/t.1")" "$6"
}

# minus A B: A - B.
minus() { awk -v a="$1" -v b="$2" 'BEGIN { print a - b }'; }

# measure_less NAME CMD CMD_TRUE REF REF_TRUE LIMIT [PREPARE]: the workload's own cost on each
# side, CMD less CMD_TRUE (the same tool running true) against REF less REF_TRUE, rounds of one
# run of each of the four (PREPARE before CMD).
measure_less() {
	local r
	rm -f "$work"/t.*
	for ((r = 0; r < rounds; r++)); do
		timed "$r" "${7:-true}" "$2" true "$3" true "$4" true "$5"
	done
	row "$1" "$(minus "$(median "$work/t.0")" "$(median "$work/t.1")")" \
		"$(minus "$(median "$work/t.2")" "$(median "$work/t.3")")" "$6"
}

# print_table: the script's rows under a heading.
print_table() {
	echo
	printf '%-52s %11s %11s %7s  %s\n' "target" "shadow" "reference" "ratio" "limit"
	cat "$table"
}
