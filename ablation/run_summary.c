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
    m->r->steps_to_target = c.steps_to_target;
    for (long i = 0; i < m->n_eval && c.steps_to_target >= 0; i++)
        if ((long)m->eval_step[i] == c.steps_to_target) {
            m->r->minutes_to_target = m->eval_minutes[i];
            break;
        }
    m->r->capped_improving = m->done_last && !strcmp(m->reason, "steps") && c.still_improving;
}

typedef struct {
    long n, cap;
    double *step, *S, *S_recall, *ans_share, *ans_hit;
    int *layer, *head;
    double *cell_S;  // [cap * SUMMARY_MAX_CELLS] S_recall per cell (NAN: none)
    int n_cells;
    char cell[SUMMARY_MAX_CELLS][24];
} SparsityScan;

static int sparsity_record(const RunlogRecord *rec, void *ctx) {
    SparsityScan *s = ctx;
    const JsonValue *v = rec->obj;
    double step = (double)rec->step, layer = rec->layer;
    if (rec->type != RUNLOG_SPARSITY || *rec->options || !(layer >= 0 && layer < 4096)) return 0;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->step = reallocCheck(s->step, sizeof(double) * (size_t)s->cap);
        s->S = reallocCheck(s->S, sizeof(double) * (size_t)s->cap);
        s->S_recall = reallocCheck(s->S_recall, sizeof(double) * (size_t)s->cap);
        s->layer = reallocCheck(s->layer, sizeof(int) * (size_t)s->cap);
        s->head = reallocCheck(s->head, sizeof(int) * (size_t)s->cap);
        s->ans_share = reallocCheck(s->ans_share, sizeof(double) * (size_t)s->cap);
        s->ans_hit = reallocCheck(s->ans_hit, sizeof(double) * (size_t)s->cap);
        s->cell_S = reallocCheck(s->cell_S, sizeof(double) * (size_t)s->cap * SUMMARY_MAX_CELLS);
    }
    double cs[SUMMARY_MAX_CELLS];
    char names[SUMMARY_MAX_CELLS][24];
    int nc;
    cell_fields(v, "S_recall_", names, cs, &nc);
    if (nc) memcpy(s->cell, names, sizeof names), s->n_cells = nc;
    for (int c = 0; c < SUMMARY_MAX_CELLS; c++) s->cell_S[s->n * SUMMARY_MAX_CELLS + c] = c < nc ? cs[c] : NAN;
    // behind a short convolution the answer window's share and hit (eval/derived.h)
    double wh = runlog_num(rec, "ans_window_hit");
    s->ans_share[s->n] = derived_window_share(rec);
    s->ans_hit[s->n] = isfinite(wh) ? wh : runlog_num(rec, "ans_hit");
    s->step[s->n] = step;
    s->S[s->n] = runlog_num(rec, "S");  // null (no rows) reads as NAN
    s->S_recall[s->n] = runlog_num(rec, "S_recall");
    s->layer[s->n] = (int)layer;
    s->head[s->n] = rec->head;
    s->n++;
    return 0;
}

// Per layer at one step: mean and min over heads of S, mean of S_recall.
static int layer_stats(const SparsityScan *s, double step, double **mean, double **min, double **recall) {
    int L = 0;
    for (long i = 0; i < s->n; i++)
        if (s->step[i] == step && s->layer[i] + 1 > L) L = s->layer[i] + 1;
    *mean = callocCheck((size_t)L, sizeof(double));
    *min = mallocCheck(sizeof(double) * (size_t)L);
    *recall = callocCheck((size_t)L, sizeof(double));
    int *n = callocCheck((size_t)L, sizeof(int)), *nr = callocCheck((size_t)L, sizeof(int));
    for (int l = 0; l < L; l++) (*min)[l] = INFINITY;
    for (long i = 0; i < s->n; i++) {
        if (s->step[i] != step) continue;
        int l = s->layer[i];
        if (isfinite(s->S[i])) {
            (*mean)[l] += s->S[i], n[l]++;
            if (s->S[i] < (*min)[l]) (*min)[l] = s->S[i];
        }
        if (isfinite(s->S_recall[i])) (*recall)[l] += s->S_recall[i], nr[l]++;
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

// At one step: the recall layer (the largest mean answer share over heads, as the trainer stars
// it) and its per-cell S_recall, mean over heads.
static void recall_layer_cells(const SparsityScan *s, double step, RunSummary *r) {
    double cell_sum[SUMMARY_MAX_CELLS] = {0};
    int cell_n[SUMMARY_MAX_CELLS] = {0}, L = 0, H = 0;
    for (long i = 0; i < s->n; i++)
        if (s->step[i] == step) {
            if (s->layer[i] + 1 > L) L = s->layer[i] + 1;
            if (s->head[i] >= 0 && s->head[i] < 4096 && s->head[i] + 1 > H) H = s->head[i] + 1;
        }
    double *share = mallocCheck(sizeof(double) * (size_t)(L * H + 1));
    for (int i = 0; i < L * H; i++) share[i] = NAN;
    for (long i = 0; i < s->n; i++)
        if (s->step[i] == step && s->head[i] >= 0 && s->head[i] < H)
            share[s->layer[i] * H + s->head[i]] = s->ans_share[i];
    int best = derived_recall_layer(share, L, H);  // as the trainer stars it
    free(share);
    r->recall_layer = best;
    if (best < 0) return;
    double sr = 0, sh = 0, hit = 0;
    int nr = 0, nh = 0;
    for (long i = 0; i < s->n; i++) {
        if (s->step[i] != step || s->layer[i] != best) continue;
        if (isfinite(s->S_recall[i])) sr += s->S_recall[i], nr++;
        if (isfinite(s->ans_share[i]) && isfinite(s->ans_hit[i])) sh += s->ans_share[i], hit += s->ans_hit[i], nh++;
    }
    r->recall_S = nr ? sr / nr : NAN;
    r->recall_ans_share = nh ? sh / nh : NAN;
    r->recall_ans_hit = nh ? hit / nh : NAN;
    if (!s->n_cells) return;
    for (long i = 0; i < s->n; i++)
        if (s->step[i] == step && s->layer[i] == best)
            for (int c = 0; c < s->n_cells; c++)
                if (isfinite(s->cell_S[i * SUMMARY_MAX_CELLS + c]))
                    cell_sum[c] += s->cell_S[i * SUMMARY_MAX_CELLS + c], cell_n[c]++;
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
            if (s->step[i] == r->curve_step[k] && s->layer[i] == r->recall_layer && isfinite(s->S_recall[i]))
                sum += s->S_recall[i], n++;
        r->curve_recall[k] = n ? sum / n : NAN;
    }
}

static void read_sparsity(const char *dir, RunSummary *r) {
    char path[1200];
    snprintf(path, sizeof path, "%s/sparsity.jsonl", dir);
    SparsityScan s = {0};
    if (runlog_each(path, sparsity_record, &s) != 0 || s.n == 0) goto done;
    // the curve: records come in step order, a step's (layer, head) lines together
    for (long i = 0; i < s.n; i++) {
        if (r->n_curve && r->curve_step[r->n_curve - 1] == s.step[i]) continue;
        double *mean, *min, *recall;
        int L = layer_stats(&s, s.step[i], &mean, &min, &recall);
        double best = INFINITY;
        for (int l = 0; l < L; l++)
            if (mean[l] < best) best = mean[l];
        r->curve_step = reallocCheck(r->curve_step, sizeof(double) * (size_t)(r->n_curve + 1));
        r->curve_S = reallocCheck(r->curve_S, sizeof(double) * (size_t)(r->n_curve + 1));
        r->curve_step[r->n_curve] = s.step[i];
        r->curve_S[r->n_curve++] = isfinite(best) ? best : NAN;
        free(mean);
        free(min);
        free(recall);
    }
    double last = s.step[0];
    for (long i = 0; i < s.n; i++)
        if (s.step[i] > last) last = s.step[i];
    r->S_step = (long)last;
    r->n_layers = layer_stats(&s, last, &r->S_mean, &r->S_min, &r->S_recall);
    double sum = 0, rmin = INFINITY;
    long n = 0;
    r->S_min_all = INFINITY;
    for (long i = 0; i < s.n; i++) {
        if (s.step[i] != last) continue;
        if (isfinite(s.S[i])) {
            sum += s.S[i], n++;
            if (s.S[i] < r->S_min_all) r->S_min_all = s.S[i];
        }
        if (isfinite(s.S_recall[i]) && s.S_recall[i] < rmin) rmin = s.S_recall[i];
    }
    r->S_mean_all = n ? sum / n : NAN;
    if (!n) r->S_min_all = NAN;
    r->S_recall_min_all = isfinite(rmin) ? rmin : NAN;
    recall_layer_cells(&s, last, r);
    recall_curve(&s, r);
done:
    free(s.step);
    free(s.S);
    free(s.S_recall);
    free(s.layer);
    free(s.head);
    free(s.ans_share);
    free(s.ans_hit);
    free(s.cell_S);
}

void run_summary_read(const char *dir, RunSummary *r) {
    memset(r, 0, sizeof *r);
    r->final_loss = r->best_acc = r->minutes_to_target = r->minutes = r->tok_per_s = NAN;
    r->S_min_all = r->S_mean_all = r->S_recall_min_all = NAN;
    r->state_floats = NAN;
    r->recall_layer = -1;
    r->recall_S = r->recall_ans_share = r->recall_ans_hit = NAN;
    for (int c = 0; c < SUMMARY_MAX_CELLS; c++) r->cell_acc[c] = r->cell_S_recall[c] = NAN;
    r->steps_to_target = -1;
    r->S_step = -1;
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
