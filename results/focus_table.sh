#!/usr/bin/env bash
# docs/results.md's table of the training-time terms' pilot (configs/ablations/focus_pilot.sweep):
# per run, from its committed metrics.jsonl and sparsity.jsonl, the best validation accuracy and
# its step, the test accuracy read once at the end, and the focus layer's (the last, layer 1)
# query-row figures at the best step: S_recall, effective tokens, answer share and its chance.
#   results/focus_table.sh [SWEEP_FOLDER]
set -euo pipefail
dir=${1:-results/focus_pilot}
ls "$dir"/*/metrics.jsonl >/dev/null 2>&1 || { echo "focus_table: no $dir/*/metrics.jsonl" >&2; exit 2; }
rows=$(for run in "$dir"/*/; do
    run=${run%/}
    name=$(basename "$run")
    mixer=$(echo "$name" | sed -E 's/^mixer=([a-z0-9_]+),.*/\1/')
    mu=$(echo "$name" | sed -E 's/.*answer_supervision=([^,]+).*/\1/')
    lam=$(echo "$name" | sed -E 's/.*focus_penalty=([^,]+).*/\1/')
    term="focus_penalty $lam"; [ "$mu" != 0 ] && term="answer_supervision $mu"
    awk -v mixer="$mixer" -v term="$term" '
    function num(line, f,    r) { if (!match(line, "\"" f "\":[^,}]*")) return ""; r = substr(line, RSTART + length(f) + 3, RLENGTH - length(f) - 3); return r == "null" ? "" : r + 0 }
    FNR == 1 { file++ }
    file == 1 && /"type":"eval"/ {
        if (/"split":"test"/) { tst = num($0, "acc"); next }
        a = num($0, "acc"); if (a > best) { best = a; step = num($0, "step") }
    }
    file == 2 && /"layer":1,/ && !/"split":"test"/ { st = num($0, "step"); S[st] = num($0, "S_recall"); tok[st] = num($0, "eff_tokens_recall")
        ans[st] = num($0, "ans_share"); ch[st] = num($0, "ans_chance") }
    END {
        printf "%s\t%s\t%.4f\t%d\t%s\t%s\t%.3f\t%.1f\t%.3f\t%.3f\n", mixer, term, best, step,
            (best >= 0.99 ? "yes" : "no"), (tst == "" ? "-" : sprintf("%.4f", tst)), S[step], tok[step], ans[step], ch[step]
    }' "$run/metrics.jsonl" "$run/sparsity.jsonl"
done)
echo "$rows" | awk -F'\t' '
BEGIN {
    print "| mixer | term | best val acc (step) | reached 0.99 | test acc | layer 1 S_recall (tokens) | answer share (chance) |"
    print "|---|---|---|---|---|---|---|"
}
{
    printf "| `%s` | %s | %s (%s) | %s | %s | %s (%s) | %s (%s) |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10
    n++; mixer[n] = $1; term[n] = $2; best[n] = $3; step[n] = $4; reached[n] = $5; S[n] = $7; tok[n] = $8; ans[n] = $9; ch[n] = $10
}
END {
    print ""
    for (i = 1; i <= n; i++) {
        split(term[i], t, " ")
        if (mixer[i] == "softmax")
            printf "- softmax, focus_penalty %s: %s; at its best step layer 1 had S_recall %s (%s 0.6) with %s effective tokens and %s of the weight on the answer (chance %s).\n",
                t[2], (reached[i] == "yes" ? "reached 0.99 at step " step[i] : "best " best[i] " at step " step[i] ", never 0.99"),
                S[i], (S[i] + 0 >= 0.6 ? "at or above" : "below"), tok[i], ans[i], ch[i]
        else
            printf "- %s, answer_supervision %s: %s; at its best step layer 1 put %s of its weight on the answer (chance %s; %s 0.8) with S_recall %s (%s effective tokens).\n",
                mixer[i], t[2], (reached[i] == "yes" ? "reached 0.99 at step " step[i] : "best " best[i] " at step " step[i] ", never 0.99"),
                ans[i], ch[i], (ans[i] + 0 >= 0.8 ? "at or above" : "below"), S[i], tok[i]
    }
}'
