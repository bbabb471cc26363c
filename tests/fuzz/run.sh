#!/usr/bin/env bash
# make fuzz: runs each libFuzzer target (build/fuzz/fuzz_NAME) for SECONDS, starting from the seeds
# in tests/fuzz/corpus/NAME (new inputs go to build/fuzz/corpus/NAME, the seeds stay as they are),
# after replaying the inputs of every crash found so far (tests/fuzz/regress/NAME). Prints the
# executions and findings of each target; exits 1 when any target crashed.
# Usage: tests/fuzz/run.sh SECONDS fuzz_NAME...
set -uo pipefail
cd "$(dirname "$0")/../.."
secs=$1
shift
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
    "$bin" "$work" "tests/fuzz/corpus/$name" "${dict[@]}" -max_total_time="$secs" -timeout=10 \
        -rss_limit_mb=2048 -detect_leaks=0 -print_final_stats=1 \
        -artifact_prefix="build/fuzz/artifacts/$name-" > "$log" 2>&1
    rc=$?
    execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}')
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | awk '{print $2}')
    corpus=$(ls "$work" | wc -l)
    if [ $rc -eq 0 ]; then
        found="no crash"
    else
        found="CRASH (exit $rc): $(ls -t build/fuzz/artifacts/$name-* 2>/dev/null | head -1), see $log"
        status=1
    fi
    line=$(printf '%-12s %10s executions in %ss, coverage %s edges, corpus %s inputs: %s' \
        "$name" "${execs:-?}" "$secs" "${cov:-?}" "$corpus" "$found")
    echo "$line"
    summary+="$line"$'\n'
done
printf '\n%s' "$summary"
exit $status
