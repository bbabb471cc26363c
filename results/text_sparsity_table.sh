#!/bin/sh
# docs/text.md's table of attention sparsity across the char Shakespeare model's training: S_norm
# of every head (0 one-hot, 1 flat; docs/sparsity.md) at the steps its sparsity.jsonl holds, from
# the trainer's own sparsity.jsonl (DIR/sparsity.jsonl, default results/shakespeare_char), and the
# mean number of bytes a head's weight covers at the last step (eff_tokens). Prints the block
# between its marker comments; docs/text.md shows exactly it (tests/test_docs.c).
dir=${1:-results/shakespeare_char}
[ -f "$dir/sparsity.jsonl" ] || { echo "$dir/sparsity.jsonl: not found" >&2; exit 2; }
awk '
function num(key) { if (!match($0, "\"" key "\":[-0-9.e+]+")) return ""; return substr($0, RSTART + length(key) + 3, RLENGTH - length(key) - 3) + 0 }
/"type":"sparsity"/ {
    s = num("step"); l = num("layer"); h = num("head")
    S[s, l, h] = num("S_norm"); E[s, l, h] = num("eff_tokens")
    if (!(s in seen)) { seen[s] = 1; steps[++ns] = s }
    if (l > L) L = l; if (h > H) H = h
}
END {
    for (i = 1; i <= ns; i++) for (j = i + 1; j <= ns; j++) if (steps[j] < steps[i]) { t = steps[i]; steps[i] = steps[j]; steps[j] = t }
    last = steps[ns]
    print "<!-- text_sparsity_table.sh char -->"
    printf "| layer.head |"; for (i = 1; i <= ns; i++) printf " step %d |", steps[i]; print " bytes covered, step " last " |"
    printf "|---|"; for (i = 1; i <= ns; i++) printf "---|"; print "---|"
    for (l = 0; l <= L; l++) for (h = 0; h <= H; h++) {
        printf "| %d.%d |", l, h
        for (i = 1; i <= ns; i++) printf " %.2f |", S[steps[i], l, h]
        printf " %.1f |\n", E[last, l, h]
    }
    print "<!-- /text_sparsity_table.sh char -->"
}' "$dir/sparsity.jsonl"
