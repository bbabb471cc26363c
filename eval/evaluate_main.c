// ./evaluate PATH... [--maps] [key=value ...]: val loss, task accuracy and per-head attention
// sparsity S(a) of checkpoints, with the theory beside it and, on MQAR, where the query rows' weight
// lands (docs/sparsity.md). PATH is a checkpoint or a run folder (then every checkpoint in it, in
// step order); several PATHs are compared. Per run folder it writes eval.jsonl, the figures
// (sparsity_steps.svg, sparsity_heatmap.svg, sparsity_recall_heatmap.svg, loss_acc.svg,
// sparsity_by_pos.svg, sparsity_scatter.svg, and sparsity_train.svg from the trainer's
// sparsity.jsonl when there is one) and report.html; with --maps also the attention maps of one
// validation sequence at the last checkpoint (map_L<l>_H<h>.svg, maps.safetensors); with several
// runs also compare.svg. A checkpoint that cannot be read is reported and skipped.
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "core/fpu.h"
#include "core/io.h"
#include "core/json.h"
#include "model/keys.h"
#include "core/progress.h"
#include "core/run_dir.h"
#include "core/runlog.h"
#include "data/task.h"
#include "eval/derived.h"
#include "eval/maps.h"
#include "eval/derived.h"
#include "eval/intervene.h"
#include "eval/intervene_plot.h"
#include "eval/report.h"
#include "eval/sparsity.h"
#include "eval/svg_plot.h"
#include "eval/tensorboard.h"
#include "eval/val_eval.h"
#include "trainer/checkpoint.h"
#include "trainer/llmc.h"
#include "trainer/memory.h"
#include "model/model.h"

// Keys that may differ from the checkpoint's config: they change how it is evaluated, not what
// the model is. (Every KEY_RESUMABLE key, plus these.)
static const char *g_extra_keys[] = {"batch_size",      "val_data",          "mqar_test_examples", "mqar_test_seed",
                                     "mqar_test_cells", "mqar_val_examples", "mqar_val_seed",      NULL};

// split=val|test: the set measured. The validation set by default; the test set only on request
// (a run reads it once, at its end: docs/mqar.md#splits).
static const char *g_split = "val";

typedef struct {
    char *path;          // as given
    char *dir;           // run folder (eval.jsonl and the figures go here)
    int single;          // 1: PATH is one checkpoint (its records replace those with their key)
    char options[1024];  // what this evaluation changed from the run's own ("": nothing)
    const char *series;  // the records the figures draw: "" (the run's own) or options
    char err[600];       // a single checkpoint that could not be read: why
    char **ckpts;        // checkpoints in step order
    long *steps;
    int n;
    int evaluated;  // checkpoints read and evaluated
    int last_ok;    // index of the last checkpoint evaluated (-1: none)
    double last_loss, last_acc;
} Target;

// What --maps draws (map_* keys on the command line).
typedef struct {
    int on;           // --maps given
    long seq;         // map_seq: validation sequence (default 0, the first test example)
    int layer, head;  // map_layer, map_head: -1 = every one
    int answers;      // map_answers: -1 auto (MQAR only), 1 required, 0 off
    long start, len;  // map_start, map_len: the positions the SVGs draw (default 0 and 128: a
                      // 1024 x 1024 heatmap is too large to read); maps.safetensors keeps all
} MapArgs;

#define IV_LAYER_CAUSAL (-2)

// What intervene= asks (docs/interventions.md): the kind, its strengths, where it acts.
typedef struct {
    int on;  // intervene= given
    InterventionKind kind;
    double strengths[INTERVENTION_MAX_STRENGTHS];
    int n_strengths;
    int layer, head;  // layer=, head=: -1 = every one; layer IV_LAYER_CAUSAL: the causal recall layer
    int all_rows;     // rows=all (default: the query rows)
} IvArgs;

// --- the records of a run folder, as plotted ------------------------------------------------------

typedef struct {
    char mixer[64], theory[16];
    int n;  // distinct steps, ascending
    long *step;
    double *loss, *acc;  // [n], NAN when missing
    int L, H;
    double *S, *S_recall, *S_pred, *S_recall_pred;  // [n * L * H]
    double *S_onehot, *S_recall_onehot;             // [n * L * H] mean 1/sqrt(n) of the rows
} RunData;

static void run_data_free(RunData *d) {
    free(d->step);
    free(d->loss);
    free(d->acc);
    free(d->S);
    free(d->S_recall);
    free(d->S_pred);
    free(d->S_recall_pred);
    free(d->S_onehot);
    free(d->S_recall_onehot);
    memset(d, 0, sizeof *d);
}

static int cmp_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static int step_index(const RunData *d, long step) {
    long *p = bsearch(&step, d->step, (size_t)d->n, sizeof(long), cmp_long);
    return p ? (int)(p - d->step) : -1;
}

// Two passes over the records of one series: the steps and the shape, then the values.
typedef struct {
    RunData *d;
    const char *options;
    int pass, have;
    long *steps;
    int n_steps, cap;
} RunDataScan;

static int run_data_record(const RunlogRecord *r, void *ctx) {
    RunDataScan *s = ctx;
    RunData *d = s->d;
    if ((r->type != RUNLOG_EVAL && r->type != RUNLOG_SPARSITY) || strcmp(r->options, s->options)) return 0;
    int l = r->layer, h = r->head, per_head = r->type == RUNLOG_SPARSITY && l >= 0 && h >= 0;
    if (s->pass == 0) {
        if (per_head && l < MAX_LAYERS && h < 4096) {
            if (l + 1 > d->L) d->L = l + 1;
            if (h + 1 > d->H) d->H = h + 1;
        }
        if (s->n_steps == s->cap)
            s->steps = reallocCheck(s->steps, sizeof(long) * (size_t)(s->cap = s->cap ? 2 * s->cap : 256));
        s->steps[s->n_steps++] = r->step;
        return 0;
    }
    int si = step_index(d, r->step);
    if (si < 0) return 0;
    if (r->type == RUNLOG_EVAL) {
        d->loss[si] = runlog_num(r, "loss");
        d->acc[si] = runlog_num(r, "acc");
        s->have = 1;
        return 0;
    }
    if (!(per_head && l < d->L && h < d->H)) return 0;
    size_t c = ((size_t)si * d->L + (size_t)l) * d->H + (size_t)h;
    d->S[c] = runlog_num(r, "S");
    d->S_recall[c] = runlog_num(r, "S_recall");
    d->S_pred[c] = runlog_num(r, "S_pred");
    d->S_recall_pred[c] = runlog_num(r, "S_recall_pred");
    d->S_onehot[c] = runlog_num(r, "S_onehot");
    d->S_recall_onehot[c] = runlog_num(r, "S_recall_onehot");
    const char *mx = runlog_str(r, "mixer"), *th = runlog_str(r, "theory");
    if (mx) snprintf(d->mixer, sizeof d->mixer, "%s", mx);
    if (th) snprintf(d->theory, sizeof d->theory, "%s", th);
    s->have = 1;
    return 0;
}

// Reads the series of `options` ("": the run's own) of eval.jsonl or sparsity.jsonl. 0 when the
// file has no per-head records and no eval records in it.
static int run_data_read(const char *path, const char *options, RunData *d) {
    memset(d, 0, sizeof *d);
    RunDataScan s = {d, options, 0, 0, NULL, 0, 0};
    if (runlog_each(path, run_data_record, &s) != 0) return 0;
    long *steps = s.steps ? s.steps : mallocCheck(sizeof(long));
    qsort(steps, (size_t)s.n_steps, sizeof(long), cmp_long);
    for (int i = 0; i < s.n_steps; i++)
        if (d->n == 0 || steps[i] != steps[d->n - 1]) steps[d->n++] = steps[i];
    d->step = steps;
    size_t cells = (size_t)d->n * d->L * d->H;
    d->loss = mallocCheck(sizeof(double) * (size_t)(d->n + 1));
    d->acc = mallocCheck(sizeof(double) * (size_t)(d->n + 1));
    for (int i = 0; i < d->n; i++) d->loss[i] = d->acc[i] = NAN;
    double **arrs[6] = {&d->S, &d->S_recall, &d->S_pred, &d->S_recall_pred, &d->S_onehot, &d->S_recall_onehot};
    for (int a = 0; a < 6; a++) {
        *arrs[a] = mallocCheck(sizeof(double) * (cells + 1));
        for (size_t i = 0; i < cells; i++) (*arrs[a])[i] = NAN;
    }
    s.pass = 1;
    runlog_each(path, run_data_record, &s);
    return s.have;
}

// Mean over heads of one field at step index si, layer l (NAN when no head has it).
static double head_mean(const RunData *d, const double *field, int si, int l) {
    double s = 0;
    int n = 0;
    for (int h = 0; h < d->H; h++) {
        double v = field[((size_t)si * d->L + l) * d->H + h];
        if (isfinite(v)) s += v, n++;
    }
    return n ? s / n : NAN;
}

static int any_finite(const double *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (isfinite(v[i])) return 1;
    return 0;
}

// --- figures ------------------------------------------------------------------------------------------

static const char *base_name(const char *path) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    static char buf[256];
    size_t s = n;
    while (s > 0 && path[s - 1] != '/') s--;
    snprintf(buf, sizeof buf, "%.*s", (int)(n - s), path + s);
    return buf;
}

static void report_write(int rc, const char *path) {
    if (rc != 0) fprintf(stderr, "evaluate: cannot write %s (%s)\n", path, strerror(errno));
    else printf("  wrote %s\n", path);
}

// S per head over steps: one column of panels per layer; row 1 all rows, row 2 query rows; the
// theory's prediction dashed in the head's colour.
static void plot_steps(const RunData *d, const char *path, const char *title) {
    int L = d->L, H = d->H, n = d->n;
    double *x = mallocCheck(sizeof(double) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) x[i] = (double)d->step[i];
    size_t cells = (size_t)n * L * H;
    int have_recall = any_finite(d->S_recall, cells);
    int have_pred = any_finite(d->S_pred, cells);
    int rows = have_recall ? 2 : 1;
    PlotPanel *panels = callocCheck((size_t)rows * L, sizeof(PlotPanel));
    PlotSeries *series = callocCheck((size_t)rows * L * (H * 2 + 1), sizeof(PlotSeries));
    double *ys = mallocCheck(sizeof(double) * ((size_t)rows * L * (H * 2 + 1) * n + 1));
    char(*titles)[96] = callocCheck((size_t)rows * L, sizeof *titles);
    char(*labels)[48] = callocCheck((size_t)H * 2, sizeof *labels);
    for (int h = 0; h < H; h++) {
        if (H > 1) {
            snprintf(labels[2 * h], sizeof labels[0], "head %d", h);
            snprintf(labels[2 * h + 1], sizeof labels[0], "head %d predicted (%s)", h, d->theory);
        } else {
            snprintf(labels[0], sizeof labels[0], "measured");
            snprintf(labels[1], sizeof labels[0], "predicted (%s)", d->theory);
        }
    }
    int ns = 0;
    double *yp = ys;
    for (int r = 0; r < rows; r++)
        for (int l = 0; l < L; l++) {
            PlotPanel *p = &panels[r * L + l];
            snprintf(titles[r * L + l], sizeof titles[0],
                     r == 0 ? "layer %d: S over all rows" : "layer %d: S_recall over query rows", l);
            p->title = titles[r * L + l];
            p->xlabel = "step";
            p->ylabel = r == 0 ? "S (1 = flat, 1/sqrt(n) = one-hot)" : "S_recall";
            p->ymin = 0;
            p->ymax = 1;
            p->series = &series[ns];
            const double *meas = r == 0 ? d->S : d->S_recall, *pred = r == 0 ? d->S_pred : d->S_recall_pred;
            for (int h = 0; h < H; h++)
                for (int k = 0; k < (have_pred ? 2 : 1); k++) {
                    const double *src = k == 0 ? meas : pred;
                    for (int i = 0; i < n; i++) yp[i] = src[((size_t)i * L + l) * H + h];
                    series[ns] = (PlotSeries){x, yp, n, labels[2 * h + k], h, k};
                    yp += n;
                    ns++;
                    p->n_series++;
                }
            // the one-hot floor 1/sqrt(n) of the same rows, when the records have it
            const double *floor_s = r == 0 ? d->S_onehot : d->S_recall_onehot;
            for (int i = 0; i < n; i++) yp[i] = head_mean(d, floor_s, i, l);
            if (any_finite(yp, (size_t)n)) {
                series[ns++] = (PlotSeries){x, yp, n, "one-hot (mean 1/sqrt(n))", -1, 2};
                p->n_series++;
                yp += n;
            }
        }
    report_write(svg_line_figure(path, title, panels, rows * L, L), path);
    free(x);
    free(panels);
    free(series);
    free(ys);
    free(titles);
    free(labels);
}

static void plot_heatmap(const RunData *d, const double *field, const char *path, const char *what) {
    int last = d->n - 1;
    while (last >= 0 && !any_finite(field + (size_t)last * d->L * d->H, (size_t)d->L * d->H)) last--;
    if (last < 0) return;
    char title[160];
    snprintf(title, sizeof title, "%s per head at step %ld (%s)", what, d->step[last], d->mixer);
    report_write(svg_heatmap(path, title, field + (size_t)last * d->L * d->H, d->L, d->H, "layer", "head", what, 0, 1), path);
}

// The trainer's curve of a run folder (metrics.jsonl, its own records): every train record's and
// every validation record's step, loss and accuracy.
typedef struct {
    int n[2], cap[2];  // [0] train, [1] eval
    double *x[2], *loss[2], *acc[2];
} Curve;

static int curve_record(const RunlogRecord *r, void *ctx) {
    Curve *c = ctx;
    int k = r->type == RUNLOG_TRAIN ? 0 : r->type == RUNLOG_EVAL && !*r->options ? 1 : -1;
    if (k < 0) return 0;
    if (c->n[k] == c->cap[k]) {
        c->cap[k] = c->cap[k] ? 2 * c->cap[k] : 256;
        c->x[k] = reallocCheck(c->x[k], sizeof(double) * (size_t)c->cap[k]);
        c->loss[k] = reallocCheck(c->loss[k], sizeof(double) * (size_t)c->cap[k]);
        c->acc[k] = reallocCheck(c->acc[k], sizeof(double) * (size_t)c->cap[k]);
    }
    c->x[k][c->n[k]] = (double)r->step;
    c->loss[k][c->n[k]] = runlog_num(r, "loss");
    c->acc[k][c->n[k]++] = runlog_num(r, "acc");
    return 0;
}

// loss_acc.svg: the training loss and accuracy at every logged step and every validation point of
// the trainer's metrics.jsonl, with the checkpoints' evaluations (eval.jsonl) marked on them.
static void plot_loss_acc(const RunData *d, const char *dir, const char *path, const char *title) {
    double *x = mallocCheck(sizeof(double) * (size_t)(d->n + 1));
    for (int i = 0; i < d->n; i++) x[i] = (double)d->step[i];
    Curve c = {0};
    char log[1200];
    snprintf(log, sizeof log, "%s/metrics.jsonl", dir);
    runlog_each(log, curve_record, &c);
    PlotSeries loss[3], acc[3];
    int nl = 0, na = 0;
    if (c.n[0]) {
        loss[nl++] = (PlotSeries){c.x[0], c.loss[0], c.n[0], "training (metrics.jsonl)", -1, 2};
        acc[na++] = (PlotSeries){c.x[0], c.acc[0], c.n[0], "training (metrics.jsonl)", -1, 2};
    }
    if (c.n[1]) {
        loss[nl++] = (PlotSeries){c.x[1], c.loss[1], c.n[1], "validation during training", 0, 1};
        acc[na++] = (PlotSeries){c.x[1], c.acc[1], c.n[1], "validation during training", 1, 1};
    }
    loss[nl++] = (PlotSeries){x, d->loss, d->n, "checkpoints (eval.jsonl)", 0, 0};
    acc[na++] = (PlotSeries){x, d->acc, d->n, "checkpoints (eval.jsonl)", 1, 0};
    PlotPanel p[2] = {{"loss", "step", "cross-entropy (nats)", loss, nl, 0, 0, 0},
                      {"accuracy", "step", "accuracy over target positions", acc, na, 0, 1, 0}};
    report_write(svg_line_figure(path, title, p, 2, 2), path);
    for (int k = 0; k < 2; k++) free(c.x[k]), free(c.loss[k]), free(c.acc[k]);
    free(x);
}

// Several runs: per layer, S_recall (solid) and S (dashed) averaged over heads, one colour per run;
// then validation accuracy.
static void plot_compare(RunData *runs, Target *tg, int n_runs, const char *path) {
    int L = 0;
    for (int r = 0; r < n_runs; r++)
        if (runs[r].L > L) L = runs[r].L;
    int np = L + 1;
    PlotPanel *panels = callocCheck((size_t)np, sizeof(PlotPanel));
    PlotSeries *series = callocCheck((size_t)np * n_runs * 2, sizeof(PlotSeries));
    double **bufs = callocCheck((size_t)np * n_runs * 3, sizeof(double *));
    char(*titles)[64] = callocCheck((size_t)np, sizeof *titles);
    char(*labels)[3][400] = callocCheck((size_t)n_runs, sizeof *labels);
    int nb = 0, ns = 0;
    for (int r = 0; r < n_runs; r++) {
        snprintf(labels[r][0], sizeof labels[r][0], "%s (%s) S_recall", runs[r].mixer, base_name(tg[r].dir));
        snprintf(labels[r][1], sizeof labels[r][1], "%s (%s) S", runs[r].mixer, base_name(tg[r].dir));
        snprintf(labels[r][2], sizeof labels[r][2], "%s (%s)", runs[r].mixer, base_name(tg[r].dir));
    }
    for (int l = 0; l <= L; l++) {
        PlotPanel *p = &panels[l];
        p->series = &series[ns];
        p->xlabel = "step";
        p->ymin = 0;
        p->ymax = 1;
        if (l < L) {
            snprintf(titles[l], sizeof titles[l], "layer %d: S (mean over heads)", l);
            p->ylabel = "S (1 = flat, 1/sqrt(n) = one-hot)";
        } else {
            snprintf(titles[l], sizeof titles[l], "validation accuracy");
            p->ylabel = "accuracy";
        }
        p->title = titles[l];
        for (int r = 0; r < n_runs; r++) {
            RunData *d = &runs[r];
            double *x = bufs[nb++] = mallocCheck(sizeof(double) * (size_t)(d->n + 1));
            for (int i = 0; i < d->n; i++) x[i] = (double)d->step[i];
            if (l == L) {
                series[ns++] = (PlotSeries){x, d->acc, d->n, labels[r][2], r, 0};
                p->n_series++;
                continue;
            }
            for (int k = 0; k < 2; k++) {
                double *y = bufs[nb++] = mallocCheck(sizeof(double) * (size_t)(d->n + 1));
                for (int i = 0; i < d->n; i++) y[i] = l < d->L ? head_mean(d, k == 0 ? d->S_recall : d->S, i, l) : NAN;
                series[ns++] = (PlotSeries){x, y, d->n, labels[r][k], r, k};
                p->n_series++;
            }
        }
    }
    report_write(svg_line_figure(path, "attention sparsity across mixers", panels, np, np > 2 ? 2 : np), path);
    for (int i = 0; i < nb; i++) free(bufs[i]);
    free(bufs);
    free(panels);
    free(series);
    free(titles);
    free(labels);
}

static void draw_run_figures(Target *t, RunData *d) {
    char path[1200], title[512];
    printf("%s: %d checkpoints in eval.jsonl\n", t->dir, d->n);
    snprintf(title, sizeof title, "attention sparsity S per head over training: %s (%s)", base_name(t->dir), d->mixer);
    snprintf(path, sizeof path, "%s/sparsity_steps.svg", t->dir);
    plot_steps(d, path, title);
    snprintf(path, sizeof path, "%s/sparsity_heatmap.svg", t->dir);
    plot_heatmap(d, d->S, path, "S");
    snprintf(path, sizeof path, "%s/sparsity_recall_heatmap.svg", t->dir);
    plot_heatmap(d, d->S_recall, path, "S_recall");
    snprintf(title, sizeof title, "loss and accuracy: %s (%s)", base_name(t->dir), d->mixer);
    snprintf(path, sizeof path, "%s/loss_acc.svg", t->dir);
    plot_loss_acc(d, t->dir, path, title);
    // the trainer's denser log, when the run has one
    RunData tr;
    snprintf(path, sizeof path, "%s/sparsity.jsonl", t->dir);
    if (run_data_read(path, "", &tr) && tr.L > 0) {
        snprintf(title, sizeof title, "attention sparsity S during training (sparsity.jsonl): %s (%s)",
                 base_name(t->dir), tr.mixer);
        snprintf(path, sizeof path, "%s/sparsity_train.svg", t->dir);
        plot_steps(&tr, path, title);
    }
    run_data_free(&tr);
}

// --- evaluation -------------------------------------------------------------------------------------

typedef struct {
    Config cfg;  // the config the model and task were built from
    int built;
    Task task;
    Model *model;
    const Dataset *data;  // the split measured: &task.val or &task.test
    int B, T;
} Evaluator;

static void evaluator_free(Evaluator *e) {
    if (!e->built) return;
    model_free(e->model);
    task_close(&e->task);
    config_free(&e->cfg);
    e->built = 0;
}

// The MQAR set evaluated is generated in memory (inputs and labels, [N, seq_len] each, per cell):
// one no machine holds is refused up front naming its key, as ./train does (trainer/memory.h),
// not with "out of memory" naming none.
static void check_split_memory(const Config *c, int test) {
    if (strcmp(cfg_str(c, "task"), "mqar")) return;
    const char *key = test ? "mqar_test_examples" : "mqar_val_examples";
    double bytes = 2.0 * (double)cfg_int(c, key) * (double)cfg_int(c, "seq_len") * sizeof(int32_t);
    double gb = cfg_float(c, "max_memory"), limit = gb > 0 ? gb * 1e9 : memory_available();
    if (limit > 0 && bytes > limit)
        die_input("%s: %s = %s: the %s set needs at least %.1f GB, above %s%.1f GB%s; lower %s", cfg_origin(c, key),
                  key, cfg_str(c, key), test ? "test" : "validation", bytes / 1e9,
                  gb > 0 ? "max_memory = " : "this machine's ", limit / 1e9, gb > 0 ? "" : " of memory", key);
}

static void evaluator_build(Evaluator *e, Config *c, const char *ckpt) {
    evaluator_free(e);
    e->cfg = *c;  // takes ownership
    int test = !strcmp(g_split, "test");
    if (test && strcmp(cfg_str(&e->cfg, "task"), "mqar"))
        die_input("split: %s is a run of task = %s: it has no test split (expected split=val)", ckpt,
                  cfg_str(&e->cfg, "task"));
    check_split_memory(&e->cfg, test);
    task_open(&e->task, &e->cfg, test ? TASK_TEST : TASK_VAL);
    if (!test && !e->task.has_val)
        die_input("%s: val_data: the run has no validation set to evaluate on (set val_data=GLOB)", ckpt);
    e->data = test ? &e->task.test : &e->task.val;
    e->B = (int)cfg_int(&e->cfg, "batch_size");
    e->T = (int)cfg_int(&e->cfg, "seq_len");
    ModelShape s = model_shape_from_config(&e->cfg, e->task.vocab_size);
    e->model = model_create(&s, NULL, &e->cfg, e->B, e->B * e->task.targets_per_seq);
    for (int l = 0; l < s.L; l++)
        if (!e->model->mixer[l]->attention)
            die_input("%s: mixer '%s' has no attention extractor yet", ckpt, e->model->mixer[l]->name);
    e->built = 1;
}

// Lines of text with their "step", for merging eval.jsonl.
// Merges the new records into dir/eval.jsonl (core/runlog.h): a single checkpoint's replace only
// the records with their key (step, layer, head, options); a run folder's replace its series (the
// records of its options at every step). Records of other options (other cells, other data) stay.
// A run trained with tensorboard = true (event files in its folder) gets ./evaluate's records in
// TensorBoard too: the whole of eval.jsonl and intervention.jsonl in DIR/evaluate/.
static void mirror_to_tensorboard(const Target *t) {
    char **names, err[1600];
    int n = tfevents_list_dir(t->dir, &names);
    for (int i = 0; i < n; i++) free(names[i]);
    if (n > 0) free(names);
    if (n <= 0) return;
    if (tb_mirror_evaluate(t->dir, err, sizeof err) != 0) fprintf(stderr, "warning: TensorBoard: %s\n", err);
    else printf("  wrote %s/evaluate/ (TensorBoard's \"evaluate\" run beside the trainer's)\n", t->dir);
}

static void write_eval_jsonl(const Target *t, const char *fresh, size_t len) {
    char path[1200];
    snprintf(path, sizeof path, "%s/eval.jsonl", t->dir);
    char err[2600];
    int rc = runlog_merge(path, fresh, len, t->single ? RUNLOG_SAME_KEY : RUNLOG_SAME_SERIES, err, sizeof err);
    if (rc == -1) die_input("%s", err);  // the folder cannot be written: bad input
    if (rc == -2) die("%s", err);
    printf("  wrote %s\n", path);
    mirror_to_tensorboard(t);
}

// One line per checkpoint: loss, accuracy and S per layer (mean over heads).
static void print_summary(long step, double loss, double acc, const SparsityResult *r) {
    char buf[1024];
    int recall = sparsity_recall_layer(r);  // starred, as the trainer stars it (eval/derived.h)
    int k = snprintf(buf, sizeof buf, "step %8ld | %s loss %.4f | acc %.4f | S", step, g_split, loss, acc);
    for (int l = 0; l < r->L && k < (int)sizeof buf - 40; l++) {
        double s = 0, sr = 0, ans = 0;
        for (int h = 0; h < r->H; h++) {
            const HeadSparsity *hd = &r->heads[l * r->H + h];
            s += hd->S, sr += hd->S_recall, ans += hd->ans_window_share;  // = ans_share without a conv
        }
        k += snprintf(buf + k, sizeof buf - (size_t)k, " L%d%s %.3f", l, l == recall ? "*" : "", s / r->H);
        if (isfinite(sr)) k += snprintf(buf + k, sizeof buf - (size_t)k, " (recall %.3f", sr / r->H);
        if (isfinite(sr) && isfinite(ans))
            k += snprintf(buf + k, sizeof buf - (size_t)k, ", answer %sshare %.3f, chance %.3f",
                          r->answer_window[l] > 1 ? "window " : "", ans / r->H, r->heads[l * r->H].ans_window_chance);
        if (isfinite(sr)) k += snprintf(buf + k, sizeof buf - (size_t)k, ")");
    }
    progress_break();
    printf("%s\n", buf);
    fflush(stdout);
}

// On a mixture of test cells, a line per cell: accuracy, and S_recall and answer share of the recall layer.
static void print_cells(const ValStats *v, const SparsityResult *r) {
    int recall = sparsity_recall_layer(r);
    for (int c = 0; r->n_cells > 1 && c < r->n_cells; c++) {
        char name[32];
        mqar_cell_name(r->cells[c], name, sizeof name);
        double sr = 0, ans = 0;
        for (int h = 0; recall >= 0 && h < r->H; h++) {
            const HeadSparsity *hd = &r->cell_heads[((size_t)c * r->L + recall) * r->H + h];
            sr += hd->S_recall / r->H, ans += hd->ans_window_share / r->H;
        }
        printf("    %-12s acc %.4f", name, head_acc(&v->cell[c]));
        if (recall >= 0)
            printf(" | L%d S_recall %.3f, answer %sshare %.3f", recall, sr,
                   r->answer_window[recall] > 1 ? "window " : "", ans);
        putchar('\n');
    }
}

// Test cells longer than the checkpoint's seq_len: the model runs at the longest one, where it
// computes the same function as at its trained length. Not with learned positions (none exist
// beyond seq_len), and not for a mixer with a MixerKind.length_bound (relu2's n and cosformer's M
// are the configured seq_len, so another length is another function): refused, exit 2.
static void fit_test_cells(Config *c, const char *ck) {
    if (strcmp(cfg_str(c, "task"), "mqar")) {  // a text run has no MQAR test set to change
        static const char *mqar_only[] = {"mqar_test_cells", "mqar_test_examples", "mqar_test_seed",
                                          "mqar_val_examples", "mqar_val_seed"};
        for (int i = 0; i < 5; i++)
            if (!strcmp(cfg_origin(c, mqar_only[i]), "command line"))
                die_input("%s: %s is a run of task = %s: it has no MQAR test set (the key applies to MQAR runs only)",
                          i == 0 ? "mqar_cells" : mqar_only[i], ck, cfg_str(c, "task"));
        return;
    }
    if (!*cfg_str(c, "mqar_test_cells")) return;
    MqarCell cells[MQAR_MAX_CELLS];
    char err[256];
    int n = mqar_cells_parse(cfg_str(c, "mqar_test_cells"), cells, MQAR_MAX_CELLS, err, sizeof err);
    if (n < 0) die_input("mqar_test_cells: %s", err);
    int T = (int)cfg_int(c, "seq_len"), longest = 0;
    MqarCell at = cells[0];
    for (int i = 0; i < n; i++)
        if (cells[i].seq_len > longest) longest = cells[i].seq_len, at = cells[i];
    if (longest <= T) return;
    if (!strcmp(cfg_str(c, "pos_emb"), "learned"))
        die_input("mqar_test_cells: cell %dx%d is longer than %s's seq_len %d, and its positions are learned "
                  "(pos_emb = learned): no embedding exists beyond position %d (test lengths <= %d)",
                  at.kv_pairs, at.seq_len, ck, T, T - 1, T);
    char mixers[256];
    snprintf(mixers, sizeof mixers, "%s", cfg_str(c, "mixer"));
    for (char *tok = strtok(mixers, ", "); tok; tok = strtok(NULL, ", ")) {
        const MixerKind *mk = mixer_find(tok);
        if (mk && mk->length_bound)
            die_input("mqar_test_cells: cell %dx%d is longer than %s's seq_len %d, and %s normalises by the "
                      "configured length (%s = seq_len): at another length it is another function (test lengths <= %d)",
                      at.kv_pairs, at.seq_len, ck, T, tok, mk->length_bound, T);
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%d", longest);
    config_set(c, "seq_len", buf, "mqar_test_cells");
}

// Layer and head indices against the checkpoint's own shape, read from its header before any data
// is generated or model built (an MQAR validation set takes seconds to make): exit 2 naming the
// key, in the words the later checks use (intervene.c's for layer= and head=, check_map_args').
static void check_indices_early(const Config *c, const char *ckpt, const MapArgs *ma, const IvArgs *ia) {
    long L = cfg_int(c, "n_layer"), H = cfg_int(c, "n_head");
    if (ia && ia->layer >= L) die_input("layer: expected 0 to %ld or all, got %d", L - 1, ia->layer);
    if (ia && ia->head >= H) die_input("head: expected 0 to %ld or all, got %d", H - 1, ia->head);
    if (ma && ma->on && ma->layer >= L)
        die_input("map_layer: %d is out of range (%s has %ld layers)", ma->layer, ckpt, L);
    if (ma && ma->on && ma->head >= H) die_input("map_head: %d is out of range (%s has %ld heads)", ma->head, ckpt, H);
}

// Bad --maps choices, as soon as the model's shape and validation set are known (exit 2).
static void check_map_args(const MapArgs *ma, const Evaluator *ev, const char *ckpt) {
    if (!ma->on) return;
    if (ma->seq >= ev->data->n)
        die_input("map_seq: %ld is out of range (%s validates on %ld sequences)", ma->seq, ckpt, ev->data->n);
    if (ma->layer >= ev->model->s.L)
        die_input("map_layer: %d is out of range (%s has %d layers)", ma->layer, ckpt, ev->model->s.L);
    if (ma->head >= ev->model->s.H)
        die_input("map_head: %d is out of range (%s has %d heads)", ma->head, ckpt, ev->model->s.H);
    int T = maps_seq_len(ev->data, ma->seq, ev->T);
    if (ma->start >= T && T < ev->T)
        die_input("map_start: %ld is out of range (sequence %ld of %s is in an MQAR cell of %d positions)", ma->start,
                  ma->seq, ckpt, T);
    if (ma->start >= T)
        die_input("map_start: %ld is out of range (%s's sequences have %d positions)", ma->start, ckpt, ev->T);
    if (ma->answers == 1 && ev->data->mqar_kv_pairs == 0)
        die_input("map_answers: %s is not an MQAR run: its sequences have no answer positions to mark", ckpt);
}

// The keys whose change makes an evaluation another measurement than the run's own: other test
// cells, other data. Part of every record's key (docs/outputs.md#the-run-log). (eval_batches and
// sparsity_rows measure less of the same set: the same measurement, less precisely.)
static const char *g_option_keys[] = {
    "mqar_test_cells", "mqar_test_examples", "mqar_test_seed", "val_data", "mqar_val_examples", "mqar_val_seed", NULL};

// Applies the overrides to a checkpoint's config and writes into options what they changed of
// g_option_keys, as "key=value key=value" in the list's order ("" when nothing).
static void config_apply_args_noting_options(Config *c, int n_over, char **over, char *options, size_t n) {
    char *before[16];
    for (int k = 0; g_option_keys[k]; k++) before[k] = strdupCheck(cfg_str(c, g_option_keys[k]));
    config_apply_args(c, n_over, over);
    size_t len = 0;
    options[0] = 0;
    for (int k = 0; g_option_keys[k]; k++) {
        const char *now = cfg_str(c, g_option_keys[k]);
        if (strcmp(before[k], now) && len + 1 < n)
            len += (size_t)snprintf(options + len, n - len, "%s%s=%s", len ? " " : "", g_option_keys[k], now);
        free(before[k]);
    }
}

// A checkpoint that cannot be read: a run folder's is skipped with a line and the others go on; a
// single file's reason is kept for the one line ./evaluate ends with.
static void skip_checkpoint(Target *t, const char *ck, const char *err) {
    progress_break();
    if (t->single) snprintf(t->err, sizeof t->err, "%s", err);
    else fprintf(stderr, "evaluate: %s: skipped: %s\n", ck, err);
}

static void evaluate_target(Target *t, int n_over, char **over, Evaluator *ev, const MapArgs *ma, int ti, int n_targets) {
    char *fresh = NULL;
    size_t fresh_len = 0;
    FILE *out = open_memstream(&fresh, &fresh_len);
    if (!out) die("out of memory");
    long *done = mallocCheck(sizeof(long) * (size_t)t->n);
    int n_done = 0;
    t->last_ok = -1;
    double t0 = now_seconds();
    printf("%s: %d checkpoint%s\n", t->path, t->n, t->n == 1 ? "" : "s");
    // A run folder's checkpoints must be of the run's model: one copied in from another run is
    // skipped with a line, not plotted as a step of this one.
    Config run_cfg;
    int have_run_cfg = 0;
    if (!t->single) {
        char path[1200], err[512];
        snprintf(path, sizeof path, "%s/config.conf", t->dir);
        char *text = path_exists(path) ? read_file_text(path, NULL) : NULL;
        config_init_all(&run_cfg);
        have_run_cfg = text && config_try_load_text(&run_cfg, text, path, err, sizeof err) == 0;
        if (!have_run_cfg) config_free(&run_cfg);
        free(text);
    }
    int noted_val_data = 0;
    char options[1024] = "";
    for (int i = 0; i < t->n; i++) {
        const char *ck = t->ckpts[i];
        char eta[32] = "?";
        if (i > 0) format_duration(eta, sizeof eta, (now_seconds() - t0) / i * (t->n - i));
        progress_line("run %d/%d %s | checkpoint %d/%d (step %ld) | ETA %s", ti + 1, n_targets, base_name(t->dir),
                      i + 1, t->n, t->steps[i], eta);
        Config c;
        long step;
        char err[512];
        if (ckpt_read_config(ck, &c, &step, err, sizeof err) != 0) {
            skip_checkpoint(t, ck, err);
            continue;
        }
        const char *differs = have_run_cfg ? config_first_difference(&run_cfg, &c) : NULL;
        if (differs) {
            progress_break();
            fprintf(stderr, "evaluate: %s: skipped: not this run's model (%s is '%s' here, '%s' in %s/config.conf)\n",
                    ck, differs, cfg_str(&c, differs), cfg_str(&run_cfg, differs), t->dir);
            config_free(&c);
            continue;
        }
        if (!noted_val_data && !strcmp(cfg_str(&c, "task"), "mqar"))
            for (int k = 0; k < n_over; k++)
                if (!strncmp(over[k], "val_data=", 9)) {
                    progress_break();
                    fprintf(stderr,
                            "note: %s: val_data is not used: an MQAR checkpoint validates on its own "
                            "validation set (mqar_val_examples, mqar_val_seed)\n",
                            ck);
                    noted_val_data = 1;
                    break;
                }
        config_apply_args_noting_options(&c, n_over, over, options, sizeof options);
        if (!strcmp(g_split, "test")) {  // another measurement than the run's own: a series of its own
            char rest[1000];
            snprintf(rest, sizeof rest, "%.999s", options);
            snprintf(options, sizeof options, "split=test%s%s", *rest ? " " : "", rest);
        }
        fit_test_cells(&c, ck);
        check_indices_early(&c, ck, ma, NULL);
        if (!ev->built || config_first_difference(&ev->cfg, &c)) {
            evaluator_build(ev, &c, ck);
            check_map_args(ma, ev, ck);
        } else config_free(&c);
        if (ckpt_load(ck, ev->model, NULL, NULL, err, sizeof err) != 0) {
            skip_checkpoint(t, ck, err);
            continue;
        }
        const Config *ec = &ev->cfg;
        long eval_batches = cfg_int(ec, "eval_batches"), rows = cfg_int(ec, "sparsity_rows");
        SparsityResult res = {0};
        sparsity_eval(ev->model, ev->data, ev->B, ev->T, eval_batches, rows, &res);
        // The sparsity pass ran the same sequences unless it measured a subset of rows.
        ValStats vs = rows > 0 ? val_eval(ev->model, ev->data, ev->B, ev->T, eval_batches) : res.stats;
        double loss = val_loss(&vs), acc = val_acc(&vs);
        const char *mixer = cfg_str(ec, "mixer");
        RunlogEval rec = {
            .split = g_split, .checkpoint = base_name(ck), .mixer = mixer, .sequences = res.sequences, .options = options};
        if (!strcmp(g_split, "test")) {  // the test set: each example's counts and the interval (mqar.md#verdicts)
            ExampleCounts ex = {0};
            vs = val_eval_examples(ev->model, ev->data, ev->B, ev->T, eval_batches, &ex);
            val_write_record_examples(out, step, &vs, &ex, &rec);
            examples_free(&ex);
        } else val_write_record(out, step, &vs, &rec);
        sparsity_write_records(out, step, mixer, g_split, options, &res);
        print_summary(step, loss, acc, &res);
        print_cells(&vs, &res);
        sparsity_result_free(&res);
        done[n_done++] = step;
        t->last_ok = i;
        t->last_loss = loss;
        t->last_acc = acc;
    }
    progress_break();
    if (have_run_cfg) config_free(&run_cfg);
    t->evaluated = n_done;
    fclose(out);
    snprintf(t->options, sizeof t->options, "%s", options);
    if (n_done > 0) write_eval_jsonl(t, fresh, fresh_len);
    free(fresh);
    free(done);
}

// --- interventions (docs/interventions.md) ---------------------------------------------------------

typedef struct {
    FILE *out;  // the records
    long step;
    const char *ck, *mixer, *rest;  // the checkpoint's name, the mixer, the other options
    Evaluator *ev;
    int passes;
    InterventionResult last;  // the last pass's
} IvRun;

// One pass: its record and its line (the chance levels are printed once, on the run's first line).
// Returns the accuracy; *eff_tokens (may be NULL) gets the changed rows' effective tokens.
static double intervention_pass(IvRun *run, const Intervention *iv, double *eff_tokens) {
    const Config *ec = &run->ev->cfg;
    InterventionResult res;
    double t0 = now_seconds();
    intervene_eval(run->ev->model, run->ev->data, run->ev->B, run->ev->T, cfg_int(ec, "eval_batches"),
                   cfg_int(ec, "sparsity_rows"), iv, &res);
    double sec = now_seconds() - t0;
    run->passes++;
    run->last = res;
    char options[1200], what[64] = "";
    intervention_options(options, sizeof options, iv, run->rest);
    intervention_write_record(run->out, run->step, iv, &res, g_split, run->ck, run->mixer, options, sec);
    const char *kind = options + strlen("intervene=");
    snprintf(what, sizeof what, "%.*s", (int)strcspn(kind, " ") % 60, kind);
    char where[32];
    if (iv->layer < 0) snprintf(where, sizeof where, "all");
    else if (iv->head < 0) snprintf(where, sizeof where, "L%d", iv->layer);
    else snprintf(where, sizeof where, "L%d H%d", iv->layer, iv->head);
    printf("  %-18s %-7s | acc %.4f loss %.4f | S_recall %.3f tokens %5.2f", what, where, val_acc(&res.stats),
           val_loss(&res.stats), res.S_recall, res.eff_tokens_recall);
    if (res.rows_answer) printf(" | answer share %.3f", res.ans_share);
    if (res.rows_answer && res.ans_window_chance != res.ans_chance) printf(", window %.3f", res.ans_window_share);
    if (isfinite(res.contrib_share)) printf(" | contribution %.3f, margin %.3f", res.contrib_share, res.ans_margin);
    if (isfinite(res.acc_permuted)) printf(" | permuted answers %.4f", res.acc_permuted);
    if (iv->kind == IV_PATCH)
        printf(" | follows A' %.4f of %ld rows, control %.4f", res.patch_follows, res.patch_rows, res.patch_control);
    printf(" | %.1f s\n", sec);
    if (res.rows_answer && run->passes == 1) {
        printf("  (chance: a uniform row puts %.3f of its weight on the answer", res.ans_chance);
        if (res.ans_window_chance != res.ans_chance) printf(", %.3f on its window", res.ans_window_chance);
        if (isfinite(res.contrib_share)) printf("; a uniform contribution %.3f", res.contrib_chance);
        printf(")\n");
    }
    if (eff_tokens) *eff_tokens = res.eff_tokens_recall;
    return val_acc(&res.stats);
}

// "PREFIX DIR/intervention_flatten.svg, DIR/intervention_topk.svg": the figures intervention_plot
// wrote into dir (one per kind with records), by name.
static void print_figure_names(const char *prefix, const char *dir) {
    printf("%s", prefix);
    int k = 0;
    for (int kind = IV_FLATTEN; kind < IV_N_KINDS; kind++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/intervention_%s.svg", dir, intervention_name((InterventionKind)kind));
        if (path_exists(path)) printf("%s %s", k++ ? "," : "", path);
    }
    printf("\n");
}

// The run's answer in one line: where a flatten or top-k curve drops below the accuracy the
// results call solving (DERIVED_TARGET_ACC), in strengths and effective tokens.
static void print_curve_verdict(InterventionKind kind, const double *strength, const double *acc, const double *eff,
                                int n, double as_trained) {
    const double target = DERIVED_TARGET_ACC;
    if (n == 0 || (kind != IV_FLATTEN && kind != IV_TOPK)) return;
    const char *name = intervention_name(kind);
    if (as_trained < target) {
        printf("  => as trained the model answers %.4f, already below %.2f: the curve shows what the change costs, "
               "not where recall breaks\n",
               as_trained, target);
        return;
    }
    // from the mildest change to the strongest: flatten by rising strength, top-k by falling k
    int order[INTERVENTION_MAX_STRENGTHS];
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0; j--) {
            double a = strength[order[j - 1]], b = strength[order[j]];
            if (kind == IV_FLATTEN ? a <= b : a >= b) break;
            int x = order[j];
            order[j] = order[j - 1], order[j - 1] = x;
        }
    int last_ok = -1, first_bad = -1;
    for (int i = 0; i < n && first_bad < 0; i++) {
        if (acc[order[i]] >= target) last_ok = order[i];
        else first_bad = order[i];
    }
    if (first_bad < 0)
        printf("  => accuracy stays at %.2f or more at every strength given (down to %s:%g, %.2f effective tokens)\n",
               target, name, strength[last_ok], eff[last_ok]);
    else if (last_ok < 0)
        printf("  => accuracy is below %.2f from the mildest strength given on (%s:%g: %.4f at %.2f effective tokens)\n",
               target, name, strength[first_bad], acc[first_bad], eff[first_bad]);
    else
        printf("  => accuracy stays at %.2f or more up to %s:%g (%.2f effective tokens) and falls to %.4f at %s:%g "
               "(%.2f effective tokens)\n",
               target, name, strength[last_ok], eff[last_ok], acc[first_bad], name, strength[first_bad], eff[first_bad]);
}

// Each layer patched in turn (intervene=patch, docs/interventions.md#activation-patching): the
// layer whose patch moves the changed key's prediction to A''s most often (the first on ties),
// -1 when no patch moves any (then *best is 0).
static int patch_layers(IvRun *run, int all_rows, double *best) {
    Intervention iv = {IV_PATCH, 0, 0, -1, all_rows};
    int layer = -1;
    *best = 0;
    for (int l = 0; l < run->ev->model->s.L; l++) {
        iv.layer = l;
        intervention_pass(run, &iv, NULL);
        if (run->last.patch_follows > *best) *best = run->last.patch_follows, layer = l;
    }
    return layer;
}

// intervene=oracle_lag: at each lag inside the changed layer's answer window the oracle and its
// control (oracle_lag_control), then the reading (eval/derived.h): the best lag, and whether it
// beats its control beyond the control's interval; if not, the oracle is no probe of this map.
static void lag_oracle_passes(IvRun *run, Intervention *iv, const IvArgs *ia) {
    double lags[INTERVENTION_MAX_STRENGTHS], acc[INTERVENTION_MAX_LAG + 1], ctrl[INTERVENTION_MAX_LAG + 1];
    double lo[INTERVENTION_MAX_LAG + 1], hi[INTERVENTION_MAX_LAG + 1];
    for (int k = 0; k <= INTERVENTION_MAX_LAG; k++) acc[k] = ctrl[k] = lo[k] = hi[k] = NAN;
    int n = intervention_lags(run->ev->model, iv->layer, ia->strengths, ia->n_strengths, lags), top = 0;
    for (int i = 0; i < n; i++) {
        int k = (int)lags[i];
        iv->kind = IV_ORACLE_LAG, iv->strength = k;
        acc[k] = intervention_pass(run, iv, NULL);
        iv->kind = IV_ORACLE_LAG_CONTROL;
        ctrl[k] = intervention_pass(run, iv, NULL);
        lo[k] = run->last.acc_lo, hi[k] = run->last.acc_hi;
        if (k + 1 > top) top = k + 1;
    }
    iv->kind = IV_ORACLE_LAG;
    LagReading r = derived_lag_oracle(acc, ctrl, lo, hi, top);
    if (r.best < 0) printf("  lag oracle: no lag inside the window was asked for\n");
    else if (r.valid)
        printf("  lag oracle: best lag %d, accuracy %.4f against its control's %.4f [%.4f, %.4f]\n", r.best, r.acc,
               r.control, lo[r.best], hi[r.best]);
    else
        printf("  lag oracle: not a valid probe for this map (best lag %d: %.4f, its control %.4f [%.4f, %.4f])\n",
               r.best, r.acc, r.control, lo[r.best], hi[r.best]);
}

// ./evaluate PATH intervene=...: the model as it is, then each strength (ablate: each layer, and
// each head of a layer with several), into intervention.jsonl; then its figures and report.html.
static void intervene_target(Target *t, int n_over, char **over, Evaluator *ev, const IvArgs *ia) {
    char err[512], options[1024] = "";
    // the file given, a run folder's best-validation weights (resolve_targets), else its last checkpoint
    t->last_ok = t->n - 1;
    const char *ck = t->ckpts[t->last_ok];
    Config c;
    long step;
    if (ckpt_read_config(ck, &c, &step, err, sizeof err) != 0) die_input("%s: %s", ck, err);
    t->steps[t->last_ok] = step;
    config_apply_args_noting_options(&c, n_over, over, options, sizeof options);
    fit_test_cells(&c, ck);
    check_indices_early(&c, ck, NULL, ia);
    evaluator_build(ev, &c, ck);
    if (ckpt_load(ck, ev->model, NULL, NULL, err, sizeof err) != 0) die_input("%s: %s", ck, err);
    const Model *m = ev->model;
    char *fresh = NULL;
    size_t fresh_len = 0;
    FILE *out = open_memstream(&fresh, &fresh_len);
    if (!out) die("out of memory");
    char ck_name[256];
    snprintf(ck_name, sizeof ck_name, "%s", base_name(ck));
    IvRun run = {.out = out, .step = step, .ck = ck_name, .mixer = cfg_str(&ev->cfg, "mixer"), .rest = options, .ev = ev};
    printf("%s (step %ld, %s): intervene=%s on the %s set\n", ck, step, run.mixer, intervention_name(ia->kind), g_split);
    double t0 = now_seconds();
    int layer = ia->layer;
    if (layer == IV_LAYER_CAUSAL) {  // each layer patched, then ablated; the kind acts on the patched one
        double follows = 0;
        int patched = m->s.L > 1 ? patch_layers(&run, 0, &follows) : -1;
        Intervention ab = {IV_ABLATE, 0, 0, -1, ia->all_rows};
        double worst = INFINITY;
        for (int l = 0; l < m->s.L; l++) {
            ab.layer = l;
            double acc = intervention_pass(&run, &ab, NULL);
            if (acc < worst) worst = acc, layer = l;
        }
        if (patched >= 0) {
            printf("  causal recall layer: %d (by patching: its patch moves %.4f of the changed answers to A''s; by "
                   "ablation: %d, leaving accuracy %.4f); intervene=%s acts there\n",
                   patched, follows, layer, worst, intervention_name(ia->kind));
            layer = patched;
        } else
            printf("  causal recall layer: %d (by ablation, leaving accuracy %.4f: no patch moved an answer); intervene=%s "
                   "acts there\n",
                   layer, worst, intervention_name(ia->kind));
    }
    Intervention iv = {IV_NONE, 0, layer, ia->head, ia->all_rows};
    t->last_acc = intervention_pass(&run, &iv, NULL);
    iv.kind = ia->kind;
    if (ia->kind == IV_ABLATE) {
        int causal = -1;
        double worst = INFINITY;
        for (int l = 0; l < m->s.L; l++) {
            if (layer >= 0 && l != layer) continue;
            for (int h = -1; h < m->s.H; h++) {
                if ((ia->head >= 0 && h != ia->head) || (h >= 0 && m->s.H == 1 && ia->head < 0)) continue;
                iv.layer = l, iv.head = h;
                double acc = intervention_pass(&run, &iv, NULL);
                if (h < 0 && acc < worst) worst = acc, causal = l;
            }
        }
        if (causal >= 0 && ia->layer == -1)
            printf("  causal recall layer: %d (ablating it leaves accuracy %.4f of %.4f)\n", causal, worst, t->last_acc);
    } else if (ia->kind == IV_ORACLE_LAG) lag_oracle_passes(&run, &iv, ia);
    else if (ia->kind == IV_PATCH && layer < 0) {  // each layer in turn
        double follows;
        int patched = patch_layers(&run, ia->all_rows, &follows);
        if (patched >= 0)
            printf("  causal recall layer by patching: %d (its patch moves %.4f of the changed answers to A''s)\n",
                   patched, follows);
        else printf("  causal recall layer by patching: none (no patch moved an answer)\n");
    } else if (ia->kind == IV_PATCH) intervention_pass(&run, &iv, NULL);
    else {
        double acc[INTERVENTION_MAX_STRENGTHS], eff[INTERVENTION_MAX_STRENGTHS];
        for (int i = 0; i < ia->n_strengths; i++) {
            iv.strength = ia->strengths[i];
            acc[i] = intervention_pass(&run, &iv, &eff[i]);
        }
        print_curve_verdict(ia->kind, ia->strengths, acc, eff, ia->n_strengths, t->last_acc);
    }
    printf("  %d passes in %.1f s\n", run.passes, now_seconds() - t0);
    fclose(out);
    char path[1200];
    snprintf(path, sizeof path, "%s/intervention.jsonl", t->dir);
    int rc = runlog_merge(path, fresh, fresh_len, RUNLOG_SAME_KEY, err, sizeof err);
    if (rc == -1) die_input("%s", err);
    if (rc == -2) die("%s", err);
    printf("  wrote %s\n", path);
    free(fresh);
    mirror_to_tensorboard(t);
    int figs = intervention_plot(t->dir);
    if (figs > 0) print_figure_names("  wrote", t->dir);
    t->evaluated = 1;
}

// --- maps and the report -----------------------------------------------------------------------

// The attention maps of the target's last evaluated checkpoint (reloaded if a later one failed).
static void draw_maps(Target *t, Evaluator *ev, const MapArgs *ma) {
    const char *ck = t->ckpts[t->last_ok];
    char err[512];
    if (ckpt_load(ck, ev->model, NULL, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "evaluate: %s: cannot draw maps: %s\n", ck, err);
        return;
    }
    AttentionMaps am;
    maps_extract(ev->model, ev->data, ev->T, ma->seq, ma->layer, ma->head, &am);
    if (ma->answers == 0) am.has_answers = 0;
    if (*cfg_str(&ev->cfg, "tokenizer")) maps_label_tokens(&am, cfg_str(&ev->cfg, "tokenizer"));
    const char *mixer = cfg_str(&ev->cfg, "mixer");
    long step = t->steps[t->last_ok];
    int ok = maps_draw(&am, t->dir, step, mixer, (int)ma->start, (int)ma->len);
    printf("  wrote %d attention map%s (%s/map_L*_H*.svg, step %ld, validation sequence %ld)\n", ok, ok == 1 ? "" : "s",
           t->dir, step, ma->seq);
    if (ok < am.n) fprintf(stderr, "evaluate: %s: %d maps could not be written\n", t->dir, am.n - ok);
    char path[1200];
    snprintf(path, sizeof path, "%s/maps.safetensors", t->dir);
    if (maps_save(&am, path, step, mixer, err, sizeof err) != 0) fprintf(stderr, "evaluate: %s: %s\n", path, err);
    else printf("  wrote %s\n", path);
    maps_free(&am);
}

// S by position, the scatter and report.html of a run folder.
static void write_report(Target *t, const RunData *d, const Evaluator *ev) {
    char title[512], path[1200];
    StepRecords last;
    int have = report_read_last_step(t->dir, t->series, &last);
    if (have) {
        snprintf(title, sizeof title, "S by query position at step %ld: %s (%s)", last.step, base_name(t->dir), d->mixer);
        snprintf(path, sizeof path, "%s/sparsity_by_pos.svg", t->dir);
        if (report_plot_by_position(t->dir, &last, title) == 0) printf("  wrote %s\n", path);
    }
    snprintf(title, sizeof title, "theory against measurement: %s (%s, theory %s)", base_name(t->dir), d->mixer, d->theory);
    snprintf(path, sizeof path, "%s/sparsity_scatter.svg", t->dir);
    if (report_plot_scatter(t->dir, t->series, title) == 0) printf("  wrote %s\n", path);
    char *cfg_text = config_to_text(&ev->cfg);
    snprintf(path, sizeof path, "%s/report.html", t->dir);
    // the headline is the series' last measurement (the run's own, unless it has none)
    long step = t->steps[t->last_ok];
    double loss = t->last_loss, acc = t->last_acc;
    for (int i = d->n - 1; i >= 0; i--)
        if (isfinite(d->acc[i])) {
            step = d->step[i], loss = d->loss[i], acc = d->acc[i];
            break;
        }
    report_write(report_write_html(t->dir, d->mixer, step, loss, acc, cfg_text, have ? &last : NULL), path);
    free(cfg_text);
    report_records_free(&last);
}

// --- arguments ----------------------------------------------------------------------------------------

static void usage(FILE *f) {
    fprintf(f,
            "usage: ./evaluate PATH... [--maps | intervene=KIND[:S,...] [layer=L] [head=H] [rows=R]] [key=value ...]\n"
            "PATH: a checkpoint (ckpt_*.safetensors) or a run folder (every checkpoint in it, in step order);\n"
            "several run folders are also compared in one figure.\n"
            "For each checkpoint: val loss, task accuracy and per-head attention sparsity S(a) with the\n"
            "theory's prediction and (MQAR) where the query rows' weight lands; writes eval.jsonl, SVG\n"
            "figures and report.html into each run folder.\n"
            "--maps: also draw the attention maps of one validation sequence at the last checkpoint\n"
            "(map_L<l>_H<h>.svg) and save them (maps.safetensors); give a checkpoint file as PATH to\n"
            "draw another checkpoint's maps.\n"
            "keys (default: the checkpoint's own value):\n"
            "  split=val|test   the set measured (default val: the run's validation set; test: the test\n"
            "                   set, which a run reads once at its end on the best-validation weights)\n"
            "  eval_batches=N   batches of the set (0 = all of it)\n"
            "  sparsity_rows=N  at least N query rows per cell: every row of that many sequences at an\n"
            "                   even stride (0 = all)\n"
            "  batch_size=N     sequences per forward pass\n"
            "  threads=N        OpenMP threads (0 = all cores)\n"
            "  compare=FILE     where the several-run figure goes (default: compare.svg in the runs' common\n"
            "                   parent folder, or in the current folder; with intervene=, intervention_<kind>.svg\n"
            "                   with a line per run in FILE's folder)\n"
            "  intervene=KIND[:S1,S2,...]  change the maps and measure what it costs (docs/interventions.md):\n"
            "                   flatten[:eps], topk[:k], sharpen[:p], temperature[:tau], derange, oracle,\n"
            "                   oracle_window, oracle_wrong, ablate, oracle_lag[:lags] (each lag in the\n"
            "                   window with its control), derange_values or patch (activation patching), on a\n"
            "                   checkpoint or a run folder's\n"
            "                   best.safetensors; writes intervention.jsonl, intervention_<kind>.svg, report.html\n"
            "  layer=L|all|causal  intervene=: the layer changed (default all; ablate: each in turn; causal:\n"
            "                   each layer patched and ablated first, then the kind on the one whose patch\n"
            "                   moves the most answers, else whose ablation costs most)\n"
            "  head=H|all       intervene=: the head changed (default all)\n"
            "  rows=query|all   intervene=: the rows changed (default query: the positions with a target)\n"
            "  map_seq=N        --maps: the sequence of the split (default 0, its first)\n"
            "  map_layer=L      --maps: one layer (default -1: every layer)\n"
            "  map_head=H       --maps: one head (default -1: every head)\n"
            "  map_answers=auto|on|off  --maps: mark query rows and answers (auto: on MQAR runs)\n"
            "  also val_data, mqar_val_examples, mqar_val_seed, mqar_test_examples, mqar_test_seed and the\n"
            "  run keys of ./train --help\n");
}

static int key_allowed(const KeyDef *k) {
    if (k->flags & KEY_RESUMABLE) return 1;
    for (int i = 0; g_extra_keys[i]; i++)
        if (!strcmp(k->name, g_extra_keys[i])) return 1;
    return 0;
}

static char *dir_of(const char *path) {
    char *d = strdupCheck(path);
    char *s = strrchr(d, '/');
    if (!s) {
        free(d);
        return strdupCheck(".");
    }
    if (s == d) s[1] = 0;
    else *s = 0;
    return d;
}

static char *strip_slashes(const char *path) {
    char *p = strdupCheck(path);
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/') p[--n] = 0;
    return p;
}

typedef struct {
    char **over;  // key=value overrides of the checkpoints' configs
    int n_over;
    Target *tg;
    int n_tg;
    const char *compare;
    MapArgs maps;
    IvArgs iv;
    int iv_keys;   // rows= given
    char **owned;  // overrides written here: mqar_cells=X given is "mqar_test_cells=X"
    int n_owned;
} Args;

// An integer map_* value, or exit 2 naming the key.
static long map_int(const char *arg, const char *key, long lo) {
    const char *v = arg + strlen(key) + 1;
    char *end;
    long x = strtol(v, &end, 10);
    if (!*v || *end || x < lo) die_input("%s: expected an integer >= %ld, got '%s'", key, lo, v);
    return x;
}

// layer=L / head=H: an index >= 0, or `all` (-1), or for layer `causal`; exit 2 naming the key
// otherwise.
static int iv_index(const char *arg, const char *key) {
    const char *v = arg + strlen(key) + 1;
    if (!strcmp(v, "all")) return -1;
    int layer = !strcmp(key, "layer");
    if (layer && !strcmp(v, "causal")) return IV_LAYER_CAUSAL;
    char *end;
    long x = strtol(v, &end, 10);
    if (!*v || *end || x < 0 || x > 1000000)
        die_input("%s: expected an index >= 0%s, got '%s'", key, layer ? ", all or causal" : " or all", v);
    return (int)x;
}

// Returns 1 when the argument is a map_* key (and applies it).
static int map_arg(const char *a, MapArgs *m) {
    if (!strncmp(a, "map_seq=", 8)) m->seq = map_int(a, "map_seq", 0);
    else if (!strncmp(a, "map_layer=", 10)) m->layer = (int)map_int(a, "map_layer", -1);
    else if (!strncmp(a, "map_head=", 9)) m->head = (int)map_int(a, "map_head", -1);
    else if (!strncmp(a, "map_start=", 10)) m->start = map_int(a, "map_start", 0);
    else if (!strncmp(a, "map_len=", 8)) m->len = map_int(a, "map_len", 1);
    else if (!strncmp(a, "map_answers=", 12)) {
        const char *v = a + 12;
        if (!strcmp(v, "auto")) m->answers = -1;
        else if (!strcmp(v, "on")) m->answers = 1;
        else if (!strcmp(v, "off")) m->answers = 0;
        else die_input("map_answers: expected auto, on or off, got '%s'", v);
    } else return 0;
    return 1;
}

// Splits the command line into paths, overrides, --maps and its keys. Returns 1 after --help.
static int parse_args(int argc, char **argv, Args *a) {
    memset(a, 0, sizeof *a);
    a->maps = (MapArgs){0, 0, -1, -1, -1, 0, 128};
    a->iv = (IvArgs){.layer = -1, .head = -1};
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 1;
    }
    a->over = mallocCheck(sizeof(char *) * (size_t)argc);
    a->owned = mallocCheck(sizeof(char *) * (size_t)argc);
    a->tg = callocCheck((size_t)argc, sizeof(Target));
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "compare=", 8)) a->compare = argv[i] + 8;
        else if (!strncmp(argv[i], "split=", 6)) {
            g_split = argv[i] + 6;
            if (strcmp(g_split, "val") && strcmp(g_split, "test"))
                die_input("split: expected val or test, got '%s'", g_split);
        } else if (!strncmp(argv[i], "intervene=", 10)) {
            a->iv.on = 1;
            a->iv.n_strengths = intervention_parse(argv[i] + 10, &a->iv.kind, a->iv.strengths);
        } else if (!strncmp(argv[i], "layer=", 6)) a->iv.layer = iv_index(argv[i], "layer");
        else if (!strncmp(argv[i], "head=", 5)) a->iv.head = iv_index(argv[i], "head");
        else if (!strncmp(argv[i], "rows=", 5)) {
            const char *v = argv[i] + 5;
            if (strcmp(v, "query") && strcmp(v, "all")) die_input("rows: expected query or all, got '%s'", v);
            a->iv.all_rows = !strcmp(v, "all");
            a->iv_keys = 1;
        } else if (!strcmp(argv[i], "--maps")) a->maps.on = 1;
        else if (map_arg(argv[i], &a->maps)) continue;
        // ./sweep names run folders key=value: an existing path is a path
        else if (!strncmp(argv[i], "mqar_cells=", 11)) {  // what ./evaluate tests on: the test cells
            size_t n = strlen(argv[i]) + 8;
            char *arg = a->owned[a->n_owned++] = mallocCheck(n);
            snprintf(arg, n, "mqar_test_cells=%s", argv[i] + 11);
            a->over[a->n_over++] = arg;
        } else if (strchr(argv[i], '=') && !path_exists(argv[i])) a->over[a->n_over++] = argv[i];
        else if (argv[i][0] == '-')
            die_input("command line: unknown option '%s' (usage: ./evaluate PATH... [--maps] [key=value ...])", argv[i]);
        else a->tg[a->n_tg++].path = strip_slashes(argv[i]);
    }
    if (a->n_tg == 0) {
        usage(stderr);
        die_input("command line: expected a checkpoint or a run folder");
    }
    if (a->compare && !*a->compare) die_input("compare: expected a file name, got ''");
    if (a->compare) run_dir_check_output("compare", a->compare, NULL, 0);  // never over a run's files
    if ((a->iv_keys || a->iv.layer != -1 || a->iv.head >= 0) && !a->iv.on)
        die_input("command line: layer=, head= and rows= choose where intervene= acts; give intervene=KIND too");
    if (a->iv.on && a->maps.on) die_input("command line: --maps and intervene= are separate runs of ./evaluate");
    return 0;
}

// Checks the overrides once, before any work: known keys that may differ from the checkpoint.
static void check_overrides(const Args *a) {
    // llm.c's GPT-2 files hold max_seq_len positions: a shorter seq_len uses the first rows of wpe
    int all_llmc = a->n_tg > 0;
    for (int i = 0; i < a->n_tg; i++) all_llmc &= llmc_is_model_file(a->tg[i].path);
    Config probe;
    config_init_all(&probe);
    config_apply_args(&probe, a->n_over, a->over);
    for (int i = 0; i < a->n_over; i++) {
        char key[128];
        snprintf(key, sizeof key, "%.*s", (int)(strchr(a->over[i], '=') - a->over[i]), a->over[i]);
        for (char *e = key + strlen(key); e > key && (e[-1] == ' ' || e[-1] == '\t');) *--e = 0;
        const KeyDef *k = config_find(&probe, key);
        if (k && !key_allowed(k) && !(all_llmc && !strcmp(key, "seq_len")))
            die_input("%s: fixed by the checkpoint (it changes the model or the data); ./evaluate accepts "
                      "eval_batches, sparsity_rows, batch_size, threads, val_data and the other run keys",
                      key);
    }
    if (cfg_int(&probe, "threads") > 0) omp_set_num_threads((int)cfg_int(&probe, "threads"));
    config_free(&probe);
}

// An output folder made here (FILE.eval/ of an llm.c file) is removed at exit if nothing was
// written in it: a file that fails to load leaves no empty folder behind.
static char *g_made_dirs[64];
static int g_n_made;

static void remove_made_dirs(void) {
    for (int i = 0; i < g_n_made; i++) rmdir(g_made_dirs[i]);  // fails, harmlessly, unless empty
}

static void remove_if_left_empty(const char *dir) {
    if (g_n_made == 64) return;
    if (g_n_made == 0) atexit(remove_made_dirs);
    g_made_dirs[g_n_made++] = strdupCheck(dir);
}

// Each PATH: a run folder and its checkpoints, or one checkpoint.
// "./train" for a config file, "./sweep" for a sweep file (by their names' endings), else NULL:
// a user who hands ./evaluate one is told which program it is for.
static const char *input_file_program(const char *path) {
    size_t n = strlen(path);
    if (is_directory(path)) return NULL;
    if (n > 5 && !strcmp(path + n - 5, ".conf")) return "./train";
    if (n > 6 && !strcmp(path + n - 6, ".sweep")) return "./sweep";
    return NULL;
}

static void resolve_targets(Args *a) {
    for (int i = 0; i < a->n_tg; i++) {
        Target *t = &a->tg[i];
        if (!path_exists(t->path)) die_input("%s: no such checkpoint or run folder", t->path);
        const char *program = input_file_program(t->path);
        if (program)
            die_input("%s: this is a file for %s, not a checkpoint or run folder (run %s %s, then ./evaluate the run folder "
                      "it writes)",
                      t->path, program, program, t->path);
        char best[1200];
        snprintf(best, sizeof best, "%s/%s", t->path, RUN_DIR_BEST);
        if (is_directory(t->path) && a->iv.on && path_exists(best)) {  // interventions: the best weights
            t->dir = strdupCheck(t->path);
            t->n = 1;
            t->ckpts = mallocCheck(sizeof(char *));
            t->steps = mallocCheck(sizeof(long));
            t->ckpts[0] = strdupCheck(best);
            t->steps[0] = 0;  // read with the checkpoint
        } else if (is_directory(t->path)) {
            t->dir = strdupCheck(t->path);
            t->n = ckpt_list(t->path, &t->ckpts, &t->steps);
            if (t->n == 0)
                die_input("%s: no checkpoints (ckpt_*.safetensors%s) in this folder", t->path,
                          a->iv.on ? " or " RUN_DIR_BEST : "");
        } else if (llmc_is_model_file(t->path)) {
            // an llm.c GPT-2 file is no run folder's: its outputs go to FILE.eval/ beside it
            size_t n = strlen(t->path);
            t->dir = mallocCheck(n + 8);
            snprintf(t->dir, n + 8, "%.*s.eval", (int)(n > 4 && !strcmp(t->path + n - 4, ".bin") ? n - 4 : n), t->path);
            int existed = path_exists(t->dir);
            if (mkdir_p(t->dir) != 0)
                die_input("%s: cannot create the output folder '%s' (%s)", t->path, t->dir, strerror(errno));
            if (!existed) remove_if_left_empty(t->dir);
            t->single = 1;
            t->n = 1;
            t->ckpts = mallocCheck(sizeof(char *));
            t->steps = mallocCheck(sizeof(long));
            t->ckpts[0] = strdupCheck(t->path);
            t->steps[0] = 0;
        } else {
            t->dir = dir_of(t->path);
            t->single = 1;
            t->n = 1;
            t->ckpts = mallocCheck(sizeof(char *));
            t->steps = mallocCheck(sizeof(long));
            t->ckpts[0] = strdupCheck(t->path);
            const char *b = base_name(t->path);
            t->steps[0] = !strncmp(b, "ckpt_", 5) ? atol(b + 5) : 0;
        }
    }
}

// Several runs: compare.svg in the given file, the runs' common parent folder or here.
static void compare_runs(const Args *a, RunData *runs) {
    int n_good = 0;
    for (int i = 0; i < a->n_tg; i++) n_good += runs[i].n > 0;
    if (a->n_tg < 2 || n_good < 2) return;
    RunData *good = callocCheck((size_t)n_good, sizeof(RunData));
    Target *gt = callocCheck((size_t)n_good, sizeof(Target));
    int k = 0;
    for (int i = 0; i < a->n_tg; i++)
        if (runs[i].n > 0) good[k] = runs[i], gt[k++] = a->tg[i];
    char def[1200];
    const char *compare = a->compare;
    if (!compare) {
        char *parent = dir_of(gt[0].dir);
        int same = 1;
        for (int i = 1; i < n_good; i++) {
            char *p = dir_of(gt[i].dir);
            same &= !strcmp(p, parent);
            free(p);
        }
        snprintf(def, sizeof def, "%s/compare.svg", same ? parent : ".");
        free(parent);
        compare = def;
    }
    printf("comparing %d runs\n", n_good);
    plot_compare(good, gt, n_good, compare);
    free(good);
    free(gt);
}

// Several runs given intervene=: one figure per kind with a line per run (intervention_<kind>.svg)
// in the folder of compare= or the runs' common parent folder (else here), labelled by folder.
static void compare_interventions(const Args *a) {
    if (a->n_tg < 2) return;
    const char **dirs = mallocCheck(sizeof(char *) * (size_t)a->n_tg),
               **names = mallocCheck(sizeof(char *) * (size_t)a->n_tg);
    char *parent = dir_of(a->tg[0].dir);
    int same = 1;
    for (int i = 0; i < a->n_tg; i++) {
        dirs[i] = a->tg[i].dir;
        names[i] = strdupCheck(base_name(a->tg[i].dir));  // base_name's buffer is one
        char *p = dir_of(a->tg[i].dir);
        same &= !strcmp(p, parent);
        free(p);
    }
    char *out = a->compare ? dir_of(a->compare) : strdupCheck(same ? parent : ".");
    int n = intervention_plot_runs(out, dirs, names, a->n_tg);
    printf("comparing %d runs:", a->n_tg);
    print_figure_names(" wrote", out);
    (void)n;
    for (int i = 0; i < a->n_tg; i++) free((char *)names[i]);
    free(out), free(parent), free(dirs), free(names);
}

static void args_free(Args *a) {
    for (int i = 0; i < a->n_owned; i++) free(a->owned[i]);
    free(a->owned);
    for (int i = 0; i < a->n_tg; i++) {
        free(a->tg[i].path);
        free(a->tg[i].dir);
        for (int j = 0; j < a->tg[i].n; j++) free(a->tg[i].ckpts[j]);
        free(a->tg[i].ckpts);
        free(a->tg[i].steps);
    }
    free(a->tg);
    free(a->over);
}

int main(int argc, char **argv) {
    Args a;
    if (parse_args(argc, argv, &a)) return 0;
    check_overrides(&a);
    fpu_flush_denormals();
    resolve_targets(&a);

    Evaluator ev;
    memset(&ev, 0, sizeof ev);
    const Target *failed = NULL;  // the first target nothing could be read of
    RunData *runs = callocCheck((size_t)a.n_tg, sizeof(RunData));
    for (int i = 0; i < a.n_tg; i++) {
        Target *t = &a.tg[i];
        if (a.iv.on) {  // the interventions, then the report with their section
            intervene_target(t, a.n_over, a.over, &ev, &a.iv);
            char path[1200];
            snprintf(path, sizeof path, "%s/eval.jsonl", t->dir);
            t->series = "";
            if (!run_data_read(path, "", &runs[i])) run_data_free(&runs[i]);
            if (!runs[i].mixer[0]) snprintf(runs[i].mixer, sizeof runs[i].mixer, "%s", cfg_str(&ev.cfg, "mixer"));
            write_report(t, &runs[i], &ev);
            continue;
        }
        evaluate_target(t, a.n_over, a.over, &ev, &a.maps, i, a.n_tg);
        if (t->evaluated == 0) {
            if (!failed) failed = t;
            continue;
        }
        char path[1200];
        snprintf(path, sizeof path, "%s/eval.jsonl", t->dir);
        // the figures and the report draw the run's own measurements; those of an evaluation under
        // other options (other cells, other data) only when the folder has no own ones
        t->series = "";
        if (!run_data_read(path, "", &runs[i])) {
            run_data_free(&runs[i]);
            t->series = t->options;
            run_data_read(path, t->series, &runs[i]);
        }
        draw_run_figures(t, &runs[i]);
        if (a.maps.on) draw_maps(t, &ev, &a.maps);
        write_report(t, &runs[i], &ev);
    }
    evaluator_free(&ev);
    if (a.iv.on) compare_interventions(&a);
    else compare_runs(&a, runs);
    for (int i = 0; i < a.n_tg; i++) run_data_free(&runs[i]);
    free(runs);
    if (failed && failed->err[0]) die_input("%s: %s", failed->path, failed->err);
    if (failed) die_input("%s: no checkpoint could be read", failed->path);
    args_free(&a);
    return 0;
}
