// The summary's interventions (summary_interventions.h).
#include "ablation/summary_interventions.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "eval/derived.h"
#include "eval/intervene.h"

int summary_iv_counts(const RunSummary *r) {
    return r->status == RUN_DONE && counts(r) && r->selected != SEL_CHOSEN && r->iv.n > 0;
}

int summary_has_interventions(const Summary *s) {
    for (int i = 0; i < s->sw->n_points; i++)
        if (summary_iv_counts(&s->runs[i])) return 1;
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int summary_iv_curve(const Summary *s, int g, int kind, double *strength, double *acc, double *S, int *n_runs, int max) {
    int n = 0;
    for (int i = 0; i < s->sw->n_points; i++) {  // the distinct strengths
        const RunSummary *r = &s->runs[i];
        if (s->group_of[i] != g || !summary_iv_counts(r)) continue;
        for (int k = 0; k < r->iv.n; k++) {
            const IvRecord *v = &r->iv.v[k];
            if (v->kind != kind || v->layer != r->iv.causal_layer) continue;
            int seen = 0;
            for (int j = 0; j < n && !seen; j++)
                seen = strength[j] == v->strength || (isnan(strength[j]) && isnan(v->strength));
            if (!seen && n < max) strength[n++] = v->strength;
        }
    }
    qsort(strength, (size_t)n, sizeof(double), cmp_double);
    for (int j = 0; j < n; j++) {
        Stat a = {0}, b = {0};
        for (int i = 0; i < s->sw->n_points; i++) {
            const RunSummary *r = &s->runs[i];
            if (s->group_of[i] != g || !summary_iv_counts(r)) continue;
            const IvRecord *v = run_intervention(&r->iv, kind, r->iv.causal_layer, strength[j]);
            if (v && isfinite(v->acc)) stat_add(&a, v->acc), stat_add(&b, v->S_recall);
        }
        acc[j] = stat_mean(&a), S[j] = stat_mean(&b), n_runs[j] = a.n;
    }
    return n;
}

// A group's table cells: the group's entries as write_groups_md shows them.
static int group_cells(const Summary *s, int rep, FILE *f, int header) {
    const SweepFile *sw = s->sw;
    char b[512];
    int cols = 0;
    for (int k = 0; k < s->n_varied; k++) {
        int e = s->varied[k];
        if (s->grouped[sw->entries[e].dim] || !sw->entries[e].named) continue;
        if (header) summary_md_cell(f, sw->entries[e].key);
        else {
            summary_entry_cell(sw, rep, e, b, sizeof b);
            summary_md_cell(f, b);
        }
        cols++;
    }
    if (s->mixer_md) summary_md_cell(f, header ? "mixer" : cfg_value(s, rep, "mixer")), cols++;
    return cols;
}

// The record of kind at the run's causal layer and strength (NAN: none).
static double causal_acc(const RunSummary *r, int kind, double strength) {
    const IvRecord *v = run_intervention(&r->iv, kind, r->iv.causal_layer, strength);
    return v ? v->acc : NAN;
}

// "1, 1, 0": the runs' layers, one per held-out seed ("-" where a run has none).
static void layer_list(char *b, size_t n, const int *layer, int k) {
    size_t at = 0;
    b[0] = 0;
    for (int i = 0; i < k && at + 8 < n; i++)
        at += (size_t)(layer[i] >= 0 ? snprintf(b + at, n - at, "%sL%d", i ? ", " : "", layer[i])
                                     : snprintf(b + at, n - at, "%s-", i ? ", " : ""));
    if (!k) snprintf(b, n, "-");
}

enum { T_TRAINED, T_TOP1, T_DERANGE, T_DERANGE_VALUES, T_ORACLE, T_WINDOW, T_WRONG, T_N };
static const char *t_title[T_N] = {
    "as trained (val acc)", "topk 1",        "derange (map)", "derange values: clean answers",
    "oracle (one-hot)",     "oracle window", "oracle wrong"};

// The layers the ablations cover: one past the highest ablated layer of any run that counts.
static int ablated_layers(const Summary *s) {
    int n = 0;
    for (int i = 0; i < s->sw->n_points; i++) {
        const RunSummary *r = &s->runs[i];
        for (int k = 0; summary_iv_counts(r) && k < r->iv.n; k++)
            if (r->iv.v[k].kind == IV_ABLATE && r->iv.v[k].layer >= n) n = r->iv.v[k].layer + 1;
    }
    return n < 16 ? n : 16;
}

static void main_table(const Summary *s, FILE *f) {
    char b[512];
    int L = ablated_layers(s);
    fputs("|", f);
    int cols = group_cells(s, 0, f, 1);
    fputs(" runs | causal recall layer: by patching | by ablation | by share (val, best step) |", f);
    summary_md_cell(f, t_title[T_TRAINED]);
    for (int l = 0; l < L; l++) fprintf(f, " L%d ablated |", l);
    for (int t = T_TOP1; t < T_N; t++) summary_md_cell(f, t_title[t]);
    fputs("\n|", f);
    for (int k = 0; k < cols + 4 + L + T_N; k++) fputs("---|", f);
    fputc('\n', f);
    for (int g = 0; g < s->n_groups; g++) {
        Stat st[T_N], abl[16];
        int patched[STAT_VALUES], ablated[STAT_VALUES], share[STAT_VALUES], n = 0;
        memset(st, 0, sizeof st), memset(abl, 0, sizeof abl);
        for (int i = 0; i < s->sw->n_points; i++) {
            const RunSummary *r = &s->runs[i];
            if (s->group_of[i] != g || !summary_iv_counts(r)) continue;
            if (n < STAT_VALUES)
                patched[n] = r->iv.patch_layer, ablated[n] = r->iv.ablation_layer, share[n] = r->best.layer;
            n++;
            stat_add(&st[T_TRAINED], r->iv.acc_trained);
            stat_add(&st[T_TOP1], causal_acc(r, IV_TOPK, 1));
            stat_add(&st[T_DERANGE], causal_acc(r, IV_DERANGE, NAN));
            stat_add(&st[T_DERANGE_VALUES], causal_acc(r, IV_DERANGE_VALUES, NAN));
            stat_add(&st[T_ORACLE], causal_acc(r, IV_ORACLE, NAN));
            stat_add(&st[T_WINDOW], causal_acc(r, IV_ORACLE_WINDOW, NAN));
            stat_add(&st[T_WRONG], causal_acc(r, IV_ORACLE_WRONG, NAN));
            for (int l = 0; l < L; l++) {
                const IvRecord *v = run_intervention(&r->iv, IV_ABLATE, l, NAN);
                stat_add(&abl[l], v ? v->acc : NAN);
            }
        }
        if (!n) continue;
        fputs("|", f);
        group_cells(s, s->groups[g], f, 0);
        snprintf(b, sizeof b, "%d", n);
        summary_md_cell(f, b);
        layer_list(b, sizeof b, patched, n < STAT_VALUES ? n : STAT_VALUES);
        summary_md_cell(f, b);
        layer_list(b, sizeof b, ablated, n < STAT_VALUES ? n : STAT_VALUES);
        summary_md_cell(f, b);
        layer_list(b, sizeof b, share, n < STAT_VALUES ? n : STAT_VALUES);
        summary_md_cell(f, b);
        summary_fmt_stat(b, sizeof b, "%.4f", &st[T_TRAINED]);
        summary_md_cell(f, b);
        for (int l = 0; l < L; l++) {
            summary_fmt_stat(b, sizeof b, "%.4f", &abl[l]);
            summary_md_cell(f, b);
        }
        for (int t = T_TOP1; t < T_N; t++) {
            summary_fmt_stat(b, sizeof b, "%.4f", &st[t]);
            summary_md_cell(f, b);
        }
        fputc('\n', f);
    }
}

// The model as trained on its causal layer: per group each seed's weight share and contribution
// share of the answer window (the answer itself where the window is one position), each beside
// its chance, and the margin of the answer's (window's) weight over the largest other pair's.
static void contribution_table(const Summary *s, FILE *f) {
    enum { C_SHARE, C_SHARE_CH, C_CONTRIB, C_CONTRIB_CH, C_MARGIN, C_N };
    static const char *title[C_N] = {"weight share", "chance", "contribution share", "chance", "margin over the next value"};
    int any = 0;
    for (int i = 0; i < s->sw->n_points && !any; i++) {
        const RunSummary *r = &s->runs[i];
        const IvRecord *v = summary_iv_counts(r) ? run_intervention(&r->iv, IV_NONE, r->iv.causal_layer, NAN) : NULL;
        any = v && isfinite(v->contrib);
    }
    if (!any) return;
    fputs("**Contribution share** of the model as trained on the causal recall layer (docs/interventions.md#"
          "contribution-share): beside the weight share, each position's share of |a_ij| ||v_j||, the part of o_i it "
          "contributes, each with a uniform row's share (chance); on the answer window where the layer's is wider "
          "than one position, else on the answer; and the margin of that weight share over the largest other "
          "pair's (a negative margin: another value outweighs the answer).\n\n|",
          f);
    int cols = group_cells(s, 0, f, 1);
    for (int c = 0; c < C_N; c++) summary_md_cell(f, title[c]);
    fputs("\n|", f);
    for (int k = 0; k < cols + C_N; k++) fputs("---|", f);
    fputc('\n', f);
    char b[512];
    for (int g = 0; g < s->n_groups; g++) {
        Stat st[C_N];
        memset(st, 0, sizeof st);
        int n = 0;
        for (int i = 0; i < s->sw->n_points; i++) {
            const RunSummary *r = &s->runs[i];
            if (s->group_of[i] != g || !summary_iv_counts(r)) continue;
            const IvRecord *v = run_intervention(&r->iv, IV_NONE, r->iv.causal_layer, NAN);
            if (!v || !isfinite(v->contrib)) continue;
            int win = v->contrib_window_chance != v->contrib_chance;  // a window wider than the answer
            stat_add(&st[C_SHARE], win ? v->window : v->share);
            stat_add(&st[C_SHARE_CH], v->chance);
            stat_add(&st[C_CONTRIB], win ? v->contrib_window : v->contrib);
            stat_add(&st[C_CONTRIB_CH], win ? v->contrib_window_chance : v->contrib_chance);
            stat_add(&st[C_MARGIN], win ? v->window_margin : v->margin);
            n++;
        }
        if (!n) continue;
        fputs("|", f);
        group_cells(s, s->groups[g], f, 0);
        for (int c = 0; c < C_N; c++) {
            summary_fmt_stat(b, sizeof b, "%.3f", &st[c]);
            summary_md_cell(f, b);
        }
        fputc('\n', f);
    }
    fputc('\n', f);
}

// The lag oracle's reading of a run at its causal layer (eval/derived.h) into b: "lag 1: 1.0000
// (control 0.0100)", or "not valid (lag 0: 0.0200, control 0.0190)"; 0 when the run has no lag
// records there.
static int lag_reading(const RunSummary *r, char *b, size_t n, int *valid) {
    double acc[INTERVENTION_MAX_LAG + 1], ctrl[INTERVENTION_MAX_LAG + 1], lo[INTERVENTION_MAX_LAG + 1],
        hi[INTERVENTION_MAX_LAG + 1];
    int top = 0;
    for (int k = 0; k <= INTERVENTION_MAX_LAG; k++) {
        const IvRecord *o = run_intervention(&r->iv, IV_ORACLE_LAG, r->iv.causal_layer, k);
        const IvRecord *c = run_intervention(&r->iv, IV_ORACLE_LAG_CONTROL, r->iv.causal_layer, k);
        acc[k] = o ? o->acc : NAN, ctrl[k] = c ? c->acc : NAN;
        lo[k] = c ? c->acc_lo : NAN, hi[k] = c ? c->acc_hi : NAN;
        if (o) top = k + 1;
    }
    LagReading lr = derived_lag_oracle(acc, ctrl, lo, hi, top);
    if (lr.best < 0) return 0;
    *valid = lr.valid;
    snprintf(b, n, "%slag %d: %.4f (control %.4f)", lr.valid ? "" : "not valid: ", lr.best, lr.acc, lr.control);
    return 1;
}

// The lag oracle per group: each seed's reading, and how many seeds it is a valid probe for.
static void lag_table(const Summary *s, FILE *f) {
    char b[2048], one[128];
    int any = 0;
    for (int i = 0; i < s->sw->n_points && !any; i++) {
        int v;
        any = summary_iv_counts(&s->runs[i]) && lag_reading(&s->runs[i], one, sizeof one, &v);
    }
    if (!any) return;
    fputs("**The lag oracle** on the causal recall layer (docs/interventions.md#the-lag-oracle): per seed the "
          "lag of the answer window whose oracle (all the row's weight on the answer's value position + lag) "
          "gives the highest validation accuracy, beside its control (the same lag behind another pair's value); "
          "\"not valid\" where it does not beat the control by more than the control's 95% interval is wide: "
          "there the oracle is no probe of the map, and its accuracy is no result.\n\n|",
          f);
    int cols = group_cells(s, 0, f, 1);
    fputs(" valid for | each seed |\n|", f);
    for (int k = 0; k < cols + 2; k++) fputs("---|", f);
    fputc('\n', f);
    for (int g = 0; g < s->n_groups; g++) {
        int n = 0, n_valid = 0;
        b[0] = 0;
        for (int i = 0; i < s->sw->n_points; i++) {
            int v = 0;
            if (s->group_of[i] != g || !summary_iv_counts(&s->runs[i]) || !lag_reading(&s->runs[i], one, sizeof one, &v))
                continue;
            snprintf(b + strlen(b), sizeof b - strlen(b), "%s%s", n ? "; " : "", one);
            n++, n_valid += v;
        }
        if (!n) continue;
        fputs("|", f);
        group_cells(s, s->groups[g], f, 0);
        snprintf(one, sizeof one, "%d/%d", n_valid, n);
        summary_md_cell(f, one);
        summary_md_cell(f, b);
        fputc('\n', f);
    }
    fputc('\n', f);
}

// A curve table: a column per strength, a row per group: mean accuracy (mean S_recall).
static void curve_table(const Summary *s, FILE *f, int kind, const char *what) {
    enum { MAX = INTERVENTION_MAX_STRENGTHS * 4 };
    double all[MAX], st[MAX], acc[MAX], S[MAX];
    int n_all = 0, runs[MAX];
    for (int g = 0; g < s->n_groups; g++) {
        int n = summary_iv_curve(s, g, kind, st, acc, S, runs, MAX);
        for (int j = 0; j < n; j++) {
            int seen = 0;
            for (int k = 0; k < n_all && !seen; k++) seen = all[k] == st[j];
            if (!seen && n_all < MAX) all[n_all++] = st[j];
        }
    }
    if (!n_all) return;
    qsort(all, (size_t)n_all, sizeof(double), cmp_double);
    char b[128];
    fprintf(f, "**%s** on the causal recall layer: mean accuracy over the held-out seeds (mean S_recall of the changed maps).\n\n|",
            intervention_name((InterventionKind)kind));
    int cols = group_cells(s, 0, f, 1);
    for (int j = 0; j < n_all; j++) fprintf(f, " %s %g |", what, all[j]);
    fputs("\n|", f);
    for (int k = 0; k < cols + n_all; k++) fputs("---|", f);
    fputc('\n', f);
    for (int g = 0; g < s->n_groups; g++) {
        int n = summary_iv_curve(s, g, kind, st, acc, S, runs, MAX);
        if (!n) continue;
        fputs("|", f);
        group_cells(s, s->groups[g], f, 0);
        for (int j = 0; j < n_all; j++) {
            int k = 0;
            while (k < n && st[k] != all[j]) k++;
            if (k < n) {
                char a[32], c[32];
                summary_fmt(a, sizeof a, "%.3f", acc[k]);
                summary_fmt(c, sizeof c, "%.2f", S[k]);
                snprintf(b, sizeof b, "%s (%s)", a, c);
            } else snprintf(b, sizeof b, "-");
            summary_md_cell(f, b);
        }
        fputc('\n', f);
    }
    fputc('\n', f);
}

void write_interventions_md(const Summary *s, FILE *f) {
    fputs("## Interventions\n\n"
          "On the best-validation checkpoint of each finished held-out run, by the sweep's `after_run` "
          "(docs/interventions.md), measured on the validation set's query rows: the accuracy as trained, "
          "with each layer's mixer ablated, and with the maps of the causal recall layer changed. The causal "
          "recall layer is the layer whose activation patch (its output at the changed key's query taken from "
          "a sequence with that pair's value replaced) moves the most answers to the changed sequence's, where "
          "the runs have patch records; else, and beside it, the layer whose ablation costs the most accuracy "
          "(ablation is flatten 1, every query row uniform); and the share-based recall layer at the best step. "
          "The maps are cut to their largest weight (topk 1), deranged in map space (the weights moved "
          "to other value positions; unwindowed maps only), given the clean input's maps on an input whose values "
          "are permuted among the pairs (derange values: the accuracy against the clean answers), and replaced by the oracles (all weight on the answer; on its window; on a wrong "
          "pair's value). Each seed's value, and from 3 values on their mean ± sample standard deviation "
          "first. Every record is in summary_interventions.csv.\n\n",
          f);
    main_table(s, f);
    fputc('\n', f);
    curve_table(s, f, IV_FLATTEN, "eps");
    curve_table(s, f, IV_TOPK, "k");
    lag_table(s, f);
    contribution_table(s, f);
}

void write_interventions_csv(const Summary *s, FILE *f) {
    const SweepFile *sw = s->sw;
    summary_csv_point_header(s, f);
    fputs(",in_tables,step,causal_layer,kind,layer,strength,acc,S_recall,eff_tokens,ans_window_share,ans_window_chance,"
          "acc_lo,acc_hi,acc_permuted,contrib_share,contrib_chance,contrib_window_share,contrib_window_chance,"
          "ans_margin,ans_window_margin,patch_follows\n",
          f);
    for (int i = 0; i < sw->n_points; i++) {
        const RunSummary *r = &s->runs[i];
        for (int k = 0; k < r->iv.n; k++) {
            const IvRecord *v = &r->iv.v[k];
            summary_csv_point_cells(s, i, f);
            fprintf(f, ",%d,%ld,%d,%s,%d", summary_iv_counts(r), r->iv.step, r->iv.causal_layer,
                    intervention_name((InterventionKind)v->kind), v->layer);
            summary_csv_num(f, v->strength);
            summary_csv_num(f, v->acc);
            summary_csv_num(f, v->S_recall);
            summary_csv_num(f, v->eff_tokens);
            summary_csv_num(f, v->window);
            summary_csv_num(f, v->chance);
            summary_csv_num(f, v->acc_lo);
            summary_csv_num(f, v->acc_hi);
            summary_csv_num(f, v->acc_permuted);
            const double c[6] = {v->contrib, v->contrib_chance, v->contrib_window, v->contrib_window_chance,
                                 v->margin,  v->window_margin};
            for (int j = 0; j < 6; j++) summary_csv_num(f, c[j]);
            summary_csv_num(f, v->patch_follows);
            fputc('\n', f);
        }
    }
}
