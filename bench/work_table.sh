#!/bin/sh
# Each mixer's tokens/s against softmax's in the same round, taken apart into work and speed:
# x softmax = (softmax's GFLOP a step / the mixer's) x (the mixer's %peak / softmax's), from the
# records `build/bench ... --out FILE` wrote (the bench's FLOP model: docs/performance.md). A
# round is the records of one bench run (softmax first in it). Prints per mixer the median over
# the rounds of each column and the spread of x softmax, and, for the mixers an issue sets a cell
# goal for, the %peak the goal would take at this work.
#   bench/work_table.sh bench/logs/work-2026-11-26-cell.jsonl
set -eu
. "$(dirname "$0")/records.sh"
file=${1:?usage: bench/work_table.sh RESULTS.jsonl [cell|long]}
goals=${2:-cell}
case $goals in cell | long) ;; *) echo "work_table: goals: expected cell or long, got '$goals'" >&2; exit 2 ;; esac
[ -f "$file" ] || { echo "work_table: $file: not found" >&2; exit 2; }
awk -v goals="$goals" "$RECORDS_AWK"'
BEGIN {
    if (goals == "cell") { goal["deltanet"] = 0.7; goal["gated_deltanet"] = 0.7; goal["mamba2"] = 0.8; goal["based"] = 0.8
                           goal["mamba"] = 0.68; goal["h3"] = 0.7 }
    else { goal["deltanet"] = 3; goal["gated_deltanet"] = 3; goal["mamba2"] = 3; goal["based"] = 3; goal["mamba"] = 4 }
}
{
    m = str("mixer")
    if (m == "softmax") { round++; stok = num("tokens_per_s"); sgf = num("gflop_per_step"); spk = num("pct_peak") }
    if (!round || stok == "") next
    if (!(m in seen)) { seen[m] = 1; order[++n] = m }
    X[m] = X[m] " " num("tokens_per_s") / stok
    W[m] = W[m] " " sgf / num("gflop_per_step")
    E[m] = E[m] " " num("pct_peak") / spk
    G[m] = G[m] " " num("gflop_per_step")
    P[m] = P[m] " " num("pct_peak")
    S[m] = S[m] " " spk
    R[m]++
}
END {
    printf "| mixer | rounds | x softmax (min-max) | GFLOP a step | softmax GFLOP / its | %% of peak | its %%peak / softmax | %s goal | %%peak the goal takes |\n", goals == "cell" ? "cell" : "T = 4096"
    print "|---|---|---|---|---|---|---|---|---|"
    for (i = 1; i <= n; i++) {
        m = order[i]
        g = m in goal ? sprintf("%gx", goal[m]) : "-"
        need = m in goal ? sprintf("%.1f%%", goal[m] / median(W[m]) * median(S[m])) : "-"
        printf "| %s | %d | %.2fx (%.2f-%.2f) | %.1f | %.2f | %.1f%% | %.2f | %s | %s |\n", m, R[m], median(X[m]), lo(X[m]), hi(X[m]),
            median(G[m]), median(W[m]), median(P[m]), median(E[m]), g, need
    }
}' "$file"
