#!/bin/sh
# The results prose of docs/results.md's first sweep (Results I, history since Results II made
# the README's Results), every number in it read from committed files:
# the run logs and summary of results/mqar_results/ (the MQAR cell at three seeds), of
# results/delta_pilot/, results/based_pilot/ and results/mamba2_pilot/, and docs/mqar_capacity_summary.csv (the capacity
# sweep). The pages hold each
# paragraph between marker comments, exactly as this script prints it, and `make test` checks that
# (tests/test_docs.c), so a sentence changes here or nowhere.
#   results/results_prose.sh results    docs/results.md's blocks
#   results/results_prose.sh facts      the numbers, one per line (for checking by eye)
#   results/results_prose.sh --write    rewrite the blocks in docs/results.md
# Chance levels are computed here from the MQAR layout (docs/mqar.md, data/mqar.c): pairs k0 v0 k1
# v1 ... at positions 0 .. 2K-1, the query of pair k at position 2K + 2 g_k, where g_0, g_1, ...
# are drawn in that order without replacement from 0 .. (L - 2K)/2 - 1 with weights (g + 1)^(a - 1)
# (numpy's legacy choice(replace=False, p), successive draws). A query row i sees n = i + 1
# positions; a uniform row puts 1/n on each. Its chance share of the answer (the value at 2k + 1) is
# the mean of 1/n over the query rows, and of a w-wide answer window (the value and the w - 1
# positions after it, those up to row i) the mean of min(w, i - v + 1)/n: expectations over the
# generator, not over the test set's 12000 drawn rows. The check: the same expectation of 1/sqrt(n)
# is the one-hot floor, which the sparsity records measured on those rows (S_recall_onehot).
set -eu
cd "$(dirname "$0")/.."
mode=${1:?usage: results/results_prose.sh results|facts|--write}

if [ "$mode" = --write ]; then
    sh results/put_blocks.sh results_prose.sh docs/results.md sh results/results_prose.sh results
    exit 0
fi

awk -v mode="$mode" -v R=results/mqar_results -v P=results/delta_pilot -v PB=results/based_pilot -v PM=results/mamba2_pilot -v CAP=docs/mqar_capacity_summary.csv \
    -v CAPSWEEP=configs/ablations/mqar_capacity.sweep -v TAG=results_prose.sh -f results/lib.awk -f results/results_prose.awk
