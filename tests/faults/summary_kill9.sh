#!/usr/bin/env bash
# make faults: kill -9 a ./sweep --collect while it writes the summary, KILLS times (default 40).
# Every summary file (summary.csv, summary_groups.csv, summary.md, the figures) must then be the
# one of an uninterrupted collect, byte for byte, or the earlier one: the files go through the
# atomic writer (PATH.tmp, then rename), so a kill leaves at most a stray PATH.tmp. Before that
# summary.c wrote them in place: 40 kills left one of them empty or cut 10 times.
# The points are fake finished runs (an eval record, a sparsity record per layer and head, the
# done record), many of them so that a summary takes long enough for the kills to land in it.
# Usage: tests/faults/summary_kill9.sh [POINTS]   (env: SWEEP, KILLS, SEED)
set -uo pipefail
cd "$(dirname "$0")/../.."
SWEEP=${SWEEP:-./sweep}
points=${1:-300}
kills=${KILLS:-40}
RANDOM=${SEED:-$$}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

printf 'd_model = 16\nn_layer = 2\nn_head = 2\n' > "$tmp/b.conf"
seeds=$(seq -s ', ' 0 $((points / 3 - 1)))
printf 'base = b.conf\nout = out\nmixer = softmax, linear, gla\nseed = %s\n' "$seeds" > "$tmp/s.sweep"
# every point's folder, from the commands the sweep prints
(cd "$tmp" && "$OLDPWD/$SWEEP" s.sweep --print) | sed 's/.* out_dir=\([^ ]*\).*/\1/' | tr -d "'" > "$tmp/dirs" ||
    { echo "FAIL: --print"; exit 1; }
n=0
while read -r dir; do
    n=$((n + 1))
    mkdir -p "$tmp/$dir"
    acc=$(awk -v n=$n 'BEGIN { printf "%.4f", (n * 37 % 100) / 100 }')
    {
        for s in 10 20 30; do
            printf '{"type":"train","step":%d,"loss":2.0,"acc":0.1,"tok_per_s":1000,"ms_per_step":5}\n' $s
            printf '{"type":"eval","step":%d,"split":"val","loss":1.5,"acc":%s,"acc_kv4_L64":%s}\n' $s "$acc" "$acc"
        done
        printf '{"type":"done","step":30,"reason":"steps"}\n'
    } > "$tmp/$dir/metrics.jsonl"
    for s in 10 20 30; do for l in 0 1; do for h in 0 1; do
        printf '{"step":%d,"layer":%d,"head":%d,"S":0.%d,"S_recall":0.%d,"ans_share":0.5,"ans_hit":0.5,"S_recall_kv4_L64":0.3}\n' \
            $s $l $h $((n % 9 + 1)) $((s / 10 + l))
    done; done; done > "$tmp/$dir/sparsity.jsonl"
done < "$tmp/dirs"

collect() { (cd "$tmp" && exec "$OLDPWD/$SWEEP" s.sweep --collect > /dev/null 2>&1); }
t0=$(date +%s%N)
collect || { echo "FAIL: the reference --collect"; exit 1; }
ref_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
mkdir "$tmp/ref"
files=$(cd "$tmp/out" && ls summary*.csv summary.md ./*.svg)
for f in $files; do cp "$tmp/out/$f" "$tmp/ref/"; done
[ -s "$tmp/ref/summary_groups.csv" ] && [ -s "$tmp/ref/S_steps.svg" ] || { echo "FAIL: the reference summary lacks files: $files"; exit 1; }

killed=0
for i in $(seq "$kills"); do
    (cd "$tmp" && exec "$OLDPWD/$SWEEP" s.sweep --collect > /dev/null 2>&1) &
    pid=$!
    sleep "$(awk -v ms=$(( RANDOM % (ref_ms + 1) )) 'BEGIN { printf "%.3f", ms / 1000 }')"
    kill -9 "$pid" 2>/dev/null && killed=$((killed + 1))
    wait "$pid" 2>/dev/null
    for f in $files; do
        if ! cmp -s "$tmp/ref/$f" "$tmp/out/$f"; then
            echo "FAIL: kill $i: $f is not the whole summary file ($(wc -c < "$tmp/out/$f" 2>/dev/null || echo missing) bytes of $(wc -c < "$tmp/ref/$f"))"
            exit 1
        fi
    done
done
collect || { echo "FAIL: the --collect after the kills"; exit 1; }
left=$(cd "$tmp/out" && ls ./*.tmp 2>/dev/null)
[ -z "$left" ] || { echo "FAIL: a whole --collect left temporary files: $left"; exit 1; }
echo "summary_kill9: $killed of $kills kill -9 of a ./sweep --collect of $n points ($ref_ms ms uninterrupted):" \
     "every summary file ($(echo $files | wc -w)) was whole after each"
