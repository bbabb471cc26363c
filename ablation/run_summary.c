#include "ablation/run_summary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/json.h"
#include "core/run_dir.h"
#include "core/runlog.h"
#include "eval/derived.h"

// What a run folder says (metrics.jsonl, sparsity.jsonl), for the summary and for ./sweep's
// "finished before" check.

typedef struct {
    RunSummary *r;
    double prev_train_step, last_ms, ms_total, tok_sum;
    long n_train, n_tok;
    int done_last;    // the last record is the done record
    char reason[16];  // of the last done record ("steps", "stop_at_acc")
    long n_eval, eval_cap;
    double *eval_step, *eval_acc, *eval_minutes;  // every eval record of the run's own, in order
    int cells_at_best;                            // the eval record whose cells were kept (the best so far)
} MetricsScan;

// The fields prefix<cell> of a record (acc_kv4_L64, S_recall_kv4_L64): cell names into name[],
// values into val[] in record order; *n is their count.
static void cell_fields(const JsonValue *v, const char *prefix, char name[][24], double *val, int *n) {
    size_t k = strlen(prefix);
    *n = 0;
    for (int i = 0; i < v->n && *n < SUMMARY_MAX_CELLS; i++)
        if (!strncmp(v->keys[i], prefix, k) && !strncmp(v->keys[i] + k, "kv", 2) && strlen(v->keys[i] + k) < 24) {
            snprintf(name[*n], 24, "%s", v->keys[i] + k);
            val[(*n)++] = v->items[i].type == JSON_NUMBER ? v->items[i].number : NAN;
        }
}

static int metrics_record(const RunlogRecord *rec, void *ctx) {
    MetricsScan *m = ctx;
    RunSummary *r = m->r;
    double step = (double)rec->step;
    m->done_last = rec->type == RUNLOG_DONE;
    if (m->done_last && runlog_str(rec, "reason"))
        snprintf(m->reason, sizeof m->reason, "%s", runlog_str(rec, "reason"));
    if (rec->type == RUNLOG_UNKNOWN || step < 0 || *rec->options) return 0;
    if (rec->step > r->step) r->step = rec->step;
    if (rec->type == RUNLOG_TRAIN) {
        double ms = runlog_num(rec, "ms_per_step"), tok = runlog_num(rec, "tok_per_s");
        if (isfinite(ms) && step >= m->prev_train_step) {
            // a record every log_every steps: its step time stands for the steps since the last one
            m->ms_total += ms * (step - m->prev_train_step);
            m->prev_train_step = step;
            m->last_ms = ms;
            m->n_train++;
        }
        if (isfinite(tok)) m->tok_sum += tok, m->n_tok++;
    } else if (rec->type == RUNLOG_RUN) {
        r->state_floats = runlog_num(rec, "state_floats");
        r->protocol = (int)runlog_int(rec, "protocol", 0);
        const char *prov[4] = {runlog_str(rec, "commit"), runlog_str(rec, "compiler"), runlog_str(rec, "cpu"),
                               runlog_str(rec, "gemm")};
        char *dst[4] = {r->commit, r->compiler, r->cpu, r->gemm};
        size_t cap[4] = {sizeof r->commit, sizeof r->compiler, sizeof r->cpu, sizeof r->gemm};
        for (int k = 0; k < 4; k++) snprintf(dst[k], cap[k], "%s", prov[k] ? prov[k] : "");
    } else if (rec->type == RUNLOG_EVAL && !strcmp(rec->split, "test")) {  // the last one counts
        r->test_acc = runlog_num(rec, "acc");
        r->test_lo = runlog_num(rec, "acc_lo"), r->test_hi = runlog_num(rec, "acc_hi");
        r->test_step = rec->step;
        const char *sel = runlog_str(rec, "selected");
        snprintf(r->test_selected, sizeof r->test_selected, "%s", sel ? sel : "");
    } else if (rec->type == RUNLOG_EVAL) {
        double loss = runlog_num(rec, "loss"), acc = runlog_num(rec, "acc");
        if (m->n_eval == m->eval_cap) {
            m->eval_cap = m->eval_cap ? 2 * m->eval_cap : 64;
            m->eval_step = reallocCheck(m->eval_step, sizeof(double) * (size_t)m->eval_cap);
            m->eval_acc = reallocCheck(m->eval_acc, sizeof(double) * (size_t)m->eval_cap);
            m->eval_minutes = reallocCheck(m->eval_minutes, sizeof(double) * (size_t)m->eval_cap);
        }
        // the training time up to this step (the steps since the last train record at its pace)
        m->eval_minutes[m->n_eval] = step == 0 ? 0
            : m->n_train                       ? (m->ms_total + (step - m->prev_train_step) * m->last_ms) / 60000.0
                                               : NAN;
        m->eval_step[m->n_eval] = step, m->eval_acc[m->n_eval++] = acc;
        if (isfinite(loss)) r->final_loss = loss;
        // the cells of the best record so far (the curve's best, eval/derived.h: the first on ties)
        DerivedCurve c;
        derived_curve(m->eval_step, m->eval_acc, m->n_eval, DERIVED_TARGET_ACC, &c);
        if (c.best_step == rec->step && isfinite(acc) && c.best_acc == acc && m->cells_at_best != (int)m->n_eval) {
            cell_fields(rec->obj, "acc_", r->cell, r->cell_acc, &r->n_cells);
            m->cells_at_best = (int)m->n_eval;
        }
    }
    return 0;
}

// The curve's figures (eval/derived.h) into the summary.
static void metrics_curve(MetricsScan *m) {
    DerivedCurve c;
    derived_curve(m->eval_step, m->eval_acc, m->n_eval, DERIVED_TARGET_ACC, &c);
    m->r->best_acc = c.best_acc;
    m->r->best_step = c.best_step;
    m->r->steps_to_target = c.steps_to_target;
    for (long i = 0; i < m->n_eval && c.steps_to_target >= 0; i++)
        if ((long)m->eval_step[i] == c.steps_to_target) {
            m->r->minutes_to_target = m->eval_minutes[i];
            break;
        }
    m->r->capped_improving = m->done_last && !strcmp(m->reason, "steps") && c.still_improving;
}

// One sparsity record of the run's own on the validation set (split test records are read apart).
typedef struct {
    double step, S, S_recall;
    int layer, head, recall_layer;     // recall_layer: as recorded (-1: an older log)
    RecallAt fig;                      // the record's own figures (layer, step set; means of one head)
    double cell_S[SUMMARY_MAX_CELLS];  // S_recall per cell (NAN: none)
} SpRecord;

typedef struct {
    long n, cap;
    SpRecord *v;
    int n_cells;
    char cell[SUMMARY_MAX_CELLS][24];
} SparsityScan;

static int sparsity_record(const RunlogRecord *rec, void *ctx) {
    SparsityScan *s = ctx;
    const JsonValue *v = rec->obj;
    int layer = rec->layer;
    if (rec->type != RUNLOG_SPARSITY || *rec->options || strcmp(rec->split, "val") || !(layer >= 0 && layer < 4096))
        return 0;
    if (s->n == s->cap) s->v = reallocCheck(s->v, sizeof(SpRecord) * (size_t)(s->cap = s->cap ? 2 * s->cap : 256));
    SpRecord *r = &s->v[s->n++];
    double cs[SUMMARY_MAX_CELLS];
    char names[SUMMARY_MAX_CELLS][24];
    int nc;
    cell_fields(v, "S_recall_", names, cs, &nc);
    if (nc) memcpy(s->cell, names, sizeof names), s->n_cells = nc;
    for (int c = 0; c < SUMMARY_MAX_CELLS; c++) r->cell_S[c] = c < nc ? cs[c] : NAN;
    r->step = (double)rec->step;
    r->S = runlog_num(rec, "S");  // null (no rows) reads as NAN
    r->S_recall = runlog_num(rec, "S_recall");
    r->layer = layer;
    r->head = rec->head;
    r->recall_layer = derived_recorded_recall_layer(rec);
    // the recall figures by eval/derived.h's one definition: the answer window's where it is
    // wider than the value position, else the value position's
    RecallAt *f = &r->fig;
    double wh = runlog_num(rec, "ans_window_hit"), wc = runlog_num(rec, "ans_window_chance");
    f->step = rec->step, f->layer = layer;
    f->S = r->S_recall;
    f->share = derived_window_share(rec);
    f->hit = isfinite(wh) ? wh : runlog_num(rec, "ans_hit");
    f->chance = isfinite(runlog_num(rec, "ans_window_share")) ? wc : runlog_num(rec, "ans_chance");
    f->eff_tokens = runlog_num(rec, "eff_tokens_recall");
    f->onehot = runlog_num(rec, "S_recall_onehot");
    f->S_right = runlog_num(rec, "S_recall_right");
    f->S_wrong = runlog_num(rec, "S_recall_wrong");
    f->share_right = runlog_num(rec, "window_share_right");
    f->share_wrong = runlog_num(rec, "window_share_wrong");
    f->rows_right = runlog_num(rec, "rows_right");
    f->rows_wrong = runlog_num(rec, "rows_wrong");
    return 0;
}

// Per layer at one step: mean and min over heads of S, mean of S_recall.
static int layer_stats(const SparsityScan *s, double step, double **mean, double **min, double **recall) {
    int L = 0;
    for (long i = 0; i < s->n; i++)
        if (s->v[i].step == step && s->v[i].layer + 1 > L) L = s->v[i].layer + 1;
    *mean = callocCheck((size_t)L + 1, sizeof(double));
    *min = mallocCheck(sizeof(double) * ((size_t)L + 1));
    *recall = callocCheck((size_t)L + 1, sizeof(double));
    int *n = callocCheck((size_t)L + 1, sizeof(int)), *nr = callocCheck((size_t)L + 1, sizeof(int));
    for (int l = 0; l < L; l++) (*min)[l] = INFINITY;
    for (long i = 0; i < s->n; i++) {
        const SpRecord *r = &s->v[i];
        if (r->step != step) continue;
        int l = r->layer;
        if (isfinite(r->S)) {
            (*mean)[l] += r->S, n[l]++;
            if (r->S < (*min)[l]) (*min)[l] = r->S;
        }
        if (isfinite(r->S_recall)) (*recall)[l] += r->S_recall, nr[l]++;
    }
    for (int l = 0; l < L; l++) {
        (*mean)[l] = n[l] ? (*mean)[l] / n[l] : NAN;
        if (!n[l]) (*min)[l] = NAN;
        (*recall)[l] = nr[l] ? (*recall)[l] / nr[l] : NAN;
    }
    free(n);
    free(nr);
    return L;
}

// Adds x to a mean kept as (sum, count) when finite.
static void add_finite(double *sum, int *n, double x) {
    if (isfinite(x)) *sum += x, (*n)++;
}

// Layer l's figures at one step, means over its heads (NAN where no head has the field).
static RecallAt layer_figures(const SparsityScan *s, double step, int l) {
    enum { K = 11 };
    double sum[K] = {0};
    int n[K] = {0};
    for (long i = 0; i < s->n; i++) {
        const RecallAt *f = &s->v[i].fig;
        if (s->v[i].step != step || s->v[i].layer != l) continue;
        double x[K] = {f->S,
                       f->share,
                       f->hit,
                       f->chance,
                       f->eff_tokens,
                       f->onehot,
                       f->S_right,
                       f->S_wrong,
                       f->share_right,
                       f->share_wrong,
                       f->rows_right + f->rows_wrong};
        for (int k = 0; k < K; k++) add_finite(&sum[k], &n[k], x[k]);
    }
    double m[K];
    for (int k = 0; k < K; k++) m[k] = n[k] ? sum[k] / n[k] : NAN;
    RecallAt r = {(long)step, l, m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8], m[9], NAN, NAN};
    for (long i = 0; i < s->n; i++)  // row counts: the first head's (every head measures the same rows)
        if (s->v[i].step == step && s->v[i].layer == l) {
            r.rows_right = s->v[i].fig.rows_right, r.rows_wrong = s->v[i].fig.rows_wrong;
            break;
        }
    return r;
}

// The recall layer at one step (eval/derived.h, as the trainer stars it) and its figures.
static RecallAt recall_at(const SparsityScan *s, double step) {
    int L = 0, H = 0;
    for (long i = 0; i < s->n; i++)
        if (s->v[i].step == step) {
            if (s->v[i].layer + 1 > L) L = s->v[i].layer + 1;
            if (s->v[i].head >= 0 && s->v[i].head < 4096 && s->v[i].head + 1 > H) H = s->v[i].head + 1;
        }
    double *share = mallocCheck(sizeof(double) * (size_t)(L * H + 1));
    for (int i = 0; i < L * H; i++) share[i] = NAN;
    for (long i = 0; i < s->n; i++)
        if (s->v[i].step == step && s->v[i].head >= 0 && s->v[i].head < H)
            share[s->v[i].layer * H + s->v[i].head] = s->v[i].fig.share;
    int best = derived_recall_layer(share, L, H);  // an older log's; the recorded layer wins
    free(share);
    for (long i = 0; i < s->n; i++)
        if (s->v[i].step == step && s->v[i].recall_layer >= 0) best = s->v[i].recall_layer;
    if (best < 0) {
        RecallAt none = {(long)step, -1, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
        return none;
    }
    return layer_figures(s, step, best);
}

// The recall layer's per-cell S_recall at one step, mean over heads.
static void recall_cells(const SparsityScan *s, double step, RunSummary *r) {
    double cell_sum[SUMMARY_MAX_CELLS] = {0};
    int cell_n[SUMMARY_MAX_CELLS] = {0};
    if (!s->n_cells || r->recall_layer < 0) return;
    for (long i = 0; i < s->n; i++)
        if (s->v[i].step == step && s->v[i].layer == r->recall_layer)
            for (int c = 0; c < s->n_cells; c++)
                if (isfinite(s->v[i].cell_S[c])) cell_sum[c] += s->v[i].cell_S[c], cell_n[c]++;
    // the cells of the eval records name the columns; sparsity's are matched to them by name
    for (int c = 0; c < r->n_cells; c++) {
        r->cell_S_recall[c] = NAN;
        for (int k = 0; k < s->n_cells; k++)
            if (!strcmp(s->cell[k], r->cell[c]) && cell_n[k]) r->cell_S_recall[c] = cell_sum[k] / cell_n[k];
    }
}

// The recall layer's S_recall (mean over heads) at each step of the curve. The layer is the one
// of the last step, kept over the whole curve so that a line follows one layer.
static void recall_curve(const SparsityScan *s, RunSummary *r) {
    r->curve_recall = mallocCheck(sizeof(double) * (size_t)(r->n_curve ? r->n_curve : 1));
    for (int k = 0; k < r->n_curve; k++) {
        double sum = 0;
        int n = 0;
        for (long i = 0; i < s->n && r->recall_layer >= 0; i++)
            if (s->v[i].step == r->curve_step[k] && s->v[i].layer == r->recall_layer && isfinite(s->v[i].S_recall))
                sum += s->v[i].S_recall, n++;
        r->curve_recall[k] = n ? sum / n : NAN;
    }
}

static void read_sparsity(const char *dir, RunSummary *r) {
    char path[1200];
    snprintf(path, sizeof path, "%s/sparsity.jsonl", dir);
    SparsityScan s = {0};
    if (runlog_each(path, sparsity_record, &s) != 0 || s.n == 0) goto done;
    // the curve: the steps in order (the best step's records may come after later ones)
    for (long i = 0; i < s.n; i++) {
        int seen = 0;
        for (int k = 0; k < r->n_curve && !seen; k++) seen = r->curve_step[k] == s.v[i].step;
        if (seen) continue;
        double *mean, *min, *recall;
        int L = layer_stats(&s, s.v[i].step, &mean, &min, &recall);
        double best = INFINITY;
        for (int l = 0; l < L; l++)
            if (mean[l] < best) best = mean[l];
        int k = r->n_curve++;
        r->curve_step = reallocCheck(r->curve_step, sizeof(double) * (size_t)r->n_curve);
        r->curve_S = reallocCheck(r->curve_S, sizeof(double) * (size_t)r->n_curve);
        for (; k > 0 && r->curve_step[k - 1] > s.v[i].step; k--)
            r->curve_step[k] = r->curve_step[k - 1], r->curve_S[k] = r->curve_S[k - 1];
        r->curve_step[k] = s.v[i].step;
        r->curve_S[k] = isfinite(best) ? best : NAN;
        free(mean);
        free(min);
        free(recall);
    }
    double last = s.v[0].step;
    for (long i = 0; i < s.n; i++)
        if (s.v[i].step > last) last = s.v[i].step;
    r->S_step = (long)last;
    r->n_layers = layer_stats(&s, last, &r->S_mean, &r->S_min, &r->S_recall);
    r->layer_last = mallocCheck(sizeof(RecallAt) * (size_t)(r->n_layers + 1));
    for (int l = 0; l < r->n_layers; l++) r->layer_last[l] = layer_figures(&s, last, l);
    double sum = 0, rmin = INFINITY;
    long n = 0;
    r->S_min_all = INFINITY;
    for (long i = 0; i < s.n; i++) {
        if (s.v[i].step != last) continue;
        if (isfinite(s.v[i].S)) {
            sum += s.v[i].S, n++;
            if (s.v[i].S < r->S_min_all) r->S_min_all = s.v[i].S;
        }
        if (isfinite(s.v[i].S_recall) && s.v[i].S_recall < rmin) rmin = s.v[i].S_recall;
    }
    r->S_mean_all = n ? sum / n : NAN;
    if (!n) r->S_min_all = NAN;
    r->S_recall_min_all = isfinite(rmin) ? rmin : NAN;
    r->last = recall_at(&s, last);
    r->recall_layer = r->last.layer;
    r->recall_S = r->last.S, r->recall_ans_share = r->last.share, r->recall_ans_hit = r->last.hit;
    if (r->best_step >= 0) {
        int have = 0;
        for (long i = 0; i < s.n && !have; i++) have = s.v[i].step == r->best_step;
        if (have) r->best = recall_at(&s, (double)r->best_step);
    }
    recall_cells(&s, last, r);
    recall_curve(&s, r);
done:
    free(s.v);
}

void run_summary_read(const char *dir, RunSummary *r) {
    memset(r, 0, sizeof *r);
    r->final_loss = r->best_acc = r->minutes_to_target = r->minutes = r->tok_per_s = NAN;
    r->S_min_all = r->S_mean_all = r->S_recall_min_all = NAN;
    r->state_floats = NAN;
    r->recall_layer = -1;
    r->recall_S = r->recall_ans_share = r->recall_ans_hit = NAN;
    r->test_acc = NAN;
    r->test_lo = r->test_hi = NAN;
    r->test_step = r->best_step = -1;
    RecallAt none = {-1, -1, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
    r->best = r->last = none;
    for (int c = 0; c < SUMMARY_MAX_CELLS; c++) r->cell_acc[c] = r->cell_S_recall[c] = NAN;
    r->steps_to_target = -1;
    r->S_step = -1;
    run_interventions_read(dir, &r->iv);
    char path[1200];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    MetricsScan m = {.r = r, .cells_at_best = -1};
    if (runlog_each(path, metrics_record, &m) != 0) {
        r->status = RUN_MISSING;
        return;
    }
    r->has_metrics = 1;
    r->status = m.done_last ? RUN_DONE : RUN_PARTIAL;
    metrics_curve(&m);
    free(m.eval_step);
    free(m.eval_acc);
    free(m.eval_minutes);
    if (m.n_train) r->minutes = m.ms_total / 60000.0;
    if (m.n_tok) r->tok_per_s = m.tok_sum / (double)m.n_tok;
    read_sparsity(dir, r);
}

void run_summary_free(RunSummary *r) {
    free(r->S_mean);
    free(r->S_min);
    free(r->S_recall);
    free(r->curve_step);
    free(r->curve_S);
    free(r->curve_recall);
    free(r->layer_last);
    run_interventions_free(&r->iv);
    memset(r, 0, sizeof *r);
}

static int done_last(const RunlogRecord *r, void *ctx) {
    *(int *)ctx = r->type == RUNLOG_DONE;
    return 0;
}

int run_finished(const char *dir) {
    char path[1200];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    int done = 0;
    runlog_each(path, done_last, &done);  // a finished run's last record is its done record
    return done;
}

int run_records_lost(const char *dir) {
    char path[1200];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    if (path_exists(path)) return 0;
    char **paths;
    long *steps;
    int n = run_dir_checkpoints(dir, &paths, &steps);
    run_dir_free_list(paths, steps, n);
    return n > 0;
}
