#!/bin/sh
# Results II (issue 40) on the README and docs/results.md, every number read from the collected
# summary of results/mqar_results2/ (`./sweep configs/ablations/mqar_results2.sweep --collect`:
# summary.csv and summary_interventions.csv), each block between its marker comments exactly as
# printed here; `make test` checks that (tests/test_docs.c).
#   results/results2.sh readme [DIR]   the README's block (DIR: another collected sweep folder)
#   results/results2.sh results [DIR [FOCUS]]  docs/results.md's blocks, the focus-seeds sweep's
#                                              (results/mqar_focus_seeds, or FOCUS) among them
#   results/results2.sh reading [DIR [FOCUS]]  the reading's rules applied to what has finished,
#                                              marked partial until the sweep is complete (a look;
#                                              the pages print the reading only then)
#   results/results2.sh --write    rewrite the blocks in README.md and docs/results.md
set -eu
cd "$(dirname "$0")/.."
mode=${1:?usage: results/results2.sh readme|results|--write}
if [ "$mode" = --write ]; then
    sh results/put_blocks.sh results2.sh README.md sh results/results2.sh readme
    sh results/put_blocks.sh results2.sh docs/results.md sh results/results2.sh results
    exit 0
fi
case $mode in readme|results|reading) ;; *) echo "results2: mode readme, results, reading or --write, got '$mode'" >&2; exit 2 ;; esac
dir=${2:-results/mqar_results2}
focus=${3:-results/mqar_focus_seeds}  # not run yet when it has no summary
[ -f "$dir/summary.csv" ] || { echo "results2: $dir/summary.csv: not found (run ./sweep configs/ablations/mqar_results2.sweep --collect)" >&2; exit 2; }
awk -v mode="$mode" -v S="$dir" -v FOCUS="$focus" -v TAG=results2.sh -f results/lib.awk -f results/results2_reading.awk \
    -f results/results2.awk
if [ "$mode" = results ]; then
    lr=$(sed -n 's/^lr *= *\([^ #]*\).*/\1/p' configs/ablations/mqar_focus_seeds.sweep)
    awk -v mode=focus -v S="$focus" -v LRALL="$lr" -v TAG=results2.sh -f results/lib.awk -f results/results2_reading.awk \
        -f results/results2.awk
fi
