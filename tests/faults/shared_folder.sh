#!/usr/bin/env bash
# make faults: two ./train started together on one run folder, ROUNDS times (default 5), half of
# them with overwrite = true / resume = never in the second. Exactly one may train: the other
# exits 2 with one line naming the holder's pid (the run folder's lock), and the folder then holds
# one run equal to an uninterrupted one (final tensors, every step's loss). Before the lock, both
# exited 0 and the folder held two runs' records and checkpoints interleaved.
# Usage: tests/faults/shared_folder.sh [STEPS]   (env: TRAIN, ROUNDS)
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/faults/common.sh
steps=${1:-60}
rounds=${ROUNDS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
final=$(printf 'ckpt_%08d.safetensors' "$steps")
# shellcheck disable=SC2086
$TRAIN /dev/null $RUN_ARGS steps="$steps" out_dir="$tmp/ref" > "$tmp/ref.log" 2>&1 || { echo "FAIL: reference run"; cat "$tmp/ref.log"; exit 1; }
for r in $(seq "$rounds"); do
    run="$tmp/run$r"
    second=""
    [ $((r % 2)) = 0 ] && second="resume=never overwrite=true"
    # shellcheck disable=SC2086
    $TRAIN /dev/null $RUN_ARGS steps="$steps" out_dir="$run" > "$tmp/a.log" 2>&1 &
    a=$!
    # shellcheck disable=SC2086
    $TRAIN /dev/null $RUN_ARGS steps="$steps" out_dir="$run" $second > "$tmp/b.log" 2>&1 &
    b=$!
    wait $a; sa=$?
    wait $b; sb=$?
    if [ $sa = 0 ] && [ $sb = 2 ]; then lost=b.log holder=$a
    elif [ $sa = 2 ] && [ $sb = 0 ]; then lost=a.log holder=$b
    else echo "FAIL: round $r: exits $sa and $sb (expected one 0 and one 2)"; cat "$tmp/a.log" "$tmp/b.log"; exit 1; fi
    want="out_dir: '$run' is in use by process $holder (another ./train writing this run); wait for it to end or choose another out_dir"
    if [ "$(cat "$tmp/$lost")" != "$want" ]; then
        echo "FAIL: round $r: the refused run printed:"; cat "$tmp/$lost"; echo "expected: $want"; exit 1
    fi
    same_run "$tmp/ref" "$run" "$final" || exit 1
    [ "$(grep -c '"type":"done"' "$run/metrics.jsonl")" = 1 ] || { echo "FAIL: round $r: not one done record"; exit 1; }
done
echo "shared_folder: $rounds rounds of two ./train on one folder: each time one trained, the other was refused" \
     "naming its pid (exit 2); the folder's run equals the uninterrupted one"
