#include "ablation/summary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/json.h"
#include "eval/svg_plot.h"

// --- reading a run folder --------------------------------------------------------------------------

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

// --- tables ----------------------------------------------------------------------------------------

typedef struct {
    double sum, sum2;
    int n;
} Stat;

static void stat_add(Stat *s, double v) {
    if (!isfinite(v)) return;
    s->sum += v, s->sum2 += v * v, s->n++;
}

static double stat_mean(const Stat *s) { return s->n ? s->sum / s->n : NAN; }

// Sample standard deviation (NAN below two values).
static double stat_sd(const Stat *s) {
    if (s->n < 2) return NAN;
    double var = (s->sum2 - s->sum * s->sum / s->n) / (s->n - 1);
    return var > 0 ? sqrt(var) : 0;
}

static void fmt(char *b, size_t n, const char *f, double v) {
    if (isfinite(v)) snprintf(b, n, f, v);
    else snprintf(b, n, "-");
}

// "mean ± sd" (just the mean for one value, "-" for none).
static void fmt_stat(char *b, size_t n, const char *f, const Stat *s) {
    char m[32], d[32];
    fmt(m, sizeof m, f, stat_mean(s));
    if (s->n < 2) snprintf(b, n, "%s", m);
    else {
        fmt(d, sizeof d, f, stat_sd(s));
        snprintf(b, n, "%s ± %s", m, d);
    }
}

static void md_cell(FILE *f, const char *s) {
    fputs(" ", f);
    for (; *s; s++) {
        if (*s == '|') fputc('\\', f);
        fputc(*s, f);
    }
    fputs(" |", f);
}

static void csv_cell(FILE *f, const char *s, int first) {
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

static void csv_num(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, ",%.8g", v);
    else fputc(',', f);
}

static const char *status_text(const RunSummary *r, char *b, size_t n) {
    static const char *names[] = {"missing", "partial", "done", "failed", "not selected"};
    if (r->status == RUN_FAILED) snprintf(b, n, "failed (exit %d)", r->exit_code);
    else snprintf(b, n, "%s%s%s", names[r->status], r->capped_improving ? " (step cap, still improving)" : "",
                  r->selected == SEL_CHOSEN ? ", chosen" : r->selected == SEL_NOT_CHOSEN ? ", not chosen" : "");
    return b;
}

// Layer values "0.213 0.651".
static void fmt_layers(char *b, size_t n, const double *v, int L) {
    size_t k = 0;
    b[0] = 0;
    if (L == 0) snprintf(b, n, "-");
    for (int l = 0; l < L && k + 16 < n; l++) {
        char c[24];
        fmt(c, sizeof c, "%.3f", v[l]);
        k += (size_t)snprintf(b + k, n - k, "%s%s", l ? " " : "", c);
    }
}

// A value of an entry as a table shows it: a base by its file name without .conf.
static void entry_cell(const SweepFile *sw, int point, int e, char *b, size_t n) {
    const char *v = sweep_value(sw, point, e);
    if (e == sw->base_entry) {
        const char *slash = strrchr(v, '/');
        if (slash) v = slash + 1;
        size_t len = strlen(v);
        if (len > 5 && !strcmp(v + len - 5, ".conf")) len -= 5;
        snprintf(b, n, "%.*s", (int)len, v);
    } else snprintf(b, n, "%s", v);
}

static int key_in(const char *key, char **list, int n) {
    for (int i = 0; i < n; i++)
        if (!strcmp(list[i], key)) return 1;
    return 0;
}

// What the summary works with, beside the sweep and the runs.
typedef struct {
    const SweepFile *sw;
    Config *configs;
    const RunSummary *runs;
    int *varied;     // entries that vary, in file order
    int n_varied;
    int mixer_col;   // 1: the CSV files add a mixer column (mixer is not a varied key of the file)
    int mixer_md;    // 1: the markdown tables add one (mixer does not name the points)
    int *grouped;    // [n_dims] 1: the dim is averaged over (its keys are in group_over)
    int *group_of;   // [n_points] index into groups
    int *groups;     // representative point of each group (the point with grouped dims at 0)
    int n_groups;
    int max_layers;
    char cells[SUMMARY_MAX_CELLS][24];  // the MQAR test cells of the runs (first seen order)
    int n_cells;
} Summary;

// Index of the cell named `name` in the run's cells, -1 when it has none.
static int run_cell(const RunSummary *r, const char *name) {
    for (int c = 0; c < r->n_cells; c++)
        if (!strcmp(r->cell[c], name)) return c;
    return -1;
}

static const char *cfg_value(const Summary *s, int point, const char *key) {
    int i = config_index(&s->configs[point], key);
    return i < 0 ? "" : s->configs[point].value[i];
}

// The point with the choices of the dims where keep[d] == 0 set to the first value.
static int project(const SweepFile *sw, int point, const int *keep) {
    int p = point;
    for (int d = 0; d < sw->n_dims; d++)
        if (!keep[d]) p -= (int)((point / sw->dims[d].stride) % sw->dims[d].n_values * sw->dims[d].stride);
    return p;
}

static void summary_init(Summary *s, const SweepFile *sw, Config *configs, const RunSummary *runs) {
    memset(s, 0, sizeof *s);
    s->sw = sw, s->configs = configs, s->runs = runs;
    s->varied = mallocCheck(sizeof(int) * (size_t)(sw->n_entries + 1));
    s->mixer_col = s->mixer_md = 1;
    for (int e = 0; e < sw->n_entries; e++)
        if (sweep_entry_varies(sw, e)) {
            s->varied[s->n_varied++] = e;
            if (!strcmp(sw->entries[e].key, "mixer")) s->mixer_col = 0, s->mixer_md = !sw->entries[e].named;
        }
    s->grouped = callocCheck((size_t)sw->n_dims + 1, sizeof(int));
    int *keep = mallocCheck(sizeof(int) * (size_t)(sw->n_dims + 1));
    for (int d = 0; d < sw->n_dims; d++) {
        for (int k = 0; k < sw->dims[d].n_entries; k++)
            if (key_in(sw->entries[sw->dims[d].entries[k]].key, sw->group_over, sw->n_group_over)) s->grouped[d] = 1;
        keep[d] = !s->grouped[d];
    }
    s->group_of = mallocCheck(sizeof(int) * (size_t)sw->n_points);
    s->groups = mallocCheck(sizeof(int) * (size_t)sw->n_points);
    int *group_at = mallocCheck(sizeof(int) * (size_t)sw->n_points);  // representative -> group
    for (int i = 0; i < sw->n_points; i++) group_at[i] = -1;
    for (int i = 0; i < sw->n_points; i++) {
        int rep = project(sw, i, keep);
        if (group_at[rep] < 0) {
            group_at[rep] = s->n_groups;
            s->groups[s->n_groups++] = rep;
        }
        s->group_of[i] = group_at[rep];
        if (runs[i].n_layers > s->max_layers) s->max_layers = runs[i].n_layers;
        for (int c = 0; c < runs[i].n_cells; c++) {
            int known = 0;
            for (int k = 0; k < s->n_cells; k++) known |= !strcmp(s->cells[k], runs[i].cell[c]);
            if (!known && s->n_cells < SUMMARY_MAX_CELLS) memcpy(s->cells[s->n_cells++], runs[i].cell[c], 24);
        }
    }
    free(group_at);
    free(keep);
}

static void summary_free(Summary *s) {
    free(s->varied);
    free(s->grouped);
    free(s->group_of);
    free(s->groups);
}

// The metrics grouped over seeds: over the finished points of a group.
enum { G_LOSS, G_ACC, G_STEPS, G_MIN, G_SMIN, G_SMEAN, G_SRECALL, G_TOKS, G_RS, G_ANS, G_HIT, G_STATE, G_N };
static const char *g_group_metric[G_N] = {"final_val_loss", "best_acc", "steps_to_0.99", "minutes_to_0.99",
                                          "S_min", "S_mean", "S_recall_min", "tok_per_s",
                                          "recall_S", "recall_ans_share", "recall_ans_hit", "state_floats"};
static const char *g_group_fmt[G_N] = {"%.4f", "%.4f", "%.0f", "%.2f", "%.3f", "%.3f", "%.3f", "%.0f",
                                       "%.3f", "%.3f", "%.3f", "%.0f"};

// 1 when a point counts in the grouped table and figures: not a first-stage candidate the
// selection passed over, not a second-stage point it never ran.
static int counts(const RunSummary *r) { return r->status != RUN_NOT_SELECTED && r->selected != SEL_NOT_CHOSEN; }

typedef struct {
    int points, finished, reached, capped;  // capped: finished at the step cap while still improving
    Stat st[G_N];
} GroupStats;

static GroupStats group_stats(const Summary *s, int g) {
    GroupStats gs;
    memset(&gs, 0, sizeof gs);
    for (int i = 0; i < s->sw->n_points; i++) {
        if (s->group_of[i] != g) continue;
        const RunSummary *r = &s->runs[i];
        if (!counts(r)) continue;
        gs.points++;
        if (r->status != RUN_DONE) continue;
        gs.finished++;
        gs.reached += r->steps_to_target >= 0;
        gs.capped += r->capped_improving;
        stat_add(&gs.st[G_LOSS], r->final_loss);
        stat_add(&gs.st[G_ACC], r->best_acc);
        if (r->steps_to_target >= 0) stat_add(&gs.st[G_STEPS], (double)r->steps_to_target);
        stat_add(&gs.st[G_MIN], r->minutes_to_target);
        stat_add(&gs.st[G_SMIN], r->S_min_all);
        stat_add(&gs.st[G_SMEAN], r->S_mean_all);
        stat_add(&gs.st[G_SRECALL], r->S_recall_min_all);
        stat_add(&gs.st[G_TOKS], r->tok_per_s);
        stat_add(&gs.st[G_RS], r->recall_S);
        stat_add(&gs.st[G_ANS], r->recall_ans_share);
        stat_add(&gs.st[G_HIT], r->recall_ans_hit);
        stat_add(&gs.st[G_STATE], r->state_floats);
    }
    return gs;
}

static int grouping_matters(const Summary *s) { return s->n_groups < s->sw->n_points; }

// The varied entries a group table shows (not those grouped over).
static int group_column(const Summary *s, int e) { return !s->grouped[s->sw->entries[e].dim]; }

// The markdown tables show the keys that name the points (a zip partner of mixer is left out).
static int md_column(const Summary *s, int e) { return s->sw->entries[e].named; }

static void write_points_md(const Summary *s, FILE *f) {
    const SweepFile *sw = s->sw;
    char b[256], c[256];
    int cols = 0;
    fputs("|", f);
    for (int k = 0; k < s->n_varied; k++)
        if (md_column(s, s->varied[k])) md_cell(f, sw->entries[s->varied[k]].key), cols++;
    if (s->mixer_md) md_cell(f, "mixer");
    fputs(" status | steps | val loss | best acc | steps to 0.99 | min to 0.99 | S per layer | S min per layer |"
          " S_recall per layer | tok/s | state | recall layer: S_recall, answer share, argmax hit |\n|",
          f);
    for (int k = 0; k < cols + s->mixer_md + 12; k++) fputs("---|", f);
    fputc('\n', f);
    for (int i = 0; i < sw->n_points; i++) {
        const RunSummary *r = &s->runs[i];
        fputs("|", f);
        for (int k = 0; k < s->n_varied; k++)
            if (md_column(s, s->varied[k])) {
                entry_cell(sw, i, s->varied[k], b, sizeof b);
                md_cell(f, b);
            }
        if (s->mixer_md) md_cell(f, cfg_value(s, i, "mixer"));
        md_cell(f, status_text(r, b, sizeof b));
        snprintf(b, sizeof b, "%ld", r->step);
        md_cell(f, r->has_metrics ? b : "-");
        fmt(b, sizeof b, "%.4f", r->final_loss);
        md_cell(f, b);
        fmt(b, sizeof b, "%.4f", r->best_acc);
        md_cell(f, b);
        if (r->steps_to_target >= 0) snprintf(b, sizeof b, "%ld", r->steps_to_target);
        else snprintf(b, sizeof b, "%s", r->status == RUN_DONE ? "never" : "-");
        md_cell(f, b);
        fmt(b, sizeof b, "%.2f", r->minutes_to_target);
        md_cell(f, b);
        fmt_layers(c, sizeof c, r->S_mean, r->n_layers);
        md_cell(f, c);
        fmt_layers(c, sizeof c, r->S_min, r->n_layers);
        md_cell(f, c);
        fmt_layers(c, sizeof c, r->S_recall, r->n_layers);
        md_cell(f, c);
        fmt(b, sizeof b, "%.0f", r->tok_per_s);
        md_cell(f, b);
        fmt(b, sizeof b, "%.0f", r->state_floats);
        md_cell(f, b);
        if (r->recall_layer >= 0 && isfinite(r->recall_ans_share))
            snprintf(b, sizeof b, "L%d: %.3f, %.3f, %.3f", r->recall_layer, r->recall_S, r->recall_ans_share, r->recall_ans_hit);
        else snprintf(b, sizeof b, "-");
        md_cell(f, b);
        fputc('\n', f);
    }
}

static void write_groups_md(const Summary *s, FILE *f) {
    const SweepFile *sw = s->sw;
    char b[256];
    int cols = 0;
    fputs("|", f);
    for (int k = 0; k < s->n_varied; k++)
        if (group_column(s, s->varied[k]) && md_column(s, s->varied[k])) md_cell(f, sw->entries[s->varied[k]].key), cols++;
    if (s->mixer_md) md_cell(f, "mixer");
    fputs(" finished | reached 0.99 | capped, improving | val loss | best acc | steps to 0.99 | min to 0.99 |"
          " S min | S mean | S_recall min | tok/s | recall layer S_recall | answer share | argmax hit | state |\n|",
          f);
    for (int k = 0; k < cols + s->mixer_md + 15; k++) fputs("---|", f);
    fputc('\n', f);
    for (int g = 0; g < s->n_groups; g++) {
        int rep = s->groups[g];
        GroupStats gs = group_stats(s, g);
        if (!gs.points) continue;  // a two-stage sweep's value that was not chosen
        fputs("|", f);
        for (int k = 0; k < s->n_varied; k++)
            if (group_column(s, s->varied[k]) && md_column(s, s->varied[k])) {
                entry_cell(sw, rep, s->varied[k], b, sizeof b);
                md_cell(f, b);
            }
        if (s->mixer_md) md_cell(f, cfg_value(s, rep, "mixer"));
        snprintf(b, sizeof b, "%d/%d", gs.finished, gs.points);
        md_cell(f, b);
        snprintf(b, sizeof b, "%d/%d", gs.reached, gs.finished);
        md_cell(f, b);
        snprintf(b, sizeof b, "%d/%d", gs.capped, gs.finished);
        md_cell(f, b);
        for (int m = 0; m < G_N; m++) {
            fmt_stat(b, sizeof b, g_group_fmt[m], &gs.st[m]);
            md_cell(f, b);
        }
        fputc('\n', f);
    }
}

static void write_points_csv(const Summary *s, FILE *f) {
    const SweepFile *sw = s->sw;
    char b[256];
    csv_cell(f, "point", 1);
    for (int k = 0; k < s->n_varied; k++) csv_cell(f, sw->entries[s->varied[k]].key, 0);
    if (s->mixer_col) csv_cell(f, "mixer", 0);
    fputs(",status,exit_code,steps,final_val_loss,best_acc,reached_0.99,steps_to_0.99,minutes_to_0.99,minutes,"
          "tok_per_s,S_min,S_mean,S_recall_min,state_floats,recall_layer,recall_S,recall_ans_share,recall_ans_hit,"
          "capped_improving,selection",
          f);
    for (int l = 0; l < s->max_layers; l++) fprintf(f, ",S_mean_L%d,S_min_L%d,S_recall_L%d", l, l, l);
    for (int c = 0; c < s->n_cells; c++) fprintf(f, ",acc_%s,S_recall_%s", s->cells[c], s->cells[c]);
    fputc('\n', f);
    static const char *names[] = {"missing", "partial", "done", "failed", "not_selected"};
    static const char *sel[] = {"", "chosen", "not_chosen"};
    for (int i = 0; i < sw->n_points; i++) {
        const RunSummary *r = &s->runs[i];
        csv_cell(f, sw->point_names[i], 1);
        for (int k = 0; k < s->n_varied; k++) {
            entry_cell(sw, i, s->varied[k], b, sizeof b);
            csv_cell(f, b, 0);
        }
        if (s->mixer_col) csv_cell(f, cfg_value(s, i, "mixer"), 0);
        fprintf(f, ",%s,", names[r->status]);
        if (r->status == RUN_FAILED) fprintf(f, "%d", r->exit_code);
        if (!r->has_metrics) fputc(',', f);
        else fprintf(f, ",%ld", r->step);
        csv_num(f, r->final_loss);
        csv_num(f, r->best_acc);
        fprintf(f, ",%d", r->steps_to_target >= 0);
        if (r->steps_to_target >= 0) fprintf(f, ",%ld", r->steps_to_target);
        else fputc(',', f);
        csv_num(f, r->minutes_to_target);
        csv_num(f, r->minutes);
        csv_num(f, r->tok_per_s);
        csv_num(f, r->S_min_all);
        csv_num(f, r->S_mean_all);
        csv_num(f, r->S_recall_min_all);
        csv_num(f, r->state_floats);
        if (r->recall_layer >= 0) fprintf(f, ",%d", r->recall_layer);
        else fputc(',', f);
        csv_num(f, r->recall_S);
        csv_num(f, r->recall_ans_share);
        csv_num(f, r->recall_ans_hit);
        fprintf(f, ",%d,%s", r->capped_improving, sel[r->selected]);
        for (int l = 0; l < s->max_layers; l++) {
            csv_num(f, l < r->n_layers ? r->S_mean[l] : NAN);
            csv_num(f, l < r->n_layers ? r->S_min[l] : NAN);
            csv_num(f, l < r->n_layers ? r->S_recall[l] : NAN);
        }
        for (int c = 0; c < s->n_cells; c++) {
            int k = run_cell(r, s->cells[c]);
            csv_num(f, k >= 0 ? r->cell_acc[k] : NAN);
            csv_num(f, k >= 0 ? r->cell_S_recall[k] : NAN);
        }
        fputc('\n', f);
    }
}

static void write_groups_csv(const Summary *s, FILE *f) {
    const SweepFile *sw = s->sw;
    char b[256];
    int first = 1;
    for (int k = 0; k < s->n_varied; k++)
        if (group_column(s, s->varied[k])) csv_cell(f, sw->entries[s->varied[k]].key, first), first = 0;
    if (s->mixer_col) csv_cell(f, "mixer", first), first = 0;
    fprintf(f, "%spoints,finished,reached_0.99,capped_improving", first ? "" : ",");
    for (int m = 0; m < G_N; m++) fprintf(f, ",%s_mean,%s_sd", g_group_metric[m], g_group_metric[m]);
    fputc('\n', f);
    for (int g = 0; g < s->n_groups; g++) {
        int rep = s->groups[g];
        GroupStats gs = group_stats(s, g);
        if (!gs.points) continue;
        first = 1;
        for (int k = 0; k < s->n_varied; k++)
            if (group_column(s, s->varied[k])) {
                entry_cell(sw, rep, s->varied[k], b, sizeof b);
                csv_cell(f, b, first), first = 0;
            }
        if (s->mixer_col) csv_cell(f, cfg_value(s, rep, "mixer"), first), first = 0;
        fprintf(f, "%s%d,%d,%d,%d", first ? "" : ",", gs.points, gs.finished, gs.reached, gs.capped);
        for (int m = 0; m < G_N; m++) {
            csv_num(f, stat_mean(&gs.st[m]));
            csv_num(f, stat_sd(&gs.st[m]));
        }
        fputc('\n', f);
    }
}

// --- figures ---------------------------------------------------------------------------------------

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
        entry_cell(sw, point, e, v, sizeof v);
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
static int plot_accuracy(const Summary *s, const char *path, FILE *log) {
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
        char name[512];
        series_name(s, i, name, sizeof name);
        si[i] = intern(&series, &n_series, name);
    }
    // y[panel][series][x]: the best group mean
    double *y = mallocCheck(sizeof(double) * (size_t)n_panels * (size_t)n_series * (size_t)nx);
    for (long k = 0; k < (long)n_panels * n_series * nx; k++) y[k] = NAN;
    double *group_acc = mallocCheck(sizeof(double) * (size_t)s->n_groups);
    for (int g = 0; g < s->n_groups; g++) {
        GroupStats gs = group_stats(s, g);
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
        pp[p] = (PlotPanel){panels[p][0] ? panels[p] : sw->name, sw->plot_x, "best accuracy", &ps[p * n_series],
                            n_series, 0, 1.02, 0};
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
// (recall = 1): one panel per plot_series value, one line per point, a colour per group (the
// seeds of a group share it). 1 when drawn, 0: no data, -1: not written.
static int plot_sparsity(const Summary *s, const char *path, int recall, FILE *log) {
    const SweepFile *sw = s->sw;
    int np = sw->n_points, any = 0;
    for (int i = 0; i < np; i++)
        for (int k = 0; k < s->runs[i].n_curve && !any; k++)
            any = isfinite(recall ? s->runs[i].curve_recall[k] : s->runs[i].curve_S[k]);
    if (!any) return 0;
    int *label_dim = mallocCheck(sizeof(int) * (size_t)(sw->n_dims + 1));
    for (int d = 0; d < sw->n_dims; d++)
        label_dim[d] = !s->grouped[d] && !dim_has_key(sw, d, sw->plot_series) && !dim_determines(s, d, sw->plot_series);
    char **panels = NULL;
    int n_panels = 0;
    char name[512];
    for (int i = 0; i < np; i++) {
        series_name(s, i, name, sizeof name);
        intern(&panels, &n_panels, name);
    }
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
            series_name(s, i, name, sizeof name);
            if (strcmp(name, panels[p]) || r->n_curve == 0 || !counts(r)) continue;
            label_of(s, i, label_dim, 1, label, sizeof label);
            int before = n_groups, g = intern(&groups, &n_groups, label);
            labels[n] = n_groups > before && label[0] ? strdupCheck(label) : NULL;
            ps[n] = (PlotSeries){r->curve_step, recall ? r->curve_recall : r->curve_S, r->n_curve, labels[n], g, 0};
            n++;
        }
        free_strings(groups, n_groups);
        char title[600];
        snprintf(title, sizeof title, "%s = %s", sw->plot_series, panels[p]);
        pp[p] = (PlotPanel){strdupCheck(title), "step", recall ? "S_recall (recall layer)" : "S (most focused layer)",
                            &ps[first], n - first, 0, 1.02, 0};
    }
    char title[512];
    snprintf(title, sizeof title, "%s: %s (mean over heads) over steps", sw->name,
             recall ? "S_recall of the recall layer (the layer of the last step)" : "S of the most focused layer");
    int rc = svg_line_figure(path, title, pp, n_panels, n_panels < 3 ? n_panels : 3);
    if (rc == 0 && log) fprintf(log, "summary: %s\n", path);
    for (int p = 0; p < n_panels; p++) free((char *)pp[p].title);
    for (int i = 0; i < n; i++) free(labels[i]);
    free(labels);
    free(pp);
    free(ps);
    free(label_dim);
    free_strings(panels, n_panels);
    return rc ? -1 : 1;
}

// Zoology's Figure 3: best accuracy against the state a layer carries (log axis), a line per
// plot_series value (mixer) through its points in order of state size. 1 when drawn, 0: fewer than
// two runs with a state size and an accuracy, -1: not written.
static int plot_acc_vs_state(const Summary *s, const char *path, FILE *log) {
    const SweepFile *sw = s->sw;
    int np = sw->n_points, usable = 0;
    for (int i = 0; i < np; i++) usable += isfinite(s->runs[i].state_floats) && isfinite(s->runs[i].best_acc);
    if (usable < 2) return 0;
    char **series = NULL;
    int n_series = 0;
    char name[512];
    for (int i = 0; i < np; i++) {
        series_name(s, i, name, sizeof name);
        intern(&series, &n_series, name);
    }
    double *x = mallocCheck(sizeof(double) * (size_t)np), *y = mallocCheck(sizeof(double) * (size_t)np);
    PlotSeries *ps = callocCheck((size_t)n_series, sizeof(PlotSeries));
    int n = 0;
    for (int k = 0; k < n_series; k++) {
        int first = n;
        for (int i = 0; i < np; i++) {
            const RunSummary *r = &s->runs[i];
            series_name(s, i, name, sizeof name);
            if (strcmp(name, series[k]) || !isfinite(r->state_floats) ||
                !isfinite(r->best_acc) || !counts(r))
                continue;
            int j = n++;  // insertion by state size
            while (j > first && x[j - 1] > r->state_floats) x[j] = x[j - 1], y[j] = y[j - 1], j--;
            x[j] = r->state_floats, y[j] = r->best_acc;
        }
        ps[k] = (PlotSeries){x + first, y + first, n - first, series[k], k, k >= 10};  // past the palette: dashed
    }
    PlotPanel pp = {sw->name, "state per layer (floats carried between tokens)", "best accuracy (mean over cells)",
                    ps, n_series, 0, 1.02, 1};
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
static int plot_cells(const Summary *s, const char *path, int what, FILE *log) {
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
        series_name(s, i, name, sizeof name);
        intern(&series, &n_series, name);
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
        series_name(s, i, name, sizeof name);
        int si = intern(&series, &n_series, name);
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
        pp[p] = (PlotPanel){panels[p], "key-value pairs", what ? "S_recall (recall layer)" : "accuracy",
                            &ps[p * n_series], n_series, 0, 1.02, 1};
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

// --- the summary -----------------------------------------------------------------------------------

static FILE *open_out(const SweepFile *sw, const char *name, char *path, size_t n) {
    snprintf(path, n, "%s/%s", sw->out, name);
    return fopen(path, "w");
}

int sweep_write_summary(const SweepFile *sw, Config *configs, const RunSummary *runs, const char *selection_md,
                        FILE *log) {
    if (mkdir_p(sw->out) != 0) return -1;
    Summary s;
    summary_init(&s, sw, configs, runs);
    int count[5] = {0};
    for (int i = 0; i < sw->n_points; i++) count[runs[i].status]++;
    char path[1200], acc_svg[300];
    snprintf(acc_svg, sizeof acc_svg, "acc_vs_%s.svg", sw->plot_x);
    int rc = 0;

    FILE *f = open_out(sw, "summary.csv", path, sizeof path);
    if (!f) return summary_free(&s), -1;
    write_points_csv(&s, f);
    rc |= fclose(f);
    if (log) fprintf(log, "summary: %s\n", path);
    snprintf(path, sizeof path, "%s/summary_groups.csv", sw->out);
    remove(path);
    if (grouping_matters(&s)) {
        f = open_out(sw, "summary_groups.csv", path, sizeof path);
        if (!f) return summary_free(&s), -1;
        write_groups_csv(&s, f);
        rc |= fclose(f);
        if (log) fprintf(log, "summary: %s\n", path);
    }
    // a figure with nothing to draw is removed, so none is left from an earlier summary
    snprintf(path, sizeof path, "%s/%s", sw->out, acc_svg);
    int has_acc = plot_accuracy(&s, path, log);
    if (has_acc == 0) remove(path);
    snprintf(path, sizeof path, "%s/S_steps.svg", sw->out);
    int has_S = plot_sparsity(&s, path, 0, log);
    if (has_S == 0) remove(path);
    snprintf(path, sizeof path, "%s/S_recall_steps.svg", sw->out);
    int has_recall = plot_sparsity(&s, path, 1, log);
    if (has_recall == 0) remove(path);
    snprintf(path, sizeof path, "%s/acc_vs_state.svg", sw->out);
    int has_state = plot_acc_vs_state(&s, path, log);
    if (has_state == 0) remove(path);
    snprintf(path, sizeof path, "%s/acc_by_cell.svg", sw->out);
    int has_cells = plot_cells(&s, path, 0, log);
    if (has_cells == 0) remove(path);
    snprintf(path, sizeof path, "%s/S_recall_by_cell.svg", sw->out);
    int has_cell_S = plot_cells(&s, path, 1, log);
    if (has_cell_S == 0) remove(path);
    rc |= has_acc < 0 || has_S < 0 || has_recall < 0 || has_state < 0 || has_cells < 0 || has_cell_S < 0;
    has_acc = has_acc > 0, has_S = has_S > 0, has_recall = has_recall > 0, has_state = has_state > 0;
    has_cells = has_cells > 0, has_cell_S = has_cell_S > 0;

    f = open_out(sw, "summary.md", path, sizeof path);
    if (!f) return summary_free(&s), -1;
    fprintf(f, "# Sweep `%s`\n\n", sw->name);
    char unselected[64] = "";
    if (count[RUN_NOT_SELECTED]) snprintf(unselected, sizeof unselected, ", %d not selected", count[RUN_NOT_SELECTED]);
    fprintf(f, "`%s`: %d points (%d done, %d partial, %d failed, %d missing%s); run folders in `%s/`.\n\n", sw->file,
            sw->n_points, count[RUN_DONE], count[RUN_PARTIAL], count[RUN_FAILED], count[RUN_MISSING], unselected, sw->out);
    fprintf(f, "Accuracy is the validation accuracy of the eval records; \"to 0.99\" is the first evaluation at or "
               "above %.2f (minutes: training time from the train records, evaluations excluded). S is at the last "
               "sparsity step, per layer (mean and min over heads); S_recall per layer is the mean over heads.\n\n",
            SUMMARY_TARGET_ACC);
    if (grouping_matters(&s)) {
        fputs("## Grouped over", f);
        for (int k = 0; k < sw->n_group_over; k++) fprintf(f, "%s `%s`", k ? "," : "", sw->group_over[k]);
        fputs("\n\nMean ± sample standard deviation over the finished points of each group; S min, S mean and "
              "S_recall min are over every (layer, head) of a run at its end.\n\n",
              f);
        write_groups_md(&s, f);
        fputc('\n', f);
    }
    if (selection_md) fputs(selection_md, f);
    fputs("## Points\n\n", f);
    write_points_md(&s, f);
    if (has_acc || has_S || has_recall || has_state || has_cells || has_cell_S) fputs("\n## Figures\n\n", f);
    if (has_acc) fprintf(f, "![best accuracy vs %s](%s)\n\n", sw->plot_x, acc_svg);
    if (has_state) fputs("![accuracy vs state size](acc_vs_state.svg)\n\n", f);
    if (has_cells) fputs("![accuracy per test cell](acc_by_cell.svg)\n\n", f);
    if (has_cell_S) fputs("![S_recall per test cell](S_recall_by_cell.svg)\n\n", f);
    if (has_recall) fputs("![S_recall of the recall layer over steps](S_recall_steps.svg)\n\n", f);
    if (has_S) fputs("![S over steps](S_steps.svg)\n", f);
    rc |= fclose(f);
    if (log) fprintf(log, "summary: %s\n", path);
    summary_free(&s);
    return rc ? -1 : 0;
}
