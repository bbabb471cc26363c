#!/usr/bin/env bash
# make faults: two writers of one file at once, ROUNDS times (default 50; `make test` runs 3 in
# tests/test_faults.c). Before the per-file locks and per-writer temporary names (core/io.h), two
# ./evaluate merging into one intervention.jsonl or eval.jsonl lost a record in 12 of 20 rounds
# (7 times while the writer that wrote it exited 0: both wrote PATH.tmp and renamed it), two
# ./sweep --collect at once failed one in 10 of 10, and a sweep beside a --collect failed in 3 of
# 10. Each round here, from an empty log:
#   - ./evaluate RUN intervene=oracle beside ./evaluate RUN intervene=oracle_wrong: both exit 0 and
#     intervention.jsonl holds the records of both;
#   - ./evaluate RUN beside ./evaluate RUN mqar_val_examples=64: eval.jsonl holds both series;
#   - ./sweep --collect twice at once, and a sweep (its points finished) beside a --collect: every
#     one exits 0 and summary.csv has every point done.
# Usage: tests/faults/concurrent_writers.sh [ROUNDS]   (env: TRAIN, EVALUATE, SWEEP)
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
TRAIN=${TRAIN:-./train}
EVALUATE=${EVALUATE:-./evaluate}
SWEEP=${SWEEP:-./sweep}
rounds=${1:-${ROUNDS:-50}}
abs() { case $1 in /*) echo "$1" ;; *) echo "$root/$1" ;; esac; }
TRAIN=$(abs "$TRAIN") EVALUATE=$(abs "$EVALUATE") SWEEP=$(abs "$SWEEP")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'vocab_size = 64\nseq_len = 32\nmqar_kv_pairs = 4\nmqar_train_examples = 256\nmqar_test_examples = 32\n'`
      `'d_model = 16\nn_head = 2\nbatch_size = 16\nlr = 3e-3\neval_every = 0\nsparsity_every = 0\n'`
      `'save_every = 4\nsteps = 4\nthreads = 1\n' > "$tmp/b.conf"
printf 'base = b.conf\nseed = 1, 2\n' > "$tmp/s.sweep"
"$TRAIN" "$tmp/b.conf" out_dir="$tmp/run" > "$tmp/train.log" 2>&1 || { cat "$tmp/train.log"; exit 1; }
(cd "$tmp" && "$SWEEP" s.sweep --out sw > sweep.log 2>&1) || { cat "$tmp/sweep.log"; exit 1; }

# Runs two commands at once (in $tmp); both must exit 0.
both() {
    (cd "$tmp" && eval "exec $1" > a.log 2>&1) &
    local a=$!
    (cd "$tmp" && eval "exec $2" > b.log 2>&1) &
    local b=$!
    wait $a; local sa=$?
    wait $b; local sb=$?
    if [ $sa != 0 ] || [ $sb != 0 ]; then
        echo "FAIL: round $r: '$1' exited $sa, '$2' exited $sb:"; cat "$tmp/a.log" "$tmp/b.log"; exit 1
    fi
}
all_done() {
    local st
    st=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "status") c = i; next } { print $c }' \
         "$tmp/sw/summary.csv" | sort | uniq -c | tr -s ' ')
    [ "$st" = " 2 done" ] || { echo "FAIL: round $r ($1): the summary's statuses: $st"; exit 1; }
}
records=0
for r in $(seq "$rounds"); do
    rm -f "$tmp/run/intervention.jsonl" "$tmp/run/eval.jsonl"
    both "$EVALUATE run intervene=oracle threads=1" "$EVALUATE run intervene=oracle_wrong threads=1"
    for kind in oracle oracle_wrong; do
        n=$(grep -c "\"kind\":\"$kind\"" "$tmp/run/intervention.jsonl")
        [ "$n" -ge 1 ] || { echo "FAIL: round $r: intervention.jsonl lost the $kind records"; exit 1; }
        records=$((records + n))
    done
    both "$EVALUATE run threads=1" "$EVALUATE run mqar_val_examples=64 threads=1"
    own=$(grep -vc '"options"' "$tmp/run/eval.jsonl")
    other=$(grep -c '"options":"mqar_val_examples=64"' "$tmp/run/eval.jsonl")
    { [ "$own" -ge 1 ] && [ "$other" -ge 1 ]; } ||
        { echo "FAIL: round $r: eval.jsonl holds $own records of the plain run and $other of the other"; exit 1; }
    records=$((records + own + other))
    both "$SWEEP s.sweep --out sw --collect" "$SWEEP s.sweep --out sw --collect"
    all_done "two --collect"
    both "$SWEEP s.sweep --out sw" "$SWEEP s.sweep --out sw --collect"
    all_done "a sweep beside --collect"
done
echo "concurrent writers: $rounds rounds, every writer exited 0, all $records records of the evaluations kept, every summary whole"
