// What a sweep's summary tables and figures share (summary_data.h).
#include "ablation/summary_data.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void stat_add(Stat *s, double v) {
    if (!isfinite(v)) return;
    if (s->n < STAT_VALUES) s->v[s->n] = v;
    s->sum += v, s->sum2 += v * v, s->n++;
}

void summary_entry_cell(const SweepFile *sw, int point, int e, char *b, size_t n) {
    const char *v = sweep_value(sw, point, e);
    if (e == sw->base_entry) {
        const char *slash = strrchr(v, '/');
        if (slash) v = slash + 1;
        size_t len = strlen(v);
        if (len > 5 && !strcmp(v + len - 5, ".conf")) len -= 5;
        snprintf(b, n, "%.*s", (int)len, v);
    } else snprintf(b, n, "%s", v);
}

double summary_point_metric(const RunSummary *r, int m) {
    const RecallAt *f = &r->last;
    switch (m) {
    case G_LOSS: return r->final_loss;
    case G_ACC: return r->best_acc;
    case G_TEST: return r->test_acc;
    case G_STEPS: return r->steps_to_target >= 0 ? (double)r->steps_to_target : NAN;
    case G_MIN: return r->minutes_to_target;
    case G_SMIN: return r->S_min_all;
    case G_SMEAN: return r->S_mean_all;
    case G_SRECALL: return r->S_recall_min_all;
    case G_TOKS: return r->tok_per_s;
    case G_RS: return f->S;
    case G_EFF: return f->eff_tokens;
    case G_ANS: return f->share;
    case G_CHANCE: return f->chance;
    case G_LIFT: return f->share / f->chance;
    case G_HIT: return f->hit;
    case G_SRIGHT: return f->S_right;
    case G_SWRONG: return f->S_wrong;
    case G_STATE: return r->state_floats;
    default: return NAN;
    }
}

GroupStats summary_group_stats(const Summary *s, int g) {
    GroupStats gs;
    memset(&gs, 0, sizeof gs);
    gs.selection = -1;
    for (int i = 0; i < s->sw->n_points; i++) {
        if (s->group_of[i] != g) continue;
        const RunSummary *r = &s->runs[i];
        if (!counts(r)) continue;
        if (r->selected == SEL_CHOSEN) {  // chose the value on its own validation: not held out
            gs.selection = i;
            continue;
        }
        gs.points++;
        if (r->status != RUN_DONE) continue;
        gs.finished++;
        gs.reached += r->steps_to_target >= 0;
        gs.capped += r->capped_improving;
        Verdict v = derived_verdict(r->test_lo, r->test_hi);
        if (v == VERDICT_NONE) gs.no_interval++;
        else gs.verdicts[v]++;
        for (int m = 0; m < G_N; m++) stat_add(&gs.st[m], summary_point_metric(r, m));
    }
    return gs;
}

// --- table cells ----------------------------------------------------------------------------------

// Sample standard deviation (NAN below two values). From the kept values in two passes (the mean,
// then the squared deviations from it), exactly 0 when they are all equal: the one-pass
// sum2 - sum^2 / n cancels, and its rounding noise (9.3e-10 for three equal chance levels of
// 0.061) showed in the summaries and differed between an -O2 and an -O3 build, whose FMA
// contractions differ. Beyond STAT_VALUES values, the one pass.
double stat_sd(const Stat *s) {
    if (s->n < 2) return NAN;
    double var;
    if (s->n <= STAT_VALUES) {
        int same = 1;
        for (int i = 1; i < s->n; i++) same &= s->v[i] == s->v[0];
        if (same) return 0;
        double mean = s->sum / s->n, ss = 0;
        for (int i = 0; i < s->n; i++) {
            double d = s->v[i] - mean;
            ss += d * d;
        }
        var = ss / (s->n - 1);
    } else {
        var = (s->sum2 - s->sum * s->sum / s->n) / (s->n - 1);
    }
    return var > 0 ? sqrt(var) : 0;
}

void summary_fmt(char *b, size_t n, const char *f, double v) {
    if (isfinite(v)) snprintf(b, n, f, v);
    else snprintf(b, n, "-");
}

// The values of a group, one per held-out seed: "0.991, 0.985" below 3 values (a spread of two
// is no spread), "mean ± sd (v1, v2, v3)" from 3 on; "-" for none.
void summary_fmt_stat(char *b, size_t n, const char *f, const Stat *s) {
    char m[32], d[32], list[400];
    size_t k = 0;
    list[0] = 0;
    for (int i = 0; i < s->n && i < STAT_VALUES && k + 40 < sizeof list; i++) {
        summary_fmt(m, sizeof m, f, s->v[i]);
        k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", m);
    }
    if (s->n > STAT_VALUES) snprintf(list + k, sizeof list - k, ", ...");
    if (s->n == 0) snprintf(b, n, "-");
    else if (s->n < 3) snprintf(b, n, "%s", list);
    else {
        summary_fmt(m, sizeof m, f, stat_mean(s));
        summary_fmt(d, sizeof d, f, stat_sd(s));
        snprintf(b, n, "%s ± %s (%s)", m, d, list);
    }
}

void summary_md_cell(FILE *f, const char *s) {
    fputs(" ", f);
    for (; *s; s++) {
        if (*s == '|') fputc('\\', f);
        fputc(*s, f);
    }
    fputs(" |", f);
}

void summary_csv_cell(FILE *f, const char *s, int first) {
    if (!first) fputc(',', f);
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void summary_csv_num(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, ",%.8g", v);
    else fputc(',', f);
}

void summary_csv_point_header(const Summary *s, FILE *f) {
    summary_csv_cell(f, "point", 1);
    for (int k = 0; k < s->n_varied; k++) summary_csv_cell(f, s->sw->entries[s->varied[k]].key, 0);
    if (s->mixer_col) summary_csv_cell(f, "mixer", 0);
}

void summary_csv_point_cells(const Summary *s, int point, FILE *f) {
    char b[256];
    summary_csv_cell(f, s->sw->point_names[point], 1);
    for (int k = 0; k < s->n_varied; k++) {
        summary_entry_cell(s->sw, point, s->varied[k], b, sizeof b);
        summary_csv_cell(f, b, 0);
    }
    if (s->mixer_col) summary_csv_cell(f, cfg_value(s, point, "mixer"), 0);
}
