// `make bench`: trains the model of each bench/*.conf for a few steps after a warm-up, once per
// mixer of the registry (and per seq_len of a sweep), and prints and appends to
// bench/results.jsonl: tokens/s, ms/step, achieved GFLOP/s, the share of the fp32 FMA peak the
// bench measures itself, peak RSS, threads, precision; beside it PyTorch's figures for the same
// softmax model (bench/torch_ref.py under PyTorch 2.x from build/torch-venv, made by
// `make torch-venv`, or --python; one per variant: eager fp32, torch.compile, bf16 autocast, and for
// MQAR the LM head at every position or at the labelled ones only) and llm.c's (from the conf).
//
// Usage: build/bench [options] CONF... [key=value ...]
//   --only SUBSTR    run only rows whose "config/mixer" contains SUBSTR
//   --mixers A,B     only these mixers (default: the conf's bench_mixers, normally all); a hybrid
//                    stack joins its layers' mixers with '+': --mixers linear+softmax
//   --steps N, --warmup N   override the confs' bench_steps / bench_warmup
//   --quick          1 warm-up step, 3 timed steps, first seq_len of a sweep only
//   --threads N      OpenMP threads (default: the conf's `threads`, 0 = OpenMP default)
//   --no-torch       skip the PyTorch comparison
//   --python PATH    the interpreter with torch (default build/torch-venv/bin/python, else python3)
//   --torch-variants LIST   torch_ref.py variants, each eager|compile|bf16|compile-bf16, for MQAR
//                    with /all or /labelled (the head's positions); default eager,compile,bf16 and
//                    for MQAR eager/all,eager/labelled,compile/labelled,bf16/labelled
//   --tries N        tries of a row (and of each PyTorch variant) when another process was busy (3)
//   --out FILE       results file (default bench/results.jsonl; "-" = none)
//   --wait-quiet S   before each row wait up to S seconds for a second in which other processes
//                    use under 5% of the CPUs (a shared host)
//   --interleave     per seq_len, every mixer's model in one process, each timed step a step of
//                    each mixer in turn: a shared machine's slow spells fall on all of them alike,
//                    so their ratios hold where separate rows' would not (one try; the RSS is the
//                    process's, all the models together; the row's "interleaved": true)
//   key=value        applied to every conf after it is loaded (e.g. precision=bf16)
//
// Trustworthy figures on a shared host: every row runs in its own process (its peak RSS is its
// own); a short FMA-peak probe runs right before and right after the timed steps, and when either
// falls below 85% of the peak measured at start (another process held a core) the row is redone,
// up to --tries (3) times, else flagged "busy" (a lower bound); so is a row during which other processes
// used over 5% of the CPUs (/proc/stat minus our own CPU time: it sees other containers too). The figure is the best step time of the
// timed steps (the median is in results.jsonl).
//
// FLOPs: the model's own matmuls (MLP, LM head at the positions with a loss: 2 per multiply-add,
// backward 2x forward) plus the mixer's flops() (model/mixers/mixer.h); a mixer without flops() is
// counted without its own work and flagged.
#include <errno.h>
#include <omp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/peak.h"
#include "core/config.h"
#include "core/fpu.h"
#include "core/io.h"
#include "model/keys.h"
#include "model/kernels/gemm_kernels.h"
#include "core/rng.h"
#include "data/task.h"
#include "eval/sparsity.h"
#include "model/model.h"
#include "trainer/optim.h"
#include "trainer/step.h"

#ifdef REAL_DOUBLE
#error "the bench measures the float build"
#endif

// clang-format off
static const KeyDef g_bench_keys[] = {
    {"bench_data", KEY_ENUM, "task", 0, "task|lm", 0, "bench", "task: the config's task (MQAR); lm: random tokens, a loss at every position"},
    {"bench_mixers", KEY_STRING, "all", 0, 0, 0, "bench", "comma list of mixers, or all (the registry)"},
    {"bench_seq_lens", KEY_STRING, "", 0, 0, 0, "bench", "comma list of seq_len values to sweep (empty: seq_len)"},
    {"bench_tokens", KEY_INT, "0", RANGE_NONNEG, 0, 0, "bench", "sweep: batch_size = bench_tokens / seq_len (0: batch_size)"},
    {"bench_warmup", KEY_INT, "2", RANGE_NONNEG, 0, 0, "bench", "untimed steps first"},
    {"bench_steps", KEY_INT, "5", RANGE_POS, 0, 0, "bench", "timed steps"},
    {"bench_torch", KEY_BOOL, "true", 0, 0, 0, "bench", "compare softmax with bench/torch_ref.py"},
    {"bench_llmc", KEY_FLOAT, "0", RANGE_NONNEG, 0, 0, "bench", "llm.c train_gpt2 tokens/s on this shape measured once (docs/performance.md#results; 0 = none)"},
    {"bench_sparsity", KEY_BOOL, "false", 0, 0, 0, "bench", "also time the sparsity pass over the validation set (MQAR; the conf's eval_batches and sparsity_rows)"},
    {"bench_timeout", KEY_INT, "900", RANGE_POS, 0, 0, "bench", "seconds before a row is abandoned"},
    {NULL, 0, NULL, 0, NULL, 0, NULL, NULL},
};
// clang-format on

typedef struct {
    int ok;  // 0: the child died (err says how)
    char err[200];
    int threads, B, T, V, C, L, H, mlp;
    double ms_best, ms_median, fwd_ms, bwd_ms, opt_ms;  // per step; phases at the best step
    double head_ms;         // of fwd_ms: the LM head with its gradient (the forward computes both)
    double cpu_ms;          // least CPU time of the process in one step (all threads)
    double flop_step;       // FLOPs of one training step (model + mixer)
    int mixer_flops;        // 1: the mixer counted its own work
    double act_mb, rss_mb;  // activation arena, peak resident set
    double probe_lo;        // lowest quick peak probe around the timed steps (GFLOP/s)
    double others;          // share of the CPUs other processes used during the timed steps
    int attempts, busy;
    int interleaved;  // 1: timed by --interleave, in turn with the other mixers of its T
    int n_steps;      // interleaved: its timed steps in run order (the first 64)
    double step_ms[64];
    double loss;
    // the sparsity pass (bench_sparsity): the first of the process (it also fills the S(a) tables)
    // and a second, steady one; 0 when not measured; others: as `others`, during the second
    double sparsity_first_ms, sparsity_ms, sparsity_others;
} Result;

typedef struct {
    const char *only, *mixers, *python, *out, *torch_variants;
    int steps, warmup, quick, threads, torch, tries;
    int interleave;     // 1: a T's mixers in one process, their steps in turn (run_rows_interleaved)
    double wait_quiet;  // seconds to wait for a quiet machine before each row
    int n_over;
    char **over;             // key=value overrides
    double peak, peak_bf16;  // measured at start (threads of the run)
} Options;

static int parse_list(const char *s, char out[][64], int cap);

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void load_config(Config *c, const char *path, const Options *o) {
    config_init_all(c);
    config_add_keys(c, g_bench_keys);
    config_load_file(c, path);
    config_apply_args(c, o->n_over, o->over);
}

static double model_flops(const Model *m, int B, int T, int n_rows, double *mixer_part, int *has) {
    const ModelShape *s = &m->s;
    double BT = (double)B * T, C = s->C;
    double fwd = 2.0 * n_rows * C * s->V, bwd = 4.0 * n_rows * C * s->V;  // head
    if (s->mlp) fwd += s->L * 16 * BT * C * C, bwd += s->L * 32 * BT * C * C;
    *mixer_part = 0;
    *has = 1;
    for (int l = 0; l < s->L; l++) {
        double f = 0, b = 0;
        if (!m->mixer[l]->flops) {
            *has = 0;
            continue;
        }
        m->mixer[l]->flops(m->mixer_state[l], B, T, &f, &b);
        *mixer_part += f + b;
    }
    return fwd + bwd + *mixer_part;
}

// ---------------------------------------------------------------------------------------------
// Other processes' CPU use while we time: the machine's busy CPU seconds (/proc/stat, which
// counts every process of this VM, also in other containers) minus our own (getrusage).

typedef struct {
    double wall, machine, self;
} CpuMark;

static CpuMark cpu_mark(void) {
    CpuMark k = {peak_now(), 0, 0};
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long v[8] = {0};
    if (f) {
        if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
                   &v[7]) == 8)  // user nice system idle iowait irq softirq steal
            k.machine = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)sysconf(_SC_CLK_TCK);
        fclose(f);
    }
    for (int who = 0; who < 2; who++) {  // this process and its waited-for children
        struct rusage ru;
        getrusage(who ? RUSAGE_CHILDREN : RUSAGE_SELF, &ru);
        k.self += (double)ru.ru_utime.tv_sec + 1e-6 * ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
            1e-6 * ru.ru_stime.tv_usec;
    }
    return k;
}

// Share of the machine's CPUs that other processes used between a and b (0 when unknown).
static double others_share(CpuMark a, CpuMark b) {
    if (a.machine <= 0 || b.wall <= a.wall) return 0;
    double other = (b.machine - a.machine) - (b.self - a.self);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    double share = other / ((b.wall - a.wall) * (double)(ncpu > 0 ? ncpu : 1));
    return share < 0 ? 0 : share;
}

// Waits (up to max_s seconds) for one second in which other processes use under 5% of the CPUs;
// returns their share in the last second sampled.
static double wait_quiet(double max_s) {
    double t0 = peak_now(), share = 0;
    do {
        CpuMark a = cpu_mark();
        nanosleep(&(struct timespec){1, 0}, NULL);
        share = others_share(a, cpu_mark());
    } while (share > 0.05 && peak_now() - t0 < max_s);
    return share;
}

// CPU time of this process (all its threads). On a host shared with other jobs, one thread's CPU
// time per step is a steadier figure than the wall clock (with 2 threads it also counts the time
// OpenMP spins at barriers).
static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// ---------------------------------------------------------------------------------------------
// One row, in a child process.

// 1 when every '+'-separated name of a bench mixer entry is a registered mixer.
static int known_mixers(const char *entry) {
    char *buf = strdupCheck(entry);
    int ok = 1;
    for (char *name = strtok(buf, "+"); name; name = strtok(NULL, "+")) ok &= mixer_find(name) != NULL;
    free(buf);
    return ok;
}

// The evaluator's sparsity pass as a training run makes it every sparsity_every steps (the whole
// validation set unless eval_batches or sparsity_rows narrow it), twice: the first of a process
// also fills the S(a) tables, the second is what each later pass costs.
static void time_sparsity_pass(Model *m, const Task *task, const Config *cfg, int B, int T, Result *r) {
    long eval_batches = cfg_int(cfg, "eval_batches"), rows = cfg_int(cfg, "sparsity_rows");
    for (int pass = 0; pass < 2; pass++) {
        SparsityResult sr;
        memset(&sr, 0, sizeof sr);
        CpuMark c0 = cpu_mark();
        double t0 = peak_now();
        sparsity_eval(m, &task->val, B, T, eval_batches, rows, &sr);
        double ms = (peak_now() - t0) * 1e3;
        sparsity_result_free(&sr);
        if (pass == 0) r->sparsity_first_ms = ms;
        else r->sparsity_ms = ms, r->sparsity_others = others_share(c0, cpu_mark());
    }
}

// A row's model and data between its steps: one row's in run_row, every mixer's of a T in
// run_rows_interleaved.
typedef struct {
    Config cfg;
    Task task;
    Model *m;
    Optimizer opt;
    Loader ld;
    int32_t *in, *tg;
    Rng rng;
    int lm, B, T, V;
    double lr, clip;
} RowRun;

// Builds row (mixer, T, B) of conf: config, task, model, optimizer, data; fills r's shape.
static void row_open(RowRun *w, const char *conf, const char *mixer, int T, int B, const Options *o, Result *r) {
    memset(w, 0, sizeof *w);
    Config *cfg = &w->cfg;
    load_config(cfg, conf, o);
    char *list = strdupCheck(mixer);
    for (char *p = list; *p; p++) *p = *p == '+' ? ',' : *p;  // a hybrid: one mixer per layer
    config_set(cfg, "mixer", list, "bench");
    free(list);
    char buf[64];
    snprintf(buf, sizeof buf, "%d", T);
    config_set(cfg, "seq_len", buf, "bench");
    snprintf(buf, sizeof buf, "%d", B);
    config_set(cfg, "batch_size", buf, "bench");
    int threads = o->threads ? o->threads : (int)cfg_int(cfg, "threads");
    if (threads > 0) omp_set_num_threads(threads);
    fpu_flush_denormals();
    r->threads = omp_get_max_threads();

    w->lm = !strcmp(cfg_str(cfg, "bench_data"), "lm");
    w->B = B, w->T = T;
    int V = (int)cfg_int(cfg, "vocab_size"), per_seq = T;
    if (!w->lm) {
        task_open(&w->task, cfg, TASK_TRAIN | TASK_VAL);
        V = w->task.vocab_size;
        per_seq = w->task.targets_per_seq;
    } else if (V <= 0) {
        die_input("vocab_size: bench_data = lm needs vocab_size > 0");
    }
    w->V = V;
    ModelShape s = model_shape_from_config(cfg, V);  // seq_len = T, set above
    r->B = B, r->T = T, r->V = V, r->C = s.C, r->L = s.L, r->H = s.H, r->mlp = s.mlp;
    w->m = model_create(&s, NULL, cfg, B, B * per_seq);  // the mixers from cfg (a hybrid lists them)
    model_init_weights(w->m, (uint64_t)cfg_int(cfg, "seed"));
    r->act_mb = (double)model_activation_bytes(w->m) / 1048576.0;
    optim_from_config(&w->opt, cfg, w->m->n_params);
    if (!w->lm) loader_init(&w->ld, &w->task.train, B, 1, 0);
    w->in = mallocCheck(sizeof(int32_t) * B * T), w->tg = mallocCheck(sizeof(int32_t) * B * T);
    rng_seed(&w->rng, 1234);
    w->lr = cfg_float(cfg, "lr"), w->clip = cfg_float(cfg, "grad_clip");
}

// One training step of the row on its next batch; returns its wall time (s), its phases in *st
// and its CPU time (s, all threads) in *cpu.
static double row_step(RowRun *w, StepStats *st, double *cpu, Result *r) {
    int B = w->B, T = w->T;
    if (w->lm)
        for (int i = 0; i < B * T; i++)
            w->in[i] = (int32_t)(rng_below(&w->rng, (uint64_t)w->V)),
            w->tg[i] = (int32_t)(rng_below(&w->rng, (uint64_t)w->V));
    else loader_next(&w->ld, w->in, w->tg);
    double c0 = cpu_seconds(), t0 = peak_now();
    train_step(w->m, &w->opt, w->in, w->tg, B, T, w->lr, w->clip, st);  // the trainer's step, constant rate
    double t1 = peak_now();
    *cpu = cpu_seconds() - c0;
    r->loss = st->loss;
    return t1 - t0;
}

// The median of the timed steps ms[0..steps) into r (sorts ms; the best step and its phases
// are the caller's).
static void row_times(double *ms, int steps, Result *r) {
    qsort(ms, (size_t)steps, sizeof(double), cmp_double);
    r->ms_median = ms[steps / 2];
}

// The row's FLOPs, the peak RSS so far, the sparsity pass (bench_sparsity); frees the row.
static void row_close(RowRun *w, Result *r, int sparsity) {
    double mixer_part;
    r->flop_step = model_flops(w->m, w->B, w->T, w->m->n_rows, &mixer_part, &r->mixer_flops);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);  // the training's peak, before the sparsity pass adds its own
#ifdef __APPLE__
    r->rss_mb = (double)ru.ru_maxrss / 1048576.0;  // bytes on macOS
#else
    r->rss_mb = (double)ru.ru_maxrss / 1024.0;  // kilobytes on Linux
#endif
    if (sparsity && !w->lm && cfg_bool(&w->cfg, "bench_sparsity") && sparsity_supported(w->m))
        time_sparsity_pass(w->m, &w->task, &w->cfg, w->B, w->T, r);
    r->ok = 1;
    free(w->in), free(w->tg);
    model_free(w->m);
}

static void run_row(const char *conf, const char *mixer, int T, int B, const Options *o, Result *r) {
    RowRun w;
    row_open(&w, conf, mixer, T, B, o, r);
    alarm((unsigned)cfg_int(&w.cfg, "bench_timeout"));
    int warm = o->warmup >= 0 ? o->warmup : (int)cfg_int(&w.cfg, "bench_warmup");
    int steps = o->steps > 0 ? o->steps : (int)cfg_int(&w.cfg, "bench_steps");
    double *ms = mallocCheck(sizeof(double) * steps);
    double best_total = 1e30;
    for (int attempt = 0; attempt < o->tries; attempt++) {
        r->attempts = attempt + 1;
        double before = peak_fp32_quick(r->threads);
        CpuMark m0 = cpu_mark();
        double best = 1e30, fwd = 0, bwd = 0, upd = 0, head = 0, cpu_best = 1e30;
        for (int it = 0; it < warm + steps; it++) {
            StepStats st;
            double cpu, t = row_step(&w, &st, &cpu, r);
            if (it < warm) continue;
            ms[it - warm] = t * 1e3;
            if (t < best) best = t, fwd = st.fwd_s, bwd = st.bwd_s, upd = st.upd_s, head = st.head_s;
            if (cpu < cpu_best) cpu_best = cpu;
        }
        double others = others_share(m0, cpu_mark());
        double after = peak_fp32_quick(r->threads);
        double lo = before < after ? before : after;
        if (best < best_total) {
            best_total = best;
            row_times(ms, steps, r);
            r->ms_best = best * 1e3;
            r->fwd_ms = fwd * 1e3, r->bwd_ms = bwd * 1e3, r->opt_ms = upd * 1e3, r->head_ms = head * 1e3;
            r->cpu_ms = cpu_best * 1e3;
            r->probe_lo = lo;
            r->others = others;
        }
        r->busy = lo < 0.85 * o->peak || others > 0.05;
        if (!r->busy) break;
        struct timespec ts = {0, 300000000};
        nanosleep(&ts, NULL);
    }
    free(ms);
    row_close(&w, r, 1);
}

// --interleave: the n mixers of one T in one process, each timed step a step of every mixer in
// turn (mixer 0, 1, ..., n-1, then again), so that a slow spell of a shared machine falls on all
// of them alike: their ratios are taken over the same seconds. One try (the busy flags from the
// probes and the other processes' share around all the steps); the sparsity pass after all the
// steps; RSS is the process's, all the models together.
static void run_rows_interleaved(const char *conf, char mix[][64], int n, int T, int B, const Options *o, Result *r) {
    RowRun *w = mallocCheck(sizeof(RowRun) * (size_t)n);
    for (int i = 0; i < n; i++) row_open(&w[i], conf, mix[i], T, B, o, &r[i]);
    alarm((unsigned)(n * cfg_int(&w[0].cfg, "bench_timeout")));
    int warm = o->warmup >= 0 ? o->warmup : (int)cfg_int(&w[0].cfg, "bench_warmup");
    int steps = o->steps > 0 ? o->steps : (int)cfg_int(&w[0].cfg, "bench_steps");
    double *ms = mallocCheck(sizeof(double) * (size_t)steps * n);
    for (int i = 0; i < n; i++) r[i].attempts = 1, r[i].interleaved = 1, r[i].ms_best = 1e30, r[i].cpu_ms = 1e30;
    double before = peak_fp32_quick(r[0].threads);
    CpuMark m0 = cpu_mark();
    for (int it = 0; it < warm + steps; it++)
        for (int i = 0; i < n; i++) {
            StepStats st;
            double cpu, t = row_step(&w[i], &st, &cpu, &r[i]);
            if (it < warm) continue;
            ms[(size_t)i * steps + it - warm] = t * 1e3;
            if (t * 1e3 < r[i].ms_best)
                r[i].ms_best = t * 1e3, r[i].fwd_ms = st.fwd_s * 1e3, r[i].bwd_ms = st.bwd_s * 1e3,
                r[i].opt_ms = st.upd_s * 1e3, r[i].head_ms = st.head_s * 1e3;
            if (cpu * 1e3 < r[i].cpu_ms) r[i].cpu_ms = cpu * 1e3;
        }
    double others = others_share(m0, cpu_mark());
    double after = peak_fp32_quick(r[0].threads), lo = before < after ? before : after;
    for (int i = 0; i < n; i++) {
        r[i].n_steps = steps < 64 ? steps : 64;  // in run order, before row_times sorts them
        memcpy(r[i].step_ms, ms + (size_t)i * steps, sizeof(double) * (size_t)r[i].n_steps);
        row_times(ms + (size_t)i * steps, steps, &r[i]);
        r[i].probe_lo = lo, r[i].others = others;
        r[i].busy = lo < 0.85 * o->peak || others > 0.05;
        row_close(&w[i], &r[i], 1);
    }
    free(ms), free(w);
}

// Runs rows in a fresh process (peak RSS per process; a crashing or slow mixer costs only its
// rows): mix[0]'s by run_row, or with interleave the n mixers' by run_rows_interleaved. When the
// process fails, every row has ok = 0 and err saying how.
static void run_isolated(const char *conf, char mix[][64], int n, int interleave, int T, int B, const Options *o, Result *r) {
    size_t want = sizeof(Result) * (size_t)n, got = 0;
    memset(r, 0, want);
    int fd[2];
    if (pipe(fd) != 0) die("pipe: %s", strerror(errno));
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) die("fork: %s", strerror(errno));
    if (pid == 0) {
        close(fd[0]);
        Result *c = mallocCheck(want);
        memset(c, 0, want);
        if (interleave) run_rows_interleaved(conf, mix, n, T, B, o, c);
        else run_row(conf, mix[0], T, B, o, c);
        for (size_t put = 0; put < want;) {
            ssize_t k = write(fd[1], (const char *)c + put, want - put);
            if (k <= 0) _exit(1);
            put += (size_t)k;
        }
        _exit(0);
    }
    close(fd[1]);
    ssize_t k;
    while (got < want && (k = read(fd[0], (char *)r + got, want - got)) > 0) got += (size_t)k;
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    if (got != want || !r[0].ok) {
        memset(r, 0, want);
        for (int i = 0; i < n; i++) {
            if (WIFSIGNALED(st))
                snprintf(r[i].err, sizeof r[i].err, "%s",
                         WTERMSIG(st) == SIGALRM ? "timeout (bench_timeout)" : strsignal(WTERMSIG(st)));
            else snprintf(r[i].err, sizeof r[i].err, "exit %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        }
    }
}

static Result run_row_isolated(const char *conf, const char *mixer, int T, int B, const Options *o) {
    char m[1][64];
    snprintf(m[0], sizeof m[0], "%.63s", mixer);
    Result r;
    run_isolated(conf, m, 1, 0, T, B, o, &r);
    return r;
}

// Peaks for the run's thread count, measured in a child (the parent never starts OpenMP threads,
// so fork stays safe).
static void measure_peaks(Options *o) {
    int fd[2];
    if (pipe(fd) != 0) die("pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid == 0) {
        if (o->threads > 0) omp_set_num_threads(o->threads);
        // The best of several tries: on a shared host one try can lose a core to another process
        // (the n-thread peak of a quiet host is about n times the 1-thread peak).
        const char *kind;
        int n = omp_get_max_threads();
        double one = peak_fp32(1, &kind), p[2] = {0, 0};
        for (int i = 0; i < 10 && p[0] < 0.95 * n * one; i++) {
            if (i) nanosleep(&(struct timespec){0, 300000000}, NULL);
            double f = peak_fp32(n, &kind), b = peak_bf16(n);
            p[0] = f > p[0] ? f : p[0], p[1] = b > p[1] ? b : p[1];
        }
        if (write(fd[1], p, sizeof p) != (ssize_t)sizeof p) _exit(1);
        _exit(0);
    }
    close(fd[1]);
    double p[2] = {0, 0};
    if (read(fd[0], p, sizeof p) != (ssize_t)sizeof p) die("peak measurement failed");
    close(fd[0]);
    waitpid(pid, NULL, 0);
    o->peak = p[0], o->peak_bf16 = p[1];
}

// ---------------------------------------------------------------------------------------------
// PyTorch: bench/torch_ref.py in a subprocess, once per variant (eager, compile, bf16, ...; for
// MQAR also the head at every position or at the labelled ones only).

#define MAX_TORCH 8
#define TORCH_VENV_PYTHON "build/torch-venv/bin/python"  // make torch-venv
typedef struct {
    char name[32];     // "eager", "compile/labelled", ...
    char mode[16];     // torch_ref.py's --variant
    int labelled;      // --labelled-only
    double tok;        // tokens/s, 0: failed (note says why)
    double compile_s;  // torch.compile's first step
    int busy;
    char note[200];
} TorchRun;

static int g_torch_missing;  // the interpreter has no torch: no more tries this run
static char g_torch_version[32], g_torch_settings[512];
static int g_torch_settings_shown;

static void torch_run(const Options *o, const Config *c, const Result *r, int per_seq_targets, TorchRun *v) {
    v->tok = 0, v->compile_s = 0, v->note[0] = 0;
    if (g_torch_missing) return;
    char cmd[1280];
    snprintf(cmd, sizeof cmd,
             "%s bench/torch_ref.py --V %d --T %d --B %d --C %d --L %d --H %d --mlp %d --pos-emb %d "
             "--targets %d --threads %d --steps %d --warmup %d --lr %g --weight-decay %g --clip %g --variant %s%s 2>&1",
             o->python, r->V, r->T, r->B, r->C, r->L, r->H, r->mlp, !strcmp(cfg_str(c, "pos_emb"), "learned"),
             per_seq_targets, r->threads, o->steps > 0 ? o->steps : (int)cfg_int(c, "bench_steps"),
             o->warmup >= 0 ? o->warmup : (int)cfg_int(c, "bench_warmup"), cfg_float(c, "lr"),
             cfg_float(c, "weight_decay"), cfg_float(c, "grad_clip"), v->mode, v->labelled ? " --labelled-only" : "");
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    if (!p) {
        snprintf(v->note, sizeof v->note, "cannot run %s", o->python);
        return;
    }
    char line[2048], last[2048] = "";
    while (fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = 0;
        char *q = strstr(line, "tokens_per_s=");
        if (!strncmp(line, "settings: ", 10)) {
            if (!*g_torch_settings) snprintf(g_torch_settings, sizeof g_torch_settings, "%.500s", line + 10);
            char *tv = strstr(line, "torch=");
            if (tv) snprintf(g_torch_version, sizeof g_torch_version, "%.*s", (int)strcspn(tv + 6, " "), tv + 6);
        } else if (q) {
            v->tok = atof(q + 13);
            char *cs = strstr(line, "compile_s=");
            if (cs) v->compile_s = atof(cs + 10);
        } else if (!strncmp(line, "skipped", 7)) {
            snprintf(v->note, sizeof v->note, "%.190s", line);
            g_torch_missing = 1;  // do not retry for every row
        } else if (*line) {
            snprintf(last, sizeof last, "%s", line);
        }
    }
    int st = pclose(p);
    if (v->tok <= 0 && !*v->note)
        snprintf(v->note, sizeof v->note, "torch_ref.py failed (status %d): %.150s", st, last);
}

// The variants to run for a row: --torch-variants, else eager, compile and bf16 (for MQAR each with
// the head at the labelled positions only, and eager also with the head everywhere).
static int torch_variants(const Options *o, int mqar, TorchRun *v) {
    const char *list = o->torch_variants ? o->torch_variants
        : mqar                           ? "eager/all,eager/labelled,compile/labelled,bf16/labelled"
                                         : "eager,compile,bf16";
    char items[MAX_TORCH][64];
    int n = parse_list(list, items, MAX_TORCH);
    for (int i = 0; i < n; i++) {
        memset(&v[i], 0, sizeof v[i]);
        snprintf(v[i].name, sizeof v[i].name, "%.31s", items[i]);
        char *slash = strchr(items[i], '/');
        if (slash) *slash = 0;
        snprintf(v[i].mode, sizeof v[i].mode, "%.15s", items[i]);
        v[i].labelled = slash && !strcmp(slash + 1, "labelled");
        if (slash && !v[i].labelled && strcmp(slash + 1, "all"))
            die_input("--torch-variants: '%s': a head is /all or /labelled", v[i].name);
    }
    return n;
}

// The softmax row's PyTorch figures, one per variant (each the best of up to o->tries tries when
// another process was busy; busy when even the best try shared the CPUs).
static void torch_compare(const Options *o, const Config *cfg, const Result *r, int per_seq, TorchRun *v, int n) {
    for (int i = 0; i < n; i++) {
        double share = 0;
        TorchRun best = v[i];
        for (int attempt = 0; attempt < o->tries; attempt++) {
            if (o->wait_quiet > 0) wait_quiet(o->wait_quiet);
            CpuMark t0 = cpu_mark();
            torch_run(o, cfg, r, per_seq, &v[i]);
            double sh = others_share(t0, cpu_mark());
            if (v[i].tok > best.tok || attempt == 0) best = v[i], share = sh;
            if (v[i].tok <= 0 || sh <= 0.05) break;
        }
        v[i] = best;
        v[i].busy = v[i].tok > 0 && share > 0.05;
        if (v[i].busy && !*v[i].note)
            snprintf(v[i].note, sizeof v[i].note, "busy: other processes used %.0f%% of the CPUs", 100 * share);
    }
}

// The variant in the "torch" column: eager fp32 (for MQAR with the head at the labelled positions
// only, as attnscope runs it), else the first that ran.
static int torch_column(const TorchRun *v, int n) {
    for (int i = 0; i < n; i++)
        if (v[i].tok > 0 && (!strcmp(v[i].name, "eager") || !strcmp(v[i].name, "eager/labelled"))) return i;
    for (int i = 0; i < n; i++)
        if (v[i].tok > 0) return i;
    return -1;
}

// ---------------------------------------------------------------------------------------------

static void json_str(FILE *f, const char *k, const char *v) {
    fprintf(f, "\"%s\":\"", k);
    for (; *v; v++) {
        if (*v == '"' || *v == '\\') fputc('\\', f);
        if ((unsigned char)*v >= 0x20) fputc(*v, f);
    }
    fputs("\",", f);
}

static void cpu_name(char *buf, size_t n) {
    snprintf(buf, n, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            char *v = strchr(line, ':') + 2;
            v[strcspn(v, "\n")] = 0;
            snprintf(buf, n, "%s", v);
            break;
        }
    fclose(f);
}

static double load1(void) {
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = -1;
        fclose(f);
    }
    return l;
}

static int parse_list(const char *s, char out[][64], int cap) {
    int n = 0;
    while (*s && n < cap) {
        size_t k = strcspn(s, ",");
        snprintf(out[n], 64, "%.*s", (int)k, s);
        char *e = out[n] + strlen(out[n]);
        while (e > out[n] && e[-1] == ' ') *--e = 0;
        char *b = out[n];
        while (*b == ' ') b++;
        if (*b) memmove(out[n], b, strlen(b) + 1), n++;
        s += k + (s[k] == ',');
    }
    return n;
}

static void usage(void) {
    fprintf(stderr,
            "usage: build/bench [--only S] [--mixers A,B] [--steps N] [--warmup N] [--quick] "
            "[--threads N] [--no-torch] [--python PATH] [--torch-variants LIST] [--tries N] [--out FILE] "
            "[--wait-quiet S] [--interleave] CONF... [key=value ...]\n");
    exit(2);
}

// Options and the conf paths from the command line.
static int parse_args(int argc, char **argv, Options *o, const char **confs, int max_confs) {
    int n_conf = 0;
    char **over = mallocCheck(sizeof(char *) * (size_t)argc);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
#define ARG() (i + 1 < argc ? argv[++i] : (usage(), ""))
        if (!strcmp(a, "--only")) o->only = ARG();
        else if (!strcmp(a, "--mixers")) o->mixers = ARG();
        else if (!strcmp(a, "--steps")) o->steps = atoi(ARG());
        else if (!strcmp(a, "--warmup")) o->warmup = atoi(ARG());
        else if (!strcmp(a, "--threads")) o->threads = atoi(ARG());
        else if (!strcmp(a, "--python")) o->python = ARG();
        else if (!strcmp(a, "--torch-variants")) o->torch_variants = ARG();
        else if (!strcmp(a, "--tries")) o->tries = atoi(ARG()) > 0 ? atoi(argv[i]) : 1;
        else if (!strcmp(a, "--out")) o->out = ARG();
        else if (!strcmp(a, "--wait-quiet")) o->wait_quiet = atof(ARG());
        else if (!strcmp(a, "--quick")) o->quick = 1;
        else if (!strcmp(a, "--interleave")) o->interleave = 1;
        else if (!strcmp(a, "--no-torch")) o->torch = 0;
        else if (a[0] == '-') usage();
        else if (strchr(a, '=')) over[o->n_over++] = argv[i];
        else if (n_conf < max_confs) confs[n_conf++] = a;
#undef ARG
    }
    if (!n_conf) usage();
    o->over = over;
    if (o->quick) {
        if (o->steps <= 0) o->steps = 3;
        if (o->warmup < 0) o->warmup = 1;
    }
    return n_conf;
}

// What every row of the run shares: the machine, the date, the results file.
typedef struct {
    char cpu[256], date[64];
    const char *wait_policy;
    FILE *out;  // NULL: --out -
} RunInfo;

static void write_json_row(const RunInfo *ri, const Options *o, const char *cname, const char *mixer, const char *prec,
                           const Result *r, double tok, double gf, const TorchRun *tv, int n_tv, int col, double llmc,
                           double vs_llmc) {
    FILE *out = ri->out;
    fputc('{', out);
    json_str(out, "date", ri->date);
    json_str(out, "cpu", ri->cpu);
    json_str(out, "isa", gemm_build_isa());  // what the build targets: AVX2 and AVX-512 EPYCs share a name
    json_str(out, "gemm_kernel", gemm_kernel_name());
    json_str(out, "config", cname);
    json_str(out, "mixer", mixer);
    json_str(out, "precision", prec);
    fprintf(out,
            "\"threads\":%d,\"B\":%d,\"T\":%d,\"V\":%d,\"d_model\":%d,\"n_layer\":%d,"
            "\"n_head\":%d,\"mlp\":%d,\"tokens_per_s\":%.1f,\"ms_per_step\":%.3f,"
            "\"ms_median\":%.3f,\"cpu_ms\":%.3f,\"fwd_ms\":%.3f,\"head_ms\":%.3f,\"bwd_ms\":%.3f,\"opt_ms\":%.3f,"
            "\"gflop_per_step\":%.4f,\"gflops\":%.2f,\"peak_gflops\":%.1f,"
            "\"pct_peak\":%.2f,\"mixer_flops\":%s,\"act_mb\":%.1f,\"peak_rss_mb\":%.1f,"
            "\"busy\":%s,\"others_cpu\":%.3f,\"attempts\":%d,\"load1\":%.2f,",
            r->threads, r->B, r->T, r->V, r->C, r->L, r->H, r->mlp, tok, r->ms_best, r->ms_median, r->cpu_ms, r->fwd_ms,
            r->head_ms, r->bwd_ms, r->opt_ms, r->flop_step * 1e-9, gf, o->peak, 100 * gf / o->peak,
            r->mixer_flops ? "true" : "false", r->act_mb, r->rss_mb, r->busy ? "true" : "false", r->others, r->attempts,
            load1());
    if (col >= 0) {  // the column's variant, then every variant
        fprintf(out, "\"torch_tokens_per_s\":%.1f,\"vs_torch\":%.3f,\"torch_busy\":%s,", tv[col].tok, tok / tv[col].tok,
                tv[col].busy ? "true" : "false");
        json_str(out, "torch_column", tv[col].name);
        json_str(out, "torch_version", g_torch_version);
        fputs("\"torch\":[", out);
        for (int i = 0; i < n_tv; i++) {
            fprintf(out, "%s{", i ? "," : "");
            json_str(out, "variant", tv[i].name);
            fprintf(out, "\"tokens_per_s\":%.1f,\"vs\":%.3f,\"compile_s\":%.1f,\"busy\":%s}", tv[i].tok,
                    tv[i].tok > 0 ? tok / tv[i].tok : 0, tv[i].compile_s, tv[i].busy ? "true" : "false");
        }
        fputs("],", out);
    }
    if (vs_llmc > 0) fprintf(out, "\"llmc_tokens_per_s\":%.1f,\"vs_llmc\":%.3f,", llmc, vs_llmc);
    if (r->sparsity_ms > 0)
        fprintf(out, "\"sparsity_ms\":%.1f,\"sparsity_steps\":%.2f,\"sparsity_first_ms\":%.1f,\"sparsity_others_cpu\":%.3f,",
                r->sparsity_ms, r->sparsity_ms / r->ms_best, r->sparsity_first_ms, r->sparsity_others);
    if (r->interleaved) {  // and its steps in run order: the t-th of each row ran in the same turn
        fputs("\"interleaved\":true,\"step_ms\":[", out);
        for (int i = 0; i < r->n_steps; i++) fprintf(out, "%s%.3f", i ? "," : "", r->step_ms[i]);
        fputs("],", out);
    }
    fprintf(out, "\"omp_wait_policy\":\"%s\"}\n", ri->wait_policy ? ri->wait_policy : "unset");
    fflush(out);
}

// A row's batch at seq_len T: bench_tokens / T (a sweep's rows train the same tokens), else the
// conf's batch_size.
static int row_batch(const Config *cfg, int T) {
    long tokens = cfg_int(cfg, "bench_tokens");
    return tokens > 0 ? (int)(tokens / T > 0 ? tokens / T : 1) : (int)cfg_int(cfg, "batch_size");
}

// One row (mixer, seq_len) of a conf: runs it, prints it, appends it to the results file;
// returns its tokens/s and (in *cpu_tok) its tokens per CPU second (0 when it failed).
static double bench_row(const RunInfo *ri, const Options *o, const char *conf, const char *cname, const Config *cfg,
                        const char *mixer, int T, int first_len, const Result *given, double *cpu_tok) {
    *cpu_tok = 0;
    int B = row_batch(cfg, T);
    const char *prec = config_find(cfg, "precision") ? cfg_str(cfg, "precision") : "fp32";
    int per_seq = !strcmp(cfg_str(cfg, "bench_data"), "lm") ? -1 : (int)cfg_int(cfg, "mqar_kv_pairs");
    double llmc = cfg_float(cfg, "bench_llmc");
    if (!given && o->wait_quiet > 0) wait_quiet(o->wait_quiet);
    Result r = given ? *given : run_row_isolated(conf, mixer, T, B, o);  // (given: --interleave's)
    if (!r.ok) {
        printf("%-9s %5d %4d  failed: %s\n", mixer, T, B, r.err);
        fflush(stdout);
        return 0;
    }
    double tok = (double)B * T / (r.ms_best * 1e-3);
    double gf = r.flop_step / (r.ms_best * 1e-3) * 1e-9;
    TorchRun tv[MAX_TORCH];
    int is_softmax = !strcmp(mixer, "softmax"), n_tv = 0;
    if (is_softmax && o->torch && cfg_bool(cfg, "bench_torch")) {
        n_tv = torch_variants(o, per_seq >= 0, tv);
        torch_compare(o, cfg, &r, per_seq, tv, n_tv);
    }
    int col = torch_column(tv, n_tv);
    double torch = col >= 0 ? tv[col].tok : 0;
    double vs_llmc = is_softmax && llmc > 0 && first_len ? tok / llmc : 0;
    char ts[16] = "-", vt[16] = "-", vl[16] = "-";
    if (torch > 0) snprintf(ts, sizeof ts, "%.0f", torch), snprintf(vt, sizeof vt, "%.2fx", tok / torch);
    if (vs_llmc > 0) snprintf(vl, sizeof vl, "%.1fx", vs_llmc);
    printf("%-9s %5d %4d %3d %9.0f %8.1f %8.1f %5.1f%% %7.1f %7.1f %9s %7s %7s%s%s\n", mixer, T, B, r.threads, tok,
           r.ms_best, gf, 100 * gf / o->peak, r.act_mb, r.rss_mb, ts, vt, vl,
           r.mixer_flops ? "" : "  (mixer has no flops(): its work is not counted)", r.busy ? "  busy" : "");
    if (r.busy)
        printf("%-9s %5s      busy: other processes used %.0f%% of the CPUs while timing (best of %d tries)\n", "", "",
               100 * r.others, r.attempts);
    printf("%-9s %5s      fwd %.1f ms (of it the LM head with its gradient %.1f ms), bwd %.1f ms, grad norm + "
           "optimizer %.1f ms; median step %.1f ms; CPU %.1f ms/step (%.0f tok/CPU-s); loss %.3f\n",
           "", "", r.fwd_ms, r.head_ms, r.bwd_ms, r.opt_ms, r.ms_median, r.cpu_ms, (double)B * T / (r.cpu_ms * 1e-3),
           r.loss);
    if (r.sparsity_ms > 0)
        printf("%-9s %5s      sparsity pass %.0f ms = %.1f steps (the first of a process, which fills the S(a) "
               "tables: %.0f ms)%s\n",
               "", "", r.sparsity_ms, r.sparsity_ms / r.ms_best, r.sparsity_first_ms,
               r.sparsity_others > 0.05 ? "  busy" : "");
    if (n_tv) {
        if (*g_torch_settings && !g_torch_settings_shown++)
            printf("%-9s %5s      torch settings: %s\n", "", "", g_torch_settings);
        printf("%-9s %5s      x torch %s:", "", "", *g_torch_version ? g_torch_version : "");
        for (int i = 0; i < n_tv; i++) {
            if (tv[i].tok > 0)
                printf(" %s %.0f (%.2fx%s)", tv[i].name, tv[i].tok, tok / tv[i].tok, tv[i].busy ? ", busy" : "");
            else printf(" %s -", tv[i].name);
            if (tv[i].compile_s > 0) printf(" [compile %.0f s]", tv[i].compile_s);
            printf("%s", i + 1 < n_tv ? ";" : "\n");
        }
        for (int i = 0; i < n_tv; i++)
            if (*tv[i].note) printf("%-9s %5s      torch %s: %s\n", "", "", tv[i].name, tv[i].note);
    }
    fflush(stdout);
    if (ri->out) write_json_row(ri, o, cname, mixer, prec, &r, tok, gf, tv, n_tv, col, llmc, vs_llmc);
    *cpu_tok = (double)B * T / (r.cpu_ms * 1e-3);
    return tok;
}

// The sweep's summary: per-token cost growth and speed against softmax per seq_len, by the wall
// clock and by CPU time.
static void print_sweep_summary(char mix[][64], int n_mix, char lens[][64], int n_len, double tok_of[][16],
                                const double *base_tok, double cpu_of[][16], const double *base_cpu) {
    printf("per-token cost T=%s vs T=%s, and tokens/s against softmax per T:\n", lens[n_len - 1], lens[0]);
    for (int mi = 0; mi < n_mix && mi < 32; mi++) {
        if (tok_of[mi][0] <= 0) continue;
        printf("  %-9s", mix[mi]);
        if (tok_of[mi][n_len - 1] > 0) printf(" %5.2fx cost |", tok_of[mi][0] / tok_of[mi][n_len - 1]);
        for (int li = 0; li < n_len && li < 16; li++)
            if (base_tok[li] > 0 && tok_of[mi][li] > 0) printf(" T=%s %.2fx", lens[li], tok_of[mi][li] / base_tok[li]);
        printf(" | CPU time:");
        for (int li = 0; li < n_len && li < 16; li++)
            if (base_cpu[li] > 0 && cpu_of[mi][li] > 0) printf(" %.2fx", cpu_of[mi][li] / base_cpu[li]);
        printf("\n");
    }
}

// Every row of one conf: its mixers (the conf's bench_mixers or --mixers) times its seq_lens.
static void bench_conf(const RunInfo *ri, const Options *o, const char *conf) {
    Config cfg;
    load_config(&cfg, conf, o);
    char cname[160];
    const char *base = strrchr(conf, '/');
    snprintf(cname, sizeof cname, "%.150s", base ? base + 1 : conf);
    if (strstr(cname, ".conf")) *strstr(cname, ".conf") = 0;
    char mix[32][64], lens[16][64];
    int n_mix;
    const char *ml = o->mixers ? o->mixers : cfg_str(&cfg, "bench_mixers");
    if (!strcmp(ml, "all")) {
        n_mix = mixer_count() < 32 ? mixer_count() : 32;
        for (int i = 0; i < n_mix; i++) snprintf(mix[i], 64, "%s", mixer_at(i)->name);
    } else {
        n_mix = parse_list(ml, mix, 32);
    }
    int n_len = parse_list(cfg_str(&cfg, "bench_seq_lens"), lens, 16);
    if (!n_len) snprintf(lens[0], 64, "%ld", cfg_int(&cfg, "seq_len")), n_len = 1;
    if (o->quick) n_len = 1;
    const char *prec = config_find(&cfg, "precision") ? cfg_str(&cfg, "precision") : "fp32";
    int per_seq = !strcmp(cfg_str(&cfg, "bench_data"), "lm") ? -1 : (int)cfg_int(&cfg, "mqar_kv_pairs");
    printf("\n== %s (%s): V=%ld d=%ld L=%ld H=%ld mlp=%s, %s, precision %s\n", cname, conf, cfg_int(&cfg, "vocab_size"),
           cfg_int(&cfg, "d_model"), cfg_int(&cfg, "n_layer"), cfg_int(&cfg, "n_head"), cfg_bool(&cfg, "mlp") ? "yes" : "no",
           per_seq < 0 ? "loss at every position" : "MQAR (loss at the queries)", prec);
    printf("%-9s %5s %4s %3s %9s %8s %8s %6s %7s %7s %9s %7s %7s\n", "mixer", "T", "B", "thr", "tok/s", "ms/step",
           "GFLOP/s", "%peak", "act MB", "RSS MB", "torch", "x torch", "x llm.c");
    double base_tok[16] = {0};  // softmax tokens/s per seq_len, for the sweep summary
    double tok_of[32][16], cpu_of[32][16], base_cpu[16] = {0};
    memset(tok_of, 0, sizeof tok_of);
    memset(cpu_of, 0, sizeof cpu_of);
    // --interleave: per T, the rows of every mixer from one process (run_rows_interleaved)
    static Result inter[16][32];
    int run[32];
    for (int mi = 0; mi < n_mix; mi++) {
        char rowname[240];
        snprintf(rowname, sizeof rowname, "%.150s/%.63s", cname, mix[mi]);
        run[mi] = known_mixers(mix[mi]) && !(o->only && !strstr(rowname, o->only));
    }
    if (o->interleave) {
        for (int li = 0; li < n_len && li < 16; li++) {
            char sel[32][64];
            int n_sel = 0, T = atoi(lens[li]);
            int B = row_batch(&cfg, T);
            for (int mi = 0; mi < n_mix; mi++)
                if (run[mi]) memcpy(sel[n_sel++], mix[mi], 64);
            Result got[32];
            if (n_sel) {
                if (o->wait_quiet > 0) wait_quiet(o->wait_quiet);
                run_isolated(conf, sel, n_sel, 1, T, B, o, got);
            }
            for (int mi = 0, k = 0; mi < n_mix; mi++)
                if (run[mi]) inter[li][mi] = got[k++];
        }
    }
    for (int mi = 0; mi < n_mix; mi++) {
        if (!known_mixers(mix[mi])) {
            printf("%-9s unknown mixer (known: %s, or a hybrid as a+b)\n", mix[mi], mixer_choices());
            continue;
        }
        for (int li = 0; li < n_len; li++) {
            if (!run[mi]) continue;
            const Result *given = o->interleave && li < 16 ? &inter[li][mi] : NULL;
            double cpu_tok, tok = bench_row(ri, o, conf, cname, &cfg, mix[mi], atoi(lens[li]), li == 0, given, &cpu_tok);
            if (mi < 32 && li < 16) tok_of[mi][li] = tok, cpu_of[mi][li] = cpu_tok;
            if (!strcmp(mix[mi], "softmax") && li < 16) base_tok[li] = tok, base_cpu[li] = cpu_tok;
        }
    }
    if (n_len > 1) print_sweep_summary(mix, n_mix, lens, n_len, tok_of, base_tok, cpu_of, base_cpu);
    config_free(&cfg);
}

int main(int argc, char **argv) {
    Options o = {.python = NULL, .out = "bench/results.jsonl", .steps = 0, .warmup = -1, .torch = 1, .tries = 3};
    const char *confs[256];
    int n_conf = parse_args(argc, argv, &o, confs, 256);
    if (!o.python) o.python = access(TORCH_VENV_PYTHON, X_OK) == 0 ? TORCH_VENV_PYTHON : "python3";
    RunInfo ri;
    cpu_name(ri.cpu, sizeof ri.cpu);
    time_t now = time(NULL);
    strftime(ri.date, sizeof ri.date, "%Y-%m-%dT%H:%M:%S", localtime(&now));
    ri.wait_policy = getenv("OMP_WAIT_POLICY");
    double l0 = load1();
    if (o.wait_quiet > 0) wait_quiet(o.wait_quiet);
    measure_peaks(&o);
    printf("%s | %s | %s, GEMM kernel %s | load %.2f | OMP_WAIT_POLICY=%s\n", ri.date, ri.cpu, gemm_build_isa(),
           gemm_kernel_name(), l0, ri.wait_policy ? ri.wait_policy : "unset");
    printf("measured peak: fp32 FMA %.1f GFLOP/s, bf16 dot product %.1f GFLOP/s (threads as below)\n", o.peak, o.peak_bf16);
    if (l0 > 0.5) printf("note: load average %.2f: other processes share the cores; see 'busy' flags\n", l0);
    ri.out = strcmp(o.out, "-") ? fopen(o.out, "a") : NULL;
    if (strcmp(o.out, "-") && !ri.out) die_input("--out: cannot append to '%s'", o.out);
    for (int ci = 0; ci < n_conf; ci++) bench_conf(&ri, &o, confs[ci]);
    if (ri.out) fclose(ri.out);
    printf("\n%%peak: of the fp32 FMA peak measured above. busy: another process held a core during the\n"
           "timing (lower bound). Results appended to %s.\n",
           o.out);
    free(o.over);
    return 0;
}
