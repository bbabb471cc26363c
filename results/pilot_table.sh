#!/usr/bin/env bash
# docs/results.md's table of a one-seed pilot (the seed the sweep file fixes): one row per point of
# a collected sweep folder, from
# the summary.csv that `./sweep FILE --collect` writes (so the table is whatever the sweep
# measured). The recall layer is eval/derived.c's (the largest mean answer-window share).
#   results/pilot_table.sh results/delta_pilot
set -euo pipefail
dir=${1:?usage: results/pilot_table.sh SWEEP_FOLDER (with summary.csv)}
[ -f "$dir/summary.csv" ] || { echo "pilot_table: $dir/summary.csv: not found (run ./sweep ... --collect first)" >&2; exit 2; }
# The first field, the point name (quoted when it holds commas), is dropped before splitting.
sed -E 's/^("[^"]*"|[^,]*),//' "$dir/summary.csv" | awk -F, '
NR == 1 {
    for (i = 1; i <= NF; i++) col[$i] = i
    print "| mixer | lr | best acc | steps to 0.99 | recall layer | its S_recall | answer share | argmax hit | state floats |"
    print "|---|---|---|---|---|---|---|---|---|"
    next
}
function v(name, fmt) { if (!(name in col)) return "-"; x = $col[name]; return x == "" ? "-" : sprintf(fmt, x) }
{
    steps = $col["steps_to_0.99"] == "" ? "never" : $col["steps_to_0.99"]
    layer = $col["recall_layer"] == "" ? "-" : "L" $col["recall_layer"]
    printf "| `%s` | %s | %s | %s | %s | %s | %s | %s | %s |\n", $col["mixer"], $col["lr"],
        v("best_acc", "%.4f"), steps, layer, v("recall_S", "%.3f"), v("recall_ans_share", "%.2f"),
        v("recall_ans_hit", "%.2f"), v("state_floats", "%.0f")
}'
