#!/usr/bin/env bash
# make faults: kill -9 a training at random moments KILLS times (default 20; a checkpoint is
# written after every step, so many kills land inside a checkpoint write), resuming it each time
# with resume = auto. Every resume must start from a complete checkpoint (a damaged one would stop
# it with exit 2), and the finished run must equal an uninterrupted one: the same tensors in the
# final checkpoint, byte for byte, and the same loss at every step.
# Usage: tests/faults/kill9.sh [STEPS]   (env: TRAIN, KILLS, SEED)
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/faults/common.sh
steps=${1:-300}
kills=${KILLS:-20}
RANDOM=${SEED:-$$}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
final=$(printf 'ckpt_%08d.safetensors' "$steps")

t0=$(date +%s%N)
# shellcheck disable=SC2086
$TRAIN /dev/null $RUN_ARGS steps="$steps" out_dir="$tmp/ref" > "$tmp/ref.log" 2>&1 || { echo "FAIL: reference run"; cat "$tmp/ref.log"; exit 1; }
ref_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
# kill after a random 0 .. 1.5 x (the run's time / kills): the kills spread over the whole run
max_ms=$(( ref_ms * 3 / (2 * kills) + 20 ))

killed=0 in_write=0 resumed=0 done_early=0
for i in $(seq "$kills"); do
    touch "$tmp/start"
    # shellcheck disable=SC2086
    $TRAIN /dev/null $RUN_ARGS steps="$steps" out_dir="$tmp/run" > "$tmp/run.log" 2>&1 &
    pid=$!
    sleep "$(awk -v ms=$(( RANDOM % max_ms )) 'BEGIN { printf "%.3f", ms / 1000 }')"
    if kill -9 "$pid" 2>/dev/null; then
        wait "$pid" 2>/dev/null
        killed=$((killed + 1))
        # a checkpoint's temporary file written by this process: the kill cut a checkpoint write
        [ -n "$(find "$tmp/run" -name 'ckpt_*.safetensors.*tmp' -newer "$tmp/start")" ] && in_write=$((in_write + 1))
    else
        wait "$pid"
        st=$?
        if [ $st -ne 0 ]; then echo "FAIL: run $i exited $st:"; cat "$tmp/run.log"; exit 1; fi
        done_early=1
        break
    fi
    grep -q "^resuming from" "$tmp/run.log" && resumed=$((resumed + 1))
    if grep -qE "^(resume|init_from|out_dir)|error|corrupt" "$tmp/run.log"; then
        echo "FAIL: run $i:"; cat "$tmp/run.log"; exit 1
    fi
done
# shellcheck disable=SC2086
$TRAIN /dev/null $RUN_ARGS steps="$steps" out_dir="$tmp/run" > "$tmp/run.log" 2>&1 || { echo "FAIL: the last resume:"; cat "$tmp/run.log"; exit 1; }
same_run "$tmp/ref" "$tmp/run" "$final" || exit 1
echo "kill9: $killed kills of a $steps-step run ($ref_ms ms uninterrupted; kills within ${max_ms} ms of each start)," \
     "$in_write of them during a checkpoint write, $resumed resumed runs killed again;" \
     "the finished run equals the uninterrupted one (final tensors, every step's loss)"
[ $done_early = 0 ] || echo "kill9: note: a run finished before its kill (fewer than $kills kills)"
