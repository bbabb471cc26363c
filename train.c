// ./train CONFIG [key=value ...]: config -> model -> loop (data, forward, backward, step, log,
// eval, save) with everything written to out_dir (docs/design.md#programs, docs/outputs.md).
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "core/config.h"
#include "core/fpu.h"
#include "core/io.h"
#include "model/keys.h"
#include "core/progress.h"
#include "core/provenance.h"
#include "core/real.h"
#include "core/run_dir.h"
#include "core/runlog.h"
#include "core/tfevents.h"
#include "data/task.h"
#include "eval/sparsity.h"
#include "eval/tensorboard.h"
#include "eval/val_eval.h"
#include "trainer/checkpoint.h"
#include "trainer/llmc.h"
#include "trainer/memory.h"
#include "model/model.h"
#include "model/kernels/gemm_kernels.h"
#include "trainer/optim.h"
#include "trainer/step.h"
#include "model/sample.h"
#include "trainer/sample_every.h"

// The run-length and logging keys, read once.
typedef struct {
    long log_every, eval_every, sparsity_every, save_every, sample_every;
    double lr_max, min_lr, clip;
    long warmup;
    LrSchedule lr_schedule;
    double stop_at_acc;
    long stop_at_step;
    int nan_stop;  // nan_policy = stop
} Schedule;

// What one optimizer step measured.
typedef struct {
    double loss, acc, lr, norm;
    double dt, tok_s;  // seconds of the step, tokens per second
    int focus;         // focus_penalty or answer_supervision on: the terms (trainer/step.h)
    double focus_penalty, answer_supervision, S_recall, answer_ce;
} StepResult;

typedef struct {
    Config cfg;
    Schedule sch;
    Task task;
    Model *model;
    Optimizer opt;
    Loader loader;
    char out_dir[1024];
    FILE *metrics;
    FILE *sparsity;  // sparsity.jsonl, NULL when sparsity_every = 0 or no extractor
    TfEvents tb;     // tensorboard = true: the records as TensorBoard events (tb.f NULL: off)
    int B, T;
    long steps;                 // total optimizer steps of the run
    long skipped;               // steps whose update nan_policy = skip dropped
    long step;                  // steps done
    int32_t *inputs, *targets;  // [B, T]
    long start_step;            // step this process started from
    double t_start;             // now_seconds() at the start of the loop
    const char *finished;       // why the run is complete: "steps", "stop_at_acc", or NULL
    // the best validation step (the first of the highest accuracy): its weights, for the test set
    long best_step;  // -1: none yet
    double best_acc;
    real *best_params;      // [n_params] its weights (NULL: not known, e.g. resumed without best.safetensors)
    int best_has_sparsity;  // its sparsity records are in sparsity.jsonl
    int best_unsaved;       // keep_best: best.safetensors is to be written at this step
} Trainer;

static volatile sig_atomic_t g_interrupted;

static void on_signal(int sig) {
    g_interrupted = sig;
    progress_stop(sig);    // the loops inside a step (sampling) stop too
    signal(sig, SIG_DFL);  // a second signal ends the process at once
}

// Run by ./sweep, a ./train ends soon after its sweep does (kill -9 of the sweep must not leave
// orphans training): on Linux the sweep asks the kernel for SIGTERM (PR_SET_PDEATHSIG); elsewhere
// this check between steps sees the parent gone. ATTNSCOPE_PARENT_PID is set by ./sweep.
static pid_t g_parent_pid;

static int parent_gone(void) { return g_parent_pid > 0 && getppid() != g_parent_pid; }

// The usage: on stdout for --help, on stderr (exit 2) when there are no arguments.
static void usage(FILE *f) {
    Config c;
    config_init_all(&c);
    fprintf(f,
            "usage: ./train CONFIG [key=value ...]\n"
            "       ./train --help\n"
            "Trains the model a config describes; everything goes to out_dir. Keys (default):\n");
    config_print_help(&c, f);
    config_free(&c);
}

// out_dir, or checkpoints/<config file name without .conf> when empty.
static void resolve_out_dir(Trainer *tr, const char *config_path) {
    const char *o = cfg_str(&tr->cfg, "out_dir");
    if (*o) {
        snprintf(tr->out_dir, sizeof tr->out_dir, "%s", o);
        return;
    }
    const char *base = strrchr(config_path, '/');
    base = base ? base + 1 : config_path;
    char name[512];
    snprintf(name, sizeof name, "%s", base);
    char *dot = strrchr(name, '.');
    if (dot && !strcmp(dot, ".conf")) *dot = 0;
    snprintf(tr->out_dir, sizeof tr->out_dir, "checkpoints/%s", name);
    config_set(&tr->cfg, "out_dir", tr->out_dir, "default");
}

// The folder and each file written are checked first (core/run_dir.h): never into a run folder,
// never over the shards or checkpoint the run reads.
static void check_export_data(const Config *c, const char *dir) {
    run_dir_check_output_folder("export_data", dir, 0);
    RunDirInput in[] = {{"checkpoint", cfg_str(c, "init_from")}, {"tokenizer", cfg_str(c, "tokenizer")}};
    const char *names[] = {"train.bin", "test.bin"};
    for (int i = 0; i < 2; i++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        run_dir_check_output("export_data", path, in, 2);
    }
}

static void export_data(Trainer *tr, const char *dir) {
    if (mkdir_p(dir) != 0) die_input("export_data: cannot create folder '%s'", dir);
    char path[1200];
    snprintf(path, sizeof path, "%s/train.bin", dir);
    dataset_export(&tr->task.train, path);
    printf("wrote %s (%ld examples)\n", path, tr->task.train.n);
    snprintf(path, sizeof path, "%s/test.bin", dir);
    dataset_export(&tr->task.test, path);
    printf("wrote %s (%ld examples)\n", path, tr->task.test.n);
}

static Model *build_model(Trainer *tr) {
    const Config *c = &tr->cfg;
    ModelShape s = model_shape_from_config(c, tr->task.vocab_size);
    return model_create(&s, NULL, c, tr->B, tr->B * tr->task.targets_per_seq);  // mixers from c
}

// A log line that cannot be written (disk full) stops the run: the logs are part of its result.
static void flush_log(const Trainer *tr, FILE *f, const char *name) {
    if (fflush(f) != 0 || ferror(f)) die("%s/%s: write error (%s)", tr->out_dir, name, strerror(errno));
}

// --- checkpoints and resume ------------------------------------------------------------------

static TrainState train_state(const Trainer *tr) {
    TrainState ts = {tr->step,  tr->loader.pos,           tr->loader.seed,
                     tr->opt.t, tr->task.train.tok_vocab, tr->task.train.tok_id};
    return ts;
}

static void save_checkpoint(Trainer *tr) {
    if (cfg_int(&tr->cfg, "save_every") == 0) return;
    char name[64], path[1200], err[512];
    snprintf(name, sizeof name, "ckpt_%08ld.safetensors", tr->step);
    snprintf(path, sizeof path, "%s/%s", tr->out_dir, name);
    TrainState ts = train_state(tr);
    if (ckpt_save(path, tr->model, &tr->opt, &tr->cfg, &ts, err, sizeof err) != 0) {
        char *latest = run_dir_latest(tr->out_dir);
        die("%s: checkpoint not saved: %s (%s)", path, err,
            latest && path_exists(latest) ? "the previous checkpoint is intact" : "there is no earlier checkpoint");
    }
    if (run_dir_set_latest(tr->out_dir, name) != 0)
        die("%s/latest: cannot point it at %s (%s); the checkpoint itself is saved", tr->out_dir, name, strerror(errno));
    long keep = cfg_int(&tr->cfg, "keep_last");
    if (keep > 0) run_dir_prune(tr->out_dir, (int)keep);
}

// The checkpoint to continue from (allocated), or NULL for a fresh run; applies resume/overwrite.
static char *choose_resume(Trainer *tr) {
    const char *mode = cfg_str(&tr->cfg, "resume");
    if (!strcmp(mode, "never")) {
        if (run_dir_has_run(tr->out_dir)) {
            if (!cfg_bool(&tr->cfg, "overwrite"))
                die_input("out_dir: '%s' already holds a run; resume = auto continues it, overwrite = true replaces it",
                          tr->out_dir);
            run_dir_clear(tr->out_dir);
        }
        return NULL;
    }
    if (strcmp(mode, "auto")) {
        if (!path_exists(mode)) die_input("resume: '%s' does not exist (expected auto, never or a checkpoint)", mode);
        return strdupCheck(mode);
    }
    char *latest = run_dir_latest(tr->out_dir);
    if (latest && path_exists(latest)) return latest;
    free(latest);
    char **paths;
    long *steps;
    int n = run_dir_checkpoints(tr->out_dir, &paths, &steps);
    char *newest = n ? strdupCheck(paths[n - 1]) : NULL;
    run_dir_free_list(paths, steps, n);
    return newest;
}

// Refuses a checkpoint whose model shape or data differ from the config.
static void check_resume_config(Trainer *tr, const char *path) {
    // Before the configs are compared (an llm.c file's config is its shape and defaults, so the
    // comparison would name some key): such a file has weights but no optimizer state or step.
    if (llmc_is_model_file(path))
        die_input("resume: %s is an llm.c model file (weights only, no optimizer state): use it as init_from", path);
    Config saved;
    char err[512];
    if (ckpt_read_config(path, &saved, NULL, err, sizeof err) != 0) die_input("resume: %s: %s", path, err);
    const char *key = model_resume_difference(&tr->cfg, &saved);
    if (key)
        die_input("resume: %s: %s is '%s' in the checkpoint but '%s' now (only run-length, logging and path keys may change)",
                  path, key, cfg_str(&saved, key), cfg_str(&tr->cfg, key));
    config_free(&saved);
}

static void resume_from(Trainer *tr, const char *path) {
    check_resume_config(tr, path);
    TrainState ts;
    char err[512];
    if (ckpt_load(path, tr->model, &tr->opt, &ts, err, sizeof err) != 0) die_input("resume: %s: %s", path, err);
    tr->step = ts.step;
    tr->loader.pos = ts.data_pos;
    char p[1200];
    snprintf(p, sizeof p, "%s/metrics.jsonl", tr->out_dir);
    run_dir_truncate_jsonl(p, ts.step);  // records after the checkpoint are redone
    snprintf(p, sizeof p, "%s/sparsity.jsonl", tr->out_dir);
    run_dir_truncate_jsonl(p, ts.step);
    printf("resuming from %s (step %ld)\n", path, ts.step);
}

// What a resumed run's log says at its checkpoint's step: the accuracy of its eval record there
// (-1: none), and whether the log's last record is its done record.
typedef struct {
    long step;
    double acc;
    int done_last;
    int has_test;  // the log holds the test set's record (read at the end)
} LogAtStep;

static int log_at_step(const RunlogRecord *r, void *ctx) {
    LogAtStep *a = ctx;
    if (r->type == RUNLOG_EVAL && !*r->options && !strcmp(r->split, "test")) a->has_test = 1;
    if (r->type == RUNLOG_EVAL && r->step == a->step && !*r->options && !strcmp(r->split, "val"))
        a->acc = runlog_num(r, "acc");
    a->done_last = r->type == RUNLOG_DONE && r->step == a->step;
    return 0;
}

static void open_logs(Trainer *tr);
static void test_at_end(Trainer *tr);

static void print_complete(const Trainer *tr, long step, long steps, const char *reason, const char *resume) {
    if (!strcmp(reason, "steps"))
        printf("%s: the run is complete (step %ld of %ld); nothing to do (a larger steps trains it on)\n", tr->out_dir,
               step, steps);
    else
        printf("%s: the run is complete (validation accuracy reached stop_at_acc at step %ld); nothing to do "
               "(resume = %s trains it on)\n",
               tr->out_dir, step, resume);
}

// A resumed run may already be complete: its checkpoint is its last step, or (resume = auto)
// validation accuracy had reached stop_at_acc there. Its log then ends with the done record,
// unless the process died between that checkpoint and the record: then the record is written
// now (./sweep would otherwise rerun the point forever). Returns 1 when complete.
static int run_complete(Trainer *tr, const char *resume) {
    const char *reason = NULL;
    char path[1200];
    snprintf(path, sizeof path, "%s/metrics.jsonl", tr->out_dir);
    LogAtStep at = {tr->step, -1, 0, 0};
    runlog_each(path, log_at_step, &at);
    if (tr->step >= tr->steps) reason = "steps";
    else if (!strcmp(cfg_str(&tr->cfg, "resume"), "auto") && tr->sch.stop_at_acc > 0 && at.acc >= tr->sch.stop_at_acc)
        reason = "stop_at_acc";
    int has_done = at.done_last;
    if (!reason) return 0;
    if (!has_done) {
        open_logs(tr);
        if (!at.has_test) test_at_end(tr);  // the process died before it read the test set
        runlog_write_done(tr->metrics, tr->step, reason);
        flush_log(tr, tr->metrics, "metrics.jsonl");
        printf("%s: the run was complete at step %ld (%s) but its log had no done record: written\n", tr->out_dir,
               tr->step, !strcmp(reason, "steps") ? "its last step" : "validation accuracy reached stop_at_acc");
    } else print_complete(tr, tr->step, tr->steps, reason, resume);
    return 1;
}

// Before any data is generated or read (an MQAR training set takes seconds to make): a run whose
// log already ends with its done record at the checkpoint's step, by its step count or by
// stop_at_acc, has nothing to do. Returns 1 after saying so; 0 leaves the decision to
// run_complete (a run given in epochs needs the data to know its length; a missing done record is
// written there).
static int complete_before_data(Trainer *tr, const char *resume) {
    if (llmc_is_model_file(resume)) return 0;  // refused by check_resume_config, with the data
    Config saved;
    long step;
    char err[512], path[1200];
    if (ckpt_read_config(resume, &saved, &step, err, sizeof err) != 0) return 0;  // resume_from says why
    // any difference (some only settle with the data: a shards run's vocab_size = 0) is for
    // check_resume_config to judge
    int differs = model_resume_difference(&tr->cfg, &saved) != NULL;
    config_free(&saved);
    if (differs) return 0;
    snprintf(path, sizeof path, "%s/metrics.jsonl", tr->out_dir);
    LogAtStep at = {step, -1, 0, 0};
    runlog_each(path, log_at_step, &at);
    if (!at.done_last) return 0;
    long steps = cfg_int(&tr->cfg, "steps");
    double stop_at_acc = cfg_float(&tr->cfg, "stop_at_acc");
    const char *reason = steps > 0 && step >= steps                                                ? "steps"
        : !strcmp(cfg_str(&tr->cfg, "resume"), "auto") && stop_at_acc > 0 && at.acc >= stop_at_acc ? "stop_at_acc"
                                                                                                   : NULL;
    if (!reason) return 0;
    print_complete(tr, step, steps, reason, resume);
    return 1;
}

static void init_from(Trainer *tr, const char *path) {
    char err[512];
    if (ckpt_load(path, tr->model, NULL, NULL, err, sizeof err) != 0) die_input("init_from: %s: %s", path, err);
    printf("initialised from %s\n", path);
}

// Where a non-finite value first appears: "loss", or the first gradient tensor in table order.
static const char *first_non_finite(const Model *m, double loss) {
    if (!isfinite(loss)) return "the loss";
    for (int i = 0; i < m->n_tensors; i++) {
        const real *g = m->grads + m->tensors[i].offset;
        for (size_t k = 0; k < m->tensors[i].count; k++)
            if (!isfinite(g[k])) return m->tensors[i].name;
    }
    return "the gradient norm";
}

// --- evaluation and the loop -------------------------------------------------------------------

// --- the best validation step and the test set (docs/mqar.md#splits) ---------------------------

// A new best validation accuracy (strictly higher: ties keep the earlier step). Its weights are
// kept in memory for the test set and, with keep_best and checkpoints on, as best.safetensors.
static void note_best(Trainer *tr, double acc, int with_sparsity) {
    if (!(acc > tr->best_acc)) return;
    tr->best_acc = acc;
    tr->best_step = tr->step;
    tr->best_has_sparsity = with_sparsity;
    size_t bytes = sizeof(real) * tr->model->n_params;
    if (!tr->best_params) tr->best_params = mallocCheck(bytes);
    memcpy(tr->best_params, tr->model->params, bytes);
    tr->best_unsaved = cfg_bool(&tr->cfg, "keep_best") && cfg_int(&tr->cfg, "save_every") > 0;
}

// best.safetensors, after the step's own checkpoint (whose failure is the one to report first).
static void save_best(Trainer *tr) {
    if (!tr->best_unsaved || tr->best_step != tr->step) return;
    char path[1200], err[512];
    snprintf(path, sizeof path, "%s/%s", tr->out_dir, RUN_DIR_BEST);
    TrainState ts = train_state(tr);
    if (ckpt_save(path, tr->model, &tr->opt, &tr->cfg, &ts, err, sizeof err) != 0)
        die("%s: the best-validation checkpoint (step %ld) not saved: %s", path, tr->step, err);
    tr->best_unsaved = 0;
}

typedef struct {
    long upto, best_step, sparsity_step;
    double best_acc;
    int has_sparsity;
} BestInLog;

static int best_eval(const RunlogRecord *r, void *ctx) {
    BestInLog *b = ctx;
    if (r->type != RUNLOG_EVAL || *r->options || strcmp(r->split, "val") || r->step > b->upto) return 0;
    double acc = runlog_num(r, "acc");
    if (acc > b->best_acc) b->best_acc = acc, b->best_step = r->step;
    return 0;
}

static int best_sparsity(const RunlogRecord *r, void *ctx) {
    BestInLog *b = ctx;
    if (r->type == RUNLOG_SPARSITY && !*r->options && !strcmp(r->split, "val") && r->step == b->sparsity_step)
        b->has_sparsity = 1;
    return b->has_sparsity;
}

// A resumed run's best validation step so far, from its log; its weights from best.safetensors
// when that holds the step (else the test set will be read on the last step's, and say so).
static void resume_best(Trainer *tr) {
    char path[1200];
    BestInLog b = {tr->step, -1, -1, -1, 0};
    snprintf(path, sizeof path, "%s/metrics.jsonl", tr->out_dir);
    runlog_each(path, best_eval, &b);
    if (b.best_step < 0) return;
    tr->best_step = b.best_step, tr->best_acc = b.best_acc;
    b.sparsity_step = b.best_step;
    snprintf(path, sizeof path, "%s/sparsity.jsonl", tr->out_dir);
    runlog_each(path, best_sparsity, &b);
    tr->best_has_sparsity = b.has_sparsity;
    snprintf(path, sizeof path, "%s/%s", tr->out_dir, RUN_DIR_BEST);
    Config saved;
    long step;
    char err[512];
    if (!path_exists(path) || ckpt_read_config(path, &saved, &step, err, sizeof err) != 0) return;
    config_free(&saved);
    if (step != tr->best_step) return;
    Model *m = tr->model;
    size_t bytes = sizeof(real) * m->n_params;
    real *now = mallocCheck(bytes);
    memcpy(now, m->params, bytes);
    if (ckpt_load(path, m, NULL, NULL, err, sizeof err) == 0) {
        tr->best_params = mallocCheck(bytes);
        memcpy(tr->best_params, m->params, bytes);
    }
    memcpy(m->params, now, bytes);
    free(now);
}

// The test set, read once at the end of a complete run, on the best validation step's weights
// (the last step's when those are not known): an eval record (split test, selected best|last,
// at the step read) and, with the sparsity pass on, its sparsity records (split test) and the
// best step's validation ones if that step had none. The whole test set (not eval_batches).
static void test_at_end(Trainer *tr) {
    if (!tr->task.has_test || !tr->sch.eval_every) return;
    Model *m = tr->model;
    const Config *c = &tr->cfg;
    const char *mixer = cfg_str(c, "mixer");
    int best = tr->best_params && tr->best_step >= 0;
    long step = best ? tr->best_step : tr->step, rows = cfg_int(c, "sparsity_rows");
    size_t bytes = sizeof(real) * m->n_params;
    real *now = NULL;
    if (best && tr->best_step != tr->step) {
        now = mallocCheck(bytes);
        memcpy(now, m->params, bytes);
        memcpy(m->params, tr->best_params, bytes);
    }
    ValStats stats;
    if (tr->sparsity) {
        SparsityResult r;
        memset(&r, 0, sizeof r);
        if (best && !tr->best_has_sparsity) {  // the maps of the best step, as of the last
            sparsity_eval(m, &tr->task.val, tr->B, tr->T, cfg_int(c, "eval_batches"), rows, &r);
            // (not mirrored to TensorBoard: an event at an earlier step makes it drop the tags'
            // later points)
            sparsity_write_records(tr->sparsity, step, mixer, "val", NULL, &r);
        }
        sparsity_eval(m, &tr->task.test, tr->B, tr->T, 0, rows, &r);
        sparsity_write_records(tr->sparsity, step, mixer, "test", NULL, &r);
        flush_log(tr, tr->sparsity, "sparsity.jsonl");
        if (tr->tb.f) tb_write_sparsity(&tr->tb, step, mixer, "test", &r);
        sparsity_result_free(&r);
    }
    // the test pass itself, with each example's counts for the interval of its accuracy (the
    // sparsity pass above measured the same sequences in the same batches: the same numbers)
    ExampleCounts ex = {0};
    stats = val_eval_examples(m, &tr->task.test, tr->B, tr->T, 0, &ex);
    RunlogEval rec = {.sequences = -1, .split = "test", .selected = best ? "best" : "last"};
    val_write_record_examples(tr->metrics, step, &stats, &ex, &rec);
    flush_log(tr, tr->metrics, "metrics.jsonl");
    if (tr->tb.f) tb_write_eval(&tr->tb, step, &stats, "test", rec.selected), flush_log(tr, tr->tb.f, tr->tb.name);
    progress_break();
    char cells[1024];
    val_format_cells(cells, sizeof cells, &stats);
    printf("test (read once, on the %s step %ld%s): loss %.4f | acc %.4f [%.4f, %.4f]%s%s%s\n",
           best ? "best validation" : "last", step, best ? "" : ": the best step's weights are not known", val_loss(&stats),
           val_acc(&stats), rec.acc_lo, rec.acc_hi, *cells ? " (mean of cells: " : "", cells, *cells ? ")" : "");
    examples_free(&ex);
    fflush(stdout);
    if (now) memcpy(m->params, now, bytes), free(now);
}

static void print_eval(Trainer *tr, const ValStats *s) {
    double loss = val_loss(s), acc = val_acc(s);
    RunlogEval rec = {.sequences = -1};  // the trainer's record: no checkpoint, mixer or options
    val_write_record(tr->metrics, tr->step, s, &rec);
    flush_log(tr, tr->metrics, "metrics.jsonl");
    if (tr->tb.f) tb_write_eval(&tr->tb, tr->step, s, "val", NULL), flush_log(tr, tr->tb.f, tr->tb.name);
    progress_break();
    char cells[1024];
    val_format_cells(cells, sizeof cells, s);
    printf("step %6ld | val loss %.4f | val acc %.4f%s%s%s\n", tr->step, loss, acc, *cells ? " (mean of cells: " : "",
           cells, *cells ? ")" : "");
    fflush(stdout);
}

// The evaluations due at this step: validation loss and accuracy (eval.jsonl record) and the
// sparsity pass (sparsity.jsonl). When both are due and the sparsity pass covers the whole
// evaluation set, its forward passes give the validation figures too (bit-identical), so the
// model runs once. Returns the validation accuracy, -1 when it was not measured.
static double evaluate_step(Trainer *tr, int do_eval, int do_sparsity) {
    const Config *c = &tr->cfg;
    do_eval = do_eval && tr->task.has_val;
    do_sparsity = do_sparsity && tr->sparsity && tr->task.has_val;
    long eval_batches = cfg_int(c, "eval_batches"), rows = cfg_int(c, "sparsity_rows");
    int have_stats = 0;
    ValStats stats;
    if (do_sparsity) {
        SparsityResult r;
        memset(&r, 0, sizeof r);
        sparsity_eval(tr->model, &tr->task.val, tr->B, tr->T, eval_batches, rows, &r);
        if (progress_stopped()) {  // a signal cut the pass short: no record of half a pass
            sparsity_result_free(&r);
            return -1;
        }
        sparsity_write_records(tr->sparsity, tr->step, cfg_str(c, "mixer"), "val", NULL, &r);
        flush_log(tr, tr->sparsity, "sparsity.jsonl");
        if (tr->tb.f)
            tb_write_sparsity(&tr->tb, tr->step, cfg_str(c, "mixer"), "val", &r), flush_log(tr, tr->tb.f, tr->tb.name);
        progress_break();
        sparsity_print_layers(stdout, tr->step, &r);  // S_recall and answer share per head, a line per layer
        fflush(stdout);
        if (rows == 0) {
            stats = r.stats;
            have_stats = 1;
        }
        sparsity_result_free(&r);
    }
    if (!do_eval) {
        if (do_sparsity && tr->best_step == tr->step) tr->best_has_sparsity = 1;
        return -1;
    }
    if (!have_stats) stats = val_eval(tr->model, &tr->task.val, tr->B, tr->T, eval_batches);
    if (progress_stopped()) return -1;  // as above
    print_eval(tr, &stats);
    note_best(tr, val_acc(&stats), do_sparsity);
    return val_acc(&stats);
}

// Between optimizer steps only: sampling overwrites the model's activations.
static void maybe_sample(Trainer *tr, int last) {
    long every = tr->sch.sample_every;
    if (every && (tr->step % every == 0 || last)) sample_during_training(tr->model, &tr->cfg, tr->step, tr->metrics);
}

// The run-length and logging keys the loop reads every step (read once).
static void read_schedule(Trainer *tr) {
    const Config *c = &tr->cfg;
    Schedule *s = &tr->sch;
    s->log_every = cfg_int(c, "log_every");
    s->eval_every = cfg_int(c, "eval_every");
    s->sparsity_every = cfg_int(c, "sparsity_every");
    s->save_every = cfg_int(c, "save_every");
    s->sample_every = cfg_int(c, "sample_every");
    s->lr_max = cfg_float(c, "lr");
    s->min_lr = cfg_float(c, "min_lr");
    s->clip = cfg_float(c, "grad_clip");
    s->warmup = cfg_int(c, "warmup_steps");
    s->stop_at_acc = cfg_float(c, "stop_at_acc");
    s->stop_at_step = cfg_int(c, "stop_at_step");
    const char *sch = cfg_str(c, "lr_schedule");
    s->lr_schedule = !strcmp(sch, "constant") ? LR_CONSTANT : !strcmp(sch, "linear") ? LR_LINEAR : LR_COSINE;
    s->nan_stop = !strcmp(cfg_str(c, "nan_policy"), "stop");
}

// A non-finite loss or gradient: nan_policy = stop ends the run without saving; skip drops the
// update (the step still counts).
static void non_finite_step(Trainer *tr, double loss, double norm) {
    const char *where = first_non_finite(tr->model, loss);
    progress_break();
    if (tr->sch.nan_stop) {
        runlog_write_nan(tr->metrics, tr->step + 1, where, "stop", -1);
        fclose(tr->metrics);
        char *latest = run_dir_latest(tr->out_dir);
        die("step %ld: non-finite value, first in %s (loss %g, gradient norm %g); stopped without saving "
            "(nan_policy = stop); the last good checkpoint is %s",
            tr->step + 1, where, loss, norm, latest ? latest : "none");
    }
    tr->skipped++;
    tr->step++;
    runlog_write_nan(tr->metrics, tr->step, where, "skip", tr->skipped);
    flush_log(tr, tr->metrics, "metrics.jsonl");
    printf("step %ld: non-finite value, first in %s: update skipped (%ld so far)\n", tr->step, where, tr->skipped);
}

// One optimizer step: the next batch at the schedule's learning rate, then train_step
// (trainer/step.h). Returns 0 when the update was skipped (non-finite values, nan_policy = skip),
// 1 with the step's figures in r otherwise.
static int next_step(Trainer *tr, StepResult *r) {
    const Schedule *sc = &tr->sch;
    double t0 = now_seconds();
    double lr = lr_at(sc->lr_schedule, tr->step, tr->steps, sc->warmup, sc->lr_max, sc->min_lr);
    int T = loader_next(&tr->loader, tr->inputs, tr->targets);  // a mixture's batch: its cell's length
    StepStats s;
    if (!train_step(tr->model, &tr->opt, tr->inputs, tr->targets, tr->B, T, lr, sc->clip, &s)) {
        non_finite_step(tr, s.loss, s.norm);
        return 0;
    }
    tr->step++;
    r->loss = s.loss, r->acc = s.acc, r->lr = s.lr, r->norm = s.norm;
    r->focus = s.focus, r->focus_penalty = s.focus_penalty, r->answer_supervision = s.answer_supervision;
    r->S_recall = s.S_recall, r->answer_ce = s.answer_ce;
    r->dt = now_seconds() - t0;
    r->tok_s = (double)tr->B * T / r->dt;
    return 1;
}

// The train record (every log_every steps and at the last) and the progress line.
static void log_step(Trainer *tr, const StepResult *r, int last) {
    long every = tr->sch.log_every;
    if (every && (tr->step % every == 0 || last)) {
        RunlogTrain rec = {tr->step,         r->loss,
                           r->acc,           r->lr,
                           r->norm,          r->tok_s,
                           r->dt * 1e3,      r->focus,
                           r->focus_penalty, r->answer_supervision,
                           r->S_recall,      r->answer_ce};
        runlog_write_train(tr->metrics, &rec);
        flush_log(tr, tr->metrics, "metrics.jsonl");
        if (tr->tb.f) tb_write_train(&tr->tb, &rec), flush_log(tr, tr->tb.f, tr->tb.name);
        if (!progress_enabled()) {
            printf("step %6ld/%ld | loss %.4f | acc %.4f | lr %.2e | norm %.3f | %.0f tok/s", tr->step, tr->steps,
                   r->loss, r->acc, r->lr, r->norm, r->tok_s);
            if (r->focus)
                printf(" | focus %.4f + answer %.4f | S_recall %.3f", r->focus_penalty, r->answer_supervision, r->S_recall);
            printf("\n");
            fflush(stdout);
        }
    }
    double elapsed = now_seconds() - tr->t_start;
    char eta[32];
    format_duration(eta, sizeof eta, elapsed / (double)(tr->step - tr->start_step) * (double)(tr->steps - tr->step));
    progress_line("step %ld/%ld | loss %.4f | acc %.3f | %.1fk tok/s | ETA %s", tr->step, tr->steps, r->loss, r->acc,
                  r->tok_s / 1e3, eta);
}

// The evaluations and samples due after a step. Returns 1 when validation accuracy reached
// stop_at_acc (the run is finished).
static int evaluate_due(Trainer *tr, int last) {
    const Schedule *sc = &tr->sch;
    int due_eval = sc->eval_every && (tr->step % sc->eval_every == 0 || last);
    int due_sparsity = sc->sparsity_every && (tr->step % sc->sparsity_every == 0 || last);
    double val_acc = evaluate_step(tr, due_eval, due_sparsity);
    int reached = sc->stop_at_acc > 0 && val_acc >= sc->stop_at_acc;
    if (reached) {
        printf("validation accuracy %.4f >= stop_at_acc %g: stopping at step %ld\n", val_acc, sc->stop_at_acc, tr->step);
        tr->finished = "stop_at_acc";
        // the run ends here: its final attention sparsity belongs in the log
        if (!due_sparsity && sc->sparsity_every) evaluate_step(tr, 0, 1);
    }
    maybe_sample(tr, last || reached);
    return reached;
}

// Whether the run stops after this step without being finished: stop_at_step, or a signal.
static int stop_requested(Trainer *tr, int last) {
    int stop = 0;
    if (tr->sch.stop_at_step && tr->step >= tr->sch.stop_at_step && !last) {
        printf("stop_at_step %ld reached (run again to continue)\n", tr->sch.stop_at_step);
        stop = 1;
    }
    if (!g_interrupted && parent_gone()) {
        progress_break();
        printf("the ./sweep that started this run has ended\n");
        g_interrupted = SIGTERM;
    }
    if (g_interrupted) {
        progress_break();
        printf("interrupted: saving step %ld and stopping (run again to continue)\n", tr->step);
        stop = 1;
    }
    return stop;
}

// A complete run ends its log with a done record (./sweep skips such runs).
static void finish_run(Trainer *tr) {
    progress_break();
    if (!tr->finished && tr->step == tr->steps) tr->finished = "steps";
    if (tr->finished && tr->step > tr->start_step && !progress_stopped()) {  // a signal: the next run ends it
        test_at_end(tr);
        runlog_write_done(tr->metrics, tr->step, tr->finished);
        flush_log(tr, tr->metrics, "metrics.jsonl");
    }
    char took[32];
    format_duration(took, sizeof took, now_seconds() - tr->t_start);
    printf("done: %ld steps in %s\n", tr->step - tr->start_step, took);
}

// The driver: step 0's evaluation and checkpoint, then steps until the last, a stop or a signal.
static void train_loop(Trainer *tr) {
    tr->t_start = now_seconds();
    tr->start_step = tr->step;
    if (tr->step == 0) {
        evaluate_step(tr, tr->sch.eval_every > 0, tr->sch.sparsity_every > 0);
        maybe_sample(tr, 0);
        save_checkpoint(tr);
        save_best(tr);
    }
    while (tr->step < tr->steps) {
        StepResult r;
        if (!next_step(tr, &r)) continue;
        int last = tr->step == tr->steps;
        log_step(tr, &r, last);
        int reached = evaluate_due(tr, last);
        int stop = stop_requested(tr, last) || reached;
        if ((tr->sch.save_every && tr->step % tr->sch.save_every == 0) || last || stop) save_checkpoint(tr);
        save_best(tr);
        if (stop) break;
    }
    finish_run(tr);
}

static void write_config(Trainer *tr) {
    char path[1200];
    snprintf(path, sizeof path, "%s/config.conf", tr->out_dir);
    AtomicFile a;  // a kill while writing leaves the earlier config.conf or the whole new one
    char err[2600];
    if (atomic_open(&a, path, NULL, 0) != 0) die_input("out_dir: cannot write '%s'", path);
    config_write(&tr->cfg, a.f);
    if (atomic_commit(&a, err, sizeof err) != 0) die("%s", err);
}

static void trainer_free(Trainer *tr) {
    free(tr->best_params);
    if (tr->metrics) fclose(tr->metrics);
    if (tr->sparsity) fclose(tr->sparsity);
    tfevents_close(&tr->tb);
    free(tr->inputs);
    free(tr->targets);
    loader_free(&tr->loader);
    optim_free(&tr->opt);
    model_free(tr->model);
    task_close(&tr->task);
    config_free(&tr->cfg);
}

// --- setting up -------------------------------------------------------------------------------

// Values valid one by one but not together: refused (exit 2); keys that do nothing as set: a note.
static void check_key_combinations(const Config *c) {
    model_check_mixer_options(c);
    if (cfg_float(c, "min_lr") > cfg_float(c, "lr"))
        die_input("%s: min_lr: %s is above lr = %s (expected min_lr <= lr: the schedule decays to it)",
                  cfg_origin(c, "min_lr"), cfg_str(c, "min_lr"), cfg_str(c, "lr"));
    if (cfg_int(c, "sample_every") > 0 && cfg_int(c, "sample_tokens") > SAMPLE_MAX_TOKENS)
        die_input("%s: sample_tokens: expected at most %d tokens per sample, got %s", cfg_origin(c, "sample_tokens"),
                  SAMPLE_MAX_TOKENS, cfg_str(c, "sample_tokens"));
    if (cfg_float(c, "stop_at_acc") > 1)
        die_input("%s: stop_at_acc: expected an accuracy in [0, 1] (0 = off), got '%s'", cfg_origin(c, "stop_at_acc"),
                  cfg_str(c, "stop_at_acc"));
    if (cfg_bool(c, "overwrite") && strcmp(cfg_str(c, "resume"), "never"))
        fprintf(stderr, "note: %s: overwrite = true does nothing unless resume = never (resume is '%s')\n",
                cfg_origin(c, "overwrite"), cfg_str(c, "resume"));
    if (!strcmp(cfg_str(c, "task"), "shards") && !*cfg_str(c, "val_data") && cfg_int(c, "eval_every") > 0)
        fprintf(stderr, "note: eval_every = %ld but val_data is empty: no validation (set val_data to a glob of shards)\n",
                cfg_int(c, "eval_every"));
}

// The config (file, then key=value arguments), threads, and out_dir.
static void setup_config(Trainer *tr, int argc, char **argv) {
    Config *c = &tr->cfg;
    config_init_all(c);
    config_load_file(c, argv[1]);
    config_apply_args(c, argc - 2, argv + 2);
    // An llm.c GPT-2 file as init_from sets the model's shape from its header.
    if (*cfg_str(c, "init_from") && llmc_is_model_file(cfg_str(c, "init_from")))
        llmc_shape_config(c, cfg_str(c, "init_from"));
    if (cfg_int(c, "threads") > 0) omp_set_num_threads((int)cfg_int(c, "threads"));
    fpu_flush_denormals();
    resolve_out_dir(tr, argv[1]);
    tr->B = (int)cfg_int(c, "batch_size");
    tr->T = (int)cfg_int(c, "seq_len");
    read_schedule(tr);
    check_key_combinations(c);
    const char *parent = getenv("ATTNSCOPE_PARENT_PID");
    if (parent) g_parent_pid = (pid_t)atol(parent);
}

// The run folder this process created, removed at exit if the run never started in it (a bad
// config or data found after it was made must not leave an empty folder behind), with the
// parents it created for it (checkpoints/ of checkpoints/NAME).
static char g_created_dir[1024];
static size_t g_existing_len;  // length of its longest prefix that existed before

static void remove_unused_run_folder(void) {
    if (!g_created_dir[0] || run_dir_has_run(g_created_dir)) return;
    char lock[1100];
    snprintf(lock, sizeof lock, "%s/%s", g_created_dir, RUN_DIR_LOCK);
    unlink(lock);
    // rmdir fails, harmlessly, on a folder something else was put in
    for (char *slash; strlen(g_created_dir) > g_existing_len && rmdir(g_created_dir) == 0;) {
        if (!(slash = strrchr(g_created_dir, '/'))) break;
        *slash = 0;
    }
}

// Remembers out_dir's longest existing prefix before it is created.
static void note_created_run_folder(const char *dir) {
    snprintf(g_created_dir, sizeof g_created_dir, "%s", dir);
    char prefix[1024];
    g_existing_len = 0;
    for (size_t i = 1; dir[i] && i < sizeof prefix; i++) {
        if (dir[i] != '/') continue;
        memcpy(prefix, dir, i);
        prefix[i] = 0;
        if (!path_exists(prefix)) break;
        g_existing_len = i;
    }
    atexit(remove_unused_run_folder);
}

// A run folder that cannot be written is refused before any work; one that another process is
// writing (its ./train holds the lock) too, naming that process.
static void setup_run_folder(Trainer *tr) {
    int existed = path_exists(tr->out_dir);
    run_dir_check_output_folder("out_dir", tr->out_dir, 1);
    if (!existed) note_created_run_folder(tr->out_dir);
    if (mkdir_p(tr->out_dir) != 0) die_input("out_dir: cannot create '%s' (%s)", tr->out_dir, strerror(errno));
    if (access(tr->out_dir, W_OK | X_OK) != 0)
        die_input("out_dir: cannot write in '%s' (%s)", tr->out_dir, strerror(errno));
    long holder;
    int rc = run_dir_lock(tr->out_dir, &holder);
    if (rc == -2) die_input("out_dir: cannot create %s/%s (%s)", tr->out_dir, RUN_DIR_LOCK, strerror(errno));
    if (rc == -1 && holder > 0)
        die_input("out_dir: '%s' is in use by process %ld (another ./train writing this run); wait for it to end "
                  "or choose another out_dir",
                  tr->out_dir, holder);
    if (rc == -1)
        die_input("out_dir: '%s' is in use by another process; wait for it to end or choose another out_dir", tr->out_dir);
}

// A run that cannot fit in memory is refused at the start, naming the key (trainer/memory.h).
static void check_memory(Trainer *tr, const TaskPlan *plan) {
    MemoryPlan mp = memory_plan(&tr->cfg, plan);
    memory_check(&mp, &tr->cfg);
}

// The task's data, the tokenizer samples decode with, and the run length.
static void setup_data(Trainer *tr) {
    Config *c = &tr->cfg;
    // sized before anything big is allocated or generated (MQAR: before the data; shards that take
    // the vocabulary from the data: once they are mapped, which costs no memory)
    TaskPlan plan = task_plan(c);
    if (plan.vocab_size) check_memory(tr, &plan);
    task_open(&tr->task, c, TASK_ALL);
    if (!plan.vocab_size) {
        plan.vocab_size = tr->task.vocab_size;
        check_memory(tr, &plan);
    }
    if (tr->sch.sample_every > 0) sample_check_tokenizer(c, tr->task.train.tok_vocab, tr->task.train.tok_id);
    long steps = cfg_int(c, "steps");
    if (steps == 0) {
        double epochs = cfg_float(c, "epochs");
        steps = (long)((epochs * (double)tr->task.train.n + tr->B - 1) / tr->B);
        if (steps <= 0) die_input("steps: set steps > 0 or epochs > 0");
    }
    tr->steps = steps;
}

// Model (initial weights from seed), optimizer, loader and the batch buffers.
static void setup_model(Trainer *tr) {
    Config *c = &tr->cfg;
    tr->model = build_model(tr);
    model_init_weights(tr->model, (uint64_t)cfg_int(c, "seed"));
    optim_from_config(&tr->opt, c, tr->model->n_params);
    loader_init(&tr->loader, &tr->task.train, tr->B, cfg_bool(c, "shuffle"), (uint64_t)cfg_int(c, "seed"));
    tr->inputs = mallocCheck(sizeof(int32_t) * tr->B * tr->T);
    tr->targets = mallocCheck(sizeof(int32_t) * tr->B * tr->T);
}

// config.conf, and metrics.jsonl / sparsity.jsonl opened to continue (resume) or start over; the
// TensorBoard event file.
static void open_logs(Trainer *tr) {
    write_config(tr);
    char path[1200];
    snprintf(path, sizeof path, "%s/metrics.jsonl", tr->out_dir);
    tr->metrics = fopen(path, tr->step > 0 ? "a" : "w");
    if (!tr->metrics) die_input("out_dir: cannot write '%s'", path);
    if (tr->sch.sparsity_every > 0 && sparsity_supported(tr->model)) {
        snprintf(path, sizeof path, "%s/sparsity.jsonl", tr->out_dir);
        tr->sparsity = fopen(path, tr->step > 0 ? "a" : "w");
        if (!tr->sparsity) die_input("out_dir: cannot write '%s'", path);
    }
    // a new event file per process, from the first step it writes (eval/tensorboard.h)
    if (cfg_bool(&tr->cfg, "tensorboard") && tfevents_open(&tr->tb, tr->out_dir, tr->step ? tr->step + 1 : 0) != 0)
        die_input("out_dir: cannot write a TensorBoard event file in '%s' (%s)", tr->out_dir, strerror(errno));
}

// The numbers each layer carries between tokens at seq_len (its mixer's state_floats plus the
// short convolution's window), mean over layers: the state size of a capacity plot.
static double mean_state_floats(const Model *m) {
    double sum = 0;
    for (int l = 0; l < m->s.L; l++) sum += (double)model_layer_state_floats(m, l);
    return sum / m->s.L;
}

// The run record: what the run is, first in a fresh metrics.jsonl (step 0).
static void write_run_record(Trainer *tr) {
    const Model *m = tr->model;
    size_t by_layer[MAX_LAYERS];
    for (int l = 0; l < m->s.L; l++) by_layer[l] = model_layer_state_floats(m, l);
    const Dataset *val = &tr->task.val;
    char names[MQAR_MAX_CELLS][32];
    const char *cells[MQAR_MAX_CELLS];
    int n_cells = tr->task.has_val && val->n_cells > 1 ? val->n_cells : 0;
    for (int c = 0; c < n_cells; c++) {
        mqar_cell_name(val->cells[c], names[c], sizeof names[c]);
        cells[c] = names[c];
    }
    RunlogRun rec = {cfg_str(&tr->cfg, "mixer"),
                     m->n_params,
                     mean_state_floats(m),
                     by_layer,
                     m->s.L,
                     n_cells ? cells : NULL,
                     n_cells,
                     provenance_commit(),
                     provenance_compiler(),
                     provenance_cpu(),
                     gemm_kernel_name()};
    runlog_write_run(tr->metrics, &rec);
    flush_log(tr, tr->metrics, "metrics.jsonl");
}

static void print_banner(const Trainer *tr, const char *config_path) {
    const Config *c = &tr->cfg;
    printf("%s: %s, %d layer%s, d_model %d, %d head%s, %zu parameters, %.1f MiB activations, %d thread%s\n",
           config_path, cfg_str(c, "mixer"), tr->model->s.L, tr->model->s.L == 1 ? "" : "s", tr->model->s.C,
           tr->model->s.H, tr->model->s.H == 1 ? "" : "s", tr->model->n_params,
           model_activation_bytes(tr->model) / 1048576.0, omp_get_max_threads(), omp_get_max_threads() == 1 ? "" : "s");
    const Task *t = &tr->task;
    printf("data: %s, %ld train / %ld val / %ld test sequences of %d tokens, vocab %d; %ld steps of %d -> %s\n",
           cfg_str(c, "task"), t->train.n, t->has_val ? t->val.n : 0L, t->has_test ? t->test.n : 0L, tr->T,
           t->vocab_size, tr->steps, tr->B, tr->out_dir);
    if (t->val_dropped > 0)
        printf("note: %ld validation sequences left out: train or test holds the same sequence\n", t->val_dropped);
    if (t->test_in_train > 0)
        printf("note: %ld test sequences also occur in train (kept: the test set is Zoology's)\n", t->test_in_train);
    const Dataset *tv = &tr->task.train, *vv = &tr->task.val;
    if (tv->n_cells > 1 || (tr->task.has_val && vv->n_cells > 1)) {
        char cells[1024];
        size_t k = 0;
        for (int pass = 0; pass < 2; pass++) {
            const Dataset *d = pass ? vv : tv;
            k += (size_t)snprintf(cells + k, sizeof cells - k, "%s", pass ? "; test" : "train");
            for (int i = 0; i < d->n_cells && k + 24 < sizeof cells; i++)
                k += (size_t)snprintf(cells + k, sizeof cells - k, " %dx%d", d->cells[i].kv_pairs, d->cells[i].seq_len);
        }
        printf("MQAR cells (pairs x length, padded to %d): %s\n", tr->T, cells);
    }
    printf("state: %.0f floats per layer carried between tokens at length %d\n", mean_state_floats(tr->model), tr->T);
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    Trainer tr;
    memset(&tr, 0, sizeof tr);
    tr.best_step = -1, tr.best_acc = -1;
    setup_config(&tr, argc, argv);
    const char *export_dir = cfg_str(&tr.cfg, "export_data");
    if (*export_dir) {
        check_export_data(&tr.cfg, export_dir);
        task_open(&tr.task, &tr.cfg, TASK_TRAIN | TASK_TEST);
        export_data(&tr, export_dir);
        task_close(&tr.task);
        config_free(&tr.cfg);
        return 0;
    }
    setup_run_folder(&tr);
    char *resume = choose_resume(&tr);
    if (resume && complete_before_data(&tr, resume)) {
        free(resume);
        trainer_free(&tr);
        return 0;
    }
    setup_data(&tr);
    setup_model(&tr);
    if (resume) resume_from(&tr, resume), resume_best(&tr);
    else if (*cfg_str(&tr.cfg, "init_from")) init_from(&tr, cfg_str(&tr.cfg, "init_from"));
    int complete = resume && run_complete(&tr, resume);
    free(resume);
    if (complete) {
        trainer_free(&tr);
        return 0;
    }
    open_logs(&tr);
    if (tr.step == 0) write_run_record(&tr);
    print_banner(&tr, argv[1]);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    train_loop(&tr);
    trainer_free(&tr);
    return g_interrupted ? 128 + g_interrupted : 0;
}
