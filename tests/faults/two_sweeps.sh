#!/usr/bin/env bash
# make faults: two ./sweep started together on one sweep folder, ROUNDS times (default 3). The
# points' run locks kept each run single, but both sweeps exited 1 and the summary marked the
# points the other sweep ran as failed (exit 2). Now exactly one sweep runs: the other exits 2 with
# one line naming its pid (the sweep folder's lock), and the summary has every point done. Then a
# point whose folder a live ./train holds (started by hand from --print, held with SIGSTOP while
# the sweep runs): the sweep says it is running in that process, exits 0, the summary marks it
# running; once that ./train ends, the next sweep finds every point finished.
# Usage: tests/faults/two_sweeps.sh [STEPS]   (env: SWEEP, ROUNDS)
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
SWEEP=${SWEEP:-./sweep}
steps=${1:-150}
rounds=${ROUNDS:-3}
tmp=$(mktemp -d)
held=""
cleanup() { [ -n "$held" ] && kill -CONT "$held" 2>/dev/null && kill "$held" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
printf 'vocab_size = 64\nseq_len = 32\nmqar_kv_pairs = 4\nmqar_train_examples = 512\nmqar_test_examples = 64\n'`
      `'d_model = 32\nn_head = 2\nbatch_size = 16\nlr = 3e-3\neval_every = 50\nsparsity_every = 0\nsave_every = 50\n'`
      `'steps = %d\n' "$steps" > "$tmp/b.conf"
printf 'base = b.conf\nseed = 1, 2, 3, 4\njobs = 2\n' > "$tmp/s.sweep"
sweep() { (cd "$tmp" && exec "$root/$SWEEP" s.sweep --threads 2 "$@"); }

for r in $(seq "$rounds"); do
    out="r$r"
    # (cd && exec: $! is the sweep's own pid)
    (cd "$tmp" && exec "$root/$SWEEP" s.sweep --threads 2 --out "$out" > a.log 2>&1) &
    a=$!
    (cd "$tmp" && exec "$root/$SWEEP" s.sweep --threads 2 --out "$out" > b.log 2>&1) &
    b=$!
    wait $a; sa=$?
    wait $b; sb=$?
    if [ $sa = 0 ] && [ $sb = 2 ]; then lost=b.log holder=$a
    elif [ $sa = 2 ] && [ $sb = 0 ]; then lost=a.log holder=$b
    else echo "FAIL: round $r: exits $sa and $sb (expected one 0 and one 2)"; cat "$tmp/a.log" "$tmp/b.log"; exit 1; fi
    want="sweep: '$out' is in use by process $holder (another ./sweep running this sweep); wait for it to end or choose another --out"
    if [ "$(cat "$tmp/$lost")" != "$want" ]; then
        echo "FAIL: round $r: the refused sweep printed:"; cat "$tmp/$lost"; echo "expected: $want"; exit 1
    fi
    statuses=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "status") c = i; next } { print $c }' \
               "$tmp/$out/summary.csv" | sort | uniq -c | tr -s ' ')
    [ "$statuses" = " 4 done" ] || { echo "FAIL: round $r: the summary's statuses: $statuses"; exit 1; }
done

# a point held by a live ./train that this sweep did not start
sweep --out held --print | grep 'seed=3' | sed 's/^/exec /' > "$tmp/cmd"
(cd "$tmp" && exec sh cmd > /dev/null 2>&1) &
held=$!
for _ in $(seq 3000); do [ -s "$tmp/held/seed=3/train.lock" ] && break; sleep 0.005; done
kill -STOP "$held"
sweep --out held > "$tmp/held.log" 2>&1
st=$?
[ $st = 0 ] || { echo "FAIL: the sweep beside a held point exited $st:"; cat "$tmp/held.log"; exit 1; }
grep -q "seed=3: running in process $held (another ./train holds held/seed=3), not here" "$tmp/held.log" &&
    grep -q "3 run, 0 skipped (finished before), 1 running elsewhere, 0 failed" "$tmp/held.log" ||
    { echo "FAIL: the held point was not reported running:"; cat "$tmp/held.log"; exit 1; }
grep -q "^seed=3,3,softmax,running," "$tmp/held/summary.csv" && grep -q "running (process $held)" "$tmp/held/summary.md" ||
    { echo "FAIL: the summary does not mark the held point running:"; cat "$tmp/held/summary.csv"; exit 1; }
kill -CONT "$held"
wait "$held" || { echo "FAIL: the held ./train failed"; exit 1; }
held=""
sweep --out held > "$tmp/held.log" 2>&1 && grep -q "0 run, 4 skipped (finished before), 0 failed" "$tmp/held.log" ||
    { echo "FAIL: the sweep after the held run:"; cat "$tmp/held.log"; exit 1; }
echo "two_sweeps: $rounds rounds of two ./sweep on one folder: each time one ran every point, the other was refused" \
     "naming its pid (exit 2); a point held by a live ./train was reported running (exit 0), then found finished"
