#!/usr/bin/env bash
# make faults: a run killed after its last checkpoint but before its done record. Such a run was
# never finished again: every resume printed "done: 0 steps" and ./sweep reran it forever. The
# moment is microseconds wide, so it is made exactly (the state kill -9 leaves there: the final
# checkpoint and `latest`, the log without its last line), for a run of `steps` and a run that
# stops at stop_at_acc; then KILLS kill -9 at random moments of the last 30% of the run. Each resume
# must end the log with exactly one done record and equal the uninterrupted run.
# Usage: tests/faults/kill_before_done.sh [STEPS]   (env: TRAIN, KILLS, SEED)
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/faults/common.sh
steps=${1:-60}
kills=${KILLS:-10}
RANDOM=${SEED:-$$}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
final=$(printf 'ckpt_%08d.safetensors' "$steps")

# $1 run folder, $2 extra arguments: resume must write the one missing done record
check_resume() {
    # shellcheck disable=SC2086
    $TRAIN /dev/null $RUN_ARGS $2 out_dir="$1" > "$tmp/resume.log" 2>&1 || { echo "FAIL: resume of $1:"; cat "$tmp/resume.log"; exit 1; }
    [ "$(grep -c '"type":"done"' "$1/metrics.jsonl")" = 1 ] && tail -1 "$1/metrics.jsonl" | grep -q '"type":"done"' ||
        { echo "FAIL: $1: the log does not end with one done record:"; tail -3 "$1/metrics.jsonl"; cat "$tmp/resume.log"; exit 1; }
}

for extra in "steps=$steps" "steps=1000 eval_every=5 stop_at_acc=0.02"; do
    # shellcheck disable=SC2086
    $TRAIN /dev/null $RUN_ARGS $extra out_dir="$tmp/ref" > "$tmp/ref.log" 2>&1 || { echo "FAIL: reference run"; cat "$tmp/ref.log"; exit 1; }
    cp -r "$tmp/ref" "$tmp/cut"
    sed -i '$d' "$tmp/cut/metrics.jsonl"  # the done record kill -9 did not let it write
    check_resume "$tmp/cut" "$extra"
    cmp -s "$tmp/ref/metrics.jsonl" "$tmp/cut/metrics.jsonl" || { echo "FAIL: ($extra) the log differs from the uninterrupted run's"; exit 1; }
    [ "$(ls "$tmp/ref"/ckpt_* | wc -l)" = "$(ls "$tmp/cut"/ckpt_* | wc -l)" ] || { echo "FAIL: ($extra) trained past its end"; exit 1; }
    rm -rf "$tmp/ref" "$tmp/cut"
done

# kill -9 at random moments of the last 30% of the run, then resume
# shellcheck disable=SC2086
t0=$(date +%s%N)
$TRAIN /dev/null $RUN_ARGS steps="$steps" out_dir="$tmp/ref" > "$tmp/ref.log" 2>&1 || { echo "FAIL: reference run"; exit 1; }
ref_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
killed=0
for i in $(seq "$kills"); do
    rm -rf "$tmp/run"
    # shellcheck disable=SC2086
    $TRAIN /dev/null $RUN_ARGS steps="$steps" out_dir="$tmp/run" > /dev/null 2>&1 &
    pid=$!
    sleep "$(awk -v ms=$(( ref_ms * 7 / 10 + RANDOM % (ref_ms * 3 / 10 + 1) )) 'BEGIN { printf "%.3f", ms / 1000 }')"
    kill -9 "$pid" 2>/dev/null && killed=$((killed + 1))
    wait "$pid" 2>/dev/null
    check_resume "$tmp/run" "steps=$steps"
    same_run "$tmp/ref" "$tmp/run" "$final" || exit 1
done
echo "kill_before_done: a run cut between its last checkpoint and its done record (steps, and stop_at_acc) is" \
     "finished by the next resume: one done record, the same log, no step past the end; $killed of $kills" \
     "kill -9 in the last 30% of the run, each resumed to the uninterrupted run"
