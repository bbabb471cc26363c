#include "ablation/summary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/json.h"
#include "core/run_dir.h"

// What a run folder says (metrics.jsonl, sparsity.jsonl), for the summary and for ./sweep's
// "finished before" check.

// Calls fn for every line of a jsonl file that parses as an object; -1 when there is no file.
static int for_each_record(const char *path, void (*fn)(const JsonValue *, void *), void *ctx) {
    size_t len;
    char *text = read_file_text(path, &len);
    if (!text) return -1;
    char err[160];
    for (size_t pos = 0; pos < len;) {
        size_t end = pos;
        while (end < len && text[end] != '\n') end++;
        if (end > pos) {
            JsonValue *v = json_parse(text + pos, end - pos, err, sizeof err);
            if (v && v->type == JSON_OBJECT) fn(v, ctx);
            json_free(v);
        }
        pos = end + 1;
    }
    free(text);
    return 0;
}

static double num(const JsonValue *o, const char *key) {
    const JsonValue *v = json_get(o, key);
    return v && v->type == JSON_NUMBER ? v->number : NAN;
}

static const char *str(const JsonValue *o, const char *key) {
    const JsonValue *v = json_get(o, key);
    return v && v->type == JSON_STRING ? v->string : NULL;
}

typedef struct {
    RunSummary *r;
    double prev_train_step, last_ms, ms_total, tok_sum;
    long n_train, n_tok;
    int done_last;  // the last record is {"type":"done"}
    const char *done_reason;  // of the last done record ("steps", "stop_at_acc")
    char reason[16];
    long n_eval, eval_cap;
    double *eval_step, *eval_acc;  // every eval record, in order
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

// A run that ended at its step cap below the target was still improving when the best accuracy
// of its last quarter of steps is above the best before it by more than 0.01.
static int still_improving(const MetricsScan *m) {
    if (m->n_eval < 2 || !(m->r->best_acc < SUMMARY_TARGET_ACC)) return 0;
    double last = m->eval_step[m->n_eval - 1], cut = last * 0.75, before = -1, after = -1;
    for (long i = 0; i < m->n_eval; i++) {
        double a = m->eval_acc[i];
        if (!isfinite(a)) continue;
        if (m->eval_step[i] <= cut) before = a > before ? a : before;
        else after = a > after ? a : after;
    }
    return before >= 0 && after > before + 0.01;
}

static void metrics_record(const JsonValue *v, void *ctx) {
    MetricsScan *m = ctx;
    RunSummary *r = m->r;
    const char *type = str(v, "type");
    double step = num(v, "step");
    m->done_last = type && !strcmp(type, "done");
    if (m->done_last && str(v, "reason")) snprintf(m->reason, sizeof m->reason, "%s", str(v, "reason"));
    if (!type || !isfinite(step) || step < 0) return;
    if ((long)step > r->step) r->step = (long)step;
    if (!strcmp(type, "train")) {
        double ms = num(v, "ms_per_step"), tok = num(v, "tok_per_s");
        if (isfinite(ms) && step >= m->prev_train_step) {
            // a record every log_every steps: its step time stands for the steps since the last one
            m->ms_total += ms * (step - m->prev_train_step);
            m->prev_train_step = step;
            m->last_ms = ms;
            m->n_train++;
        }
        if (isfinite(tok)) m->tok_sum += tok, m->n_tok++;
    } else if (!strcmp(type, "run")) {
        r->state_floats = num(v, "state_floats");
    } else if (!strcmp(type, "eval")) {
        double loss = num(v, "loss"), acc = num(v, "acc");
        if (m->n_eval == m->eval_cap) {
            m->eval_cap = m->eval_cap ? 2 * m->eval_cap : 64;
            m->eval_step = reallocCheck(m->eval_step, sizeof(double) * (size_t)m->eval_cap);
            m->eval_acc = reallocCheck(m->eval_acc, sizeof(double) * (size_t)m->eval_cap);
        }
        m->eval_step[m->n_eval] = step, m->eval_acc[m->n_eval++] = acc;
        if (isfinite(loss)) r->final_loss = loss;
        if (isfinite(acc) && !(acc <= r->best_acc)) {
            r->best_acc = acc;
            cell_fields(v, "acc_", r->cell, r->cell_acc, &r->n_cells);
        }
        if (isfinite(acc) && acc >= SUMMARY_TARGET_ACC && r->steps_to_target < 0) {
            r->steps_to_target = (long)step;
            if (step == 0) r->minutes_to_target = 0;
            else if (m->n_train) r->minutes_to_target = (m->ms_total + (step - m->prev_train_step) * m->last_ms) / 60000.0;
        }
    }
}

typedef struct {
    long n, cap;
    double *step, *S, *S_recall, *ans_share, *ans_hit;
    int *layer;
    double *cell_S;  // [cap * SUMMARY_MAX_CELLS] S_recall per cell (NAN: none)
    int n_cells;
    char cell[SUMMARY_MAX_CELLS][24];
} SparsityScan;

static void sparsity_record(const JsonValue *v, void *ctx) {
    SparsityScan *s = ctx;
    double step = num(v, "step"), layer = num(v, "layer");
    if (!isfinite(step) || !(layer >= 0 && layer < 4096)) return;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->step = reallocCheck(s->step, sizeof(double) * (size_t)s->cap);
        s->S = reallocCheck(s->S, sizeof(double) * (size_t)s->cap);
        s->S_recall = reallocCheck(s->S_recall, sizeof(double) * (size_t)s->cap);
        s->layer = reallocCheck(s->layer, sizeof(int) * (size_t)s->cap);
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
    // behind a short convolution the answer window's share and hit (docs/sparsity.md#where-the-weight-lands)
    double ws = num(v, "ans_window_share"), wh = num(v, "ans_window_hit");
    s->ans_share[s->n] = isfinite(ws) ? ws : num(v, "ans_share");
    s->ans_hit[s->n] = isfinite(wh) ? wh : num(v, "ans_hit");
    s->step[s->n] = step;
    s->S[s->n] = num(v, "S");  // null (no rows) reads as NAN
    s->S_recall[s->n] = num(v, "S_recall");
    s->layer[s->n] = (int)layer;
    s->n++;
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
    double share[64] = {0}, cell_sum[SUMMARY_MAX_CELLS] = {0};
    int n[64] = {0}, cell_n[SUMMARY_MAX_CELLS] = {0}, best = -1;
    for (long i = 0; i < s->n; i++)
        if (s->step[i] == step && s->layer[i] < 64 && isfinite(s->ans_share[i])) share[s->layer[i]] += s->ans_share[i], n[s->layer[i]]++;
    for (int l = 0; l < 64; l++)
        if (n[l] && (best < 0 || share[l] / n[l] > share[best] / n[best])) best = l;
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
                if (isfinite(s->cell_S[i * SUMMARY_MAX_CELLS + c])) cell_sum[c] += s->cell_S[i * SUMMARY_MAX_CELLS + c], cell_n[c]++;
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
    if (for_each_record(path, sparsity_record, &s) != 0 || s.n == 0) goto done;
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
    MetricsScan m = {.r = r};
    if (for_each_record(path, metrics_record, &m) != 0) {
        r->status = RUN_MISSING;
        return;
    }
    r->has_metrics = 1;
    r->status = m.done_last ? RUN_DONE : RUN_PARTIAL;
    r->capped_improving = m.done_last && !strcmp(m.reason, "steps") && still_improving(&m);
    free(m.eval_step);
    free(m.eval_acc);
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

int run_finished(const char *dir) {
    char path[1200];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    size_t len;
    char *text = read_file_text(path, &len);
    if (!text) return 0;
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' ')) len--;
    size_t start = len;
    while (start > 0 && text[start - 1] != '\n') start--;
    char err[160];
    JsonValue *v = len > start ? json_parse(text + start, len - start, err, sizeof err) : NULL;
    const char *type = v && v->type == JSON_OBJECT ? str(v, "type") : NULL;
    int done = type && !strcmp(type, "done");
    json_free(v);
    free(text);
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
