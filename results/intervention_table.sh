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
    name=$(basename "$run" | sed -E 's/,pos_emb=[a-z]+//; s/mixer=//; s/,short_conv=0$//; s/,short_conv=([0-9]+)/ + short_conv \1/; s/,answer_supervision=0(,|$)/\1/; s/,focus_penalty=0$//; s/,([a-z_]+)=/ + \1 /g')
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
    print "| mixer | as trained | derange | oracle | oracle_window | oracle_wrong | oracle on the other layer |"
    print "|---|---|---|---|---|---|---|"
    nkd = split("none derange oracle oracle_window oracle_wrong", kd, " ")
    for (i = 1; i <= n; i++) {
        line = "| " name[i] " |"
        for (e = 1; e <= nkd; e++) { key = i SUBSEP kd[e] SUBSEP causal[i] SUBSEP ""
            line = line " " fmt(acc[key], "%.3f") " (" fmt(win[key], "%.2f") ") |" }
        key = i SUBSEP "oracle" SUBSEP 1 - causal[i] SUBSEP ""
        print line " L" 1 - causal[i] ": " fmt(acc[key], "%.3f") " |"
    }
    if (table != "all") exit
    # --- the reading: every number from the records above ---
    print ""
    print "**Flatten.** How far each causal recall layer can be flattened before accuracy drops by more than"
    print "0.05 (the largest eps, in steps of 0.1, up to which it holds), and what a flat row leaves:"
    print ""
    for (i = 1; i <= n; i++) {
        c = causal[i]; base = acc[i SUBSEP "none" SUBSEP c SUBSEP ""]; hold = -1
        for (e = 0; e <= 10; e++) { key = i SUBSEP "flatten" SUBSEP c SUBSEP e / 10; if (!(key in acc) || acc[key] < base - 0.05) break; hold = e }
        hk = i SUBSEP "flatten" SUBSEP c SUBSEP hold / 10; fk = i SUBSEP "flatten" SUBSEP c SUBSEP 1
        printf "- %s: %.3f as trained (S_recall %.2f); holds up to eps %s (S_recall %s); %s at eps 1 (S_recall 1)%s.\n",
            name[i], base, S[i SUBSEP "none" SUBSEP c SUBSEP ""], (hold < 0 ? "-" : hold / 10), (hold < 0 ? "-" : sprintf("%.2f", S[hk])),
            fmt(acc[fk], "%.3f"), base < 0.3 ? ", but it is at the 1-in-4 guess as trained" : ""
    }
    print ""
    print "**Top-k.** Keeping only the largest weights of the query rows of the causal recall layer, rescaled to"
    print "the mass of the row (the effective tokens fall to k or fewer):"
    print ""
    for (i = 1; i <= n; i++) {
        # compared as printed (3 decimals); ties go to the smaller k
        c = causal[i]; base = sprintf("%.3f", acc[i SUBSEP "none" SUBSEP c SUBSEP ""]) + 0
        t1 = sprintf("%.3f", acc[i SUBSEP "topk" SUBSEP c SUBSEP 1]) + 0; bk = 1; ba = t1
        for (e = 1; e <= nk; e++) { x = sprintf("%.3f", acc[i SUBSEP "topk" SUBSEP c SUBSEP kk[e] + 0]) + 0; if (x > ba) { ba = x; bk = kk[e] } }
        printf "- %s: top-1 %.3f against %.3f as trained (%s); the best k, %d, gives %.3f.\n", name[i], t1, base,
            (t1 > base ? "higher" : t1 < base ? "lower" : "the same"), bk, ba
    }
    print ""
    print "**Location against concentration.** derange keeps the S of every row and moves its weight among the"
    print "value positions; the oracle puts it all on the answer, oracle_wrong all on another value:"
    print ""
    for (i = 1; i <= n; i++) {
        c = causal[i]; base = acc[i SUBSEP "none" SUBSEP c SUBSEP ""]
        d = acc[i SUBSEP "derange" SUBSEP c SUBSEP ""]; o = acc[i SUBSEP "oracle" SUBSEP c SUBSEP ""]
        ow = acc[i SUBSEP "oracle_window" SUBSEP c SUBSEP ""]; w = acc[i SUBSEP "oracle_wrong" SUBSEP c SUBSEP ""]
        oo = acc[i SUBSEP "oracle" SUBSEP 1 - c SUBSEP ""]
        printf "- %s (layer %d): derange %.3f against %.3f; oracle %.3f, oracle_window %.3f, oracle_wrong %.3f; the oracle on layer %d instead %.3f.\n",
            name[i], c, d, base, o, ow, w, 1 - c, oo
    }
}'
