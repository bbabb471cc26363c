# The reading of Results II (issue 40): the paragraphs of docs/results.md and the README's two
# sentences, generated from the same collected summaries as the tables (results/results2.awk
# loads them; this file only reads what load() and load_focus() filled in). Every judgement is
# one of the rules below, fixed and committed before any held-out run had finished (results/
# README.md#mqar_results2 names the commit), so no threshold was chosen on the data it judges.
# The two intervention rules are the one-seed pilot's (docs/results.md#interventions-a-one-seed-pilot).

# --- the rules ---------------------------------------------------------------------------------------

function solves(acc) { return acc >= 0.99 }      # a held-out seed solves the cell: test accuracy >= 0.99
function focused(eff) { return eff <= 2 }        # at most two tokens' worth of weight (a one-hot is 1)
function on_answer(share) { return share >= 0.5 } # most of the weight in the answer's window
function hold() { return 0.05 }                  # an intervention holds within 0.05 of as trained

function rules_text() {
    return "**How the reading judges** (rules fixed before any held-out run had finished; the " \
        "first three are this sweep's, the last is the one-seed pilot's): a held-out seed **solves** " \
        "the cell when its test accuracy is 0.99 or more; a variant **recalls** when all its held-out " \
        "seeds solve, **fails** when none does, and otherwise **splits**, with each seed's value given. " \
        "Its recall layer (by share, at the best validation step) **focuses** when its query rows hold " \
        "at most two tokens' worth of weight (mean effective tokens n S^2 of 2 or fewer; a one-hot row " \
        "is 1), and its weight is **on the answer** when the answer's window holds half of it or more " \
        "(each share beside its chance level, a uniform row's). An intervention on the causal recall " \
        "layer **holds** when the accuracy stays within " hold() " of the run as trained; where flattening " \
        "that layer holds on every seed up to a map that no longer focuses, the variant's recall " \
        "**does not need focus**."
}

# --- small helpers -----------------------------------------------------------------------------------

function lmean(list,    n, v, i, s) { n = split(list, v, " "); s = 0; for (i = 1; i <= n; i++) s += v[i]; return n ? s / n : 0 }
function lmin(list,    n, v, i, m) { n = split(list, v, " "); m = v[1]; for (i = 2; i <= n; i++) if (v[i] + 0 < m + 0) m = v[i]; return m }
function lmax(list,    n, v, i, m) { n = split(list, v, " "); m = v[1]; for (i = 2; i <= n; i++) if (v[i] + 0 > m + 0) m = v[i]; return m }
function lcount(list,    v) { return split(list, v, " ") }
# How many of a per-seed list pass a rule (by name: solves, holds against the as-trained list).
function nsolve(list,    n, v, i, c) { n = split(list, v, " "); c = 0; for (i = 1; i <= n; i++) c += solves(v[i]); return c }
# A per-seed list of effective tokens, one decimal ("-" kept).
function effs(list,    n, v, i, s) {
    n = split(list, v, " ")
    for (i = 1; i <= n; i++) s = s (i > 1 ? ", " : "") (v[i] == "-" ? "-" : sprintf("%.1f", v[i]))
    return s
}
# How many of a per-seed list of effective tokens ("-" where none) no longer focus.
function nfree(list,    n, v, i, c) { n = split(list, v, " "); c = 0; for (i = 1; i <= n; i++) c += v[i] != "-" && !focused(v[i]); return c }
function nhold(list, base,    n, v, b, i, c) {
    n = split(list, v, " "); split(base, b, " "); c = 0
    for (i = 1; i <= n; i++) c += v[i] >= b[i] - hold()
    return c
}
# "a", "a and b", "a, b and c" from items joined by "\t".
function andlist(s,    n, v, i, out) {
    n = split(s, v, "\t")
    out = v[1]
    for (i = 2; i <= n; i++) out = out (i == n ? " and " : ", ") v[i]
    return out
}
function push(s, x) { return s == "" ? x : s "\t" x }
function count(s,    v) { return s == "" ? 0 : split(s, v, "\t") }

# --- judging every variant ---------------------------------------------------------------------------

function judge(    g, n) {
    if (JUDGED++) return  # once: the README's sentences and table both ask
    for (g = 1; g <= NV; g++) {
        if (!HELD[g]) continue
        n = lcount(TEST[g])
        SOLVED[g] = nsolve(TEST[g])
        CLASS[g] = SOLVED[g] == n ? "recalls" : (SOLVED[g] == 0 ? "fails" : "splits")
        EM[g] = lmean(EFF[g]); SM[g] = lmean(SHARE[g]); CM[g] = lmean(CHANCE[g])
        # a map is judged only where every held-out seed measured one (else neither focused nor on the answer)
        MAPPED[g] = lcount(EFF[g]) == n && lcount(SHARE[g]) == n
        FOC[g] = MAPPED[g] && focused(EM[g]); ONA[g] = MAPPED[g] && on_answer(SM[g])
    }
}

# A variant's map in a few words: "1.2 effective tokens, 93% of the weight on the answer (chance 6%)".
function mapdesc(g) { if (!MAPPED[g]) return "no map measured on every seed"; return f2(EM[g]) " effective tokens and " pc(SM[g]) " of the weight on the answer against a chance of " pc(CM[g]) }

# --- the paragraphs ----------------------------------------------------------------------------------

# Where every held-out seed reached 0.99 on validation (and stopped there), a variant that splits or
# fails did so on test accuracy just below the line: said beside its verdict, which stays.
function stopped_note(g) {
    if (REACH[g] != lcount(TEST[g])) return ""
    return " (every seed reached 0.99 on validation and stopped there; test accuracies " rng(lmin(TEST[g]), lmax(TEST[g]), "%.4f") ")"
}
# The same in a few words, for the README's sentences.
function stopped_short(g) { return REACH[g] == lcount(TEST[g]) ? " (every seed at 0.99 on validation)" : "" }

function recall_para(    g, rec, fail, split_) {
    for (g = 1; g <= NV; g++) {
        if (!HELD[g]) continue
        if (CLASS[g] == "recalls") rec = push(rec, VNAME[g] " at " vals(TEST[g], "%.4f"))
        else if (CLASS[g] == "fails") fail = push(fail, VNAME[g] " at " vals(TEST[g], "%.4f") stopped_note(g))
        else split_ = push(split_, VNAME[g] " on " SOLVED[g] " of " lcount(TEST[g]) ", at " vals(TEST[g], "%.4f") stopped_note(g))
    }
    para("**Which recall.** Test accuracy of the held-out seeds (from three on, the mean, then each seed). " \
        (rec == "" ? "No variant recalls on every held-out seed." : Word(count(rec)) " of the " NV " variants recall on every held-out seed: " andlist(rec) ".") \
        (fail == "" ? " None fails on every seed." : " " Word(count(fail)) " fail" (count(fail) == 1 ? "s" : "") " on every seed: " andlist(fail) ".") \
        (split_ == "" ? " None splits." : " " Word(count(split_)) " split" (count(split_) == 1 ? "s" : "") ", solving on some seeds only: " andlist(split_) "."))
}

function focus_para(    g, i, foc, broad, ona, unm) {
    for (g = 1; g <= NV; g++) {
        if (!HELD[g]) continue
        if (FOC[g]) foc = push(foc, VNAME[g] " with " mapdesc(g))
    }
    sort_by_eff()  # the others from the most concentrated to the broadest
    for (i = 1; i <= NORD; i++) { g = ORD[i]; if (MAPPED[g] && !FOC[g]) broad = push(broad, VNAME[g] " " f2(EM[g])) }
    for (g = 1; g <= NV; g++) if (HELD[g] && MAPPED[g] && !ONA[g]) ona = push(ona, VNAME[g] " " pc(SM[g]) " against " pc(CM[g]))
    for (g = 1; g <= NV; g++) if (HELD[g] && !MAPPED[g]) unm = push(unm, VNAME[g])
    para("**Which maps focus.** On the recall layer at the best validation step, mean over the held-out seeds. " \
        (foc == "" ? "No variant's map focuses." : (count(foc) == 1 ? "One map focuses: " : Word(count(foc)) " maps focus: ") andlist(foc) ".") \
        (broad == "" ? "" : (foc == "" ? " All spread their weight over more positions" : " The others spread their weight over more positions") " (effective tokens, from the most concentrated): " andlist(broad) ".") \
        (ona == "" ? " Every variant puts half of its weight or more on the answer." : " Less than half of the weight lands on the answer (its share against chance) for " andlist(ona) "; every other variant puts half or more there.") \
        (unm == "" ? "" : " Not every held-out seed of " andlist(unm) " has a recall layer's map in its records; " (count(unm) == 1 ? "it is" : "they are") " judged on neither."))
}

function sort_by_eff(    g, i, j, t) {
    NORD = 0
    for (g = 1; g <= NV; g++) if (HELD[g]) ORD[++NORD] = g
    for (i = 2; i <= NORD; i++)  # insertion sort, stable: ties keep the sweep's order
        for (j = i; j > 1 && EM[ORD[j - 1]] > EM[ORD[j]]; j--) { t = ORD[j]; ORD[j] = ORD[j - 1]; ORD[j - 1] = t }
}

function cross_para(    g, fr, br, fn, bn, lo, hi) {
    lo = ""; hi = ""
    for (g = 1; g <= NV; g++) {
        if (!HELD[g] || CLASS[g] == "splits" || !MAPPED[g]) continue
        if (CLASS[g] == "recalls" && FOC[g]) fr = push(fr, VNAME[g])
        if (CLASS[g] == "recalls" && !FOC[g]) {
            br = push(br, VNAME[g])
            if (lo == "" || EM[g] < lo) lo = EM[g]
            if (hi == "" || EM[g] > hi) hi = EM[g]
        }
        if (CLASS[g] == "fails" && FOC[g]) fn = push(fn, VNAME[g])
        if (CLASS[g] == "fails" && !FOC[g]) bn = push(bn, VNAME[g])
    }
    para("**Focus against recall**, the variants that do not split (and have maps): focused and recall" (fr == "" ? ", none" : ": " andlist(fr)) \
        "; recall without focus" (br == "" ? ", none" : ": " andlist(br)) "; focused without recall" (fn == "" ? ", none" : ": " andlist(fn)) \
        "; neither" (bn == "" ? ", none" : ": " andlist(bn)) ". " \
        (br != "" ? "Focus as S measures it is not necessary for recall on this cell: " andlist(br) " recall" (count(br) == 1 ? "s" : "") " from maps of " rng(lo, hi, "%.2f") " effective tokens." : \
            "Every variant that recalls on every seed focuses.") \
        (fn != "" ? " Nor is it sufficient: " andlist(fn) " focus" (count(fn) == 1 ? "es" : "") " and fail" (count(fn) == 1 ? "s" : "") "." : \
            (fr != "" ? " Every variant whose map focuses and does not split recalls." : "")))
}

# The interventions, per variant with its per-seed counts against its runs with records.
function interv_para(    g, n, t1h, t1c, dd, dall, dk, fl, ab, free_, needs) {
    for (g = 1; g <= NV; g++) {
        if (!IVN[g] || CLASS[g] == "fails") continue
        n = lcount(IV[g, "none"])
        if (lcount(IV[g, "top1"]) == n) {
            if (nhold(IV[g, "top1"], IV[g, "none"]) == n) t1h = push(t1h, VNAME[g])
            else t1c = push(t1c, VNAME[g] " at " vals(IV[g, "top1"], "%.3f") " against " vals(IV[g, "none"], "%.3f"))
        }
        if (lcount(IV[g, "derange"]) == n) {
            if (nhold(IV[g, "derange"], IV[g, "none"]) == 0) dd = push(dd, VNAME[g] " at " vals(IV[g, "derange"], "%.3f"))
            else if (nhold(IV[g, "derange"], IV[g, "none"]) == n) dall = push(dall, VNAME[g] " at " vals(IV[g, "derange"], "%.3f") " against " vals(IV[g, "none"], "%.3f"))
            else dk = push(dk, VNAME[g] " at " vals(IV[g, "derange"], "%.3f") " against " vals(IV[g, "none"], "%.3f"))
        }
        if (lcount(FLAT[g]) == n) {
            fl = push(fl, VNAME[g] " " flats(FLAT[g]) " (" effs(FLATEFF[g]) " effective tokens there)")
            if (nfree(FLATEFF[g]) == n) free_ = push(free_, VNAME[g])
            else needs = push(needs, VNAME[g])
        }
        if (lcount(IV[g, "ablate"]) == n && nhold(IV[g, "ablate"], IV[g, "none"]) == n) ab = push(ab, VNAME[g])
    }
    para("**What the interventions say**, on the causal recall layer of each held-out run of the variants that recall on some seed. " \
        "Cut to its largest weight (top-1), it holds on every seed for " (t1h == "" ? "none" : andlist(t1h)) \
        (t1c == "" ? "." : " and costs more on some seed for " andlist(t1c) ".") \
        " Deranged (every row's S kept, its weight moved among the value positions), it fails to hold on every seed for " (dd == "" ? "none" : andlist(dd)) \
        (dk == "" ? "" : ", and holds on some seeds only for " andlist(dk)) ": where the weight lands carries the recall where it does not hold." \
        (dall == "" ? "" : " It holds on every seed for " andlist(dall) ": where that layer's map puts its weight among the values does not carry their recall.") \
        (fl == "" ? "" : " Flattened towards a uniform row, it holds up to eps (per seed) " andlist(fl) ".") \
        (free_ == "" ? "" : " So the recall of " andlist(free_) " does not need focus: it holds on every seed at a map of more than two tokens' worth.") \
        (needs == "" ? "" : " For " andlist(needs) " it stops holding before the map stops focusing on some seed.") \
        (ab == "" ? "" : " Ablating the causal layer costs no more than " hold() " for " andlist(ab) ": recall there does not rest on one layer's map."))
}

function oracle_para(    g, n, items, yes, yesw, no) {
    for (g = 1; g <= NV; g++) {
        if (!IVN[g] || CLASS[g] == "recalls") continue
        n = lcount(IV[g, "none"])
        if (!lcount(IV[g, "oracle"]) && !lcount(IV[g, "oracle_window"])) continue
        items = push(items, VNAME[g] " " vals(IV[g, "oracle"], "%.3f") " on the answer and " vals(IV[g, "oracle_window"], "%.3f") " on its window, against " vals(IV[g, "none"], "%.3f") " as trained")
        if (lcount(IV[g, "oracle"]) == n && nsolve(IV[g, "oracle"]) == n) yes = push(yes, VNAME[g])
        else if (lcount(IV[g, "oracle_window"]) == n && nsolve(IV[g, "oracle_window"]) == n) yesw = push(yesw, VNAME[g])
        else no = push(no, VNAME[g])
    }
    if (items == "") { para("**Can the failing mixers read a focused map?** Every variant recalls on every seed; there is none to ask."); return }
    para("**Can the failing mixers read a focused map?** The oracle puts all of the causal layer's weight on the answer's value position, the window oracle spreads it evenly over the answer's window (behind a convolution, the value position and the positions after it whose convolved values hold it); on the variants that fail on some seed they give " andlist(items) "." \
        (yes == "" ? "" : " The oracle makes every seed of " andlist(yes) " solve: the rest of the network reads a map with all its weight on the answer, so what falls short is the map it forms.") \
        (yesw == "" ? "" : " The window oracle, not the one on the answer, makes every seed of " andlist(yesw) " solve.") \
        (no == "" ? "" : " Neither makes every seed of " andlist(no) " solve."))
}

# The seeds of a focus-seeds variant that ran to the step cap below 0.99 on validation, as a clause
# ("; two of its seeds ran to the 4000-step cap below 0.99 on validation (best 0.9878, 0.9888)"), or "".
function capnote(g,    k, v, i, out) {
    if (!(g in FCAPPED)) return ""
    k = split(FCAPPED[g], v, " ")
    for (i = 1; i <= k; i++) out = out (i > 1 ? ", " : "") sprintf("%.4f", v[i])
    return "; " (k == lcount(FTEST[g]) ? "every seed ran" : (k == 1 ? "one of its seeds ran" : word(k) " of its seeds ran")) \
        " to the " FCAP[g] "-step cap below 0.99 on validation (best " out ")"
}

# The focus-seeds sweep: softmax held broad and elu+1 taught the answer, each beside its plain form.
function training_para(    sp, sb, lp, ls, t) {
    if (!FNP) { para("**Focus forced and forbidden in training.** The focus-seeds sweep has not run yet; its reading follows when it has."); return }
    if (!FCOMPLETE) { para("**Focus forced and forbidden in training.** The focus-seeds sweep has finished " FDONE " of its " FNP " runs; its reading follows when all have."); return }
    sp = FV["softmax", "plain"]; sb = FV["softmax", "term"]; lp = FV["linear", "plain"]; ls = FV["linear", "term"]
    t = "**Focus forced and forbidden in training** (test accuracy per seed; effective tokens and answer share on the recall layer, means). "
    t = t "Held broad by the focus penalty, softmax solves on " nsolve(FTEST[sb]) " of " lcount(FTEST[sb]) " seeds (" vals(FTEST[sb], "%.4f") ") with " f2(lmean(FEFF[sb])) " effective tokens and " pc(lmean(FSHARE[sb])) " of the weight on the answer, against " nsolve(FTEST[sp]) " of " lcount(FTEST[sp]) " (" vals(FTEST[sp], "%.4f") ") with " f2(lmean(FEFF[sp])) " and " pc(lmean(FSHARE[sp])) " without the penalty. "
    if (!focused(lmean(FEFF[sb])) && nsolve(FTEST[sb]) == lcount(FTEST[sb])) t = t "Softmax does not need a focused map to recall. "
    else if (!focused(lmean(FEFF[sb]))) t = t "Held broad, softmax does not recall on every seed" capnote(sb) ". "
    else t = t "The penalty did not hold the map broad by the rule (" f2(lmean(FEFF[sb])) " effective tokens), so this says nothing about necessity. "
    t = t "Taught the answer, elu+1 linear attention solves on " nsolve(FTEST[ls]) " of " lcount(FTEST[ls]) " seeds (" vals(FTEST[ls], "%.4f") ") with " f2(lmean(FEFF[ls])) " effective tokens and " pc(lmean(FSHARE[ls])) " of the weight on the answer, against " nsolve(FTEST[lp]) " of " lcount(FTEST[lp]) " (" vals(FTEST[lp], "%.4f") ") with " f2(lmean(FEFF[lp])) " and " pc(lmean(FSHARE[lp])) " untaught"
    t = t (on_answer(lmean(FSHARE[ls])) ? ": it learns to put its weight on the answer" (nsolve(FTEST[ls]) == lcount(FTEST[ls]) ? " and then recalls." : ", and that is not enough to recall on every seed" capnote(ls) ".") : ": it does not learn to put most of its weight on the answer" capnote(ls) ".")
    para(t)
}

# Where the delta rule, Based and Mamba-2 sit (issues 36 and 37), each against the rules.
function newmixers_para(    g, m, t, mam, mam2) {
    t = ""
    for (g = 1; g <= NV; g++) {
        if (!HELD[g]) continue
        m = P[VROW[g], "mixer"]
        if (m == "mamba") mam = g
        if (m == "mamba2") mam2 = g
        if (m != "deltanet" && m != "gated_deltanet" && m != "based" && m != "mamba2") continue
        t = push(t, VNAME[g] " " CLASS[g] " at " vals(TEST[g], "%.4f") " with " (FOC[g] ? "a focused map, " : "a map that does not focus, ") mapdesc(g))
    }
    if (t == "") return
    para("**The delta rule, Based and Mamba-2.** " andlist(t) "." \
        (mam && mam2 ? " " mamba_pair(mam, mam2) : ""))
}

# Mamba-2's per-head map against Mamba's per-channel maps, in effective tokens: the means, and
# whether the seeds separate them (three seeds a side; where they overlap, the mean alone says it).
function mamba_pair(m1, m2,    more, apart) {
    more = EM[m2] < EM[m1]
    apart = more ? lmax(EFF[m2]) < lmin(EFF[m1]) : lmax(EFF[m1]) < lmin(EFF[m2])
    return "Mamba-2's per-head map has " vals(EFF[m2], "%.2f") " effective tokens against Mamba's per-channel " \
        vals(EFF[m1], "%.2f") ": " (more ? "the more concentrated" : "not the more concentrated") " on the mean" \
        (apart ? ", and on every seed." : ", but the seeds overlap, so " word(lcount(EFF[m1])) " seeds a side do not tell them apart.")
}

function reading(partial) {
    judge()
    if (!NHELD) { para("No held-out run has finished yet."); return }
    if (partial) para("*Partial: " NHELD " of the " (NS - 1) * NV " held-out runs. The rules below applied to what has finished; this is not the reading, which waits for the whole sweep.*")
    recall_para(); focus_para(); cross_para(); interv_para(); oracle_para(); training_para(); newmixers_para()
}

# The README's two sentences.
function summary_sentences(    g, rec, foc, br, lo, hi, fail, oyes, splits, t, sb, ls, lp) {
    judge()
    for (g = 1; g <= NV; g++) {
        if (!HELD[g]) continue
        if (CLASS[g] == "recalls") {
            rec++
            if (FOC[g]) foc = push(foc, VNAME[g])
            else if (MAPPED[g]) { br = push(br, VNAME[g]); if (lo == "" || EM[g] < lo) lo = EM[g]; if (hi == "" || EM[g] > hi) hi = EM[g] }
        }
        if (CLASS[g] == "splits") splits = push(splits, VNAME[g] " on " SOLVED[g] " of " lcount(TEST[g]) stopped_short(g))
        if (CLASS[g] == "fails") {
            fail = push(fail, VNAME[g] stopped_short(g))
            if (IVN[g] && lcount(IV[g, "oracle"]) == lcount(TEST[g]) && nsolve(IV[g, "oracle"]) == lcount(TEST[g])) oyes = push(oyes, VNAME[g])
        }
    }
    t = "Under the protocol (the rate chosen on seed 0's validation accuracy, " word(NS - 1) " held-out seeds each tested once; a seed solves the task when its test accuracy is 0.99 or more), " \
        word(rec + 0) " of the " NV " variants recall on every held-out seed" \
        (rec ? "; of them " (foc == "" ? "none focuses its recall layer" : andlist(foc) " focus" (count(foc) == 1 ? "es" : "") " on two tokens' worth of weight or less") \
            (br == "" ? "" : ", and " andlist(br) " recall" (count(br) == 1 ? "s" : "") " from broader maps (" rng(lo, hi, "%.2f") " effective tokens)") : "") \
        (splits == "" ? "" : "; on only some held-out seeds: " andlist(splits)) "."
    if (fail != "") t = t " " andlist(fail) " fail" (count(fail) == 1 ? "s" : "") " on every held-out seed" (oyes == "" ? "" : " (an oracle map on the causal layer makes " andlist(oyes) " solve)") (FCOMPLETE ? ";" : ".")
    if (FCOMPLETE) {
        sb = FV["softmax", "term"]; ls = FV["linear", "term"]; lp = FV["linear", "plain"]
        t = t " " (fail == "" ? "H" : "h") "eld broad in training (" f2(lmean(FEFF[sb])) " effective tokens), softmax solves on " nsolve(FTEST[sb]) " of " lcount(FTEST[sb]) " seeds (test " rng(lmin(FTEST[sb]), lmax(FTEST[sb]), "%.4f") \
            "), and taught the answer, elu+1 linear attention on " nsolve(FTEST[ls]) " of " lcount(FTEST[ls]) " (" rng(lmin(FTEST[ls]), lmax(FTEST[ls]), "%.4f") ", against " rng(lmin(FTEST[lp]), lmax(FTEST[lp]), "%.4f") " untaught)."
    }
    return t
}

# The focus-seeds sweep's summary into FV[mixer, plain|term] (a variant index), FTEST, FEFF, FSHARE.
function load_focus(file,    n, i, k, g, line) {
    FNP = 0; FDONE = 0
    if ((getline line < file) <= 0) return
    close(file)
    FNP = n = read_csv(file, F)
    for (i = 1; i <= n; i++) {
        k = F[i, "mixer"] SUBSEP ((F[i, "focus_penalty"] + 0 || F[i, "answer_supervision"] + 0) ? "term" : "plain")
        if (!(k in FV)) FV[k] = ++NFV
        g = FV[k]
        if (F[i, "status"] != "done") continue
        FDONE++
        add(FTEST, g, F[i, "test_acc"]); add(FEFF, g, F[i, "best_recall_eff_tokens"]); add(FSHARE, g, F[i, "best_recall_share"])
        if (!F[i, "reached_0.99"]) { add(FCAPPED, g, F[i, "best_acc"]); if (F[i, "steps"] + 0 > FCAP[g]) FCAP[g] = F[i, "steps"] + 0 }
    }
    FCOMPLETE = FNP > 0 && FDONE == FNP && ("softmax" SUBSEP "term") in FV && ("linear" SUBSEP "term") in FV
}

# A per-seed list's mean to 3 places, "-" for none.
function mean3(list) { return lcount(list) ? f3(lmean(list)) : "-" }

# The README's table: per variant its verdict by the rules, the held-out seeds' test accuracy and
# the recall layer's map (means over the seeds; per-seed values in docs/results.md).
function readme_table(    g, c, n, cls) {
    judge()
    raw("| variant | lr | held-out seeds at >= 0.99 | test acc: mean (per seed) | verdict | recall layer: effective tokens | answer share (chance) | causal layer, val acc: top-1 / derange / oracle / window oracle |")
    raw("|---|---|---|---|---|---|---|---|")
    n = split("recalls splits fails", cls, " ")
    for (c = 1; c <= n; c++)  # sorted by verdict, in the variants' order within one
        for (g = 1; g <= NV; g++) {
            if (!HELD[g] || CLASS[g] != cls[c]) continue
            raw("| " VNAME[g] " | " LR[g] " | " SOLVED[g] "/" lcount(TEST[g]) " | " vals(TEST[g], "%.4f") " | " CLASS[g] (FOC[g] ? ", focuses" : "") " | " f2(EM[g]) " | " f3(SM[g]) " (" f3(CM[g]) ") | " \
                (IVN[g] ? mean3(IV[g, "top1"]) " / " mean3(IV[g, "derange"]) " / " mean3(IV[g, "oracle"]) " / " mean3(IV[g, "oracle_window"]) : "-") " |")
        }
    raw("")
    para("How to read it. *Held-out seeds*: seeds 1-3, which played no part in choosing the learning rate (chosen on seed 0's validation accuracy); each is tested once. *Verdict*: **recalls** when every held-out seed reaches 0.99 test accuracy, **splits** when some do, **fails** when none does; a fail says only that the 0.99 line was missed, so read the accuracy beside it (0.989 is a near miss, about 0.25 is the plateau of guessing any value seen in context). **focuses**: the recall layer holds two tokens' worth of weight or less. *Effective tokens* (n S^2, 1 for a one-hot row) and *answer share* are from the recall layer, the one whose weight sits most on the answer (for a mixer behind a short convolution, the answer's window); *chance* is a uniform row's share. The last column changes the *causal layer* (the layer whose removal costs the most validation accuracy) and measures validation accuracy: its map kept to its largest weight (top-1), its weights moved off the answers (derange), and replaced by a map on the answer (oracle) or on the answer's window ([interventions.md](docs/interventions.md)).")
}
