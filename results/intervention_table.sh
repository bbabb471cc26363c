#!/usr/bin/env bash
# docs/results.md's tables of the interventions pilot, from the committed intervention.jsonl of
# each run folder of results/intervention_pilot (written by results/intervention_pilot.sh) and the
# runs' metrics.jsonl: the model as trained and with each layer ablated, the flatten and top-k
# curves on the causal recall layer, and where the weight lands (derange, the oracles).
#   results/intervention_table.sh [SWEEP_FOLDER]
set -euo pipefail
dir=${1:-results/intervention_pilot}
ls "$dir"/*/intervention.jsonl >/dev/null 2>&1 || { echo "intervention_table: no $dir/*/intervention.jsonl" >&2; exit 2; }
for run in "$dir"/*/; do
    run=${run%/}
    [ -f "$run/intervention.jsonl" ] || continue
    name=$(basename "$run" | sed -E 's/,pos_emb=[a-z]+//; s/mixer=//; s/,short_conv=0$//; s/,short_conv=([0-9]+)/ + short_conv \1/')
    # the run's best validation step and accuracy (its first highest eval record on val)
    best=$(awk -F'"step":' '/"type":"eval"/ && !/"split":"test"/ { split($2, s, ","); match($0, /"acc":[^,}]*/);
        a = substr($0, RSTART + 6, RLENGTH - 6) + 0; if (a > ba) { ba = a; bs = s[1] } } END { printf "%s %s", bs, ba }' "$run/metrics.jsonl")
    # the share-based recall layer (eval/derived.c's, recorded by the sparsity pass) at that step
    share=$(grep -E "\"step\":${best%% *}," "$run/sparsity.jsonl" | grep -v '"split":"test"' | grep -oE '"recall_layer":[0-9]+' | head -1 | cut -d: -f2 || true)
    echo "$name	$best	$run	${share:--}"
done | sort | awk -F'\t' -v table="${2:-all}" '
function num(line, f,    r) { if (!match(line, "\"" f "\":[^,}]*")) return ""; r = substr(line, RSTART + length(f) + 3, RLENGTH - length(f) - 3); return r == "null" ? "" : r + 0 }
function str(line, f) { if (!match(line, "\"" f "\":\"[^\"]*\"")) return ""; return substr(line, RSTART + length(f) + 4, RLENGTH - length(f) - 5) }
function fmt(x, f) { return x == "" ? "-" : sprintf(f, x) }
{
    name[NR] = $1; split($2, b, " "); bstep[NR] = b[1]; bacc[NR] = b[2]; share[NR] = $4; n = NR
    file = $3 "/intervention.jsonl"
    while ((getline line < file) > 0) {
        k = str(line, "kind"); l = num(line, "layer"); s = num(line, "strength")
        key = NR SUBSEP k SUBSEP l SUBSEP s
        acc[key] = num(line, "acc"); S[key] = num(line, "S_recall"); tok[key] = num(line, "eff_tokens_recall")
        win[key] = num(line, "ans_window_share"); wch[key] = num(line, "ans_window_chance"); sec[key] = num(line, "seconds")
        if (k == "ablate" && (!(NR in worst) || acc[key] < worst[NR])) { worst[NR] = acc[key]; causal[NR] = l }
        if (k == "none") { nonel[NR SUBSEP l] = 1 }
    }
    close(file)
}
END {
    print "| mixer | best val acc (step) | recall layer: by share | by ablation | acc, layer 0 ablated | acc, layer 1 ablated | its S_recall (tokens) | answer window share (chance) |"
    print "|---|---|---|---|---|---|---|---|"
    for (i = 1; i <= n; i++) {
        c = causal[i]; base = i SUBSEP "none" SUBSEP c SUBSEP ""
        printf "| %s | %.4f (%d) | %s | L%d | %s | %s | %s (%s) | %s (%s) |\n", name[i], bacc[i], bstep[i],
            share[i] == "-" ? "-" : "L" share[i], c,
            fmt(acc[i SUBSEP "ablate" SUBSEP 0 SUBSEP ""], "%.4f"), fmt(acc[i SUBSEP "ablate" SUBSEP 1 SUBSEP ""], "%.4f"),
            fmt(S[base], "%.3f"), fmt(tok[base], "%.1f"), fmt(win[base], "%.3f"), fmt(wch[base], "%.3f")
    }
    print ""
    print "Flatten on the causal recall layer: validation accuracy (S_recall after the change)."
    print ""
    ne = split("0 0.2 0.4 0.6 0.8 0.9 1", eps, " ")
    h = "| mixer |"; u = "|---|"
    for (e = 1; e <= ne; e++) { h = h " eps " eps[e] " |"; u = u "---|" }
    print h; print u
    for (i = 1; i <= n; i++) {
        line = "| " name[i] " |"
        for (e = 1; e <= ne; e++) { key = i SUBSEP "flatten" SUBSEP causal[i] SUBSEP eps[e] + 0
            line = line " " fmt(acc[key], "%.3f") " (" fmt(S[key], "%.2f") ") |" }
        print line
    }
    print ""
    print "Top-k on the causal recall layer: validation accuracy (effective tokens after the change)."
    print ""
    nk = split("1 2 4 8 16 32 64", kk, " ")
    h = "| mixer | as trained |"; u = "|---|---|"
    for (e = 1; e <= nk; e++) { h = h " k = " kk[e] " |"; u = u "---|" }
    print h; print u
    for (i = 1; i <= n; i++) {
        base = i SUBSEP "none" SUBSEP causal[i] SUBSEP ""
        line = "| " name[i] " | " fmt(acc[base], "%.3f") " (" fmt(tok[base], "%.1f") ") |"
        for (e = 1; e <= nk; e++) { key = i SUBSEP "topk" SUBSEP causal[i] SUBSEP kk[e] + 0
            line = line " " fmt(acc[key], "%.3f") " (" fmt(tok[key], "%.1f") ") |" }
        print line
    }
    print ""
    print "Where the weight lands, on the causal recall layer: validation accuracy (answer window share after the change)."
    print ""
    print "| mixer | as trained | derange | oracle | oracle_window | oracle_wrong |"
    print "|---|---|---|---|---|---|"
    nkd = split("none derange oracle oracle_window oracle_wrong", kd, " ")
    for (i = 1; i <= n; i++) {
        line = "| " name[i] " |"
        for (e = 1; e <= nkd; e++) { key = i SUBSEP kd[e] SUBSEP causal[i] SUBSEP ""
            line = line " " fmt(acc[key], "%.3f") " (" fmt(win[key], "%.2f") ") |" }
        print line
    }
}'
