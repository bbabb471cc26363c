#!/usr/bin/env bash
# make fuzz: runs each libFuzzer target (build/fuzz/fuzz_NAME) for SECONDS, starting from the seeds
# in tests/fuzz/corpus/NAME (new inputs go to build/fuzz/corpus/NAME, the seeds stay as they are),
# after replaying the inputs of every crash found so far (tests/fuzz/regress/NAME). Prints the
# executions, their rate and the findings of each target; exits 1 when any target crashed.
# With FUZZ_RUNS=N in the environment (make fuzz FUZZ_RUNS=N) each target runs N executions
# (libFuzzer's -runs=N, the seeds included) instead, with no time limit: SECONDS is then ignored.
# Usage: [FUZZ_RUNS=N] tests/fuzz/run.sh SECONDS fuzz_NAME...
set -uo pipefail
cd "$(dirname "$0")/../.."
secs=$1
shift
runs=${FUZZ_RUNS:-}
if [ -n "$runs" ] && ! [[ "$runs" =~ ^[1-9][0-9]*$ ]]; then
    echo "FUZZ_RUNS: expected a positive number of executions, got '$runs'" >&2
    exit 2
fi
if [ -n "$runs" ]; then bound=(-runs="$runs"); else bound=(-max_total_time="$secs"); fi
status=0
summary=""
for target in "$@"; do
    name=${target#fuzz_}
    bin=build/fuzz/$target
    work=build/fuzz/corpus/$name
    log=build/fuzz/$name.log
    mkdir -p "$work" build/fuzz/artifacts
    dict=()
    [ -f "tests/fuzz/$name.dict" ] && dict=(-dict="tests/fuzz/$name.dict")
    if [ -d "tests/fuzz/regress/$name" ] && ls "tests/fuzz/regress/$name"/* >/dev/null 2>&1; then
        if ! "$bin" -runs=1 "tests/fuzz/regress/$name"/* > "$log.regress" 2>&1; then
            echo "$target: a regression input crashes again (see $log.regress)"
            status=1
        fi
    fi
    # The parsers' own error exits are checked by the harness; LeakSanitizer's per-input check is
    # replaced by the harness's (an exit leaves memory behind on purpose).
    start=$(date +%s.%N)
    "$bin" "$work" "tests/fuzz/corpus/$name" "${dict[@]}" "${bound[@]}" -timeout=10 \
        -rss_limit_mb=2048 -detect_leaks=0 -print_final_stats=1 \
        -artifact_prefix="build/fuzz/artifacts/$name-" > "$log" 2>&1
    rc=$?
    took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}')
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | awk '{print $2}')
    corpus=$(ls "$work" | wc -l)
    if [ $rc -eq 0 ]; then
        found="no crash"
    else
        found="CRASH (exit $rc): $(ls -t build/fuzz/artifacts/$name-* 2>/dev/null | head -1), see $log"
        status=1
    fi
    rate=$(awk -v n="${execs:-0}" -v t="$took" 'BEGIN { printf "%d", (t > 0 ? n / t : 0) }')
    line=$(printf '%-12s %10s executions in %.0fs (%s/s), coverage %s edges, corpus %s inputs: %s' \
        "$name" "${execs:-?}" "$took" "$rate" "${cov:-?}" "$corpus" "$found")
    echo "$line"
    summary+="$line"$'\n'
done
printf '\n%s' "$summary"
exit $status
