#!/usr/bin/env bash
# Issue 38's one-seed pilot (docs/results.md#interventions-a-one-seed-pilot): on the best-validation
# checkpoint (best.safetensors) of every finished run of configs/ablations/intervention_pilot.sweep,
# each layer ablated (the causal recall layer), then on that layer flatten (11 strengths), topk,
# derange, oracle, oracle_window and oracle_wrong, and the oracle on each layer, over the
# validation set. Each run's records go to
# its intervention.jsonl; one figure per kind with a line per mixer to results/intervention_pilot/.
# Checkpoints are not in git: run the sweep first (./sweep configs/ablations/intervention_pilot.sweep).
#   results/intervention_pilot.sh [THREADS [FOLDER]]      (default 2, results/intervention_pilot)
set -euo pipefail
threads=${1:-2}
sweep=${2:-results/intervention_pilot}
runs=()
for run in "$sweep"/*/; do
    run=${run%/}
    if [ ! -f "$run/best.safetensors" ] || ! grep -q '"type":"done"' "$run/metrics.jsonl" 2>/dev/null; then
        echo "intervention_pilot: $run: not finished (no done record or no best.safetensors): skipped" >&2
        continue
    fi
    runs+=("$run")
done
[ ${#runs[@]} -gt 0 ] || { echo "intervention_pilot: no finished run in $sweep" >&2; exit 2; }
for kind in flatten topk derange oracle oracle_window oracle_wrong; do
    ./evaluate "${runs[@]}" intervene=$kind layer=causal compare="$sweep/x" threads="$threads"
done
# the oracle on each layer: can the rest of the network read a focused map wherever it is put?
for layer in 0 1; do
    ./evaluate "${runs[@]}" intervene=oracle layer=$layer compare="$sweep/x" threads="$threads"
done
