#include "core/runlog.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"

// --- the table ---------------------------------------------------------------------------------

static const char *const g_type_names[] = {
#define RUNLOG_NAME(id, name, files, when) name,
    RUNLOG_TYPES(RUNLOG_NAME)
#undef RUNLOG_NAME
};

static const RunlogField g_fields[] = {
#define RUNLOG_FIELD(type, name, kind, meaning) {RUNLOG_##type, name, RF_##kind, meaning},
    RUNLOG_FIELDS(RUNLOG_FIELD)
#undef RUNLOG_FIELD
};

const char *runlog_type_name(RunlogType t) { return t < RUNLOG_N_TYPES ? g_type_names[t] : "unknown"; }

RunlogType runlog_type_of(const char *name) {
    for (int t = 0; t < RUNLOG_N_TYPES; t++)
        if (!strcmp(g_type_names[t], name)) return (RunlogType)t;
    return RUNLOG_UNKNOWN;
}

const RunlogField *runlog_fields(int *n) {
    *n = (int)(sizeof g_fields / sizeof g_fields[0]);
    return g_fields;
}

// "acc_kv4_L64" is an instance of "acc_kv<K>_L<L>": the prefix before "kv<K>", then kv, digits, _L,
// digits and nothing more.
static int is_cell_instance(const char *pattern, const char *name) {
    const char *hole = strstr(pattern, "kv<K>_L<L>");
    if (!hole) return 0;
    size_t k = (size_t)(hole - pattern);
    if (strncmp(pattern, name, k) || strncmp(name + k, "kv", 2)) return 0;
    const char *p = name + k + 2;
    if (*p < '0' || *p > '9') return 0;
    while (*p >= '0' && *p <= '9') p++;
    if (strncmp(p, "_L", 2)) return 0;
    p += 2;
    if (*p < '0' || *p > '9') return 0;
    while (*p >= '0' && *p <= '9') p++;
    return *p == 0;
}

const RunlogField *runlog_field(RunlogType t, const char *name) {
    for (size_t i = 0; i < sizeof g_fields / sizeof g_fields[0]; i++)
        if (g_fields[i].type == t && (!strcmp(g_fields[i].name, name) || is_cell_instance(g_fields[i].name, name)))
            return &g_fields[i];
    return NULL;
}

// --- writing -----------------------------------------------------------------------------------

static void field(RunlogLine *w, const char *name) {
    if (!runlog_field(w->type, name))
        die("internal error: a %s record has no field '%s' (core/runlog.h declares the fields)",
            runlog_type_name(w->type), name);
    fprintf(w->f, ",\"%s\":", name);
}

void runlog_begin(RunlogLine *w, FILE *f, RunlogType type, long step) {
    w->f = f;
    w->type = type;
    fprintf(f, "{\"type\":\"%s\",\"step\":%ld", runlog_type_name(type), step);
}

void runlog_put_int(RunlogLine *w, const char *name, long v) {
    field(w, name);
    fprintf(w->f, "%ld", v);
}

void runlog_put_num(RunlogLine *w, const char *name, double v) {
    if (!isfinite(v)) return;
    field(w, name);
    fprintf(w->f, "%.9g", v);
}

void runlog_put_num_or_null(RunlogLine *w, const char *name, double v) {
    field(w, name);
    if (isfinite(v)) fprintf(w->f, "%.9g", v);
    else fputs("null", w->f);
}

void runlog_put_num_fmt(RunlogLine *w, const char *name, const char *fmt, double v) {
    if (!isfinite(v)) return;
    field(w, name);
    fprintf(w->f, fmt, v);
}

void runlog_put_str(RunlogLine *w, const char *name, const char *s) {
    field(w, name);
    json_write_string(w->f, s);
}

void runlog_put_bytes(RunlogLine *w, const char *name, const uint8_t *p, size_t n) {
    field(w, name);
    json_write_bytes(w->f, p, n);
}

void runlog_put_ints(RunlogLine *w, const char *name, const size_t *v, int n) {
    field(w, name);
    fputc('[', w->f);
    for (int i = 0; i < n; i++) fprintf(w->f, "%s%zu", i ? "," : "", v[i]);
    fputc(']', w->f);
}

void runlog_put_nums(RunlogLine *w, const char *name, const double *v, int n) {
    field(w, name);
    fputc('[', w->f);
    for (int i = 0; i < n; i++) {
        if (i) fputc(',', w->f);
        if (isfinite(v[i])) fprintf(w->f, "%.6g", v[i]);
        else fputs("null", w->f);
    }
    fputc(']', w->f);
}

void runlog_put_strs(RunlogLine *w, const char *name, const char *const *v, int n) {
    field(w, name);
    fputc('[', w->f);
    for (int i = 0; i < n; i++) {
        if (i) fputc(',', w->f);
        json_write_string(w->f, v[i]);
    }
    fputc(']', w->f);
}

void runlog_end(RunlogLine *w) { fputs("}\n", w->f); }

void runlog_write_run(FILE *f, const RunlogRun *r) {
    RunlogLine w;
    runlog_begin(&w, f, RUNLOG_RUN, 0);
    runlog_put_str(&w, "mixer", r->mixer);
    runlog_put_int(&w, "protocol", RUNLOG_PROTOCOL);
    runlog_put_int(&w, "params", (long)r->params);
    runlog_put_num_fmt(&w, "state_floats", "%.0f", r->state_floats);
    runlog_put_ints(&w, "state_floats_by_layer", r->state_floats_by_layer, r->n_layers);
    if (r->test_cells) runlog_put_strs(&w, "test_cells", r->test_cells, r->n_test_cells);
    if (r->commit) runlog_put_str(&w, "commit", r->commit);
    if (r->compiler) runlog_put_str(&w, "compiler", r->compiler);
    if (r->cpu) runlog_put_str(&w, "cpu", r->cpu);
    if (r->gemm) runlog_put_str(&w, "gemm", r->gemm);
    runlog_end(&w);
}

void runlog_write_train(FILE *f, const RunlogTrain *r) {
    RunlogLine w;
    runlog_begin(&w, f, RUNLOG_TRAIN, r->step);
    // always written, non-finite too (a diverging run's last records say so)
    fprintf(f, ",\"loss\":%.9g,\"acc\":%.9g,\"lr\":%.9g,\"grad_norm\":%.9g", r->loss, r->acc, r->lr, r->grad_norm);
    fprintf(f, ",\"tok_per_s\":%.0f,\"ms_per_step\":%.3f", r->tok_per_s, r->ms_per_step);
    if (r->focus) {
        runlog_put_num_or_null(&w, "focus_penalty", r->focus_penalty);
        runlog_put_num_or_null(&w, "answer_supervision", r->answer_supervision);
        runlog_put_num_or_null(&w, "S_recall", r->S_recall);
        runlog_put_num_or_null(&w, "answer_ce", r->answer_ce);
    }
    runlog_end(&w);
}

void runlog_write_eval(FILE *f, const RunlogEval *r) {
    RunlogLine w;
    runlog_begin(&w, f, RUNLOG_EVAL, r->step);
    runlog_put_str(&w, "split", r->split ? r->split : "val");
    if (r->selected) runlog_put_str(&w, "selected", r->selected);
    fprintf(f, ",\"loss\":%.9g,\"acc\":%.9g", r->loss, r->acc);
    for (int c = 0; c < r->n_cells; c++) {
        char name[64];
        snprintf(name, sizeof name, "acc_%s", r->cell_names[c]);
        field(&w, name);
        fprintf(f, "%.9g", r->cell_acc[c]);
    }
    if (r->checkpoint) runlog_put_str(&w, "checkpoint", r->checkpoint);
    if (r->mixer) runlog_put_str(&w, "mixer", r->mixer);
    if (r->sequences >= 0) runlog_put_int(&w, "sequences", r->sequences);
    if (r->options && *r->options) runlog_put_str(&w, "options", r->options);
    if (r->examples > 0) {
        runlog_put_int(&w, "examples", r->examples);
        runlog_put_num(&w, "acc_lo", r->acc_lo);
        runlog_put_num(&w, "acc_hi", r->acc_hi);
        if (r->examples_by_cell) runlog_put_ints(&w, "examples_by_cell", r->examples_by_cell, r->n_cells);
        runlog_put_ints(&w, "example_queries", r->example_queries, (int)r->examples);
        runlog_put_ints(&w, "example_correct", r->example_correct, (int)r->examples);
    }
    runlog_end(&w);
}

void runlog_write_nan(FILE *f, long step, const char *where, const char *action, long skipped) {
    RunlogLine w;
    runlog_begin(&w, f, RUNLOG_NONFINITE, step);
    runlog_put_str(&w, "where", where);
    runlog_put_str(&w, "action", action);
    if (skipped >= 0) runlog_put_int(&w, "skipped", skipped);
    runlog_end(&w);
}

void runlog_write_done(FILE *f, long step, const char *reason) {
    RunlogLine w;
    runlog_begin(&w, f, RUNLOG_DONE, step);
    runlog_put_str(&w, "reason", reason);
    runlog_end(&w);
}

void runlog_write_sample(FILE *f, long step, const uint8_t *prompt, size_t n_prompt, const uint8_t *text, size_t n_text) {
    RunlogLine w;
    runlog_begin(&w, f, RUNLOG_SAMPLE, step);
    runlog_put_bytes(&w, "prompt", prompt, n_prompt);
    runlog_put_bytes(&w, "text", text, n_text);
    runlog_end(&w);
}

const char *runlog_done_regex(void) { return "\"type\": *\"done\""; }

// --- reading -----------------------------------------------------------------------------------

static void fill_record(RunlogRecord *r, const JsonValue *v, const char *line, size_t len) {
    const JsonValue *t = json_get(v, "type"), *o = json_get(v, "options"), *sp = json_get(v, "split");
    r->obj = v;
    r->line = line;
    r->len = len;
    r->type = t && t->type == JSON_STRING ? runlog_type_of(t->string)
        : json_get(v, "layer")            ? RUNLOG_SPARSITY  // the trainer's sparsity.jsonl wrote no type before
                                          : RUNLOG_UNKNOWN;
    r->step = runlog_int(r, "step", -1);  // a step beyond long (1e300) is no step: never cast out of range
    r->layer = (int)runlog_int(r, "layer", -1);
    r->head = (int)runlog_int(r, "head", -1);
    r->options = o && o->type == JSON_STRING ? o->string : "";
    r->split = sp && sp->type == JSON_STRING ? sp->string : "val";
}

void runlog_each_text(const char *text, size_t len, RunlogFn fn, void *ctx) {
    char err[160];
    for (size_t pos = 0; pos < len;) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        if (!nl) break;  // a torn last line: its writer was stopped mid-record
        size_t end = (size_t)(nl - text);
        if (end > pos) {
            JsonValue *v = json_parse(text + pos, end - pos, err, sizeof err);
            int stop = 0;
            if (v && v->type == JSON_OBJECT && json_get(v, "step")) {
                RunlogRecord r;
                fill_record(&r, v, text + pos, end - pos);
                double step = runlog_num(&r, "step");
                if (isfinite(step) && fabs(step) < 9e18) stop = fn(&r, ctx);
            }
            json_free(v);
            if (stop) return;
        }
        pos = end + 1;
    }
}

int runlog_each(const char *path, RunlogFn fn, void *ctx) {
    size_t len;
    char *text = read_file_text(path, &len);
    if (!text) return -1;
    runlog_each_text(text, len, fn, ctx);
    free(text);
    return 0;
}

const JsonValue *runlog_get(const RunlogRecord *r, const char *name) { return json_get(r->obj, name); }

double runlog_num(const RunlogRecord *r, const char *name) { return json_number(r->obj, name); }

const char *runlog_str(const RunlogRecord *r, const char *name) {
    const JsonValue *v = json_get(r->obj, name);
    return v && v->type == JSON_STRING ? v->string : NULL;
}

long runlog_int(const RunlogRecord *r, const char *name, long dflt) {
    double v = runlog_num(r, name);
    return isfinite(v) && fabs(v) < 9e18 ? (long)v : dflt;
}

int runlog_same_key(const RunlogRecord *a, const RunlogRecord *b) {
    return a->type == b->type && a->step == b->step && a->layer == b->layer && a->head == b->head &&
        !strcmp(a->split, b->split) && !strcmp(a->options, b->options);
}

// --- merging -----------------------------------------------------------------------------------

typedef struct {
    long step;
    int order;  // old records first, then fresh, each in file order
    int drop;
    RunlogType type;
    int layer, head;
    const char *split, *options;  // the series (pointers into the records' parsed values: see below)
    const char *line;
    size_t len;
} MergeLine;

typedef struct {
    MergeLine *v;
    int n, cap, fresh_from;
} MergeList;

// The split and options are copied into one allocation ("split\0options"): the parsed record is
// freed after the callback. Compared apart, never joined: "val x" + "" is not "val" + "x".
static int collect_line(const RunlogRecord *r, void *ctx) {
    MergeList *m = ctx;
    if (m->n == m->cap) m->v = reallocCheck(m->v, sizeof(MergeLine) * (size_t)(m->cap = m->cap ? 2 * m->cap : 256));
    size_t ns = strlen(r->split) + 1, no = strlen(r->options) + 1;
    char *series = mallocCheck(ns + no);
    memcpy(series, r->split, ns);
    memcpy(series + ns, r->options, no);
    m->v[m->n] = (MergeLine){r->step, m->n, 0, r->type, r->layer, r->head, series, series + ns, r->line, r->len};
    m->n++;
    return 0;
}

static int cmp_merge(const void *a, const void *b) {
    const MergeLine *x = a, *y = b;
    if (x->step != y->step) return (x->step > y->step) - (x->step < y->step);
    return (x->order > y->order) - (x->order < y->order);
}

void runlog_merge_text(const char *old, size_t old_len, const char *fresh, size_t len, RunlogReplace replace, FILE *out) {
    MergeList m = {0};
    // A hand-edited file may lack its last newline: its last line is a record still when it parses
    // whole (a line cut by a killed appender cannot: its object is not closed), not dropped.
    char *own = NULL;
    if (old_len && old[old_len - 1] != '\n') {
        own = mallocCheck(old_len + 1);
        memcpy(own, old, old_len);
        own[old_len++] = '\n';
        old = own;
    }
    if (old) runlog_each_text(old, old_len, collect_line, &m);
    m.fresh_from = m.n;
    runlog_each_text(fresh, len, collect_line, &m);
    for (int i = 0; i < m.fresh_from; i++)
        for (int j = m.fresh_from; j < m.n && !m.v[i].drop; j++) {
            const MergeLine *a = &m.v[i], *b = &m.v[j];
            int same_series = !strcmp(a->split, b->split) && !strcmp(a->options, b->options);
            int same_key =
                same_series && a->type == b->type && a->step == b->step && a->layer == b->layer && a->head == b->head;
            m.v[i].drop = replace == RUNLOG_SAME_SERIES ? same_series : same_key;
        }
    if (m.n) qsort(m.v, (size_t)m.n, sizeof *m.v, cmp_merge);
    for (int i = 0; i < m.n; i++)
        if (!m.v[i].drop) fprintf(out, "%.*s\n", (int)m.v[i].len, m.v[i].line);
    for (int i = 0; i < m.n; i++) free((char *)m.v[i].split);
    free(m.v);
    free(own);
}

int runlog_merge(const char *path, const char *fresh, size_t len, RunlogReplace replace, char *err, size_t errlen) {
    // The read, the merge and the rename under the file's lock (core/io.h): a second writer
    // merging into the same file waits, then reads this one's records, so neither loses any.
    int lock = file_lock(path);
    if (lock < 0) {
        int e = errno;
        if (err && errlen) snprintf(err, errlen, "%s.lock: cannot open the lock file (%s)", path, strerror(e));
        errno = e;
        return -1;
    }
    size_t old_len = 0;
    char *old = read_file_text(path, &old_len);
    AtomicFile af;
    int rc = atomic_open(&af, path, err, errlen) != 0 ? -1 : 0;
    if (rc == 0) {
        runlog_merge_text(old, old ? old_len : 0, fresh, len, replace, af.f);
        rc = atomic_commit(&af, err, errlen) != 0 ? -2 : 0;
    }
    int e = errno;
    free(old);
    file_unlock(lock);
    errno = e;
    return rc;
}
