# The awk half of results/results2.sh (see there): Results II from the collected summary of
# results/mqar_results2 (summary.csv: one row per point; summary_interventions.csv: after_run's
# records), and the same tables for the focus-seeds sweep (mode focus; results/mqar_focus_seeds).
# Reading and formatting: results/lib.awk. Variables: S (the sweep folder), mode, LRALL (the rate
# of a sweep that does not vary it, for its rows).

# A variant's name: the mixer, and its short convolution, focus penalty and answer supervision
# when it has them (the focus-seeds sweep varies the last two).
function variant(i) {
    return "`" P[i, "mixer"] "`" (P[i, "short_conv"] + 0 ? " + short_conv " P[i, "short_conv"] : "") \
        (P[i, "focus_penalty"] + 0 ? " + focus_penalty " P[i, "focus_penalty"] : "") \
        (P[i, "answer_supervision"] + 0 ? " + answer_supervision " P[i, "answer_supervision"] : "")
}
function vkey(i) { return P[i, "mixer"] "," (P[i, "short_conv"] + 0) "," (P[i, "focus_penalty"] + 0) "," (P[i, "answer_supervision"] + 0) }
function ikey(i) { return I[i, "mixer"] "," (I[i, "short_conv"] + 0) "," (I[i, "focus_penalty"] + 0) "," (I[i, "answer_supervision"] + 0) }

# Values of one variant's held-out seeds, in point order, as the summary lists them: "a, b" below
# 3 values (a spread of two is no spread), "mean (a, b, c)" from 3 on; "-" for none.
# A "-" in the list is a seed without the value (kept so each value stays beside its seed's in
# the other columns); the mean is over the seeds with one.
function vals(list, fmt,    n, v, i, s, sum, m) {
    n = split(list, v, " ")
    if (!n) return "-"
    s = ""; sum = 0; m = 0
    for (i = 1; i <= n; i++) {
        s = s (i > 1 ? ", " : "") (v[i] == "-" ? "-" : sprintf(fmt, v[i]))
        if (v[i] != "-") { sum += v[i]; m++ }
    }
    if (!m) return "-"
    return n < 3 ? s : sprintf(fmt, sum / m) " (" s ")"
}
function add(arr, k, v) { if (v != "") arr[k] = (k in arr ? arr[k] " " : "") v }
# The same keeping a seed without the value as "-" (the S_recall of the rows answered wrong: none
# where a seed answered every row right).
function addk(arr, k, v) { arr[k] = (k in arr ? arr[k] " " : "") (v == "" ? "-" : v) }

function load(    i, k, line, n, f, g) {  # (n, f: scratch)
    NP = 0
    if ((getline line < (S "/summary.csv")) > 0) { close(S "/summary.csv"); NP = read_csv(S "/summary.csv", P) }
    NV = 0
    for (i = 1; i <= NP; i++) {
        k = vkey(i)
        if (!(k in VI)) { VI[k] = ++NV; VNAME[NV] = variant(i); VROW[NV] = i }
        g = VI[k]
        if (!(P[i, "lr"] in RATES)) { RATES[P[i, "lr"]] = 1; NR++ }
        if (!(P[i, "seed"] in SEEDS)) { SEEDS[P[i, "seed"]] = 1; NS++ }
        if (P[i, "status"] == "done") DONE++
        if (P[i, "status"] != "done") continue
        if (P[i, "seed"] == 0) {  # the first stage: every rate at seed 0
            SEL[g, P[i, "lr"]] = i
            if (P[i, "selection"] == "chosen") CHOSEN[g] = i
            continue
        }
        HELD[g] = HELD[g] + 1; NHELD++
        LR[g] = P[i, "lr"]
        REACH[g] += P[i, "reached_0.99"]
        add(VAL, g, P[i, "best_acc"]); add(TEST, g, P[i, "test_acc"]); add(STEPS, g, P[i, "steps_to_0.99"])
        add(EFF, g, P[i, "best_recall_eff_tokens"]); add(SHARE, g, P[i, "best_recall_share"])
        add(CHANCE, g, P[i, "best_recall_chance"]); add(LIFT, g, P[i, "best_recall_lift"])
        addk(RIGHT, g, P[i, "best_S_right"]); addk(WRONG, g, P[i, "best_S_wrong"])
        LAYER[g] = LAYER[g] (LAYER[g] == "" ? "" : ", ") (P[i, "best_recall_layer"] == "" ? "-" : "L" P[i, "best_recall_layer"])
        add(LEFF, g, P[i, "last_recall_eff_tokens"]); add(LSHARE, g, P[i, "last_recall_share"])
        add(LCHANCE, g, P[i, "last_recall_chance"]); addk(LRIGHT, g, P[i, "last_S_right"]); addk(LWRONG, g, P[i, "last_S_wrong"])
        add(LSTEP, g, P[i, "last_step"])
        LLAYER[g] = LLAYER[g] (LLAYER[g] == "" ? "" : ", ") (P[i, "last_recall_layer"] == "" ? "-" : "L" P[i, "last_recall_layer"])
    }
    # the runs the sweep makes: every rate at seed 0, then the other seeds at the chosen rate
    NRUNS = NV * NR + NV * (NS - 1)
    # the interventions of the held-out runs (in_tables), at each run's causal layer
    NI = 0
    if ((getline line < (S "/summary_interventions.csv")) > 0) {
        close(S "/summary_interventions.csv")
        NI = read_csv(S "/summary_interventions.csv", I)
    }
    for (i = 1; i <= NI; i++) {
        if (I[i, "in_tables"] != 1) continue
        g = VI[ikey(i)]
        k = I[i, "point"]
        if (!(k in IVRUN)) { IVRUN[k] = 1; IVN[g]++; NIV++; CAUSAL[g] = CAUSAL[g] (CAUSAL[g] == "" ? "" : ", ") "L" I[i, "causal_layer"] }
        if (I[i, "layer"] != I[i, "causal_layer"]) continue
        if (I[i, "kind"] == "none") add(IV, g SUBSEP "none", I[i, "acc"])
        if (I[i, "kind"] == "ablate") add(IV, g SUBSEP "ablate", I[i, "acc"])
        if (I[i, "kind"] == "topk" && I[i, "strength"] == 1) add(IV, g SUBSEP "top1", I[i, "acc"])
        if (I[i, "kind"] ~ /^(derange|oracle|oracle_window|oracle_wrong)$/) add(IV, g SUBSEP I[i, "kind"], I[i, "acc"])
        if (I[i, "kind"] == "none") { BASE[k] = I[i, "acc"]; RUNG[k] = g; RUNS[++NRUN] = k }
        if (!(I[i, "kind"] in KINDS)) { KINDS[I[i, "kind"]] = 1; NKIND++ }
        if (!((k, I[i, "kind"]) in RUNKIND)) { RUNKIND[k, I[i, "kind"]] = 1; RUNNK[k]++ }
        if (I[i, "kind"] == "flatten") { FLA[k, I[i, "strength"] + 0] = I[i, "acc"]; FLE[k, I[i, "strength"] + 0] = I[i, "eff_tokens"]; HASFLAT[k] = 1 }
    }
    # flatten, per run: the largest eps, in steps of 0.1, up to which the accuracy holds (within
    # hold() of the run as trained: the one-seed pilot's rule, results2_reading.awk)
    for (i = 1; i <= NRUN; i++) {
        k = RUNS[i]
        if (!(k in HASFLAT)) continue
        f = ""
        for (n = 0; n <= 10; n++) {
            if (!((k, n / 10) in FLA) || FLA[k, n / 10] < BASE[k] - hold()) break
            f = n / 10
        }
        add(FLAT, RUNG[k], f == "" ? "-" : f)
        add(FLATEFF, RUNG[k], f == "" || FLE[k, f] == "" ? "-" : FLE[k, f])  # its rows' effective tokens there
    }
    # a run has its interventions when it has every kind some run of the sweep has (the sweep's
    # after_run list, read from the records: a run still in its after_run has fewer)
    NIVFULL = 0
    for (k in IVRUN) NIVFULL += RUNNK[k] == NKIND
    COMPLETE = NV > 0 && (NHELD + 0) == (NS - 1) * NV && NIVFULL == NHELD
}

# --- the blocks --------------------------------------------------------------------------------------

function status(up, readme,    g, nchosen) {
    nchosen = 0
    for (g = 1; g <= NV; g++) nchosen += (g in CHOSEN)
    if (COMPLETE) {
        para("**Results II is complete** (`./sweep configs/ablations/mqar_results2.sweep`, issue 40; the runs' logs and [summary](" up "results/mqar_results2/summary.md) in `results/mqar_results2/`): all " DONE " of its runs have finished, the learning rate chosen for each of the " NV " variants on seed 0's validation accuracy, and the " NHELD " held-out runs each with all " NKIND - ("none" in KINDS) " kinds of intervention (its records also hold the run as trained)." \
            (FCOMPLETE ? "" : " The focus-seeds sweep (below) " (FNP ? "has finished " FDONE " of its " FNP " runs" : "has not run yet") "; its tables and its paragraph of the reading follow when it is complete."))
        return
    }
    para("**Results II is running** (`./sweep configs/ablations/mqar_results2.sweep`, issue 40; the runs' logs and [summary](" up "results/mqar_results2/summary.md) in `results/mqar_results2/`): " DONE " of its " NRUNS " runs have finished; the learning rate is chosen for " nchosen " of the " NV " variants on seed 0's validation accuracy, " (NHELD + 0) " of the " (NS - 1) * NV " held-out runs (the other seeds at the chosen rate) have finished, " (NIVFULL + 0) " of them with all their interventions. " (readme ? "Its tables, printed by `results/results2.sh` from the collected summary, are in [docs/results.md](docs/results.md#results-ii-every-mixer-under-the-protocol) and grow with every sitting." : "The tables below are printed by `results/results2.sh` from the collected summary and grow with every sitting.") " Until they are complete, what they show is partial, and no conclusion is drawn from it here.")
}

function selection(    g, j, r, i, cell, line) {
    raw("| variant | lr 4.6e-4 | lr 2.2e-3 | lr 1e-2 | chosen | seed 0 at the chosen rate: val acc, test acc |")
    raw("|---|---|---|---|---|---|")
    split("4.6e-4 2.2e-3 1e-2", r, " ")
    for (g = 1; g <= NV; g++) {
        line = "| " VNAME[g] " |"
        for (j = 1; j <= 3; j++) {
            if (!((g, r[j]) in SEL)) { line = line " - |"; continue }
            i = SEL[g, r[j]]
            cell = f4(P[i, "best_acc"]) (P[i, "reached_0.99"] == 1 ? ", 0.99 at step " P[i, "steps_to_0.99"] : ", never 0.99")
            line = line " " ((g in CHOSEN) && CHOSEN[g] == i ? "**" cell "**" : cell) " |"
        }
        if (g in CHOSEN) { i = CHOSEN[g]; line = line " " P[i, "lr"] " | " f4(P[i, "best_acc"]) ", " f4(P[i, "test_acc"]) " |" }
        else line = line " waiting for the first stage | - |"
        raw(line)
    }
    raw("")
}

function heldout(    g, any) {
    any = 0
    for (g = 1; g <= NV; g++) any += HELD[g] > 0
    if (!any) { para("No held-out run has finished yet."); return }
    raw("| variant | lr | held-out runs | reached 0.99 | test acc | best val acc | steps to 0.99 | recall layer (by share) | effective tokens | answer share | chance | lift | S_recall right | S_recall wrong |")
    raw("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (g = 1; g <= NV; g++) {
        if (!HELD[g]) continue
        raw("| " VNAME[g] " | " (LR[g] == "" ? LRALL : LR[g]) " | " HELD[g] " | " REACH[g] "/" HELD[g] " | " vals(TEST[g], "%.4f") " | " vals(VAL[g], "%.4f") " | " vals(STEPS[g], "%.0f") " | " LAYER[g] " | " vals(EFF[g], "%.2f") " | " vals(SHARE[g], "%.3f") " | " vals(CHANCE[g], "%.3f") " | " vals(LIFT[g], "%.1f") " | " vals(RIGHT[g], "%.3f") " | " vals(WRONG[g], "%.3f") " |")
    }
    raw("")
    para("The same figures at each run's last step: its best where it stopped at 0.99 (the first evaluation at 0.99 is the best so far), a later one where it ran to the cap:")
    raw("| variant | last step | recall layer (by share) | effective tokens | answer share | chance | S_recall right | S_recall wrong |")
    raw("|---|---|---|---|---|---|---|---|")
    for (g = 1; g <= NV; g++) {
        if (!HELD[g]) continue
        raw("| " VNAME[g] " | " flats(LSTEP[g]) " | " LLAYER[g] " | " vals(LEFF[g], "%.2f") " | " vals(LSHARE[g], "%.3f") " | " vals(LCHANCE[g], "%.3f") " | " vals(LRIGHT[g], "%.3f") " | " vals(LWRONG[g], "%.3f") " |")
    }
    raw("")
}

# The per-seed eps lists of flatten, as written ("0.4, 0.6, -"): no mean of a threshold.
function flats(list,    n, v, i, s) {
    n = split(list, v, " ")
    if (!n) return "-"
    for (i = 1; i <= n; i++) s = s (i > 1 ? ", " : "") v[i]
    return s
}

function interventions(    g) {
    if (!NIV) { para("No held-out run has its interventions yet."); return }
    raw("| variant | runs | causal recall layer | as trained | causal layer ablated | flatten holds to eps | topk 1 | derange | oracle | oracle window | oracle wrong |")
    raw("|---|---|---|---|---|---|---|---|---|---|---|")
    for (g = 1; g <= NV; g++) {
        if (!IVN[g]) continue
        raw("| " VNAME[g] " | " IVN[g] " | " CAUSAL[g] " | " vals(IV[g, "none"], "%.4f") " | " vals(IV[g, "ablate"], "%.4f") " | " flats(FLAT[g]) " | " vals(IV[g, "top1"], "%.4f") " | " vals(IV[g, "derange"], "%.4f") " | " vals(IV[g, "oracle"], "%.4f") " | " vals(IV[g, "oracle_window"], "%.4f") " | " vals(IV[g, "oracle_wrong"], "%.4f") " |")
    }
    raw("")
}

BEGIN {
    load()
    if (FOCUS != "") load_focus(FOCUS "/summary.csv")
    if (mode == "readme") {
        block("readme_results2")
        if (COMPLETE) {
            para(summary_sentences() " The tables, the rules that judge them and the reading: [docs/results.md](docs/results.md#results-ii-every-mixer-under-the-protocol).")
            readme_table()
        } else status("", 1)
        endblock("readme_results2")
    } else if (mode == "results") {
        block("results2_status"); status("../", 0); endblock("results2_status")
        block("results2_selection"); selection(); endblock("results2_selection")
        block("results2_heldout"); heldout(); endblock("results2_heldout")
        block("results2_interventions"); interventions(); endblock("results2_interventions")
        block("results2_reading"); para(rules_text())
        if (COMPLETE) reading(0)
        else para("The reading below these rules is printed by the same script once every held-out run has finished with its interventions (" (NHELD + 0) " of the " (NS - 1) * NV " have, " (NIVFULL + 0) " of them with all their interventions); `results/results2.sh reading` shows the rules applied to what has finished so far, marked partial.")
        endblock("results2_reading")
    } else if (mode == "reading") {  # the rules applied to whatever has finished (for a look; never on the pages)
        para(rules_text()); reading(!COMPLETE)
    } else if (mode == "focus") {  # the focus-seeds sweep: every point a held-out seed, no choice
        block("focus_heldout"); if (NP) heldout(); else para("Not run yet."); endblock("focus_heldout")
        block("focus_interventions"); if (NP) interventions(); else para("Not run yet."); endblock("focus_interventions")
    } else { print "results2.awk: mode readme, results, reading or focus, got '" mode "'" > "/dev/stderr"; exit 2 }
    printf "%s", OUT
}
