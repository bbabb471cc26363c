// The summary's figures (docs/sweeps.md#the-summary), SVG through eval/svg_plot.
#include "ablation/summary_figures.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ablation/summary_interventions.h"
#include "core/io.h"
#include "eval/intervene.h"
#include "eval/svg_plot.h"

// Distinct strings in first-seen order; returns the index of s (added when new).
static int intern(char ***list, int *n, const char *s) {
    for (int i = 0; i < *n; i++)
        if (!strcmp((*list)[i], s)) return i;
    *list = reallocCheck(*list, sizeof(char *) * (size_t)(*n + 1));
    (*list)[*n] = strdupCheck(s);
    return (*n)++;
}

static void free_strings(char **list, int n) {
    for (int i = 0; i < n; i++) free(list[i]);
    free(list);
}

static int dim_has_key(const SweepFile *sw, int d, const char *key) {
    for (int k = 0; k < sw->dims[d].n_entries; k++)
        if (!strcmp(sw->entries[sw->dims[d].entries[k]].key, key)) return 1;
    return 0;
}

// The figures' name for a point's plot_series value: the value, then each zip partner of
// plot_series that takes more than one value among the points sharing it ("linear, short_conv=4"
// beside "linear, short_conv=0"), so variants of one mixer get lines and panels of their own.
static void series_name(const Summary *s, int point, char *b, size_t n) {
    const SweepFile *sw = s->sw;
    const char *v = cfg_value(s, point, sw->plot_series);
    size_t k = (size_t)snprintf(b, n, "%s", v);
    for (int d = 0; d < sw->n_dims; d++) {
        if (!dim_has_key(sw, d, sw->plot_series)) continue;
        for (int j = 0; j < sw->dims[d].n_entries; j++) {
            const char *key = sw->entries[sw->dims[d].entries[j]].key;
            if (!strcmp(key, sw->plot_series)) continue;
            int varies = 0;
            for (int i = 0; i < sw->n_points && !varies; i++)
                varies = !strcmp(cfg_value(s, i, sw->plot_series), v) &&
                    strcmp(cfg_value(s, i, key), cfg_value(s, point, key));
            if (varies && k + 4 < n) k += (size_t)snprintf(b + k, n - k, ", %s=%s", key, cfg_value(s, point, key));
        }
    }
}

// The distinct series names of the points, in first-seen order.
static char **series_names(const Summary *s, int *n) {
    char **list = NULL;
    *n = 0;
    for (int i = 0; i < s->sw->n_points; i++) intern(&list, n, s->series_of[i]);
    return list;
}

char **summary_point_series(const Summary *s) {
    char **names = mallocCheck(sizeof(char *) * (size_t)(s->sw->n_points + 1)), name[512];
    for (int i = 0; i < s->sw->n_points; i++) {
        series_name(s, i, name, sizeof name);
        names[i] = strdupCheck(name);
    }
    return names;
}

// 1 when the value of `key` in the effective config is a function of dim d's choice (and takes
// more than one value): such a dim (a base per mixer, a zip partner) adds nothing to a panel.
static int dim_determines(const Summary *s, int d, const char *key) {
    const SweepFile *sw = s->sw;
    const SweepDim *dm = &sw->dims[d];
    const char **seen = callocCheck((size_t)dm->n_values, sizeof(char *));
    int det = dm->n_values > 1, varies = 0;
    for (int i = 0; i < sw->n_points && det; i++) {
        const char *v = cfg_value(s, i, key);
        if (strcmp(v, cfg_value(s, 0, key))) varies = 1;
        long c = (i / dm->stride) % dm->n_values;
        if (!seen[c]) seen[c] = v;
        else if (strcmp(seen[c], v)) det = 0;
    }
    free(seen);
    return det && varies;
}

// "k=v, k=v" over the varied entries of the dims where keep[d] (only those that name the points
// when named_only).
static void label_of(const Summary *s, int point, const int *keep, int named_only, char *b, size_t n) {
    const SweepFile *sw = s->sw;
    size_t k = 0;
    b[0] = 0;
    for (int j = 0; j < s->n_varied && k + 8 < n; j++) {
        int e = s->varied[j];
        if (!keep[sw->entries[e].dim] || (named_only && !sw->entries[e].named)) continue;
        char v[128];
        summary_entry_cell(sw, point, e, v, sizeof v);
        k += (size_t)snprintf(b + k, n - k, "%s%s=%s", k ? ", " : "", sw->entries[e].key, v);
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

// Best accuracy (group mean over seeds, max over plot_best_over) vs plot_x, one line per
// plot_series value, one panel per combination of the other axes. 1 when drawn, 0 when there is
// nothing to draw, -1 when the file cannot be written.
int plot_accuracy(const Summary *s, const char *path, FILE *log) {
    const SweepFile *sw = s->sw;
    int np = sw->n_points;
    double *x = mallocCheck(sizeof(double) * (size_t)np);
    for (int i = 0; i < np; i++) {
        char *end;
        const char *v = cfg_value(s, i, sw->plot_x);
        x[i] = strtod(v, &end);
        if (!*v || *end) {
            if (log) fprintf(log, "summary: no accuracy figure: %s = '%s' is not a number\n", sw->plot_x, v);
            free(x);
            return 0;
        }
    }
    double *xs = mallocCheck(sizeof(double) * (size_t)np);
    memcpy(xs, x, sizeof(double) * (size_t)np);
    qsort(xs, (size_t)np, sizeof(double), cmp_double);
    int nx = 0;
    for (int i = 0; i < np; i++)
        if (!nx || xs[i] != xs[nx - 1]) xs[nx++] = xs[i];
    if (nx < 2) {
        free(x);
        free(xs);
        return 0;  // plot_x does not vary: nothing to draw
    }
    int *panel_dim = mallocCheck(sizeof(int) * (size_t)(sw->n_dims + 1));
    for (int d = 0; d < sw->n_dims; d++)
        panel_dim[d] = !s->grouped[d] && !dim_has_key(sw, d, sw->plot_x) && !dim_has_key(sw, d, sw->plot_series) &&
            !dim_has_key(sw, d, sw->plot_best_over) && !dim_determines(s, d, sw->plot_series) &&
            !dim_determines(s, d, sw->plot_x);
    char **panels = NULL, **series = NULL;
    int n_panels = 0, n_series = 0;
    int *pi = mallocCheck(sizeof(int) * (size_t)np), *si = mallocCheck(sizeof(int) * (size_t)np);
    char label[512];
    for (int i = 0; i < np; i++) {
        label_of(s, project(sw, i, panel_dim), panel_dim, 0, label, sizeof label);
        pi[i] = intern(&panels, &n_panels, label);
        si[i] = intern(&series, &n_series, s->series_of[i]);
    }
    // y[panel][series][x]: the best group mean
    double *y = mallocCheck(sizeof(double) * (size_t)n_panels * (size_t)n_series * (size_t)nx);
    for (long k = 0; k < (long)n_panels * n_series * nx; k++) y[k] = NAN;
    double *group_acc = mallocCheck(sizeof(double) * (size_t)s->n_groups);
    for (int g = 0; g < s->n_groups; g++) {
        GroupStats gs = summary_group_stats(s, g);
        group_acc[g] = stat_mean(&gs.st[G_ACC]);
    }
    int drawn = 0;
    for (int i = 0; i < np; i++) {
        double acc = group_acc[s->group_of[i]];
        if (!isfinite(acc)) continue;
        int xi = 0;
        while (xs[xi] != x[i]) xi++;
        double *cell = &y[((long)pi[i] * n_series + si[i]) * nx + xi];
        if (!(*cell >= acc)) *cell = acc;
        drawn = 1;
    }
    PlotPanel *pp = callocCheck((size_t)n_panels, sizeof(PlotPanel));
    PlotSeries *ps = callocCheck((size_t)n_panels * (size_t)n_series, sizeof(PlotSeries));
    for (int p = 0; p < n_panels; p++) {
        for (int k = 0; k < n_series; k++)
            ps[p * n_series + k] = (PlotSeries){xs, &y[((long)p * n_series + k) * nx], nx, series[k], k, k >= 10};
        pp[p] = (PlotPanel){
            panels[p][0] ? panels[p] : sw->name, sw->plot_x, "best accuracy", &ps[p * n_series], n_series, 0, 1.02, 0};
    }
    char title[512];
    snprintf(title, sizeof title, "%s: best accuracy vs %s per %s (max over %s, mean over %s)", sw->name, sw->plot_x,
             sw->plot_series, sw->plot_best_over, sw->n_group_over ? sw->group_over[0] : "nothing");
    int rc = drawn ? svg_line_figure(path, title, pp, n_panels, n_panels < 3 ? n_panels : 3) : 0;
    if (drawn && rc == 0 && log) fprintf(log, "summary: %s\n", path);
    free(group_acc);
    free(pp);
    free(ps);
    free(y);
    free(pi);
    free(si);
    free_strings(panels, n_panels);
    free_strings(series, n_series);
    free(panel_dim);
    free(x);
    free(xs);
    return rc ? -1 : drawn;
}

// Over steps, S of the most focused layer (recall = 0) or S_recall of the recall layer
// (recall = 1): one panel per plot_series value, one line per point, a colour per group and,
// within a group, a line style per seed (solid, dashed, dotted, then again), each line in the
// legend. 1 when drawn, 0: no data, -1: not written.
int plot_sparsity(const Summary *s, const char *path, int recall, FILE *log) {
    const SweepFile *sw = s->sw;
    int np = sw->n_points, any = 0;
    for (int i = 0; i < np; i++)
        for (int k = 0; k < s->runs[i].n_curve && !any; k++)
            any = isfinite(recall ? s->runs[i].curve_recall[k] : s->runs[i].curve_S[k]);
    if (!any) return 0;
    // group_dim: the dims that tell the groups of a panel apart; line_dim: those and the seeds
    int *group_dim = mallocCheck(sizeof(int) * (size_t)(sw->n_dims + 1));
    int *line_dim = mallocCheck(sizeof(int) * (size_t)(sw->n_dims + 1));
    for (int d = 0; d < sw->n_dims; d++) {
        int labelled = !dim_has_key(sw, d, sw->plot_series) && !dim_determines(s, d, sw->plot_series);
        group_dim[d] = labelled && !s->grouped[d];
        line_dim[d] = labelled;
    }
    int *in_group = callocCheck((size_t)np, sizeof(int));  // lines drawn so far per group of the panel
    int n_panels;
    char **panels = series_names(s, &n_panels);
    PlotPanel *pp = callocCheck((size_t)n_panels, sizeof(PlotPanel));
    PlotSeries *ps = callocCheck((size_t)np, sizeof(PlotSeries));
    char **labels = callocCheck((size_t)np, sizeof(char *));
    int n = 0;
    char label[512];
    for (int p = 0; p < n_panels; p++) {
        int first = n;
        char **groups = NULL;
        int n_groups = 0;
        for (int i = 0; i < np; i++) {
            const RunSummary *r = &s->runs[i];
            if (strcmp(s->series_of[i], panels[p]) || r->n_curve == 0 || !counts(r)) continue;
            label_of(s, i, group_dim, 1, label, sizeof label);
            int before = n_groups, g = intern(&groups, &n_groups, label);
            if (n_groups > before) in_group[g] = 0;
            label_of(s, i, line_dim, 1, label, sizeof label);
            labels[n] = label[0] ? strdupCheck(label) : NULL;
            ps[n] = (PlotSeries){r->curve_step,    recall ? r->curve_recall : r->curve_S, r->n_curve, labels[n], g,
                                 in_group[g]++ % 3};
            n++;
        }
        free_strings(groups, n_groups);
        char title[600];
        snprintf(title, sizeof title, "%s = %s", sw->plot_series, panels[p]);
        // clang-format off
        pp[p] = (PlotPanel){strdupCheck(title), "step", recall ? "S_recall (recall layer)" : "S (most focused layer)",
                            &ps[first], n - first, 0, 1.02, 0};
        // clang-format on
    }
    char title[512];
    snprintf(title, sizeof title, "%s: %s (mean over heads) over steps", sw->name,
             recall ? "S_recall of the recall layer (chosen at the last step)" : "S of the most focused layer");
    int rc = svg_line_figure(path, title, pp, n_panels, n_panels < 3 ? n_panels : 3);
    if (rc == 0 && log) fprintf(log, "summary: %s\n", path);
    for (int p = 0; p < n_panels; p++) free((char *)pp[p].title);
    for (int i = 0; i < n; i++) free(labels[i]);
    free(labels);
    free(pp);
    free(ps);
    free(group_dim);
    free(line_dim);
    free(in_group);
    free_strings(panels, n_panels);
    return rc ? -1 : 1;
}

// Zoology's Figure 3: best accuracy against the state a layer carries (log axis), a line per
// plot_series value (mixer) through its finished points in order of state size; a run not yet
// finished (partial, running, failed) is a grey ring at its best so far, apart from the lines.
// 1 when drawn, 0: fewer than two runs with a state size and an accuracy, -1: not written.
int plot_acc_vs_state(const Summary *s, const char *path, FILE *log) {
    const SweepFile *sw = s->sw;
    int np = sw->n_points, usable = 0;
    for (int i = 0; i < np; i++) usable += isfinite(s->runs[i].state_floats) && isfinite(s->runs[i].best_acc);
    if (usable < 2) return 0;
    int n_series;
    char **series = series_names(s, &n_series);
    double *x = mallocCheck(sizeof(double) * (size_t)np), *y = mallocCheck(sizeof(double) * (size_t)np);
    PlotSeries *ps = callocCheck((size_t)n_series + 1, sizeof(PlotSeries));
    int n = 0;
    for (int k = 0; k <= n_series; k++) {  // k == n_series: the unfinished runs
        int first = n;
        for (int i = 0; i < np; i++) {
            const RunSummary *r = &s->runs[i];
            if ((k < n_series && strcmp(s->series_of[i], series[k])) || !isfinite(r->state_floats) ||
                !isfinite(r->best_acc) || !counts(r) || (k < n_series) != (r->status == RUN_DONE))
                continue;
            int j = n++;  // insertion by state size
            while (j > first && x[j - 1] > r->state_floats) x[j] = x[j - 1], y[j] = y[j - 1], j--;
            x[j] = r->state_floats, y[j] = r->best_acc;
        }
        if (k < n_series)
            ps[k] = (PlotSeries){x + first, y + first, n - first, series[k], k, k >= 10};  // past the palette: dashed
        else
            ps[k] = (PlotSeries){x + first, y + first, n - first, n > first ? "unfinished (best so far)" : NULL, -1, 3};
    }
    // clang-format off
    PlotPanel pp = {NULL, "state per layer (floats carried between tokens)", "best accuracy (mean over cells)",
                    ps, n_series + 1, 0, 1, 1};
    // clang-format on
    char title[512];
    snprintf(title, sizeof title, "%s: accuracy vs state size per %s", sw->name, sw->plot_series);
    int rc = svg_line_figure(path, title, &pp, 1, 1);
    if (rc == 0 && log) fprintf(log, "summary: %s\n", path);
    free(ps), free(x), free(y);
    free_strings(series, n_series);
    return rc ? -1 : 1;
}

// Per test cell, at each run's best evaluation: accuracy (what = 0) or the recall layer's
// S_recall (what = 1) against the number of pairs, one panel per cell length and value of the
// axes that are neither plot_series nor grouped (d_model), a line per plot_series value.
int plot_cells(const Summary *s, const char *path, int what, FILE *log) {
    const SweepFile *sw = s->sw;
    int np = sw->n_points;
    if (s->n_cells < 2) return 0;
    int *panel_dim = mallocCheck(sizeof(int) * (size_t)(sw->n_dims + 1));
    for (int d = 0; d < sw->n_dims; d++)
        panel_dim[d] = !s->grouped[d] && !dim_has_key(sw, d, sw->plot_series) && !dim_determines(s, d, sw->plot_series);
    // the cells' lengths and pair counts, parsed back from their names (kv<K>_L<L>)
    int K[SUMMARY_MAX_CELLS], Lc[SUMMARY_MAX_CELLS];
    for (int c = 0; c < s->n_cells; c++)
        if (sscanf(s->cells[c], "kv%d_L%d", &K[c], &Lc[c]) != 2) K[c] = Lc[c] = -1;
    char **panels = NULL, **series = NULL, label[512], name[600];
    int n_panels = 0, n_series = 0;
    int *pi = mallocCheck(sizeof(int) * (size_t)np * SUMMARY_MAX_CELLS);
    for (int i = 0; i < np; i++) {
        intern(&series, &n_series, s->series_of[i]);
        label_of(s, project(sw, i, panel_dim), panel_dim, 0, label, sizeof label);
        for (int c = 0; c < s->n_cells; c++) {
            snprintf(name, sizeof name, "length %d%s%s", Lc[c], label[0] ? ", " : "", label);
            pi[i * SUMMARY_MAX_CELLS + c] = intern(&panels, &n_panels, name);
        }
    }
    // y[panel][series][cell], x = pairs of the cell (NAN where the panel's length differs)
    size_t ny = (size_t)n_panels * n_series * s->n_cells;
    double *xv = mallocCheck(sizeof(double) * ny), *yv = mallocCheck(sizeof(double) * ny);
    for (size_t k = 0; k < ny; k++) xv[k] = yv[k] = NAN;
    int drawn = 0;
    for (int i = 0; i < np; i++) {
        const RunSummary *r = &s->runs[i];
        if (!counts(r)) continue;
        int si = intern(&series, &n_series, s->series_of[i]);
        for (int c = 0; c < s->n_cells; c++) {
            int k = run_cell(r, s->cells[c]);
            double v = k < 0 ? NAN : what ? r->cell_S_recall[k] : r->cell_acc[k];
            size_t at = ((size_t)pi[i * SUMMARY_MAX_CELLS + c] * n_series + si) * s->n_cells + c;
            xv[at] = K[c];
            if (isfinite(v)) yv[at] = v, drawn = 1;
        }
    }
    PlotPanel *pp = callocCheck((size_t)n_panels, sizeof(PlotPanel));
    PlotSeries *ps = callocCheck((size_t)n_panels * n_series, sizeof(PlotSeries));
    for (int p = 0; p < n_panels; p++) {
        for (int k = 0; k < n_series; k++) {
            size_t at = ((size_t)p * n_series + k) * s->n_cells;
            // the panel's cells (those of its length) moved to the front in order of pairs
            double *rx = xv + at, *ry = yv + at;
            int n = 0;
            for (int c = 0; c < s->n_cells; c++) {
                if (isnan(rx[c])) continue;
                double cx = rx[c], cy = ry[c];
                int j = n++;
                while (j > 0 && rx[j - 1] > cx) rx[j] = rx[j - 1], ry[j] = ry[j - 1], j--;
                rx[j] = cx, ry[j] = cy;
            }
            ps[p * n_series + k] = (PlotSeries){xv + at, yv + at, n, p == 0 ? series[k] : NULL, k, k >= 10};
        }
        // clang-format off
        pp[p] = (PlotPanel){panels[p], "key-value pairs", what ? "S_recall (recall layer)" : "accuracy",
                            &ps[p * n_series], n_series, 0, 1.02, 1};
        // clang-format on
    }
    char title[512];
    snprintf(title, sizeof title, "%s: %s per test cell (at the best evaluation; S at the last)", sw->name,
             what ? "S_recall of the recall layer" : "accuracy");
    int rc = drawn ? svg_line_figure(path, title, pp, n_panels, n_panels < 3 ? n_panels : 3) : 0;
    if (drawn && rc == 0 && log) fprintf(log, "summary: %s\n", path);
    free(pp), free(ps), free(xv), free(yv), free(pi), free(panel_dim);
    free_strings(panels, n_panels);
    free_strings(series, n_series);
    return rc ? -1 : drawn;
}

// After_run's interventions of `kind` (summary_interventions.h): accuracy against the S_recall of
// the changed maps on the causal recall layer, a line per group through its strengths (a point
// for a kind without), each the mean over the group's held-out seeds, and the group's model as
// trained as a point in its colour. 1 when drawn, 0: no records of the kind, -1: not written.
int plot_interventions(const Summary *s, int kind, const char *path, FILE *log) {
    enum { MAX = INTERVENTION_MAX_STRENGTHS * 4 };
    int ng = s->n_groups, n_lines = 0, drawn = 0;
    double *x = mallocCheck(sizeof(double) * (size_t)ng * (MAX + 1)),
           *y = mallocCheck(sizeof(double) * (size_t)ng * (MAX + 1));
    double st[MAX];
    int runs[MAX];
    PlotSeries *ps = callocCheck((size_t)ng * 2 + 1, sizeof(PlotSeries));
    char **labels = callocCheck((size_t)ng + 1, sizeof(char *));
    for (int g = 0; g < ng; g++) {
        double *gx = x + (size_t)g * (MAX + 1), *gy = y + (size_t)g * (MAX + 1);
        int n = summary_iv_curve(s, g, kind, st, gy, gx, runs, MAX);
        if (!n) continue;
        double tS, tacc;
        int tn;
        int has_trained = summary_iv_curve(s, g, IV_NONE, &st[0], &tacc, &tS, &tn, 1) == 1;
        char label[600];
        int rep = s->groups[g], same = 0;
        for (int h = 0; h < ng; h++) same += !strcmp(s->series_of[s->groups[h]], s->series_of[rep]);
        if (same > 1) {  // several groups of one series: name them by their entries
            int *keep = mallocCheck(sizeof(int) * (size_t)(s->sw->n_dims + 1));
            for (int d = 0; d < s->sw->n_dims; d++) keep[d] = !s->grouped[d];
            label_of(s, rep, keep, 1, label, sizeof label);
            free(keep);
        } else snprintf(label, sizeof label, "%s", s->series_of[rep]);
        labels[g] = strdupCheck(label);
        int colour = drawn++;
        ps[n_lines++] = (PlotSeries){gx, gy, n, labels[g], colour, colour >= 10};
        if (has_trained) {
            gx[MAX] = tS, gy[MAX] = tacc;
            ps[n_lines++] = (PlotSeries){gx + MAX, gy + MAX, 1, NULL, colour, 0};
        }
    }
    int rc = 0;
    if (drawn) {
        char title[300];
        snprintf(title, sizeof title,
                 "%s: %s on the causal recall layer, mean over the held-out seeds (single points: as trained)",
                 s->sw->name, intervention_name((InterventionKind)kind));
        PlotPanel pp = {
            intervention_name((InterventionKind)kind), "S_recall of the changed maps", "validation accuracy", ps, n_lines, 0, 1.02, 0};
        rc = svg_line_figure(path, title, &pp, 1, 1);
        if (rc == 0 && log) fprintf(log, "summary: %s\n", path);
    }
    for (int g = 0; g < ng; g++) free(labels[g]);
    free(labels), free(ps), free(x), free(y);
    return rc ? -1 : drawn > 0;
}
