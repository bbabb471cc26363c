#!/usr/bin/env bash
# The README's Results table from a collected two-stage sweep folder: one row per group at its
# chosen learning rate, mean ± sample sd over its finished seeds. It reads the summary that
# `./sweep FILE --collect` writes (summary.csv for which lr was chosen, summary_groups.csv for
# the means), so the table is whatever the sweep measured.
#   results/readme_table.sh results/mqar_results
set -euo pipefail
dir=${1:?usage: results/readme_table.sh SWEEP_FOLDER (with summary.csv and summary_groups.csv)}
for f in summary.csv summary_groups.csv; do
    [ -f "$dir/$f" ] || { echo "readme_table: $dir/$f: not found (run ./sweep ... --collect first)" >&2; exit 2; }
done

# The chosen lr of each group: the first stage's point marked "chosen" (the first field, the
# quoted point name, holds commas, so it is dropped first).
chosen=$(sed 1d "$dir/summary.csv" | sed 's/^"[^"]*",//' |
    awk -F, '{ for (i = 1; i <= NF; i++) if ($i == "chosen") print $1 "," $2 "," $3 "," $4 "," $5 }')

awk -F, -v chosen="$chosen" '
function pm(m, s, fmt) { return m == "" ? "-" : s == "" ? sprintf(fmt, m) : sprintf(fmt " ± " fmt, m, s) }
BEGIN {
    n = split(chosen, lines, "\n")
    for (i = 1; i <= n; i++) pick[lines[i]] = 1
    print "| mixer | lr | seeds | best acc | reached 0.99 | steps to 0.99 | capped, improving | recall layer S_recall | answer share | argmax hit | state floats |"
    print "|---|---|---|---|---|---|---|---|---|---|---|"
}
NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
($1 "," $2 "," $3 "," $4 "," $5) in pick {
    name = "`" $1 "`" ($2 != "0" ? " + short_conv " $2 : "")
    f = $col["finished"] + 0; r = $col["reached_0.99"] + 0
    sd = f > 1  # a spread needs two seeds
    steps = "never"
    if (r) steps = pm($col["steps_to_0.99_mean"], r > 1 ? $col["steps_to_0.99_sd"] : "", "%.0f") (r < f ? " (those that did)" : "")
    printf "| %s | %s | %d | %s | %d/%d | %s | %d/%d | %s | %s | %s | %d |\n", name, $5, f,
        pm($col["best_acc_mean"], sd ? $col["best_acc_sd"] : "", "%.4f"), r, f, steps, $col["capped_improving"], f,
        pm($col["recall_S_mean"], sd ? $col["recall_S_sd"] : "", "%.3f"),
        pm($col["recall_ans_share_mean"], sd ? $col["recall_ans_share_sd"] : "", "%.2f"),
        pm($col["recall_ans_hit_mean"], sd ? $col["recall_ans_hit_sd"] : "", "%.2f"), $col["state_floats_mean"]
}' "$dir/summary_groups.csv"
