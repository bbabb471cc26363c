// ./train CONFIG [key=value ...]: config -> model -> loop (data, forward, backward, step, log,
// eval, save) with everything written to out_dir (DESIGN.md sections 3 to 5).
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "core/fpu.h"
#include "core/io.h"
#include "core/keys.h"
#include "core/progress.h"
#include "core/run_dir.h"
#include "data/task.h"
#include "eval/sparsity.h"
#include "eval/val_eval.h"
#include "trainer/checkpoint.h"
#include "model/model.h"
#include "trainer/optim.h"
#include "model/sample.h"

typedef struct {
    Config cfg;
    Task task;
    Model *model;
    Optimizer opt;
    Loader loader;
    char out_dir[1024];
    FILE *metrics;
    FILE *sparsity;             // sparsity.jsonl, NULL when sparsity_every = 0 or no extractor
    int B, T;
    long steps;                 // total optimizer steps of the run
    long skipped;               // steps whose update nan_policy = skip dropped
    long step;                  // steps done
    int32_t *inputs, *targets;  // [B, T]
} Trainer;

static volatile sig_atomic_t g_interrupted;

static void on_signal(int sig) {
    g_interrupted = sig;
    signal(sig, SIG_DFL);  // a second signal ends the process at once
}

static void usage(void) {
    Config c;
    config_init_all(&c);
    printf("usage: ./train CONFIG [key=value ...]\n"
           "       ./train --help\n"
           "Trains the model a config describes; everything goes to out_dir. Keys (default):\n");
    config_print_help(&c, stdout);
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

static void export_data(Trainer *tr, const char *dir) {
    if (mkdir_p(dir) != 0) die_input("export_data: cannot create folder '%s'", dir);
    char path[1200];
    snprintf(path, sizeof path, "%s/train.bin", dir);
    dataset_export(&tr->task.train, path);
    printf("wrote %s (%ld examples)\n", path, tr->task.train.n);
    snprintf(path, sizeof path, "%s/test.bin", dir);
    dataset_export(&tr->task.val, path);
    printf("wrote %s (%ld examples)\n", path, tr->task.val.n);
}

static Model *build_model(Trainer *tr) {
    const Config *c = &tr->cfg;
    ModelShape s = {
        .V = tr->task.vocab_size,
        .C = (int)cfg_int(c, "d_model"),
        .L = (int)cfg_int(c, "n_layer"),
        .H = (int)cfg_int(c, "n_head"),
        .T = tr->T,
        .mlp = cfg_bool(c, "mlp"),
        .pos_emb = !strcmp(cfg_str(c, "pos_emb"), "learned"),
    };
    const MixerKind *mk = mixer_find(cfg_str(c, "mixer"));
    return model_create(&s, mk, c, tr->B, tr->B * tr->task.targets_per_seq);
}

// A log line that cannot be written (disk full) stops the run: the logs are part of its result.
static void flush_log(const Trainer *tr, FILE *f, const char *name) {
    if (fflush(f) != 0 || ferror(f)) die("%s/%s: write error (%s)", tr->out_dir, name, strerror(errno));
}

// --- checkpoints and resume ------------------------------------------------------------------

static void save_checkpoint(Trainer *tr) {
    if (cfg_int(&tr->cfg, "save_every") == 0) return;
    char name[64], path[1200], err[512];
    snprintf(name, sizeof name, "ckpt_%08ld.safetensors", tr->step);
    snprintf(path, sizeof path, "%s/%s", tr->out_dir, name);
    TrainState ts = {tr->step, tr->loader.pos, tr->loader.seed, tr->opt.t};
    if (ckpt_save(path, tr->model, &tr->opt, &tr->cfg, &ts, err, sizeof err) != 0)
        die("%s: checkpoint not saved: %s (the previous checkpoint is intact)", path, err);
    if (run_dir_set_latest(tr->out_dir, name) != 0) die("%s/latest: cannot update", tr->out_dir);
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

// With resume = auto, a run whose log ends with {"type":"done",...,"reason":"stop_at_acc"} at
// the step of the checkpoint it would resume from is complete: running its command again (a
// sweep's --print line on a cluster, say) must not train it on. Returns that step, or -1.
static long completed_at_acc(const Trainer *tr, long ckpt_step) {
    if (strcmp(cfg_str(&tr->cfg, "resume"), "auto") || cfg_float(&tr->cfg, "stop_at_acc") <= 0) return -1;
    char path[1200];
    snprintf(path, sizeof path, "%s/metrics.jsonl", tr->out_dir);
    char *text = read_file_text(path, NULL);
    if (!text) return -1;
    long step = -1;
    char *last = strstr(text, "{\"type\":\"done\",");
    for (char *q = last; q; q = strstr(q + 1, "{\"type\":\"done\",")) last = q;
    long s;
    if (last && !strchr(last, '\n')[1] && sscanf(last, "{\"type\":\"done\",\"step\":%ld,", &s) == 1 &&
        strstr(last, "\"reason\":\"stop_at_acc\"") && s == ckpt_step)
        step = s;
    free(text);
    return step;
}

// Refuses a checkpoint whose model shape or data differ from the config.
static void check_resume_config(Trainer *tr, const char *path) {
    Config saved;
    char err[512];
    if (ckpt_read_config(path, &saved, NULL, err, sizeof err) != 0) die_input("resume: %s: %s", path, err);
    const char *key = config_first_difference(&tr->cfg, &saved);
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

static void print_eval(Trainer *tr, const HeadStats *s) {
    double loss = val_loss(s), acc = val_acc(s);
    fprintf(tr->metrics, "{\"type\":\"eval\",\"step\":%ld,\"split\":\"val\",\"loss\":%.9g,\"acc\":%.9g}\n",
            tr->step, loss, acc);
    flush_log(tr, tr->metrics, "metrics.jsonl");
    progress_break();
    printf("step %6ld | val loss %.4f | val acc %.4f\n", tr->step, loss, acc);
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
    HeadStats stats = {0, 0, 0};
    if (do_sparsity) {
        SparsityResult r;
        memset(&r, 0, sizeof r);
        sparsity_eval(tr->model, &tr->task.val, tr->B, tr->T, eval_batches, rows, &r);
        sparsity_write_jsonl(tr->sparsity, tr->step, cfg_str(c, "mixer"), &r);
        flush_log(tr, tr->sparsity, "sparsity.jsonl");
        progress_break();
        sparsity_print_layers(stdout, tr->step, &r);  // S_recall and answer share per head, a line per layer
        fflush(stdout);
        if (rows == 0) {
            stats = r.stats;
            have_stats = 1;
        }
        sparsity_result_free(&r);
    }
    if (!do_eval) return -1;
    if (!have_stats) stats = val_eval(tr->model, &tr->task.val, tr->B, tr->T, eval_batches);
    print_eval(tr, &stats);
    return val_acc(&stats);
}

// Between optimizer steps only: sampling overwrites the model's activations.
static void maybe_sample(Trainer *tr, int last) {
    long every = cfg_int(&tr->cfg, "sample_every");
    if (every && (tr->step % every == 0 || last)) sample_during_training(tr->model, &tr->cfg, tr->step, tr->metrics);
}

static void train_loop(Trainer *tr) {
    Config *c = &tr->cfg;
    Model *m = tr->model;
    long log_every = cfg_int(c, "log_every"), eval_every = cfg_int(c, "eval_every");
    long sparsity_every = cfg_int(c, "sparsity_every");
    long save_every = cfg_int(c, "save_every");
    double lr_max = cfg_float(c, "lr"), min_lr = cfg_float(c, "min_lr"), clip = cfg_float(c, "grad_clip");
    long warmup = cfg_int(c, "warmup_steps");
    double stop_at_acc = cfg_float(c, "stop_at_acc");
    long stop_at_step = cfg_int(c, "stop_at_step");
    const char *sch = cfg_str(c, "lr_schedule");
    LrSchedule sched = !strcmp(sch, "constant") ? LR_CONSTANT : !strcmp(sch, "linear") ? LR_LINEAR : LR_COSINE;
    double t_start = now_seconds();
    long start_step = tr->step;
    const char *finished = NULL;  // why the run is complete: "steps" or "stop_at_acc"
    if (tr->step == 0) {
        evaluate_step(tr, eval_every > 0, sparsity_every > 0);
        maybe_sample(tr, 0);
        save_checkpoint(tr);
    }
    while (tr->step < tr->steps) {
        double t0 = now_seconds();
        double lr = lr_at(sched, tr->step, tr->steps, warmup, lr_max, min_lr);
        loader_next(&tr->loader, tr->inputs, tr->targets);
        model_zero_grad(m);
        HeadStats s = model_forward(m, tr->inputs, tr->targets, tr->B, tr->T, 1);
        model_backward(m);
        double norm = grad_global_norm(m->grads, m->n_params);
        double loss = s.n_counted ? s.loss_sum / (double)s.n_counted : 0;
        if (!isfinite(loss) || !isfinite(norm)) {
            const char *where = first_non_finite(m, loss);
            progress_break();
            if (!strcmp(cfg_str(c, "nan_policy"), "stop")) {
                fprintf(tr->metrics, "{\"type\":\"nan\",\"step\":%ld,\"where\":\"%s\",\"action\":\"stop\"}\n", tr->step + 1, where);
                fclose(tr->metrics);
                char *latest = run_dir_latest(tr->out_dir);
                die("step %ld: non-finite value, first in %s (loss %g, gradient norm %g); stopped without saving "
                    "(nan_policy = stop); the last good checkpoint is %s",
                    tr->step + 1, where, loss, norm, latest ? latest : "none");
            }
            tr->skipped++;
            tr->step++;
            fprintf(tr->metrics, "{\"type\":\"nan\",\"step\":%ld,\"where\":\"%s\",\"action\":\"skip\",\"skipped\":%ld}\n",
                    tr->step, where, tr->skipped);
            flush_log(tr, tr->metrics, "metrics.jsonl");
            printf("step %ld: non-finite value, first in %s: update skipped (%ld so far)\n", tr->step, where, tr->skipped);
            continue;
        }
        if (clip > 0) grad_clip(m->grads, m->n_params, norm, clip);
        optim_step(&tr->opt, m, lr);
        tr->step++;
        double dt = now_seconds() - t0;
        double acc = s.n_counted ? (double)s.n_correct / (double)s.n_counted : 0;
        double tok_s = (double)tr->B * tr->T / dt;
        int last = tr->step == tr->steps;
        if (log_every && (tr->step % log_every == 0 || last)) {
            fprintf(tr->metrics,
                    "{\"type\":\"train\",\"step\":%ld,\"loss\":%.9g,\"acc\":%.9g,\"lr\":%.9g,"
                    "\"grad_norm\":%.9g,\"tok_per_s\":%.0f,\"ms_per_step\":%.3f}\n",
                    tr->step, loss, acc, lr, norm, tok_s, dt * 1e3);
            flush_log(tr, tr->metrics, "metrics.jsonl");
            if (!progress_enabled()) {
                printf("step %6ld/%ld | loss %.4f | acc %.4f | lr %.2e | norm %.3f | %.0f tok/s\n",
                       tr->step, tr->steps, loss, acc, lr, norm, tok_s);
                fflush(stdout);
            }
        }
        double elapsed = now_seconds() - t_start;
        char eta[32];
        format_duration(eta, sizeof eta, elapsed / (double)(tr->step - start_step) * (double)(tr->steps - tr->step));
        progress_line("step %ld/%ld | loss %.4f | acc %.3f | %.1fk tok/s | ETA %s", tr->step, tr->steps,
                      loss, acc, tok_s / 1e3, eta);
        int stop = 0;
        int due_eval = eval_every && (tr->step % eval_every == 0 || last);
        int due_sparsity = sparsity_every && (tr->step % sparsity_every == 0 || last);
        double val_acc = evaluate_step(tr, due_eval, due_sparsity);
        if (stop_at_acc > 0 && val_acc >= stop_at_acc) {
            printf("validation accuracy %.4f >= stop_at_acc %g: stopping at step %ld\n", val_acc, stop_at_acc, tr->step);
            stop = 1;
            finished = "stop_at_acc";
            // the run ends here: its final attention sparsity belongs in the log
            if (!due_sparsity && sparsity_every) evaluate_step(tr, 0, 1);
        }
        maybe_sample(tr, last || finished);
        if (stop_at_step && tr->step >= stop_at_step && !last) {
            printf("stop_at_step %ld reached (run again to continue)\n", stop_at_step);
            stop = 1;
        }
        if (g_interrupted) {
            progress_break();
            printf("interrupted: saving step %ld and stopping (run again to continue)\n", tr->step);
            stop = 1;
        }
        if ((save_every && tr->step % save_every == 0) || last || stop) save_checkpoint(tr);
        if (stop) break;
    }
    progress_break();
    // A complete run ends its log with a done record (./sweep skips such runs).
    if (!finished && tr->step == tr->steps) finished = "steps";
    if (finished && tr->step > start_step) {
        fprintf(tr->metrics, "{\"type\":\"done\",\"step\":%ld,\"reason\":\"%s\"}\n", tr->step, finished);
        flush_log(tr, tr->metrics, "metrics.jsonl");
    }
    char took[32];
    format_duration(took, sizeof took, now_seconds() - t_start);
    printf("done: %ld steps in %s\n", tr->step - start_step, took);
}

static void write_config(Trainer *tr) {
    char path[1200];
    snprintf(path, sizeof path, "%s/config.conf", tr->out_dir);
    FILE *f = fopen(path, "w");
    if (!f) die_input("out_dir: cannot write '%s'", path);
    config_write(&tr->cfg, f);
    fcloseCheck(f, path);
}

static void trainer_free(Trainer *tr) {
    if (tr->metrics) fclose(tr->metrics);
    if (tr->sparsity) fclose(tr->sparsity);
    free(tr->inputs);
    free(tr->targets);
    loader_free(&tr->loader);
    optim_free(&tr->opt);
    model_free(tr->model);
    task_close(&tr->task);
    config_free(&tr->cfg);
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage();
        return argc < 2 ? 2 : 0;
    }
    Trainer tr;
    memset(&tr, 0, sizeof tr);
    config_init_all(&tr.cfg);
    config_load_file(&tr.cfg, argv[1]);
    config_apply_args(&tr.cfg, argc - 2, argv + 2);
    Config *c = &tr.cfg;
    if (cfg_int(c, "threads") > 0) omp_set_num_threads((int)cfg_int(c, "threads"));
    fpu_flush_denormals();
    resolve_out_dir(&tr, argv[1]);
    tr.B = (int)cfg_int(c, "batch_size");
    tr.T = (int)cfg_int(c, "seq_len");

    const char *export_dir = cfg_str(c, "export_data");
    // A run folder that cannot be written is refused before any work.
    if (!*export_dir && path_exists(tr.out_dir) && !is_directory(tr.out_dir))
        die_input("out_dir: '%s' is a file, expected a folder", tr.out_dir);
    if (!*export_dir && mkdir_p(tr.out_dir) != 0)
        die_input("out_dir: cannot create '%s' (%s)", tr.out_dir, strerror(errno));
    if (!*export_dir && access(tr.out_dir, W_OK | X_OK) != 0)
        die_input("out_dir: cannot write in '%s' (%s)", tr.out_dir, strerror(errno));
    char *resume = *export_dir ? NULL : choose_resume(&tr);
    task_open(&tr.task, c, 1);
    if (*export_dir) {
        export_data(&tr, export_dir);
        task_close(&tr.task);
        config_free(c);
        return 0;
    }
    if (cfg_int(c, "sample_every") > 0) sample_check_tokenizer(c);
    long steps = cfg_int(c, "steps");
    if (steps == 0) {
        double epochs = cfg_float(c, "epochs");
        steps = (long)((epochs * (double)tr.task.train.n + tr.B - 1) / tr.B);
        if (steps <= 0) die_input("steps: set steps > 0 or epochs > 0");
    }
    tr.steps = steps;

    tr.model = build_model(&tr);
    model_init_weights(tr.model, (uint64_t)cfg_int(c, "seed"));
    optim_init(&tr.opt, !strcmp(cfg_str(c, "optimizer"), "sgd") ? OPT_SGD : OPT_ADAMW, tr.model->n_params,
               cfg_float(c, "beta1"), cfg_float(c, "beta2"), cfg_float(c, "eps"), cfg_float(c, "weight_decay"));
    loader_init(&tr.loader, &tr.task.train, tr.B, cfg_bool(c, "shuffle"), (uint64_t)cfg_int(c, "seed"));
    tr.inputs = mallocCheck(sizeof(int32_t) * tr.B * tr.T);
    tr.targets = mallocCheck(sizeof(int32_t) * tr.B * tr.T);
    if (resume) resume_from(&tr, resume);
    else if (*cfg_str(c, "init_from")) init_from(&tr, cfg_str(c, "init_from"));
    long done_at = resume ? completed_at_acc(&tr, tr.step) : -1;
    if (done_at >= 0)
        printf("%s: the run is complete (validation accuracy reached stop_at_acc at step %ld); nothing to do "
               "(resume = %s trains it on)\n", tr.out_dir, done_at, resume);
    free(resume);
    if (done_at >= 0) {
        trainer_free(&tr);
        return 0;
    }

    write_config(&tr);
    char path[1200];
    snprintf(path, sizeof path, "%s/metrics.jsonl", tr.out_dir);
    tr.metrics = fopen(path, tr.step > 0 ? "a" : "w");
    if (!tr.metrics) die_input("out_dir: cannot write '%s'", path);
    if (cfg_int(c, "sparsity_every") > 0 && sparsity_supported(tr.model)) {
        snprintf(path, sizeof path, "%s/sparsity.jsonl", tr.out_dir);
        tr.sparsity = fopen(path, tr.step > 0 ? "a" : "w");
        if (!tr.sparsity) die_input("out_dir: cannot write '%s'", path);
    }

    printf("%s: %s, %d layers, d_model %d, %d heads, %zu parameters, %.1f MiB activations, %d threads\n",
           argv[1], cfg_str(c, "mixer"), tr.model->s.L, tr.model->s.C, tr.model->s.H,
           tr.model->n_params, model_activation_bytes(tr.model) / 1048576.0, omp_get_max_threads());
    printf("data: %s, %ld train / %ld val sequences of %d tokens, vocab %d; %ld steps of %d -> %s\n",
           cfg_str(c, "task"), tr.task.train.n, tr.task.has_val ? tr.task.val.n : 0L, tr.T,
           tr.task.vocab_size, tr.steps, tr.B, tr.out_dir);
    fflush(stdout);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    train_loop(&tr);
    trainer_free(&tr);
    return g_interrupted ? 128 + g_interrupted : 0;
}
