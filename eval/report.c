#include "eval/report.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/json.h"
#include "core/runlog.h"
#include "eval/derived.h"
#include "eval/intervene.h"
#include "eval/svg_plot.h"

// --- records ------------------------------------------------------------------------------------

typedef struct {
    const char *options;
    int pass;  // 0: find the last step; 1: keep its records
    StepRecords *out;
} LastStep;

static int last_step_record(const RunlogRecord *r, void *ctx) {
    LastStep *ls = ctx;
    if (r->type != RUNLOG_SPARSITY || r->layer < 0 || strcmp(r->options, ls->options)) return 0;
    if (ls->pass == 0 && r->step > ls->out->step) ls->out->step = r->step;
    if (ls->pass == 1 && r->step == ls->out->step) {
        char err[64];
        JsonValue *v = json_parse(r->line, r->len, err, sizeof err);  // kept past the callback
        if (!v) return 0;
        ls->out->rec = reallocCheck(ls->out->rec, sizeof(JsonValue *) * (size_t)(ls->out->n + 1));
        ls->out->rec[ls->out->n++] = v;
    }
    return 0;
}

int report_read_last_step(const char *dir, const char *options, StepRecords *out) {
    memset(out, 0, sizeof *out);
    out->step = -1;
    char path[1200];
    snprintf(path, sizeof path, "%s/eval.jsonl", dir);
    LastStep ls = {options, 0, out};
    if (runlog_each(path, last_step_record, &ls) != 0) return 0;
    ls.pass = 1;
    runlog_each(path, last_step_record, &ls);
    return out->n > 0;
}

void report_records_free(StepRecords *r) {
    for (int i = 0; i < r->n; i++) json_free(r->rec[i]);
    free(r->rec);
    memset(r, 0, sizeof *r);
}

// --- figures --------------------------------------------------------------------------------------

int report_plot_by_position(const char *dir, const StepRecords *r, const char *title) {
    int L = 0;
    for (int i = 0; i < r->n; i++) {
        int l = (int)json_number(r->rec[i], "layer");
        if (l + 1 > L) L = l + 1;
    }
    if (L == 0 || L > 64) return -1;
    PlotPanel *panels = callocCheck((size_t)L, sizeof(PlotPanel));
    PlotSeries *series = callocCheck((size_t)(2 * r->n + L), sizeof(PlotSeries));
    double **bufs = callocCheck((size_t)(4 * r->n + 2 * L), sizeof(double *));  // x and y of 2 series per record, floor per layer
    char(*labels)[64] = callocCheck((size_t)(2 * r->n + L), sizeof *labels);
    char(*titles)[64] = callocCheck((size_t)L, sizeof *titles);
    int ns = 0, nb = 0, drawn = 0;
    for (int l = 0; l < L; l++) {
        PlotPanel *p = &panels[l];
        snprintf(titles[l], sizeof titles[l], "layer %d: S against the query position", l);
        p->title = titles[l];
        p->xlabel = "n = position + 1 (start of each bin)";
        p->ylabel = "mean S over the rows of the bin";
        p->ymin = 0;
        p->ymax = 1;
        p->series = &series[ns];
        int width = 0, nbins = 0;
        for (int i = 0; i < r->n; i++) {
            const JsonValue *v = r->rec[i];
            if ((int)json_number(v, "layer") != l) continue;
            const JsonValue *meas = json_get(v, "S_by_pos"), *pred = json_get(v, "S_pred_by_pos");
            width = (int)json_number(v, "pos_bin_width");
            if (!meas || meas->type != JSON_ARRAY || width < 1) continue;
            nbins = meas->n;
            int h = (int)json_number(v, "head");
            for (int k = 0; k < 2; k++) {
                const JsonValue *arr = k == 0 ? meas : pred;
                if (!arr || arr->type != JSON_ARRAY || arr->n != nbins) continue;
                double *x = bufs[nb++] = mallocCheck(sizeof(double) * (size_t)(nbins + 1));
                double *y = bufs[nb++] = mallocCheck(sizeof(double) * (size_t)(nbins + 1));
                for (int b = 0; b < nbins; b++) {
                    x[b] = b * width + 1;
                    y[b] = arr->items[b].type == JSON_NUMBER ? arr->items[b].number : NAN;
                }
                snprintf(labels[ns], sizeof labels[0], k == 0 ? "head %d measured" : "head %d predicted", h);
                series[ns] = (PlotSeries){x, y, nbins, labels[ns], h, k};
                ns++;
                p->n_series++;
                drawn = 1;
            }
        }
        if (nbins > 0) {  // the one-hot floor at the bin starts
            double *x = bufs[nb++] = mallocCheck(sizeof(double) * (size_t)(nbins + 1));
            double *y = bufs[nb++] = mallocCheck(sizeof(double) * (size_t)(nbins + 1));
            for (int b = 0; b < nbins; b++) x[b] = b * width + 1, y[b] = 1 / sqrt(x[b]);
            series[ns++] = (PlotSeries){x, y, nbins, "one-hot 1/sqrt(n)", -1, 2};
            p->n_series++;
        }
    }
    int rc = -1;
    if (drawn) {
        char path[1200];
        snprintf(path, sizeof path, "%s/sparsity_by_pos.svg", dir);
        rc = svg_line_figure(path, title, panels, L, L > 2 ? 2 : L);
    }
    for (int i = 0; i < nb; i++) free(bufs[i]);
    free(bufs), free(panels), free(series), free(labels), free(titles);
    return rc;
}

typedef struct {
    const char *options;
    int n, cap, L;
    double *x, *y;
    int *c;
} Scatter;

static int scatter_record(const RunlogRecord *r, void *ctx) {
    Scatter *sc = ctx;
    // the palette's first 10 colours: all rows and query rows of 5 layers
    if (r->type != RUNLOG_SPARSITY || strcmp(r->options, sc->options) || r->layer < 0 || r->layer >= 5) return 0;
    int l = r->layer;
    if (l + 1 > sc->L) sc->L = l + 1;
    for (int k = 0; k < 2; k++) {
        double px = runlog_num(r, k ? "S_recall_pred" : "S_pred"),
               py = runlog_num(r, k ? "S_recall_pred_measured" : "S_pred_measured");
        if (!isfinite(px) || !isfinite(py)) continue;
        if (sc->n == sc->cap) {
            sc->cap = sc->cap ? 2 * sc->cap : 256;
            sc->x = reallocCheck(sc->x, sizeof(double) * sc->cap), sc->y = reallocCheck(sc->y, sizeof(double) * sc->cap);
            sc->c = reallocCheck(sc->c, sizeof(int) * sc->cap);
        }
        sc->x[sc->n] = px, sc->y[sc->n] = py, sc->c[sc->n] = 2 * l + k, sc->n++;
    }
    return 0;
}

int report_plot_scatter(const char *dir, const char *options, const char *title) {
    char path[1200];
    snprintf(path, sizeof path, "%s/eval.jsonl", dir);
    Scatter sc = {options, 0, 0, 0, NULL, NULL, NULL};
    if (runlog_each(path, scatter_record, &sc) != 0) return -1;
    int n = sc.n, L = sc.L;
    double *x = sc.x, *y = sc.y;
    int *c = sc.c;
    int rc = -1;
    if (n > 0) {
        char lab[10][48];
        const char *labels[10];
        for (int i = 0; i < 2 * L; i++) {
            snprintf(lab[i], sizeof lab[i], "layer %d, %s", i / 2, i % 2 ? "query rows" : "all rows");
            labels[i] = lab[i];
        }
        snprintf(path, sizeof path, "%s/sparsity_scatter.svg", dir);
        rc = svg_scatter(path, title, "predicted S (mean over rows, per head and checkpoint)", "measured S (same rows)",
                         x, y, c, n, labels, 2 * L);
    }
    free(x), free(y), free(c);
    return rc;
}

// --- the page ------------------------------------------------------------------------------------

static void html_text(FILE *f, const char *s) {
    for (; s && *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else fputc(*s, f);
    }
}

static void base64(FILE *f, const unsigned char *d, size_t n) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)d[i] << 16 | (i + 1 < n ? (unsigned)d[i + 1] << 8 : 0) | (i + 2 < n ? d[i + 2] : 0);
        fputc(tab[v >> 18 & 63], f);
        fputc(tab[v >> 12 & 63], f);
        fputc(i + 1 < n ? tab[v >> 6 & 63] : '=', f);
        fputc(i + 2 < n ? tab[v & 63] : '=', f);
    }
}

// An <img> of dir/name inlined as a data: URI; 0 when the file does not exist.
static int figure(FILE *f, const char *dir, const char *name, const char *caption) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t len;
    char *svg = read_file_text(path, &len);
    if (!svg) return 0;
    fputs("<figure><img alt=\"", f);
    html_text(f, name);
    fputs("\" src=\"data:image/svg+xml;base64,", f);
    base64(f, (const unsigned char *)svg, len);
    fputs("\"><figcaption>", f);
    html_text(f, caption);
    fputs("</figcaption></figure>\n", f);
    free(svg);
    return 1;
}

static void cell(FILE *f, const JsonValue *v, const char *key, int digits) {
    double x = json_number(v, key);
    if (isfinite(x)) fprintf(f, "<td>%.*f</td>", digits, x);
    else fputs("<td>-</td>", f);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

// --- interventions (docs/interventions.md) ---------------------------------------------------------

// The causal recall layer of the last step with whole-layer ablations: the one whose ablation
// left the lowest accuracy.
typedef struct {
    long step;
    int layer;
    double acc;
} Causal;

static int causal_layer(const RunlogRecord *r, void *ctx) {
    Causal *c = ctx;
    const char *kind = runlog_str(r, "kind");
    double acc = runlog_num(r, "acc");
    if (r->type != RUNLOG_INTERVENTION || !kind || strcmp(kind, "ablate") || r->head >= 0 || !isfinite(acc) ||
        strcmp(r->split, "val"))
        return 0;
    if (r->step > c->step) *c = (Causal){r->step, -1, INFINITY};
    if (r->step == c->step && acc < c->acc) c->layer = r->layer, c->acc = acc;
    return 0;
}

static int intervention_row(const RunlogRecord *r, void *ctx) {
    FILE *f = ctx;
    if (r->type != RUNLOG_INTERVENTION) return 0;
    const char *kind = runlog_str(r, "kind"), *rows = runlog_str(r, "rows");
    fprintf(f, "<tr><td>%ld</td><td>", r->step);
    html_text(f, kind ? kind : "?");
    double s = runlog_num(r, "strength");
    if (isfinite(s)) fprintf(f, ":%g", s);
    fputs("</td><td>", f);
    if (r->layer >= 0) fprintf(f, "%d", r->layer);
    else fputs("all", f);
    fputs("</td><td>", f);
    if (r->head >= 0) fprintf(f, "%d", r->head);
    else fputs("all", f);
    fprintf(f, "</td><td>%s</td><td>%s</td>", rows ? rows : "-", r->split);
    cell(f, r->obj, "acc", 4), cell(f, r->obj, "loss", 4), cell(f, r->obj, "S_recall", 3);
    cell(f, r->obj, "eff_tokens_recall", 2), cell(f, r->obj, "ans_share", 3), cell(f, r->obj, "ans_chance", 3);
    cell(f, r->obj, "ans_window_share", 3), cell(f, r->obj, "ans_window_chance", 3), cell(f, r->obj, "seconds", 1);
    fputs("</tr>\n", f);
    return 0;
}

// The figures of intervention.jsonl and a row per record (./evaluate CKPT intervene=...).
static void interventions_section(FILE *f, const char *dir) {
    fputs("<h2>Interventions</h2>\n", f);
    char path[1200];
    snprintf(path, sizeof path, "%s/intervention.jsonl", dir);
    if (!path_exists(path)) {
        fputs("<p>None yet: <code>./evaluate RUN intervene=flatten</code> changes the maps and measures what it "
              "costs (docs/interventions.md).</p>\n",
              f);
        return;
    }
    Causal c = {-1, -1, INFINITY};
    runlog_each(path, causal_layer, &c);
    if (c.layer >= 0)
        fprintf(f,
                "<p>Causal recall layer at step %ld: <b>layer %d</b> (ablating it, flatten:1 on its query rows, leaves "
                "validation accuracy %.4f, the lowest of the layers ablated).</p>\n",
                c.step, c.layer, c.acc);
    for (int k = IV_FLATTEN; k < IV_N_KINDS; k++) {
        char name[64], caption[160];
        snprintf(name, sizeof name, "intervention_%s.svg", intervention_name((InterventionKind)k));
        snprintf(caption, sizeof caption, "%s: accuracy against S_recall after the change, the model as trained in grey",
                 intervention_name((InterventionKind)k));
        figure(f, dir, name, caption);
    }
    fputs("<table><tr><th>step</th><th>intervention</th><th>layer</th><th>head</th><th>rows</th><th>split</th>"
          "<th>accuracy</th><th>loss</th><th>S_recall</th><th>effective tokens</th><th>answer share</th>"
          "<th>chance</th><th>window share</th><th>window chance</th><th>seconds</th></tr>\n",
          f);
    runlog_each(path, intervention_row, f);
    fputs("</table>\n", f);
}

// The evaluations under other options (other cells, other data: `options` in their records, the
// run log's key): each its own row, never drawn over the run's own curve.
static int other_eval_row(const RunlogRecord *r, void *ctx) {
    FILE *f = ctx;
    if (r->type != RUNLOG_EVAL || !*r->options) return 0;
    fputs("<tr><td style=\"text-align:left\">", f);
    html_text(f, r->options);
    fprintf(f, "</td><td>%ld</td>", r->step);
    double loss = runlog_num(r, "loss"), acc = runlog_num(r, "acc");
    if (isfinite(loss)) fprintf(f, "<td>%.4f</td>", loss);
    else fputs("<td>-</td>", f);
    if (isfinite(acc)) fprintf(f, "<td>%.4f</td>", acc);
    else fputs("<td>-</td>", f);
    fputs("<td style=\"text-align:left\">", f);
    const JsonValue *o = r->obj;
    for (int i = 0, first = 1; i < o->n; i++)  // a mixture's per-cell accuracies
        if (!strncmp(o->keys[i], "acc_kv", 6) && o->items[i].type == JSON_NUMBER) {
            fprintf(f, "%s", first ? "" : ", ");
            html_text(f, o->keys[i] + 4);
            fprintf(f, " %.4f", o->items[i].number);
            first = 0;
        }
    fputs("</td></tr>\n", f);
    return 0;
}

static int has_other(const RunlogRecord *r, void *ctx) {
    if (r->type == RUNLOG_EVAL && *r->options) *(int *)ctx = 1;
    return *(int *)ctx;
}

static void other_evaluations(FILE *f, const char *dir) {
    char path[1200];
    snprintf(path, sizeof path, "%s/eval.jsonl", dir);
    int any = 0;
    runlog_each(path, has_other, &any);
    if (!any) return;
    fputs("<h3>Other evaluations</h3>\n<p>Checkpoints evaluated under other options (other test cells or data): "
          "other measurements than the run's own, listed apart (eval.jsonl records with <code>options</code>).</p>\n"
          "<table><tr><th>options</th><th>step</th><th>loss</th><th>accuracy</th><th>per cell</th></tr>\n",
          f);
    runlog_each(path, other_eval_row, f);
    fputs("</table>\n", f);
}

int report_write_html(const char *dir, const char *mixer, long step, double loss, double acc, const char *config_text,
                      const StepRecords *r) {
    char path[1200];
    snprintf(path, sizeof path, "%s/report.html", dir);
    AtomicFile a;  // the earlier report or the whole new one (core/io.h)
    if (atomic_open(&a, path, NULL, 0) != 0) return -1;
    FILE *f = a.f;
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>attnscope report: ", f);
    html_text(f, dir);
    fputs("</title>\n<style>body{font-family:Helvetica,Arial,sans-serif;margin:24px;max-width:1400px;color:#222}"
          "table{border-collapse:collapse;font-size:13px;display:block;overflow-x:auto;max-width:100%}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}"
          "th{background:#f0f0f0}tr.recall td{background:#eef6ee}pre{background:#f7f7f7;padding:8px;font-size:12px;"
          "max-height:320px;overflow:auto}figure{margin:12px 0}img{max-width:100%;border:1px solid #eee}"
          "figcaption{font-size:13px;color:#555}</style>\n</head><body>\n<h1>",
          f);
    html_text(f, mixer);
    fputs(" on ", f);
    html_text(f, dir);
    fprintf(f, "</h1>\n<p>Last checkpoint: step %ld", step);
    if (isfinite(acc)) fprintf(f, ", validation accuracy %.4f, loss %.4f", acc, loss);
    fputs(". S(a) = mean|a| / sqrt(mean a&sup2;) per row: 1 is flat, 1/sqrt(n) one-hot. "
          "Field definitions: docs/sparsity.md.</p>\n",
          f);

    fputs("<h2>Accuracy and S over steps</h2>\n", f);
    figure(f, dir, "loss_acc.svg",
           "loss and accuracy: training and validation as the trainer logged them (metrics.jsonl), the checkpoints' "
           "evaluations marked (eval.jsonl)");
    figure(f, dir, "sparsity_steps.svg", "S per head at every checkpoint, with the theory's prediction (dashed)");
    figure(f, dir, "sparsity_train.svg", "S during training (the trainer's sparsity.jsonl)");
    other_evaluations(f, dir);

    fprintf(f, "<h2>Per head at step %ld</h2>\n", r ? r->step : step);
    if (r && r->n > 0) {
        // the recall layer (eval/derived.h): the largest mean window share over its heads
        int L = 0, H = 0;
        for (int i = 0; i < r->n; i++) {
            int l = (int)json_number(r->rec[i], "layer"), h = (int)json_number(r->rec[i], "head");
            if (l >= 0 && l < 1024 && l + 1 > L) L = l + 1;
            if (h >= 0 && h < 4096 && h + 1 > H) H = h + 1;
        }
        double *share = mallocCheck(sizeof(double) * (size_t)(L * H + 1));
        for (int i = 0; i < L * H; i++) share[i] = NAN;
        for (int i = 0; i < r->n; i++) {
            int l = (int)json_number(r->rec[i], "layer"), h = (int)json_number(r->rec[i], "head");
            RunlogRecord rec = {.obj = r->rec[i]};
            if (l >= 0 && l < L && h >= 0 && h < H) share[l * H + h] = derived_window_share(&rec);
        }
        int recall = derived_recall_layer(share, L, H);  // an older log's; the recorded layer wins
        free(share);
        for (int i = 0; i < r->n; i++) {
            RunlogRecord rec = {.obj = r->rec[i]};
            if (derived_recorded_recall_layer(&rec) >= 0) recall = derived_recorded_recall_layer(&rec);
        }
        const JsonValue *th = json_get(r->rec[0], "theory");
        fprintf(f, "<p>Theory: <b>%s</b>.", th && th->type == JSON_STRING ? th->string : "none");
        if (recall >= 0)
            fprintf(f, " The recall layer (largest answer window share at the query rows) is layer %d, shaded.", recall);
        fputs("</p>\n<table><tr><th>layer</th><th>head</th><th>S</th><th>S_recall</th><th>one-hot floor</th><th>S_kv</th>"
              "<th>S_other</th><th>S_norm</th><th>S_pred</th><th>S_inf</th><th>median measured/pred</th>"
              "<th>rank corr.</th><th>effective tokens (recall)</th><th>answer share</th><th>chance</th><th>lift</th>"
              "<th>window share</th><th>window chance</th><th>window lift</th><th>key share</th><th>argmax = answer</th>"
              "<th>answer rank</th><th>top1</th><th>top4</th><th>n90</th><th>S_recall right</th><th>S_recall wrong</th>"
              "<th>neg. mass</th></tr>\n",
              f);
        for (int i = 0; i < r->n; i++) {
            const JsonValue *v = r->rec[i];
            int l = (int)json_number(v, "layer");
            fprintf(f, "<tr%s><td>%d</td><td>%d</td>", l == recall ? " class=\"recall\"" : "", l,
                    (int)json_number(v, "head"));
            cell(f, v, "S", 3), cell(f, v, "S_recall", 3), cell(f, v, "S_recall_onehot", 3), cell(f, v, "S_kv", 3);
            cell(f, v, "S_other", 3), cell(f, v, "S_norm", 3), cell(f, v, "S_pred", 3), cell(f, v, "S_inf", 3);
            cell(f, v, "S_pred_ratio_median", 2), cell(f, v, "S_pred_spearman", 2), cell(f, v, "eff_tokens_recall", 2);
            cell(f, v, "ans_share", 3), cell(f, v, "ans_chance", 3), cell(f, v, "ans_lift", 1);
            cell(f, v, "ans_window_share", 3), cell(f, v, "ans_window_chance", 3), cell(f, v, "ans_window_lift", 1);
            cell(f, v, "key_share", 3), cell(f, v, "ans_hit", 3), cell(f, v, "ans_rank", 2), cell(f, v, "top1", 3);
            cell(f, v, "top4", 3), cell(f, v, "n90", 1), cell(f, v, "S_recall_right", 3), cell(f, v, "S_recall_wrong", 3);
            cell(f, v, "neg_mass", 3);
            fputs("</tr>\n", f);
        }
        fputs("</table>\n", f);
    } else fputs("<p>No sparsity records.</p>\n", f);

    fputs("<h2>S by position and theory against measurement</h2>\n", f);
    figure(f, dir, "sparsity_by_pos.svg", "S and the prediction against the query position, last checkpoint");
    figure(f, dir, "sparsity_scatter.svg", "predicted against measured S, one point per head and checkpoint");

    interventions_section(f, dir);

    fputs("<h2>Attention maps</h2>\n", f);
    int n_maps = 0;
    DIR *d = opendir(dir);
    char **names = NULL;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            size_t len = strlen(e->d_name);
            if (!strncmp(e->d_name, "map_L", 5) && len > 4 && !strcmp(e->d_name + len - 4, ".svg")) {
                names = reallocCheck(names, sizeof(char *) * (size_t)(n_maps + 1));
                names[n_maps++] = strdupCheck(e->d_name);
            }
        }
        closedir(d);
    }
    if (n_maps) qsort(names, (size_t)n_maps, sizeof(char *), cmp_str);
    for (int i = 0; i < n_maps; i++) {
        figure(f, dir, names[i], names[i]);
        free(names[i]);
    }
    free(names);
    if (!n_maps) fputs("<p>None yet: <code>./evaluate RUN --maps</code> draws them.</p>\n", f);

    fputs("<h2>Config</h2>\n<pre>", f);
    html_text(f, config_text);
    fputs("</pre>\n</body></html>\n", f);
    return atomic_commit(&a, NULL, 0);
}
