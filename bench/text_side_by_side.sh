#!/usr/bin/env bash
# The char Shakespeare model (configs/shakespeare_char.conf) in C and in PyTorch side by side
# (docs/text.md#the-same-model-in-pytorch): for each seed, ./train, then bench/torch_text.py eager
# and torch.compile from that run's step-0 checkpoint on the same batches, one after another
# (interleaved, so a busy spell of a shared machine falls on all three). Writes the compact logs
# bench/logs/text/SEED-{c,torch-eager,torch-compile}.jsonl ({"impl","seed","step","train_s",
# "loss"} every 10 steps, {..., "val_loss"} every eval_every), then bench/text_table.sh's table.
# Needs make, make shakespeare and make torch-venv. OMP_WAIT_POLICY=PASSIVE for both: on cores
# shared with other jobs a spinning OpenMP thread costs both programs whole time slices.
# Usage: bench/text_side_by_side.sh [SEEDS...]   (default 0 1 2; THREADS=2; VARIANTS="eager compile":
# the PyTorch variants to run; FULL_SEED=0: the seed whose run keeps its samples, sparsity and
# checkpoints)
set -euo pipefail
seeds=${*:-0 1 2}
variants=${VARIANTS:-eager compile}
full_seed=${FULL_SEED:-0}
threads=${THREADS:-2}
py=${TORCH_PYTHON:-build/torch-venv/bin/python}
logs=bench/logs/text
mkdir -p "$logs" build/text-side
export OMP_WAIT_POLICY=PASSIVE
for seed in $seeds; do
    run=build/text-side/c$seed
    # The config as it is, every step logged. FULL_SEED's run keeps its samples, sparsity and
    # checkpoints (docs/text.md shows them; none is in ms_per_step); the others leave them out,
    # which changes no bit of the training. A complete run already there is kept (resume = auto).
    extra="sample_every=0 sparsity_every=0 save_every=100000 keep_best=false"
    [ "$seed" = "$full_seed" ] && extra=
    ./train configs/shakespeare_char.conf seed=$seed out_dir=$run threads=$threads log_every=1 $extra >> "$run.log"
    # ./train's ms_per_step (batch + step, no evaluation) summed: the same clock as torch_text.py's
    awk -v seed=$seed 'match($0, /"step":[0-9]+/) { step = substr($0, RSTART + 7, RLENGTH - 7) }
        /"type":"train"/ { match($0, /"ms_per_step":[0-9.e+-]+/); s += substr($0, RSTART + 14, RLENGTH - 14) / 1000
                           match($0, /"loss":[0-9.e+-]+/); loss = substr($0, RSTART + 7, RLENGTH - 7)
                           if (step % 10 == 0) printf "{\"impl\": \"c\", \"seed\": %d, \"step\": %d, \"train_s\": %.4f, \"loss\": %s}\n", seed, step, s, loss }
        /"type":"eval"/  { match($0, /"loss":[0-9.e+-]+/); loss = substr($0, RSTART + 7, RLENGTH - 7)
                           printf "{\"impl\": \"c\", \"seed\": %d, \"step\": %d, \"train_s\": %.4f, \"val_loss\": %s}\n", seed, step, s, loss }' \
        "$run/metrics.jsonl" > "$logs/$seed-c.jsonl"
    for v in $variants; do
        "$py" bench/torch_text.py "$run" --variant $v --threads "$threads" --out "$logs/$seed-torch-$v.jsonl"
    done
    echo "seed $seed: $(grep -h val_loss "$logs/$seed"-*.jsonl | tail -n 1)"
done
sh bench/text_table.sh "$logs"
