// ./sweep FILE [--jobs N] [--threads N] [--out DIR] [--print [--unfinished] | --collect | --slurm]:
// every point of a sweep file as its own ./train run, `jobs` at a time, then a summary
// (docs/sweeps.md); or the points' commands for another engine (--print: GNU parallel, xargs; --slurm:
// an sbatch job array, docs/sweeps-engines.md) and the summary of what they left (--collect).
// Exit status: 0 when every point succeeded, 1 when one failed, 2 for bad input, 128 + signal
// when interrupted.
//
// main's steps: parse_args, plan_sweep (every point's config, folder and command, checked before
// anything runs), then print_commands, write_slurm, or run_points and collect_summary.
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/config.h"
#include "core/io.h"
#include "model/model.h"
#include "model/keys.h"
#include "core/progress.h"
#include "core/run_dir.h"
#include "core/runlog.h"
#include "data/task.h"
#include "eval/intervene.h"
#include "ablation/runner.h"
#include "ablation/select.h"
#include "ablation/slurm.h"
#include "ablation/summary.h"
#include "ablation/sweep_file.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: ./sweep FILE [--jobs N] [--threads N] [--out DIR]   run every point not yet finished, then the summary\n"
            "       ./sweep FILE --print [--unfinished] [--jobs N] [--threads N] [--out DIR]\n"
            "                                             one ./train command per point, one a line\n"
            "       ./sweep FILE --collect [--out DIR]    the summary from the points' run folders\n"
            "       ./sweep FILE --slurm [--threads N] [--jobs N] [--out DIR]\n"
            "                                             <out>/slurm.sbatch: a Slurm job array, a task per unfinished point\n"
            "  --jobs N      points run at once (default: the file's `jobs`, else 1)\n"
            "                (with --slurm: at most N tasks at once; default: no limit)\n"
            "  --threads N   threads shared by the running points: each gets threads=floor(N/jobs)\n"
            "                (default: the number of CPUs; with --slurm: each task's CPUs, default 1)\n"
            "  --out DIR     the sweep's folder (default: the file's `out`, else checkpoints/<sweep name>)\n"
            "  --unfinished  with --print: only the points whose run is not finished\n");
}

static long parse_count(const char *flag, const char *v) {
    char *end;
    errno = 0;
    long n = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end || errno || n < 1 || n > 4096)
        die_input("%s: expected a positive integer (at most 4096), got '%s'", flag, v ? v : "");
    return n;
}

// A program beside this one, ./train or ./evaluate (as it was invoked, so a wrapper script works too).
static char *sibling_path(const char *argv0, const char *program) {
    char self[4096];
    const char *me = argv0;
    if (!strchr(argv0, '/')) {
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) {
            char *p = mallocCheck(strlen(program) + 3);
            sprintf(p, "./%s", program);
            return p;
        }
        self[n] = 0;
        me = self;
    }
    const char *slash = strrchr(me, '/');
    size_t dir = (size_t)(slash - me);
    char *p = mallocCheck(dir + strlen(program) + 2);
    memcpy(p, me, dir);
    p[dir] = '/';
    strcpy(p + dir + 1, program);
    return p;
}

// The sweep's settings that name config keys must name real ones.
static void check_setting_keys(const SweepFile *sw) {
    Config c;
    config_init_all(&c);
    const char *keys[3] = {sw->plot_x, sw->plot_series, sw->plot_best_over};
    const int dirs[3] = {SWEEP_DIR_PLOT_X, SWEEP_DIR_PLOT_SERIES, SWEEP_DIR_PLOT_BEST_OVER};
    static const char *names[3] = {"plot_x", "plot_series", "plot_best_over"};
    for (int k = 0; k < 3; k++)
        if (!config_find(&c, keys[k]) && !(k == 2 && !strcmp(keys[k], "none")))
            die_input("%s:%d: %s: unknown key '%s'", sw->file, sw->directive_line[dirs[k]], names[k], keys[k]);
    for (int k = 0; k < sw->n_group_over; k++)
        if (!config_find(&c, sw->group_over[k]))
            die_input("%s:%d: group_over: unknown key '%s'", sw->file, sw->directive_line[SWEEP_DIR_GROUP_OVER],
                      sw->group_over[k]);
    config_free(&c);
}

// after_run's arguments as ./evaluate reads them (eval/evaluate_main.c), each checked here so that
// a misspelled one stops the sweep before anything runs, naming the sweep file's line, rather than
// failing every held-out point's evaluation hours later. Values that depend on the model (a layer
// index past n_layer) are left to ./evaluate, whose failure the sweep reports.
static void check_after_run_arg(const SweepFile *sw, int k, const char *arg, const Config *c) {
    int line = sw->directive_line[SWEEP_DIR_AFTER_RUN];
    if (!strcmp(arg, "--maps")) return;
    const char *eq = strchr(arg, '=');
    char key[128];
    snprintf(key, sizeof key, "%.*s", (int)(eq - arg), arg);
    const char *v = eq + 1;
#define BAD(...)                                                                                                       \
    do {                                                                                                               \
        char why_[512];                                                                                                \
        snprintf(why_, sizeof why_, __VA_ARGS__);                                                                      \
        die_input("%s:%d: after_run: entry %d: %s: %s", sw->file, line, k + 1, arg, why_);                             \
    } while (0)
    if (!strcmp(key, "intervene")) {
        size_t len = strcspn(v, ":");
        int kind = -1;
        for (int i = 0; i < IV_N_KINDS; i++)
            if (strlen(intervention_name((InterventionKind)i)) == len &&
                !strncmp(v, intervention_name((InterventionKind)i), len))
                kind = i;
        if (kind < 0)
            BAD("expected intervene=KIND[:STRENGTHS] with KIND one of flatten, topk, sharpen, temperature, derange, "
                "oracle, oracle_window, oracle_wrong, ablate");
        if (v[len] == ':' && !intervention_has_strength((InterventionKind)kind))
            BAD("%s takes no strengths", intervention_name((InterventionKind)kind));
        for (const char *q = v + len; *q == ':' || *q == ',';) {
            char *end;
            strtod(q + 1, &end);
            if (end == q + 1 || (*end && *end != ',')) BAD("expected numbers after ':', separated by ','");
            q = end;
        }
    } else if (!strcmp(key, "layer") || !strcmp(key, "head")) {
        char *end;
        long x = strtol(v, &end, 10);
        int ok = !strcmp(v, "all") || (!strcmp(key, "layer") && !strcmp(v, "causal")) || (*v && !*end && x >= 0);
        if (!ok) BAD("expected an index >= 0, all%s", !strcmp(key, "layer") ? " or causal" : "");
    } else if (!strcmp(key, "rows")) {
        if (strcmp(v, "query") && strcmp(v, "all")) BAD("expected rows=query or rows=all");
    } else if (!strcmp(key, "split")) {
        if (strcmp(v, "val") && strcmp(v, "test")) BAD("expected split=val or split=test");
    } else if (!strcmp(key, "compare")) {
        BAD("not in after_run (each run is evaluated on its own; compare runs with ./evaluate afterwards)");
    } else if (!strcmp(key, "out_dir")) {
        BAD("not in after_run (the evaluations write into the point's run folder)");
    } else if (!strncmp(key, "map_", 4) || !strcmp(key, "mqar_cells")) {
        // ./evaluate's map_* options and its test cells: checked there
    } else if (!config_find(c, key)) {
        BAD("not a ./evaluate argument (expected intervene=, layer=, head=, rows=, split=, map_*=, --maps or a "
            "config key)");
    }
#undef BAD
}

// The points after_run runs on: with after_run_on = all every point; else (held_out) the second
// stage of a two-stage sweep, the seeds held out from the choice, or every point of a sweep
// without `select` (none was used to choose anything).
static int after_run_applies(const SweepFile *sw, const Selection *sel, int point) {
    if (!sw->n_after_run) return 0;
    return sw->after_run_all || !sel->on || sel->stage[point] == 2;
}

// Every after_run argument, and the points it runs on keep their best-validation checkpoint.
static void check_after_run(const SweepFile *sw, const Config *configs, char *const *dirs) {
    if (!sw->n_after_run) return;
    Config c;
    config_init_all(&c);
    for (int k = 0; k < sw->n_after_run; k++) {
        char *entry = strdupCheck(sw->after_run[k]);
        for (char *save = NULL, *t = strtok_r(entry, " ", &save); t; t = strtok_r(NULL, " ", &save))
            check_after_run_arg(sw, k, t, &c);
        free(entry);
    }
    config_free(&c);
    Selection sel;
    selection_make(sw, dirs, &sel);
    for (int i = 0; i < sw->n_points; i++) {
        if (!after_run_applies(sw, &sel, i)) continue;
        if (!cfg_bool(&configs[i], "keep_best") || cfg_int(&configs[i], "save_every") <= 0)
            die_input("%s:%d: after_run: point '%s' has %s: the evaluations read its best-validation checkpoint "
                      "(best.safetensors), which it would not keep (expected keep_best = true and save_every > 0)",
                      sw->file, sw->directive_line[SWEEP_DIR_AFTER_RUN], sw->point_names[i],
                      !cfg_bool(&configs[i], "keep_best") ? "keep_best = false" : "save_every = 0");
    }
    selection_free(&sel);
}

// The last non-empty line of a file (for a failed point's message), allocated; NULL if none.
static char *last_line(const char *path) {
    size_t len;
    char *text = read_file_text(path, &len);
    if (!text) return NULL;
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' ')) len--;
    size_t start = len;
    while (start > 0 && text[start - 1] != '\n') start--;
    char *line = NULL;
    if (len > start) {
        line = mallocCheck(len - start + 1);
        memcpy(line, text + start, len - start);
        line[len - start] = 0;
    }
    free(text);
    return line;
}

// Values that differ only in spelling (1e-3 and 0.001, 16 and 016) name two points but make one
// run: the points' configs are compared as parsed values (config_set's canonical text), every key
// but out_dir. Sorted, so a large grid stays cheap. Exits 2 naming the sweep line.
static const Config *g_cmp_configs;
static int cmp_point_configs(const void *x, const void *y) {
    const Config *a = &g_cmp_configs[*(const int *)x], *b = &g_cmp_configs[*(const int *)y];
    for (int k = 0; k < a->n_keys; k++) {
        if (!strcmp(a->keys[k]->name, "out_dir")) continue;
        int c = strcmp(a->value[k], b->value[k]);
        if (c) return c;
    }
    return 0;
}

static void check_distinct_points(const SweepFile *sw, const Config *configs) {
    int *order = mallocCheck(sizeof(int) * (size_t)(sw->n_points + 1));
    for (int i = 0; i < sw->n_points; i++) order[i] = i;
    g_cmp_configs = configs;
    qsort(order, (size_t)sw->n_points, sizeof(int), cmp_point_configs);
    for (int k = 1; k < sw->n_points; k++) {
        if (cmp_point_configs(&order[k - 1], &order[k])) continue;
        int a = order[k - 1] < order[k] ? order[k - 1] : order[k], b = order[k - 1] ^ order[k] ^ a;
        for (int e = 0; e < sw->n_entries; e++) {
            const char *va = sweep_value(sw, a, e), *vb = sweep_value(sw, b, e);
            if (!strcmp(va, vb)) continue;
            die_input("%s:%d: %s: '%s' and '%s' are the same value: points '%s' and '%s' would be one run", sw->file,
                      sw->entries[e].line, sw->entries[e].key, va, vb, sw->point_names[a], sw->point_names[b]);
        }
    }
    free(order);
}

// A point's status in this ./sweep: ./train's exit status, or one of these.
enum {
    POINT_NOT_RUN = -2,  // not given to the runner (finished before, waiting, or not reached)
    POINT_RUNNING = -3,  // another process holds its run folder's lock (docs/sweeps.md#one-sweep-per-folder)
};

// The MQAR cells of every point (mqar_cells, mqar_test_cells) are checked as ./train checks them
// (task_mqar_cells: the syntax, a cell listed twice, each cell against seq_len and vocab_size),
// so a bad value stops the sweep before anything runs, naming the sweep file's line and key,
// rather than failing each of its points at run time. Each value is then written the one way
// ("4x16, 8x32"), so two points whose lists differ only in spelling ("4x16,8x32", "04x16 8x32")
// are found by check_distinct_points as one run.
static void check_cells(const SweepFile *sw, Config *configs) {
    static const char *keys[] = {"mqar_cells", "mqar_test_cells"};
    for (int i = 0; i < sw->n_points; i++) {
        Config *c = &configs[i];
        if (strcmp(cfg_str(c, "task"), "mqar")) continue;  // shards: no cells
        for (int k = 0; k < 2; k++) {
            if (!*cfg_str(c, keys[k])) continue;
            MqarCell cells[MQAR_MAX_CELLS];
            int n = task_mqar_cells(c, keys[k], cells);  // exits 2 naming origin and key
            char canon[MQAR_MAX_CELLS * 24] = "";
            for (int j = 0; j < n; j++)
                snprintf(canon + strlen(canon), sizeof canon - strlen(canon), "%s%dx%d", j ? ", " : "",
                         cells[j].kv_pairs, cells[j].seq_len);
            char *origin = strdupCheck(cfg_origin(c, keys[k]));
            config_set(c, keys[k], canon, origin);
            free(origin);
        }
    }
}

static int is_failure(int status) {
    return status != 0 && status != POINT_NOT_RUN && status != POINT_RUNNING && status != 128 + 2 && status != 128 + 15;
}

// The lock of a sweep's folder, held by the ./sweep running its points (core/run_dir.h: flock,
// gone with its process however it ends). A second ./sweep on the folder is refused at its start:
// the points' own locks would keep each run single, but both sweeps would report the points the
// other runs as failed.
#define SWEEP_LOCK "sweep.lock"
// after_run's record in a point's folder: the entries whose evaluation succeeded, one a line.
#define AFTER_RUN_DONE "after_run.done"

static void lock_sweep_folder(const SweepFile *sw) {
    if (mkdir_p(sw->out) != 0) die_input("sweep: cannot create '%s' (%s)", sw->out, strerror(errno));
    long holder;
    int rc = run_dir_lock_named(sw->out, SWEEP_LOCK, &holder);
    if (rc == -2) die_input("sweep: cannot write in '%s' (%s)", sw->out, strerror(errno));
    if (rc == -1 && holder > 0)
        die_input("sweep: '%s' is in use by process %ld (another ./sweep running this sweep); wait for it to end or "
                  "choose another --out",
                  sw->out, holder);
    if (rc == -1)
        die_input("sweep: '%s' is in use by another process (another ./sweep running this sweep); wait for it to end "
                  "or choose another --out",
                  sw->out);
}

// --- the command line -------------------------------------------------------------------------

typedef enum { MODE_RUN, MODE_PRINT, MODE_COLLECT, MODE_SLURM } Mode;

typedef struct {
    const char *file;
    const char *out;  // --out; NULL when not given
    Mode mode;
    int unfinished;
    long jobs, threads;  // 0 when not given
    int argc;
    char **argv;
} Args;

static Args parse_args(int argc, char **argv) {
    Args a = {.argc = argc, .argv = argv};
    int modes = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(s, "--print")) a.mode = MODE_PRINT, modes++;
        else if (!strcmp(s, "--collect")) a.mode = MODE_COLLECT, modes++;
        else if (!strcmp(s, "--slurm")) a.mode = MODE_SLURM, modes++;
        else if (!strcmp(s, "--unfinished")) a.unfinished = 1;
        else if (!strcmp(s, "--jobs")) a.jobs = parse_count(s, ++i < argc ? argv[i] : NULL);
        else if (!strcmp(s, "--threads")) a.threads = parse_count(s, ++i < argc ? argv[i] : NULL);
        else if (!strcmp(s, "--out")) {
            a.out = ++i < argc ? argv[i] : NULL;
            if (!a.out || !*a.out) die_input("--out: expected a folder");
        } else if (s[0] == '-' && s[1]) {
            die_input("sweep: unknown option '%s' (see ./sweep --help)", s);
        } else if (a.file) {
            die_input("sweep: one sweep file expected, got '%s' and '%s'", a.file, s);
        } else a.file = s;
    }
    if (!a.file) {
        usage(stderr);
        exit(2);
    }
    if (modes > 1) die_input("sweep: --print, --collect and --slurm exclude each other");
    if (a.unfinished && a.mode != MODE_PRINT) die_input("sweep: --unfinished goes with --print");
    return a;
}

// --- the plan: every point's config, folder name and command, checked before anything runs -----------

typedef struct {
    SweepFile sw;
    Config *configs;  // [n_points] effective configs
    char **dirs;      // [n_points] run folders
    char *train;      // the ./train the commands run
    char *evaluate;   // the ./evaluate of after_run
    int threads;      // threads= of each command (a threads key in the sweep file wins)
} Plan;

static void plan_sweep(const Args *a, Plan *p) {
    char err[1024];
    if (sweep_load(a->file, &p->sw, err, sizeof err) != 0) die_input("%s", err);
    SweepFile *sw = &p->sw;
    if (a->jobs) sw->jobs = (int)a->jobs;
    if (a->out) {
        free(sw->out);
        sw->out = strdupCheck(a->out);
    }
    run_dir_check_output_folder("--out", sw->out, 0);  // a file, or a run folder: refused
    check_setting_keys(sw);
    // every point's config is checked before anything runs (exit 2 naming file:line)
    p->configs = callocCheck((size_t)sw->n_points, sizeof(Config));
    for (int i = 0; i < sw->n_points; i++) {
        sweep_point_config(sw, i, &p->configs[i]);
        model_check_mixer_options(&p->configs[i]);
    }
    check_cells(sw, p->configs);
    check_distinct_points(sw, p->configs);
    if (a->mode == MODE_SLURM) {
        p->threads = a->threads ? (int)a->threads : 1;  // each task's own CPUs
    } else {
        long threads = a->threads;
        if (!threads) {
            long cpus = sysconf(_SC_NPROCESSORS_ONLN);
            threads = cpus > 0 ? cpus : 1;
        }
        p->threads = (int)(threads / sw->jobs);
        if (p->threads < 1) p->threads = 1;
    }
    p->train = sibling_path(a->argv[0], "train");
    p->evaluate = sibling_path(a->argv[0], "evaluate");
    p->dirs = mallocCheck(sizeof(char *) * (size_t)sw->n_points);
    for (int i = 0; i < sw->n_points; i++) p->dirs[i] = sweep_point_dir(sw, i);
    check_after_run(sw, p->configs, p->dirs);
}

static void plan_free(Plan *p) {
    for (int i = 0; i < p->sw.n_points; i++) {
        free(p->dirs[i]);
        config_free(&p->configs[i]);
    }
    free(p->dirs);
    free(p->configs);
    free(p->train);
    free(p->evaluate);
    sweep_free(&p->sw);
}

// A point whose result cannot be read is an error named here, before anything runs, never a NaN
// in a comparison: a first-stage point whose metrics.jsonl was deleted was resumed into a log
// holding only its done record, and the selection compared against its NaN accuracy, chose
// another value, trained a new second stage and marked finished points not selected.
//   - a folder with checkpoints but no metrics.jsonl would be resumed into such a log (not for
//     --collect, which runs nothing: the point is missing there);
//   - a finished first-stage point whose log has no accuracy leaves its group's choice unmade;
//   - a two-stage sweep without evaluations (eval_every = 0) would have no accuracy to choose by.
static void check_point_records(const Plan *p, int collect) {
    const SweepFile *sw = &p->sw;
    for (int i = 0; i < sw->n_points && !collect; i++)
        if (run_records_lost(p->dirs[i]))
            die_input("sweep: %s: checkpoints but no metrics.jsonl: the records of point '%s' are lost (a resume "
                      "would log only what follows its checkpoint); restore metrics.jsonl, or remove the folder "
                      "to run the point again",
                      p->dirs[i], sw->point_names[i]);
    if (!sw->select) return;
    for (int i = 0; i < sw->n_points; i++)
        if (cfg_int(&p->configs[i], "eval_every") <= 0)
            die_input("%s:%d: select: the choice of %s is by validation accuracy, but point '%s' has eval_every = 0 "
                      "(expected eval_every > 0)",
                      sw->file, sw->directive_line[SWEEP_DIR_SELECT], sw->select, sw->point_names[i]);
    Selection sel;
    selection_make(sw, p->dirs, &sel);
    int bad = selection_unread(&sel);
    selection_free(&sel);
    if (bad >= 0)
        die_input("sweep: %s/metrics.jsonl: point '%s' is finished but its log has no validation accuracy (no eval "
                  "record), which the choice of %s needs; remove the folder to run the point again",
                  p->dirs[bad], sw->point_names[bad], sw->select);
}

// The threads a point's run uses.
static int point_threads(const Plan *p, int point) {
    if (sweep_entry_index(&p->sw, "threads") < 0) return p->threads;
    long t = cfg_int(&p->configs[point], "threads");
    return t > 0 ? (int)t : 1;
}

// --- --print ------------------------------------------------------------------------------------

// A two-stage sweep's points that wait for the first stage: said on stderr (the commands of
// stdout stay a list to run).
static void note_pending(const Selection *sel, const SweepFile *sw) {
    int n = selection_pending(sel);
    if (n)
        fprintf(stderr,
                "sweep %s: %d second-stage point%s wait for the choice of %s (the first stage is not finished); "
                "run this again when it is\n",
                sw->name, n, n == 1 ? "" : "s", sw->select);
}

// --print and --slurm give the ./train commands only: after_run's evaluations are not in them.
// Said plainly, with how to run them (./sweep on the finished folders runs only what is missing).
static void note_after_run(const SweepFile *sw, const char *out_flag, FILE *f) {
    if (!sw->n_after_run) return;
    fprintf(f,
            "sweep %s: after_run: these are the ./train commands only; the %d evaluation%s after each %srun %s not "
            "in them: once the runs are finished, `./sweep %s%s%s` runs %s on every finished point that lacks %s "
            "(it reads each point's best.safetensors)\n",
            sw->name, sw->n_after_run, sw->n_after_run == 1 ? "" : "s", sw->after_run_all ? "" : "held-out ",
            sw->n_after_run == 1 ? "is" : "are", sw->file, out_flag ? " --out " : "", out_flag ? out_flag : "",
            sw->n_after_run == 1 ? "it" : "them", sw->n_after_run == 1 ? "it" : "them");
}

static void print_commands(const Plan *p, int unfinished, const char *out_flag) {
    Selection sel;
    selection_make(&p->sw, p->dirs, &sel);
    note_pending(&sel, &p->sw);
    for (int i = 0; i < p->sw.n_points; i++) {
        if (!selection_runs(&sel, i)) continue;
        if (unfinished && run_finished(p->dirs[i])) continue;
        char **argv = sweep_point_argv(&p->sw, i, p->train, p->threads);
        sweep_print_command(argv, stdout);
        sweep_free_argv(argv);
    }
    fflush(stdout);
    note_after_run(&p->sw, out_flag, stderr);
    selection_free(&sel);
}

// --- --slurm ------------------------------------------------------------------------------------

// A command line as one string, each argument quoted where the shell needs it; allocated.
static char *command_line(char **argv, int argc) {
    char *s = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&s, &n);
    for (int i = 0; i < argc; i++) {
        if (i) fputc(' ', m);
        sweep_print_arg(argv[i], m);
    }
    fclose(m);
    return s;
}

// An absolute path for a path relative to the current folder; allocated.
static char *absolute(const char *path) {
    if (path[0] == '/') return strdupCheck(path);
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) die("sweep: cannot read the current folder (%s)", strerror(errno));
    if (!strcmp(path, ".")) return strdupCheck(cwd);
    char *s = mallocCheck(strlen(cwd) + strlen(path) + 2);
    sprintf(s, "%s/%s", cwd, path);
    return s;
}

// Writes <out>/slurm.sbatch with a task per unfinished point and says how to submit and collect.
static void write_slurm(const Plan *p, const Args *a) {
    const SweepFile *sw = &p->sw;
    int *points = mallocCheck(sizeof(int) * (size_t)sw->n_points);
    char ***argvs = mallocCheck(sizeof(char **) * (size_t)sw->n_points);
    int n = 0, cpus = 1;
    Selection sel;
    selection_make(sw, p->dirs, &sel);
    note_pending(&sel, sw);
    for (int i = 0; i < sw->n_points; i++) {
        if (run_finished(p->dirs[i]) || !selection_runs(&sel, i)) continue;
        points[n] = i;
        argvs[n++] = sweep_point_argv(sw, i, p->train, p->threads);
        if (point_threads(p, i) > cpus) cpus = point_threads(p, i);
    }
    // what the user runs afterwards: this program, the file and --out as they were given
    char *collect_argv[5] = {a->argv[0], (char *)a->file, "--collect", "--out", (char *)a->out};
    char *collect = command_line(collect_argv, a->out ? 5 : 3);
    if (n == 0) {
        printf("sweep %s: every point is finished; nothing to submit. The summary:\n  %s\n", sw->name, collect);
    } else {
        char *workdir = absolute(".");
        char *out = absolute(sw->out);
        char *log_dir = mallocCheck(strlen(out) + 8);
        sprintf(log_dir, "%s/slurm", out);
        // sbatch takes #SBATCH lines as they are (no quotes) and reads % in --output as a pattern
        if (strpbrk(workdir, " \t\n%"))
            die_input("sweep: --slurm: the current folder's path '%s' holds a space or a %%, which #SBATCH lines cannot",
                      workdir);
        if (strpbrk(out, " \t\n%"))
            die_input("sweep: --slurm: the sweep's folder '%s' holds a space or a %%, which #SBATCH lines cannot", out);
        if (mkdir_p(log_dir) != 0) die_input("sweep: cannot create '%s' (%s)", log_dir, strerror(errno));
        char *written_by = command_line(a->argv, a->argc);
        int throttle = a->jobs ? (int)a->jobs : 0;  // only a --jobs flag: the file's jobs is for one machine
        SlurmArray arr = {sw, points, n, argvs, cpus, throttle, workdir, log_dir, collect, written_by};
        char path[1200];
        snprintf(path, sizeof path, "%s/slurm.sbatch", sw->out);
        AtomicFile f;
        char err[2600];
        if (atomic_open(&f, path, err, sizeof err) != 0) die_input("%s", err);
        slurm_write_script(&arr, f.f);
        if (atomic_commit(&f, err, sizeof err) != 0) die("%s", err);
        printf("sweep %s: %d point%s, %d not finished: a Slurm array of %d task%s, %d CPU%s each -> %s\n", sw->name,
               sw->n_points, sw->n_points == 1 ? "" : "s", n, n, n == 1 ? "" : "s", cpus, cpus == 1 ? "" : "s", path);
        if (throttle) printf("at most %d tasks at once\n", throttle);
        printf("submit it (again after a failure or a time limit: finished points exit at once):\n  sbatch ");
        sweep_print_arg(path, stdout);
        printf("\neach task's own output: %s/slurm/<job>_<task>.out; each point's log: %s/<point>/train.log\n"
               "when the tasks are done, the summary:\n  %s\n",
               sw->out, sw->out, collect);
        note_after_run(sw, a->out, stdout);
        free(written_by);
        free(log_dir);
        free(out);
        free(workdir);
    }
    for (int k = 0; k < n; k++) sweep_free_argv(argvs[k]);
    free(argvs);
    free(points);
    free(collect);
    selection_free(&sel);
}

// --- running the points -------------------------------------------------------------------------

// The log of each attempt starts with the time and the command; an after_run evaluation's also
// names its entry (entry >= 0: after_run entry+1 of n_after_run).
static char *log_header(const SweepFile *sw, int point, int entry, char **argv) {
    char *s = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&s, &n);
    time_t now = time(NULL);
    char when[64], what[48] = "";
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&now));
    if (entry >= 0) snprintf(what, sizeof what, ", after_run %d/%d", entry + 1, sw->n_after_run);
    fprintf(m, "== sweep %s, point %d/%d%s, %s:\n", sw->name, point + 1, sw->n_points, what, when);
    sweep_print_command(argv, m);
    fclose(m);
    return s;
}

// The time of day for the lines that report a point or a choice (a sweep can run for hours).
static const char *clock_now(void) {
    static char buf[16];
    time_t now = time(NULL);
    strftime(buf, sizeof buf, "%H:%M:%S", localtime(&now));
    return buf;
}

// A running point as the live line shows it.
typedef struct {
    int on;
    double first_time;  // when its first step was seen
    long first_step;    // that step (-1: none yet); a resumed run starts at its checkpoint's
    long step;          // the last step its log shows
    double acc;         // its last validation accuracy (NAN: none yet)
    long eta_step;      // the step at which end_time was estimated
    double end_time;    // the estimated end: set when a new step shows, counted down between (0: none)
} LivePoint;

// One ./sweep run of the points: which have run, and the choices as the runs stand.
typedef struct {
    const Plan *plan;
    Selection sel;     // refreshed each time a first-stage run ends
    char *announced;   // [n_points] a group's choice (indexed by its rep) has been printed
    char *considered;  // [n_points] given to the runner, or skipped as finished before
    int *status;       // [n_points] exit status of its run, or POINT_NOT_RUN, POINT_RUNNING
    long *holder;      // [n_points] POINT_RUNNING: the process that holds its folder (0: unknown)
    char **logs;       // [n_points] train.log paths
    char ***argv;      // [n_points] the command of a point given to the runner (NULL otherwise)
    char **header;     // [n_points] its log header
    int *point_of;     // [n_points] job -> point
    LivePoint *live;   // [n_points] the running ones, for the live line
    int n_jobs, done, skipped, running;
    int planned;  // runs this sweep will start when none fails (for "[done/planned run]")
    // after_run (docs/sweeps.md#evaluations-after-each-run): the evaluations queued, each
    // point * n_after_run + entry, taken in order; a point's evaluations one at a time (they
    // merge their records into one intervention.jsonl)
    int *ar_queue;
    char *ar_taken;
    int ar_n;
    char *ar_busy;     // [n_points] an evaluation of the point is running
    int *entry_of;     // [jobs] the after_run entry a job runs, -1 for a training run
    char ***job_argv;  // [jobs] an evaluation's command, log and header
    char **job_log, **job_header;
    int ar_run, ar_failed, ar_skipped;
    int prescanned;  // the points finished before have been taken (with after_run)
    int width;       // digits of n_points
} RunState;

// The runs this sweep will have started when it ends: those started, the unfinished points not
// yet given to the runner that can run now, and one value's second-stage points of each group
// whose choice is not made yet (its first stage is unfinished, so they are too) unless a
// first-stage run of the group has failed or been interrupted.
static int planned_runs(const RunState *st) {
    const Plan *p = st->plan;
    const Selection *sel = &st->sel;
    int n = st->n_jobs;
    for (int i = 0; i < p->sw.n_points; i++) {
        if (st->considered[i]) continue;
        if (sel->on && sel->stage[i] == 2 && sel->choice[i] < 0) {
            int blocked = 0;
            for (int j = 0; j < p->sw.n_points && !blocked; j++)
                blocked = sel->rep[j] == sel->rep[i] && sel->stage[j] == 1 && st->status[j] != POINT_NOT_RUN &&
                    st->status[j] != 0;
            n += sel->value[i] == 0 && !blocked;
        } else {
            n += selection_runs(sel, i) && !run_finished(p->dirs[i]);
        }
    }
    return n;
}

// Prints the choices made since the last call (all of them on the first), each with why.
static void announce_choices(RunState *st) {
    const SweepFile *sw = &st->plan->sw;
    for (int i = 0; st->sel.on && i < sw->n_points; i++) {
        if (st->sel.rep[i] != i || st->sel.choice[i] < 0 || st->announced[i]) continue;
        st->announced[i] = 1;
        printf("%s sweep %s: chosen: ", clock_now(), sw->name);
        selection_put_choice(sw, &st->sel, i, stdout);
        printf("\n");
    }
    fflush(stdout);
}

// "running in process N": the point's folder is locked by a live ./train that is not ours.
static void report_running(RunState *st, int point) {
    const SweepFile *sw = &st->plan->sw;
    printf("%s [%*d/%d] %s: running in ", clock_now(), st->width, point + 1, sw->n_points, sw->point_names[point]);
    if (st->holder[point] > 0) printf("process %ld", st->holder[point]);
    else printf("another process");
    printf(" (another ./train holds %s), not here; run the sweep again when it ends\n", st->plan->dirs[point]);
    fflush(stdout);
    st->running++;
}

// 1 when the after_run.done text lists entry (a line of its own).
static int marker_has(const char *done, const char *entry) {
    size_t n = strlen(entry);
    for (const char *l = done; l && *l;) {
        size_t len = strcspn(l, "\n");
        if (len == n && !strncmp(l, entry, n)) return 1;
        l += len;
        if (*l) l++;
    }
    return 0;
}

// Queues the after_run evaluations a finished point still lacks (its after_run.done lists those
// done); when its best.safetensors is gone (a copy of the logs without the checkpoints) they are
// skipped with a note.
static void queue_after_run(RunState *st, int point) {
    const Plan *p = st->plan;
    const SweepFile *sw = &p->sw;
    if (!after_run_applies(sw, &st->sel, point)) return;
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", p->dirs[point], AFTER_RUN_DONE);
    char *done = read_file_text(path, NULL);
    int missing = 0;
    for (int k = 0; k < sw->n_after_run; k++) missing += !marker_has(done, sw->after_run[k]);
    snprintf(path, sizeof path, "%s/%s", p->dirs[point], RUN_DIR_BEST);
    if (missing && !path_exists(path)) {
        printf("%s [%*d/%d] %s: after_run: %d of %d evaluation%s not done, but %s is gone; skipped\n", clock_now(),
               st->width, point + 1, sw->n_points, sw->point_names[point], missing, sw->n_after_run,
               sw->n_after_run == 1 ? "" : "s", path);
        fflush(stdout);
        st->ar_skipped++;
        missing = 0;
    }
    for (int k = 0; k < sw->n_after_run && missing; k++)
        if (!marker_has(done, sw->after_run[k])) st->ar_queue[st->ar_n++] = point * sw->n_after_run + k;
    free(done);
}

// The next queued evaluation whose point has none running: fills *job and returns 1.
static int next_after_run(RunState *st, RunnerJob *job) {
    const Plan *p = st->plan;
    const SweepFile *sw = &p->sw;
    for (int q = 0; q < st->ar_n; q++) {
        int point = st->ar_queue[q] / sw->n_after_run, k = st->ar_queue[q] % sw->n_after_run;
        if (st->ar_taken[q] || st->ar_busy[point]) continue;
        st->ar_taken[q] = 1;
        st->ar_busy[point] = 1;
        int j = st->n_jobs++;
        st->point_of[j] = point;
        st->entry_of[j] = k;
        st->job_argv[j] = sweep_after_run_argv(sw, k, p->evaluate, p->dirs[point], point_threads(p, point));
        st->job_log[j] = mallocCheck(strlen(p->dirs[point]) + 16);
        sprintf(st->job_log[j], "%s/after_run.log", p->dirs[point]);
        st->job_header[j] = log_header(sw, point, k, st->job_argv[j]);
        *job = (RunnerJob){st->job_argv[j], st->job_log[j], st->job_header[j]};
        return 1;
    }
    return 0;
}

// The runner's next job: the first-stage points in order, then the second-stage points of the
// groups whose choice is made (so a second core does not idle while the last first-stage run
// ends). Points finished before are reported and skipped.
static int next_point(RunnerJob *job, void *ctx) {
    RunState *st = ctx;
    const Plan *p = st->plan;
    const SweepFile *sw = &p->sw;
    // With after_run, a restarted sweep first takes every point finished before (once: reading
    // each metrics.jsonl), so the evaluations an earlier sitting left undone run before new runs
    // start, while their checkpoints are still there.
    for (int i = 0; sw->n_after_run && !st->prescanned && i < sw->n_points; i++) {
        if (st->considered[i] || !selection_runs(&st->sel, i) || !run_finished(p->dirs[i])) continue;
        st->considered[i] = 1;
        printf("%s [%*d/%d] %s: finished before, skipped\n", clock_now(), st->width, i + 1, sw->n_points,
               sw->point_names[i]);
        st->skipped++;
        queue_after_run(st, i);
    }
    st->prescanned = 1;
    if (next_after_run(st, job)) return 1;  // a finished run's evaluations first
    for (int stage = 1; stage <= 2; stage++) {
        for (int i = 0; i < sw->n_points; i++) {
            if (st->considered[i] || (st->sel.on ? st->sel.stage[i] != stage : stage != 1)) continue;
            if (!selection_runs(&st->sel, i)) continue;  // its group's choice is not made, or not this value
            st->considered[i] = 1;
            if (run_finished(p->dirs[i])) {
                printf("%s [%*d/%d] %s: finished before, skipped\n", clock_now(), st->width, i + 1, sw->n_points,
                       sw->point_names[i]);
                st->skipped++;
                queue_after_run(st, i);
                if (next_after_run(st, job)) return 1;
                continue;
            }
            // a ./train of another engine (or one started by hand) is running it: not ours to fail
            if (run_dir_lock_held(p->dirs[i], RUN_DIR_LOCK, &st->holder[i])) {
                report_running(st, i);
                st->status[i] = POINT_RUNNING;
                st->planned = planned_runs(st);
                continue;
            }
            // A folder that cannot be made fails this point alone (the runner cannot open its
            // log), while the others go on.
            if (mkdir_p(p->dirs[i]) != 0)
                fprintf(stderr, "sweep: cannot create '%s' (%s)\n", p->dirs[i], strerror(errno));
            st->argv[i] = sweep_point_argv(sw, i, p->train, p->threads);
            st->header[i] = log_header(sw, i, -1, st->argv[i]);
            *job = (RunnerJob){st->argv[i], st->logs[i], st->header[i]};
            st->entry_of[st->n_jobs] = -1;
            st->point_of[st->n_jobs++] = i;
            return 1;
        }
    }
    return 0;
}

static void on_started(int job, void *ctx) {
    RunState *st = ctx;
    const SweepFile *sw = &st->plan->sw;
    int p = st->point_of[job];
    if (st->entry_of[job] >= 0) return;  // an evaluation: said when it ends
    progress_break();
    printf("%s [%*d/%d] %s: started (log: %s)\n", clock_now(), st->width, p + 1, sw->n_points, sw->point_names[p],
           st->logs[p]);
    fflush(stdout);
    st->live[p] =
        (LivePoint){.on = 1, .first_time = now_seconds(), .first_step = -1, .step = -1, .acc = NAN, .eta_step = -1};
}

// What a running point's metrics.jsonl says: its last step and validation accuracy.
static int live_record(const RunlogRecord *r, void *ctx) {
    LivePoint *lp = ctx;
    if (*r->options) return 0;
    if ((r->type == RUNLOG_TRAIN || r->type == RUNLOG_EVAL) && r->step > lp->step) lp->step = r->step;
    if (r->type == RUNLOG_EVAL) lp->acc = runlog_num(r, "acc");
    return 0;
}

// The live line (on a terminal): each running point's step, validation accuracy and ETA.
static void on_tick(void *ctx) {
    RunState *st = ctx;
    const Plan *p = st->plan;
    if (!progress_enabled()) return;
    char line[1024];
    size_t k = 0;
    int n = 0;
    for (int i = 0; i < p->sw.n_points && k + 80 < sizeof line; i++) {
        LivePoint *lp = &st->live[i];
        if (!lp->on) continue;
        char path[1200];
        snprintf(path, sizeof path, "%s/metrics.jsonl", p->dirs[i]);
        lp->step = -1;
        runlog_each(path, live_record, lp);
        long steps = cfg_int(&p->configs[i], "steps");
        if (lp->step >= 0 && lp->first_step < 0) lp->first_step = lp->step, lp->first_time = now_seconds();
        // The ETA is estimated when a new step shows, from the run's own pace since its first step
        // (evaluations included), and counts down between: a long evaluation or a slow spell no
        // longer makes it climb while the step stands still.
        double now = now_seconds();
        if (lp->step > lp->first_step && lp->first_step >= 0 && lp->step != lp->eta_step) {
            lp->eta_step = lp->step;
            lp->end_time = now + (now - lp->first_time) / (double)(lp->step - lp->first_step) * (double)(steps - lp->step);
        }
        char eta[32] = "?";
        if (lp->end_time > 0) format_duration(eta, sizeof eta, lp->end_time > now ? lp->end_time - now : 0);
        k += (size_t)snprintf(line + k, sizeof line - k, "%s%s: step %ld/%ld", n++ ? " | " : "", p->sw.point_names[i],
                              lp->step < 0 ? 0 : lp->step, steps);
        if (isfinite(lp->acc)) k += (size_t)snprintf(line + k, sizeof line - k, " acc %.3f", lp->acc);
        k += (size_t)snprintf(line + k, sizeof line - k, " ETA %s", eta);
    }
    if (n) progress_line("%s", line);
}

// An evaluation of after_run has ended: recorded in the point's after_run.done when it succeeded.
static void after_run_finished(RunState *st, int job, int status, double seconds) {
    const Plan *pl = st->plan;
    const SweepFile *sw = &pl->sw;
    int p = st->point_of[job], k = st->entry_of[job];
    st->ar_busy[p] = 0;
    char took[32];
    format_duration(took, sizeof took, seconds);
    printf("%s [%*d/%d] %s: after_run '%s': ", clock_now(), st->width, p + 1, sw->n_points, sw->point_names[p],
           sw->after_run[k]);
    if (status == 0) {
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", pl->dirs[p], AFTER_RUN_DONE);
        FILE *f = fopen(path, "a");
        int ok = f && fprintf(f, "%s\n", sw->after_run[k]) > 0;
        ok &= f && fclose(f) == 0;
        printf("done in %s", took);
        if (!ok) printf(" (but %s cannot be written: %s; it will run again)", path, strerror(errno));
        st->ar_run++;
    } else if (status == 128 + 2 || status == 128 + 15) {
        printf("interrupted after %s (run the sweep again to run it)", took);
    } else {
        char *why = last_line(st->job_log[job]);
        if (status < 0) printf("FAILED: could not start (%s)", st->job_log[job]);
        else printf("FAILED (exit %d) after %s: %s (log: %s)", status, took, why ? why : "", st->job_log[job]);
        free(why);
        st->ar_failed++;
    }
    printf("\n");
    fflush(stdout);
}

static void on_finished(int job, int status, double seconds, void *ctx) {
    RunState *st = ctx;
    const SweepFile *sw = &st->plan->sw;
    int p = st->point_of[job];
    progress_break();
    if (st->entry_of[job] >= 0) {
        after_run_finished(st, job, status, seconds);
        return;
    }
    st->live[p].on = 0;
    st->status[p] = status;
    st->done++;
    char took[32];
    format_duration(took, sizeof took, seconds);
    // ./train refused the folder (exit 2) because another process started it after next_point looked
    if (status == 2 && run_dir_lock_held(st->plan->dirs[p], RUN_DIR_LOCK, &st->holder[p])) {
        st->status[p] = POINT_RUNNING;
        st->done--;
        report_running(st, p);
        st->planned = planned_runs(st);
        announce_choices(st);
        return;
    }
    printf("%s [%*d/%d] %s: ", clock_now(), st->width, p + 1, sw->n_points, sw->point_names[p]);
    if (status == 0) {
        RunSummary r;
        run_summary_read(st->plan->dirs[p], &r);
        if (r.status == RUN_DONE) printf("done in %s", took);
        else if (runner_interrupted())  // the trainer saved and exited 0 on the sweep's Ctrl-C
            printf("interrupted at step %ld after %s (run the sweep again to continue)", r.step, took);
        else printf("stopped at step %ld in %s before the end (run the sweep again to continue)", r.step, took);
        if (isfinite(r.best_acc)) printf(", best acc %.4f", r.best_acc);
        if (r.steps_to_target >= 0) printf(", %.2f at step %ld", SUMMARY_TARGET_ACC, r.steps_to_target);
        if (r.status == RUN_DONE) queue_after_run(st, p);
        run_summary_free(&r);
    } else if (status > 128 && status < 128 + 32 && (status - 128 == 2 || status - 128 == 15)) {
        printf("interrupted after %s (run the sweep again to continue)", took);
    } else {
        char *why = last_line(st->logs[p]);
        if (status < 0) printf("FAILED: could not start (%s)", st->logs[p]);
        else printf("FAILED (exit %d) after %s: %s (log: %s)", status, took, why ? why : "", st->logs[p]);
        free(why);
    }
    if (st->sel.on && st->sel.stage[p] == 1) {  // a choice may now be made, or never
        selection_free(&st->sel);
        selection_make(sw, st->plan->dirs, &st->sel);
        st->planned = planned_runs(st);
    }
    printf(" [%d/%d run]\n", st->done, st->planned);
    fflush(stdout);
    announce_choices(st);
}

// Runs every unfinished point the selection lets run, sw.jobs at a time, reporting each as it
// starts and ends, and each group's choice as it is made; fills st->status. Returns the signal
// that interrupted the sweep, 0 when none did.
static int run_points(RunState *st) {
    const Plan *p = st->plan;
    const SweepFile *sw = &p->sw;
    if (access(p->train, X_OK) != 0)
        die_input("sweep: cannot run %s (%s); build it with make", p->train, strerror(errno));
    if (sw->n_after_run && access(p->evaluate, X_OK) != 0)
        die_input("sweep: cannot run %s for after_run (%s); build it with make", p->evaluate, strerror(errno));
    lock_sweep_folder(sw);
    int n = sw->n_points;
    st->width = 1;
    for (int k = n; k >= 10; k /= 10) st->width++;
    double t0 = now_seconds();
    char started[32];
    time_t now = time(NULL);
    strftime(started, sizeof started, "%Y-%m-%d %H:%M:%S", localtime(&now));
    printf("sweep %s: %d point%s, %d at a time, threads=%d each -> %s/ (%s)\n", sw->name, n, n == 1 ? "" : "s", sw->jobs,
           sweep_entry_index(sw, "threads") >= 0 ? (int)cfg_int(&p->configs[0], "threads") : p->threads, sw->out, started);
    selection_make(sw, p->dirs, &st->sel);
    if (st->sel.on)
        printf("sweep %s: first stage: every %s at the first %s; a group's other %ss start once its %s is chosen\n",
               sw->name, sw->select, sw->group_over[0], sw->group_over[0], sw->select);
    announce_choices(st);
    st->planned = planned_runs(st);
    RunnerHooks hooks = {next_point, on_started, on_finished, on_tick, st};
    int sig = runner_run(sw->jobs, &hooks);
    if (st->sel.on) {
        char *md = selection_markdown(sw, &st->sel);
        printf("sweep %s: the choices of %s:\n%s", sw->name, sw->select, md);
        free(md);
    }
    int failed = 0;
    for (int i = 0; i < n; i++) failed += is_failure(st->status[i]);
    int waiting = selection_pending(&st->sel);
    printf("sweep %s: %d run, %d skipped (finished before), ", sw->name, st->done, st->skipped);
    if (st->running) printf("%d running elsewhere, ", st->running);
    printf("%d failed%s", failed, sig ? ", interrupted" : "");
    if (waiting) printf(", %d waiting for the choice of %s", waiting, sw->select);
    char took[32];
    format_duration(took, sizeof took, now_seconds() - t0);
    printf(", in %s\n", took);
    if (sw->n_after_run) {
        printf("sweep %s: after_run: %d evaluation%s run, %d failed", sw->name, st->ar_run, st->ar_run == 1 ? "" : "s",
               st->ar_failed);
        if (st->ar_skipped)
            printf(", %d point%s skipped (best.safetensors gone)", st->ar_skipped, st->ar_skipped == 1 ? "" : "s");
        int not_started = 0;
        for (int q = 0; q < st->ar_n; q++) not_started += !st->ar_taken[q];
        if (not_started) printf(", %d not started (run the sweep again)", not_started);
        printf("\n");
    }
    return sig;
}

// --- the summary --------------------------------------------------------------------------------

// Writes the summary from the run folders (a point that failed in this run says so, and one whose
// folder another live process holds is running); prints summary.md too when asked. Returns the
// number of points that failed in this run.
static int collect_summary(const Plan *p, const int *status, const long *holder, int print_md) {
    const SweepFile *sw = &p->sw;
    // The summary is read from the run folders and written under its lock (core/io.h file_lock,
    // <out>/summary.lock): a sweep that ends while a --collect of it runs (or two --collect) waits
    // for the other, then writes its own whole; neither fails on the other's temporary files.
    char lock_path[1200];
    snprintf(lock_path, sizeof lock_path, "%s/summary", sw->out);
    int lock = mkdir_p(sw->out) == 0 ? file_lock(lock_path) : -1;
    if (lock < 0) die("sweep: cannot lock the summary in %s/ (%s)", sw->out, strerror(errno));
    RunSummary *runs = callocCheck((size_t)sw->n_points, sizeof(RunSummary));
    int failed = 0;
    for (int i = 0; i < sw->n_points; i++) {
        run_summary_read(p->dirs[i], &runs[i]);
        if (is_failure(status[i])) runs[i].status = RUN_FAILED, runs[i].exit_code = status[i], failed++;
        else if (status[i] == POINT_RUNNING) runs[i].status = RUN_RUNNING, runs[i].running_pid = holder[i];
        else if (status[i] == POINT_NOT_RUN && runs[i].status != RUN_DONE &&
                 run_dir_lock_held(p->dirs[i], RUN_DIR_LOCK, &runs[i].running_pid))
            runs[i].status = RUN_RUNNING;  // --collect, or a point this sweep did not reach
    }
    Selection sel;
    selection_make(sw, p->dirs, &sel);
    selection_mark(&sel, runs);
    char *selection_md = selection_markdown(sw, &sel);
    selection_free(&sel);
    int written = sweep_write_summary(sw, p->configs, runs, selection_md, stdout);
    free(selection_md);
    if (written != 0) die("sweep: cannot write the summary into %s/ (%s)", sw->out, strerror(errno));
    file_unlock(lock);
    if (print_md) {
        char path[1200];
        snprintf(path, sizeof path, "%s/summary.md", sw->out);
        char *md = read_file_text(path, NULL);
        if (md) fputs(md, stdout);
        free(md);
    }
    if (failed) {
        printf("failed points:\n");
        for (int i = 0; i < sw->n_points; i++)
            if (is_failure(status[i]))
                printf("  %s (exit %d): %s/train.log\n", sw->point_names[i], status[i], p->dirs[i]);
    }
    for (int i = 0; i < sw->n_points; i++) run_summary_free(&runs[i]);
    free(runs);
    return failed;
}

int main(int argc, char **argv) {
    Args a = parse_args(argc, argv);
    Plan p = {0};
    plan_sweep(&a, &p);
    check_point_records(&p, a.mode == MODE_COLLECT);
    int rc = 0;
    if (a.mode == MODE_PRINT) print_commands(&p, a.unfinished, a.out);
    else if (a.mode == MODE_SLURM) write_slurm(&p, &a);
    else {
        int n = p.sw.n_points;
        RunState st = {.plan = &p};
        st.status = mallocCheck(sizeof(int) * (size_t)n);
        st.holder = callocCheck((size_t)n, sizeof(long));
        st.logs = mallocCheck(sizeof(char *) * (size_t)n);
        st.announced = callocCheck((size_t)n, 1);
        st.considered = callocCheck((size_t)n, 1);
        st.argv = callocCheck((size_t)n, sizeof(char **));
        st.header = callocCheck((size_t)n, sizeof(char *));
        size_t jobs = (size_t)n * (size_t)(1 + p.sw.n_after_run);  // each run and evaluation at most once
        st.point_of = mallocCheck(sizeof(int) * jobs);
        st.entry_of = mallocCheck(sizeof(int) * jobs);
        st.job_argv = callocCheck(jobs, sizeof(char **));
        st.job_log = callocCheck(jobs, sizeof(char *));
        st.job_header = callocCheck(jobs, sizeof(char *));
        st.ar_queue = mallocCheck(sizeof(int) * (jobs + 1));
        st.ar_taken = callocCheck(jobs + 1, 1);
        st.ar_busy = callocCheck((size_t)n, 1);
        st.live = callocCheck((size_t)n, sizeof(LivePoint));
        for (int i = 0; i < n; i++) {
            st.status[i] = POINT_NOT_RUN;
            st.logs[i] = mallocCheck(strlen(p.dirs[i]) + 12);
            sprintf(st.logs[i], "%s/train.log", p.dirs[i]);
        }
        int sig = a.mode == MODE_RUN ? run_points(&st) : 0;
        int failed = collect_summary(&p, st.status, st.holder, a.mode == MODE_COLLECT);
        rc = sig ? 128 + sig : failed || st.ar_failed ? 1 : 0;
        for (int j = 0; j < st.n_jobs; j++) {
            if (st.job_argv[j]) sweep_free_argv(st.job_argv[j]);
            free(st.job_log[j]);
            free(st.job_header[j]);
        }
        free(st.entry_of), free(st.job_argv), free(st.job_log), free(st.job_header);
        free(st.ar_queue), free(st.ar_taken), free(st.ar_busy);
        for (int i = 0; i < n; i++) {
            free(st.logs[i]);
            free(st.header[i]);
            if (st.argv[i]) sweep_free_argv(st.argv[i]);
        }
        free(st.logs), free(st.header), free(st.argv);
        free(st.announced), free(st.considered), free(st.point_of), free(st.live), free(st.status), free(st.holder);
        selection_free(&st.sel);
    }
    plan_free(&p);
    return rc;
}
