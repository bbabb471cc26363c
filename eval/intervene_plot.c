#include "eval/intervene_plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/runlog.h"
#include "eval/intervene.h"
#include "eval/svg_plot.h"

typedef struct {
    int kind;  // InterventionKind
    int run;   // which run folder
    long step;
    int layer, head;
    char series[256];  // rows, the other options and the split: what a line holds fixed
    double strength, S, acc;
} Point;

typedef struct {
    Point *v;
    int n, cap;
    int run;  // the folder being read
} Points;

static int collect(const RunlogRecord *r, void *ctx) {
    Points *p = ctx;
    if (r->type != RUNLOG_INTERVENTION) return 0;
    const char *kind = runlog_str(r, "kind"), *rows = runlog_str(r, "rows");
    int k = -1;
    for (int i = 0; kind && i < IV_N_KINDS; i++)
        if (!strcmp(kind, intervention_name((InterventionKind)i))) k = i;
    if (k < 0) return 0;
    if (p->n == p->cap) p->v = reallocCheck(p->v, sizeof(Point) * (size_t)(p->cap = p->cap ? 2 * p->cap : 64));
    Point *q = &p->v[p->n++];
    q->kind = k;
    q->run = p->run;
    q->step = r->step;
    q->layer = r->layer;
    q->head = r->head;
    // the options after "intervene=... rows=...": other cells or data
    const char *rest = r->options, *sp = strchr(rest, ' ');
    rest = sp ? sp + 1 : "";
    sp = strchr(rest, ' ');
    rest = sp ? sp + 1 : "";
    snprintf(q->series, sizeof q->series, "rows %s%s%s%s", rows ? rows : "?", strcmp(r->split, "val") ? ", " : "",
             strcmp(r->split, "val") ? r->split : "", *rest ? ", " : "");
    if (*rest) strncat(q->series, rest, sizeof q->series - strlen(q->series) - 1);
    q->strength = runlog_num(r, "strength");
    q->S = runlog_num(r, "S_recall");
    q->acc = runlog_num(r, "acc");
    return 0;
}

static int same_line(const Point *a, const Point *b) {
    return a->kind == b->kind && a->run == b->run && a->step == b->step && a->layer == b->layer && a->head == b->head &&
        !strcmp(a->series, b->series);
}

static int by_strength(const void *x, const void *y) {
    double a = ((const Point *)x)->strength, b = ((const Point *)y)->strength;
    return (a > b) - (a < b);
}

static void line_label(char *buf, size_t n, const Point *p, int many_steps, const char *run) {
    char layer[24] = "all layers", head[24] = "", step[32] = "";
    if (p->layer >= 0) snprintf(layer, sizeof layer, "layer %d", p->layer);
    if (p->head >= 0) snprintf(head, sizeof head, " head %d", p->head);
    if (many_steps) snprintf(step, sizeof step, ", step %ld", p->step);
    snprintf(buf, n, "%s%s%s%s, %s%s", run ? run : "", run ? ": " : "", layer, head, p->series, step);
}

// One figure for `kind` in out_dir: its lines, and the model as it is (kind none) as points, grey
// for one run, in the run's colour for several (names: the runs' labels, NULL for one run).
static int plot_kind(const char *out_dir, const Points *p, int kind, int many_steps, const char *const *names) {
    int n_lines = 0;
    Point *pts = mallocCheck(sizeof(Point) * (size_t)p->n);
    PlotSeries *ser = mallocCheck(sizeof(PlotSeries) * (size_t)(p->n + 1));
    double *x = mallocCheck(sizeof(double) * (size_t)p->n), *y = mallocCheck(sizeof(double) * (size_t)p->n);
    char(*labels)[360] = mallocCheck(sizeof *labels * (size_t)(p->n + 1));
    char *used = callocCheck((size_t)p->n, 1);
    int k = 0;
    for (int i = 0; i < p->n; i++) {
        if (used[i] || p->v[i].kind != kind) continue;
        int first = k;
        for (int j = i; j < p->n; j++)
            if (!used[j] && same_line(&p->v[i], &p->v[j])) used[j] = 1, pts[k++] = p->v[j];
        qsort(pts + first, (size_t)(k - first), sizeof(Point), by_strength);
        for (int j = first; j < k; j++) x[j] = pts[j].S, y[j] = pts[j].acc;
        line_label(labels[n_lines], sizeof labels[n_lines], &pts[first], many_steps, names ? names[pts[first].run] : NULL);
        ser[n_lines] =
            (PlotSeries){x + first, y + first, k - first, labels[n_lines], names ? pts[first].run : n_lines, 0};
        n_lines++;
    }
    int n_kind = n_lines;
    for (int i = 0; i < p->n; i++) {  // the model as it is: a grey point per measured selection
        if (p->v[i].kind != IV_NONE) continue;
        x[k] = p->v[i].S, y[k] = p->v[i].acc;
        const char *lab = names ? NULL : n_lines == n_kind ? "as trained" : NULL;
        ser[n_lines] =
            (PlotSeries){x + k, y + k, 1, lab, names ? p->v[i].run : -1, 3};  // a ring: seen around flatten:0
        k++, n_lines++;
    }
    int rc = 0;
    if (n_kind > 0) {
        char path[1200], title[160];
        snprintf(path, sizeof path, "%s/intervention_%s.svg", out_dir, intervention_name((InterventionKind)kind));
        snprintf(title, sizeof title, "%s: accuracy against S_recall of the changed maps",
                 intervention_name((InterventionKind)kind));
        PlotPanel panel = {NULL, "S_recall after the change", "accuracy", ser, n_lines, 0, 1, 0};  // the title once
        rc = svg_line_figure(path, title, &panel, 1, 1) == 0;
    }
    free(pts), free(ser), free(x), free(y), free(labels), free(used);
    return rc;
}

int intervention_plot_runs(const char *out_dir, const char *const *dirs, const char *const *names, int n_runs) {
    Points p = {0};
    for (int r = 0; r < n_runs; r++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/intervention.jsonl", dirs[r]);
        p.run = r;
        runlog_each(path, collect, &p);  // a folder without the file adds nothing
    }
    int many_steps = 0, written = 0;
    for (int i = 1; i < p.n; i++) many_steps |= p.v[i].step != p.v[0].step && p.v[i].run == p.v[0].run;
    for (int kind = IV_FLATTEN; p.n && kind < IV_N_KINDS; kind++)  // patch changes no map: no S_recall to plot
        if (kind != IV_PATCH) written += plot_kind(out_dir, &p, kind, many_steps, n_runs > 1 ? names : NULL);
    free(p.v);
    return written;
}

int intervention_plot(const char *dir) { return intervention_plot_runs(dir, &dir, NULL, 1); }
