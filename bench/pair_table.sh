#!/bin/sh
# Two binaries' bench records from alternating rounds, side by side: per mixer the median step
# time of each (ms, with the LM head and its gradient), and the median over rounds of the
# before/after ratio of the round's step times (how much faster the second binary ran), with its
# spread. The files are what `build/bench ... --out FILE` wrote for each binary, one record per
# mixer a round, the rounds in the same order in both.
#   bench/pair_table.sh bench/logs/avx2-2026-11-27-cell-before.jsonl bench/logs/avx2-2026-11-27-cell-after.jsonl
set -eu
before=${1:?usage: bench/pair_table.sh BEFORE.jsonl AFTER.jsonl}
after=${2:?usage: bench/pair_table.sh BEFORE.jsonl AFTER.jsonl}
for f in "$before" "$after"; do [ -f "$f" ] || { echo "pair_table: $f: not found" >&2; exit 2; }; done
awk '
function num(k) { if (!match($0, "\"" k "\":[^,}]*")) return ""; return substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 3) + 0 }
function str(k) { if (!match($0, "\"" k "\":\"[^\"]*\"")) return ""; return substr($0, RSTART + length(k) + 4, RLENGTH - length(k) - 5) }
function median(list,    v, n, i, j, t) {
    n = split(list, v, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function lo(list,    v, n, i, m) { n = split(list, v, " "); m = v[1]; for (i = 2; i <= n; i++) if (v[i] + 0 < m + 0) m = v[i]; return m }
function hi(list,    v, n, i, m) { n = split(list, v, " "); m = v[1]; for (i = 2; i <= n; i++) if (v[i] + 0 > m + 0) m = v[i]; return m }
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
