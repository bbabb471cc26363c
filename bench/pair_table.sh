#!/bin/sh
# Two binaries' bench records from alternating rounds, side by side: per mixer the median step
# time of each (ms, with the LM head and its gradient), and the median over rounds of the
# before/after ratio of the round's step times (how much faster the second binary ran), with its
# spread. The files are what `build/bench ... --out FILE` wrote for each binary, one record per
# mixer a round, the rounds in the same order in both.
#   bench/pair_table.sh bench/logs/avx2-2026-11-27-cell-before.jsonl bench/logs/avx2-2026-11-27-cell-after.jsonl
set -eu
. "$(dirname "$0")/records.sh"
before=${1:?usage: bench/pair_table.sh BEFORE.jsonl AFTER.jsonl}
after=${2:?usage: bench/pair_table.sh BEFORE.jsonl AFTER.jsonl}
for f in "$before" "$after"; do [ -f "$f" ] || { echo "pair_table: $f: not found" >&2; exit 2; }; done
awk "$RECORDS_AWK"'
FNR == 1 { file++ }
{
    m = str("mixer"); if (m == "") next
    k = file SUBSEP m; cnt[k]++
    ms[k, cnt[k]] = num("ms_per_step"); head[k] = head[k] " " num("head_ms"); step[k] = step[k] " " num("ms_per_step")
    if (file == 1 && !(m in seen)) { seen[m] = 1; order[++n_m] = m }
}
END {
    print "| mixer | rounds | ms a step, before | after | LM head ms, before | after | before / after, by round (min-max) |"
    print "|---|---|---|---|---|---|---|"
    for (i = 1; i <= n_m; i++) {
        m = order[i]; a = 1 SUBSEP m; b = 2 SUBSEP m
        r = cnt[a] < cnt[b] ? cnt[a] : cnt[b]; ratios = ""
        for (j = 1; j <= r; j++) ratios = ratios " " sprintf("%.2f", ms[a, j] / ms[b, j])
        if (r == 0) continue
        printf "| %s | %d | %.0f | %.0f | %.0f | %.0f | %.2fx (%.2f-%.2f) |\n", m, r, median(step[a]), median(step[b]),
               median(head[a]), median(head[b]), median(ratios), lo(ratios), hi(ratios)
    }
}' "$before" "$after"
