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
function diff(d,   t) { t = sprintf("%+.4f", d); return t == "-0.0000" ? "+0.0000" : t }
function span(r, n,   lo, hi, i, j, t, q) { for (i = 1; i <= n; i++) q[i] = r[i]
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (q[j] < q[i]) { t = q[i]; q[i] = q[j]; q[j] = t }
    lo = q[1]; hi = q[n]
    return n == 1 ? sprintf("%.2fx", lo) : sprintf("%.2fx to %.2fx (%d seeds, median %.2fx)", lo, hi, n, n % 2 ? q[(n + 1) / 2] : (q[n / 2] + q[n / 2 + 1]) / 2) }
function str(key) { match($0, "\"" key "\": \"[^\"]*\""); return substr($0, RSTART + length(key) + 5, RLENGTH - length(key) - 6) }
{ kind = /val_loss/ ? "val" : "train"; lv = kind == "val" ? num("val_loss") : num("loss"); im = str("impl")
  if (im == "c") cl[num("seed"), num("step"), kind] = lv; else { nl++; ol[nl] = lv; ok[nl] = num("seed") SUBSEP num("step") SUBSEP kind } }
/"loss"/ && !/val_loss/ { k = str("impl") SUBSEP num("seed"); st = num("step"); ts = num("train_s")
  if ((k in pt) && st > 20 && st - ps[k] == 10 && (!(k in fast) || ts - pt[k] < fast[k])) fast[k] = ts - pt[k]
  pt[k] = ts; ps[k] = st }
/"loss"/ && num("step") == 10 { t10[str("impl") SUBSEP num("seed")] = num("train_s") }
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
        printf "| %d | %.4f | %s | %s | %s | %s |\n", s, c, e == "" ? "-" : sprintf("%.4f", e), e == "" ? "-" : diff(e - c),
            m == "" ? "-" : sprintf("%.4f", m), m == "" ? "-" : diff(m - c)
        if (e != "" && (e - c > worst || c - e > worst)) worst = e > c ? e - c : c - e
        if (m != "" && (m - c > worst || c - m > worst)) worst = m > c ? m - c : c - m
    }
    maxd = 0; nc = 0
    for (i = 1; i <= nl; i++) if (ok[i] in cl) { d = ol[i] - cl[ok[i]]; if (d < 0) d = -d; if (d > maxd) maxd = d; nc++ }
    printf "\nThe largest difference of a final validation loss from C'"'"'s: %.4f (the goal: within 0.02). Over all %d losses PyTorch logged (training every 10 steps, validation every 100) the largest difference from C'"'"'s at the same step is %.1e.\n", worst, nc, maxd
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
        c0 = total["c", s] - t10["c", s]
        if (("torch-eager", s) in fast) { fe++; rfe[fe] = fast["torch-eager", s] / fast["c", s] }
        if (("torch-compile", s) in fast) { fm++; rfm[fm] = fast["torch-compile", s] / fast["c", s] }
        if (("torch-eager", s) in total) { se++; rse[se] = (total["torch-eager", s] - t10["torch-eager", s]) / c0 }
        if (("torch-compile", s) in total) { sm++; rsm[sm] = (total["torch-compile", s] - t10["torch-compile", s]) / c0 }
        printf "| %d | %.1f s | %s | %s | %s | %s |\n", s, at[1], at[2] == "" ? "-" : sprintf("%.1f s", at[2]),
            at[2] == "" ? "-" : sprintf("%.2fx", at[2] / at[1]), at[3] == "" ? "-" : sprintf("%.1f s", at[3]),
            at[3] == "" ? "-" : sprintf("%.2fx", at[3] / at[1])
    }
    printf "\nPyTorch took %s C'"'"'s time in eager mode", span(re, ne)
    if (nm) printf " and %s with torch.compile", span(rm, nm)
    print "."
    printf "From step 10 to the end (after compiling and warming up): %s in eager mode", span(rse, se)
    if (sm) printf ", %s with torch.compile", span(rsm, sm)
    print "."
    printf "Each run'"'"'s fastest 10 steps (the least disturbed by the other jobs): %s in eager mode", span(rfe, fe)
    if (fm) printf ", %s with torch.compile", span(rfm, fm)
    print "."
    print "<!-- /text_table.sh side-by-side -->"
}'
