#include "eval/tensorboard.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "eval/derived.h"

// (the last four only in a run with focus_penalty or answer_supervision: model/focus.h)
static const char *const g_train_fields[] = {
    "loss", "acc", "lr", "grad_norm", "tok_per_s", "focus_penalty", "answer_supervision", "S_recall", "answer_ce"};

static int emit(const char *tag, double v, TbScalarFn fn, void *ctx) {
    if (!isfinite(v)) return 0;  // null or absent in the record: nothing to draw
    fn(tag, v, ctx);
    return 1;
}

// An intervention's scalars: intervention/<kind[:strength]>[/<other options>]/L<l>[_H<h>]/<field>,
// the options as the record's key writes them (rows=query, the default, left out).
static int intervention_scalars(const RunlogRecord *r, TbScalarFn fn, void *ctx) {
    static const char *const fields[] = {"acc", "loss", "S_recall", "eff_tokens_recall"};
    char what[120] = "", where[32], tag[200];
    const char *o = r->options;
    if (!strncmp(o, "intervene=", 10)) o += 10;
    size_t w = 0;
    for (const char *p = o; *p && w + 1 < sizeof what;) {  // words joined by '/', rows=query dropped
        size_t len = strcspn(p, " ");
        if (!(len == 10 && !strncmp(p, "rows=query", 10)))
            w += (size_t)snprintf(what + w, sizeof what - w, "%s%.*s", w ? "/" : "", (int)len, p);
        p += len;
        while (*p == ' ') p++;
    }
    if (w >= sizeof what) w = sizeof what - 1;
    if (r->layer < 0) snprintf(where, sizeof where, "all");
    else if (r->head < 0) snprintf(where, sizeof where, "L%d", r->layer);
    else snprintf(where, sizeof where, "L%d_H%d", r->layer, r->head);
    int n = 0;
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        snprintf(tag, sizeof tag, "intervention/%s/%s/%s", what, where, fields[i]);
        n += emit(tag, runlog_num(r, fields[i]), fn, ctx);
    }
    return n;
}

int tb_record_scalars(const RunlogRecord *r, TbScalarFn fn, void *ctx) {
    if (r->type == RUNLOG_INTERVENTION) return intervention_scalars(r, fn, ctx);
    if (*r->options) return 0;  // another measurement than the run's own
    char tag[160];
    int n = 0;
    switch (r->type) {
    case RUNLOG_TRAIN:
        for (size_t i = 0; i < sizeof g_train_fields / sizeof *g_train_fields; i++) {
            snprintf(tag, sizeof tag, "train/%s", g_train_fields[i]);
            n += emit(tag, runlog_num(r, g_train_fields[i]), fn, ctx);
        }
        break;
    case RUNLOG_EVAL: {
        const char *split = strcmp(r->split, "test") ? "val" : "test";
        snprintf(tag, sizeof tag, "%s/loss", split);
        n += emit(tag, runlog_num(r, "loss"), fn, ctx);
        snprintf(tag, sizeof tag, "%s/acc", split);
        n += emit(tag, runlog_num(r, "acc"), fn, ctx);
        for (int i = 0; i < r->obj->n; i++) {  // the cells' accuracies, in the record's order
            const char *k = r->obj->keys[i];
            if (strncmp(k, "acc_kv", 6) || strlen(k) > 100) continue;  // acc_lo, acc_hi: the interval
            snprintf(tag, sizeof tag, "%s/%s", split, k);
            n += emit(tag, runlog_num(r, k), fn, ctx);
        }
        break;
    }
    case RUNLOG_SPARSITY: {
        if (r->layer < 0 || r->head < 0) break;
        const char *group = strcmp(r->split, "test") ? "sparsity" : "sparsity_test";
        snprintf(tag, sizeof tag, "%s/L%d_H%d/S_recall", group, r->layer, r->head);
        n += emit(tag, runlog_num(r, "S_recall"), fn, ctx);
        snprintf(tag, sizeof tag, "%s/L%d_H%d/answer_share", group, r->layer, r->head);
        n += emit(tag, derived_window_share(r), fn, ctx);
        static const char *const heads[] = {"S", "eff_tokens", "eff_tokens_recall"};  // the headline figures
        for (size_t i = 0; i < sizeof heads / sizeof *heads; i++) {
            snprintf(tag, sizeof tag, "%s/L%d_H%d/%s", group, r->layer, r->head, heads[i]);
            n += emit(tag, runlog_num(r, heads[i]), fn, ctx);
        }
        break;
    }
    default: break;
    }
    return n;
}

static void add_value(const char *tag, double v, void *ctx) { tfevents_add(ctx, tag, (float)v); }

static int add_record(const RunlogRecord *r, void *ctx) {
    TfEvents *w = ctx;
    tfevents_begin(w, r->step);
    tb_record_scalars(r, add_value, w);
    tfevents_end(w);  // writes nothing when the record had no scalar
    return 0;
}

// The records a writer would put in the log, rendered into memory (open_memstream), read back
// and written as events.
typedef struct {
    char *text;
    size_t len;
    FILE *f;
} Rendered;

static FILE *render_begin(Rendered *m) {
    m->text = NULL, m->len = 0;
    if (!(m->f = open_memstream(&m->text, &m->len))) die("tensorboard: cannot render a record in memory");
    return m->f;
}

static void render_end(Rendered *m, TfEvents *w) {
    if (fclose(m->f) != 0) die("tensorboard: cannot render a record in memory");
    runlog_each_text(m->text, m->len, add_record, w);
    free(m->text);
}

void tb_write_train(TfEvents *w, const RunlogTrain *rec) {
    Rendered m;
    runlog_write_train(render_begin(&m), rec);
    render_end(&m, w);
}

void tb_write_eval(TfEvents *w, long step, const ValStats *v, const char *split, const char *selected) {
    Rendered m;
    RunlogEval rec = {.sequences = -1, .split = split, .selected = selected};  // as the trainer writes it
    val_write_record(render_begin(&m), step, v, &rec);
    render_end(&m, w);
}

void tb_write_sparsity(TfEvents *w, long step, const char *mixer, const char *split, const SparsityResult *r) {
    Rendered m;
    sparsity_write_records(render_begin(&m), step, mixer, split, NULL, r);
    render_end(&m, w);
}

// ./evaluate's mirror: every record of run_dir/eval.jsonl and run_dir/intervention.jsonl, in
// one new event file of run_dir/evaluate/ (TensorBoard shows it as the run's "evaluate" run beside
// the trainer's); the older files there are removed once it is written, so the folder always holds
// the whole of the two logs once. 0, or -1 with a message in err.
static int add_file(const char *path, TfEvents *w) {
    if (!path_exists(path)) return 0;
    return runlog_each(path, add_record, w) < 0 ? -1 : 0;
}

int tb_mirror_evaluate(const char *run_dir, char *err, size_t errlen) {
    char dir[1200], path[1400];
    snprintf(dir, sizeof dir, "%s/evaluate", run_dir);
    if (mkdir_p(dir) != 0) return snprintf(err, errlen, "%s: cannot create the folder", dir), -1;
    // one ./evaluate at a time writes the folder (two beside each other would remove each other's
    // file); the lock file's name has no "tfevents" in it, so TensorBoard passes it over
    snprintf(path, sizeof path, "%s/mirror", dir);
    int lock = file_lock(path);
    char **old = NULL;
    int n_old = tfevents_list_dir(dir, &old);
    if (n_old < 0) n_old = 0;
    TfEvents w;
    if (tfevents_open(&w, dir, 0) != 0) {
        for (int i = 0; i < n_old; i++) free(old[i]);
        free(old);
        if (lock >= 0) file_unlock(lock);
        return snprintf(err, errlen, "%s: cannot create an event file", dir), -1;
    }
    snprintf(path, sizeof path, "%s/eval.jsonl", run_dir);
    int rc = add_file(path, &w);
    snprintf(path, sizeof path, "%s/intervention.jsonl", run_dir);
    if (rc == 0) rc = add_file(path, &w);
    if (fflush(w.f) != 0 || ferror(w.f)) rc = -1;
    if (tfevents_close(&w) != 0) rc = -1;
    if (rc != 0) {
        snprintf(err, errlen, "%s: could not write the event file %s", dir, w.name);
        remove(w.path);
    } else
        for (int i = 0; i < n_old; i++)
            if (strcmp(old[i], w.name)) {
                snprintf(path, sizeof path, "%s/%s", dir, old[i]);
                remove(path);
            }
    for (int i = 0; i < n_old; i++) free(old[i]);
    free(old);
    if (lock >= 0) file_unlock(lock);
    return rc;
}
