#!/usr/bin/env bash
# make valgrind: a short training of every registered mixer under valgrind memcheck, then a resume
# from its checkpoint, each with threads = 1: no invalid read or write, no use of uninitialised
# memory, nothing lost at exit (definite, indirect or possible leaks are errors).
# Usage: tests/valgrind.sh TRAIN_BINARY   (an optimised build without AVX-512: make valgrind)
set -euo pipefail
train=${1:-build/valgrind/train}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the registered mixers, from the error message that lists them
mixers=$("$train" /dev/null mixer=? 2>&1 | sed -n "s/.*expected one of \([a-z0-9_|]*\),.*/\1/p" | tr '|' ' ' || true)
[ -n "$mixers" ] || { echo "valgrind.sh: cannot list the mixers"; exit 1; }
vg=(valgrind --quiet --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect,possible
    --errors-for-leak-kinds=definite,indirect,possible --track-origins=yes)
tiny="vocab_size=64 seq_len=32 mqar_kv_pairs=4 mqar_train_examples=64 mqar_test_examples=16
      d_model=16 n_head=2 n_layer=2 batch_size=4 threads=1 log_every=1 eval_every=2 eval_batches=1
      sparsity_every=2 sample_every=2 sample_tokens=4 save_every=2"
fail=0
for m in $mixers; do
    t0=$(date +%s)
    for run in "steps=3" "steps=4"; do  # the second run resumes from the first one's checkpoint
        # shellcheck disable=SC2086
        if ! "${vg[@]}" "$train" /dev/null $tiny mixer="$m" $run out_dir="$tmp/$m" > "$tmp/$m.log" 2>&1; then
            echo "FAIL $m ($run):"
            grep -v "^step\|^data\|^resuming\|^done\|^/dev/null" "$tmp/$m.log" | head -40
            fail=1
            continue 2
        fi
        grep -q "^done" "$tmp/$m.log" || { echo "FAIL $m ($run): no 'done' line"; cat "$tmp/$m.log"; fail=1; continue 2; }
    done
    grep -q "^resuming from" "$tmp/$m.log" || { echo "FAIL $m: the second run did not resume"; fail=1; continue; }
    echo "ok   $m ($(( $(date +%s) - t0 )) s: train 3 steps, resume to 4)"
done
[ $fail = 0 ] && echo "valgrind: every mixer clean" || { echo "valgrind: errors (above)"; exit 1; }
