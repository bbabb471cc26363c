#!/bin/sh
# The side-by-side table of docs/text.md from bench/text_side_by_side.sh's logs (LOGDIR, default
# bench/logs/text): per seed, C's and PyTorch's final validation loss and their difference, then
# the training seconds each implementation took to first reach a validation loss of TARGET (the
# worst of all runs' final losses, so every run reaches it) and the ratio to C's.
# Prints the block between its marker comments; docs/text.md shows exactly it (tests/test_docs.c).
dir=${1:-bench/logs/text}
ls "$dir"/*-c.jsonl > /dev/null 2>&1 || { echo "$dir: no logs (*-c.jsonl) found" >&2; exit 2; }
cat "$dir"/*.jsonl | awk '
function num(key,   v) { if (!match($0, "\"" key "\": [-0-9.e+]+")) return ""; v = substr($0, RSTART + length(key) + 4, RLENGTH - length(key) - 4); return v + 0 }
function span(r, n,   lo, hi, i) { lo = hi = r[1]; for (i = 2; i <= n; i++) { if (r[i] < lo) lo = r[i]; if (r[i] > hi) hi = r[i] }
    return n == 1 ? sprintf("%.2fx", lo) : sprintf("%.2fx to %.2fx (%d seeds)", lo, hi, n) }
function str(key) { match($0, "\"" key "\": \"[^\"]*\""); return substr($0, RSTART + length(key) + 5, RLENGTH - length(key) - 6) }
/val_loss/ {
    impl = str("impl"); seed = num("seed"); step = num("step")
    k = impl SUBSEP seed; n[k]++; vs[k, n[k]] = step; vl[k, n[k]] = num("val_loss"); vt[k, n[k]] = num("train_s")
    if (step >= last[k]) { last[k] = step; final[k] = num("val_loss"); total[k] = num("train_s") }
    impls[impl] = 1; seeds[seed] = 1
}
END {
    order[1] = "c"; order[2] = "torch-eager"; order[3] = "torch-compile"
    target = 0
    for (k in final) if (final[k] > target) target = final[k]
    print "<!-- text_table.sh side-by-side -->"
    print "| seed | C final val loss | PyTorch eager | difference | torch.compile | difference |"
    print "|---|---|---|---|---|---|"
    ns = 0
    for (s in seeds) sl[++ns] = s + 0
    for (i = 1; i <= ns; i++) for (j = i + 1; j <= ns; j++) if (sl[j] < sl[i]) { t = sl[i]; sl[i] = sl[j]; sl[j] = t }
    for (i = 1; i <= ns; i++) {
        s = sl[i]; c = final["c", s]; e = final["torch-eager", s]; m = final["torch-compile", s]
        printf "| %d | %.4f | %s | %s | %s | %s |\n", s, c, e == "" ? "-" : sprintf("%.4f", e), e == "" ? "-" : sprintf("%+.4f", e - c),
            m == "" ? "-" : sprintf("%.4f", m), m == "" ? "-" : sprintf("%+.4f", m - c)
        if (e != "" && (e - c > worst || c - e > worst)) worst = e > c ? e - c : c - e
        if (m != "" && (m - c > worst || c - m > worst)) worst = m > c ? m - c : c - m
    }
    printf "\nThe largest difference of a final validation loss from C'"'"'s: %.4f (the goal: within 0.02).\n", worst
    printf "\nTraining seconds (batches and steps; evaluations excluded) to a validation loss of %.4f, the worst final loss of all runs:\n\n", target
    print "| seed | C | PyTorch eager | ratio | torch.compile (compiling included) | ratio |"
    print "|---|---|---|---|---|---|"
    for (i = 1; i <= ns; i++) {
        s = sl[i]
        for (o = 1; o <= 3; o++) {
            k = order[o] SUBSEP s; at[o] = ""
            for (r = 1; r <= n[k]; r++) if (vl[k, r] <= target && (at[o] == "" || vs[k, r] < best)) { best = vs[k, r]; at[o] = vt[k, r] }
        }
        if (at[2] != "") { ne++; re[ne] = at[2] / at[1] }
        if (at[3] != "") { nm++; rm[nm] = at[3] / at[1] }
        printf "| %d | %.1f s | %s | %s | %s | %s |\n", s, at[1], at[2] == "" ? "-" : sprintf("%.1f s", at[2]),
            at[2] == "" ? "-" : sprintf("%.2fx", at[2] / at[1]), at[3] == "" ? "-" : sprintf("%.1f s", at[3]),
            at[3] == "" ? "-" : sprintf("%.2fx", at[3] / at[1])
    }
    printf "\nPyTorch took %s C'"'"'s time in eager mode", span(re, ne)
    if (nm) printf " and %s with torch.compile", span(rm, nm)
    print "."
    print "<!-- /text_table.sh side-by-side -->"
}'
