#!/usr/bin/env bash
# make faults: the disk fills up while a checkpoint is written. The trainer must stop with one
# line on stderr and exit status 1, leave no temporary file, keep `latest` on the previous
# checkpoint and that checkpoint whole; resuming once there is space again must finish the run
# exactly as an uninterrupted one. Two ways to fill it:
#   tmpfs   a 3.5-checkpoint tmpfs (real ENOSPC; needs mount, so root; skipped otherwise)
#   ulimit  a file-size limit below one checkpoint (EFBIG; SIGXFSZ ignored so write() fails)
# Usage: tests/faults/disk_full.sh   (env: TRAIN)
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/faults/common.sh
steps=8
tmp=$(mktemp -d)
mnt=""
cleanup() { [ -n "$mnt" ] && umount "$mnt" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
final=$(printf 'ckpt_%08d.safetensors' "$steps")
# shellcheck disable=SC2086
$TRAIN /dev/null $RUN_ARGS steps="$steps" out_dir="$tmp/ref" > /dev/null 2>&1 || { echo "FAIL: reference run"; exit 1; }
ckpt_bytes=$(stat -c %s "$tmp/ref/ckpt_00000000.safetensors")

# check_full NAME DIR: the failed run's folder DIR (its stderr in DIR.err, exit status in DIR.st)
check_full() {
    local name=$1 dir=$2 st err latest
    st=$(cat "$dir.st")
    err=$(cat "$dir.err")
    if [ "$st" != 1 ] || [ "$(wc -l < "$dir.err")" != 1 ]; then
        echo "FAIL ($name): expected exit 1 and one line on stderr, got exit $st:"; cat "$dir.err"; return 1
    fi
    if ls "$dir"/*.tmp > /dev/null 2>&1; then echo "FAIL ($name): temporary files left: $(ls "$dir"/*.tmp)"; return 1; fi
    latest=$(cat "$dir/latest")
    if ! cmp -s <(data_section "$dir/$latest") <(data_section "$tmp/ref/$latest"); then
        echo "FAIL ($name): $latest is not the uninterrupted run's"; return 1
    fi
    # space again: resume elsewhere and finish
    cp -r "$dir" "$tmp/$name.resumed"
    # shellcheck disable=SC2086
    $TRAIN /dev/null $RUN_ARGS steps="$steps" out_dir="$tmp/$name.resumed" > "$tmp/$name.resumed.log" 2>&1 ||
        { echo "FAIL ($name): resume:"; cat "$tmp/$name.resumed.log"; return 1; }
    same_run "$tmp/ref" "$tmp/$name.resumed" "$final" || return 1
    echo "disk_full ($name): exit 1, '$err'; latest = $latest intact; resumed to step $steps = the uninterrupted run"
}

fail=0
# tmpfs: room for 3.5 checkpoints (plus the config and logs)
mkdir -p "$tmp/mnt"
if mount -t tmpfs -o size=$(( ckpt_bytes * 7 / 2 / 1024 + 16 ))k tmpfs "$tmp/mnt" 2> /dev/null; then
    mnt="$tmp/mnt"
    # shellcheck disable=SC2086
    $TRAIN /dev/null $RUN_ARGS steps="$steps" out_dir="$mnt/run" > /dev/null 2> "$mnt/run.err"
    echo $? > "$mnt/run.st"
    check_full tmpfs "$mnt/run" || fail=1
else
    echo "disk_full (tmpfs): skipped (cannot mount a tmpfs here)"
fi

# ulimit: two steps with room, then files may not exceed half a checkpoint
# shellcheck disable=SC2086
$TRAIN /dev/null $RUN_ARGS steps="$steps" stop_at_step=2 out_dir="$tmp/lim" > /dev/null 2>&1 || { echo "FAIL: first 2 steps"; exit 1; }
(
    trap '' XFSZ
    ulimit -f $(( ckpt_bytes / 2048 ))
    # shellcheck disable=SC2086
    exec $TRAIN /dev/null $RUN_ARGS steps="$steps" out_dir="$tmp/lim" > /dev/null 2> "$tmp/lim.err"
)
echo $? > "$tmp/lim.st"
check_full ulimit "$tmp/lim" || fail=1
exit $fail
