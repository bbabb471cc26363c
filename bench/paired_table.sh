#!/bin/sh
# The rows of `build/bench --interleave` runs against softmax's, step by step: in a run, the t-th
# timed step of every mixer ran in the same turn, so softmax's step t over the mixer's step t is a
# ratio taken over the same seconds. Per run the median of those ratios; per mixer the median
# over the runs, their spread, and beside it x softmax by each row's best step (the bench's
# headline figure, which pairs nothing). A run is the interleaved records of one bench run
# (softmax's first in it); other records are skipped.
#   bench/paired_table.sh bench/logs/avx2-2026-11-27-interleaved-cell.jsonl
set -eu
. "$(dirname "$0")/records.sh"
file=${1:?usage: bench/paired_table.sh RESULTS.jsonl}
[ -f "$file" ] || { echo "paired_table: $file: not found" >&2; exit 2; }
awk "$RECORDS_AWK"'
function steps(    s) {
    if (!match($0, "\"step_ms\":\\[[^]]*\\]")) return ""
    s = substr($0, RSTART + 11, RLENGTH - 12); gsub(",", " ", s); return s
}
!/"interleaved":true/ { next }
{
    m = str("mixer"); st = steps()
    if (m == "softmax") { run++; nb = split(st, base, " "); bbest = num("ms_per_step") }
    if (!run || st == "") next
    if (!(m in seen)) { seen[m] = 1; order[++n] = m }
    k = split(st, v, " "); r = ""
    for (t = 1; t <= k && t <= nb; t++) r = r " " base[t] / v[t]
    P[m] = P[m] " " median(r); B[m] = B[m] " " bbest / num("ms_per_step"); R[m]++
}
END {
    print "| mixer | runs | x softmax, paired steps: median of the runs (min-max) | x softmax by best step (min-max) |"
    print "|---|---|---|---|"
    for (i = 1; i <= n; i++) {
        m = order[i]
        printf "| %s | %d | %.2fx (%.2f-%.2f) | %.2fx (%.2f-%.2f) |\n", m, R[m], median(P[m]), lo(P[m]), hi(P[m]),
               median(B[m]), lo(B[m]), hi(B[m])
    }
}' "$file"
