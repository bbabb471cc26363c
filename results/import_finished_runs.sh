#!/usr/bin/env bash
# Copies the logs of the finished runs of a sweep folder in another checkout (the one running
# the sweep) into the same folder here, to be committed: config.conf, metrics.jsonl,
# sparsity.jsonl and train.log of every run folder whose metrics.jsonl ends with the "done"
# record, and the sweep's evaluations after the run where it has made them (after_run.done,
# after_run.log, intervention.jsonl, intervention_<kind>.svg: a later import copies them again
# as more are done). Unfinished runs and checkpoints stay where they are.
#   results/import_finished_runs.sh /tmp/results-run/results/mqar_results
set -euo pipefail
src=${1:?usage: results/import_finished_runs.sh OTHER_CHECKOUT/results/SWEEP_FOLDER}
[ -d "$src" ] || { echo "import_finished_runs: $src: no such folder" >&2; exit 2; }
dst="$(cd "$(dirname "$0")" && pwd)/$(basename "$src")"
n=0
for run in "$src"/*/; do
    run=${run%/}
    [ -f "$run/metrics.jsonl" ] && tail -n 1 "$run/metrics.jsonl" | grep -q '"type":"done"' || continue
    mkdir -p "$dst/$(basename "$run")"
    for f in config.conf metrics.jsonl sparsity.jsonl train.log after_run.done after_run.log intervention.jsonl \
        "$run"/intervention_*.svg; do
        f=$(basename "$f")
        if [ -f "$run/$f" ]; then cp "$run/$f" "$dst/$(basename "$run")/"; fi
    done
    n=$((n + 1))
done
echo "import_finished_runs: $n finished runs -> $dst"
