// ./sweep FILE [--jobs N] [--threads N] [--out DIR] [--print [--unfinished] | --collect]:
// every point of a sweep file as its own ./train run, `jobs` at a time, then a summary
// (docs/sweeps.md). Exit status: 0 when every point succeeded, 1 when one failed, 2 for bad input,
// 128 + signal when interrupted.
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/config.h"
#include "core/io.h"
#include "core/keys.h"
#include "core/progress.h"
#include "ablation/runner.h"
#include "ablation/summary.h"
#include "ablation/sweep_file.h"

static void usage(FILE *f) {
    fprintf(f, "usage: ./sweep FILE [--jobs N] [--threads N] [--out DIR]   run every point not yet finished, then the summary\n"
               "       ./sweep FILE --print [--unfinished] [--jobs N] [--threads N] [--out DIR]\n"
               "                                             one ./train command per point, one a line\n"
               "       ./sweep FILE --collect [--out DIR]    the summary from the points' run folders\n"
               "  --jobs N      points run at once (default: the file's `jobs`, else 1)\n"
               "  --threads N   threads shared by the running points: each gets threads=floor(N/jobs)\n"
               "                (default: the number of CPUs)\n"
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

// ./train beside this program (as it was invoked, so a wrapper script works too).
static char *train_path(const char *argv0) {
    char self[4096];
    const char *me = argv0;
    if (!strchr(argv0, '/')) {
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) return strdupCheck("./train");
        self[n] = 0;
        me = self;
    }
    const char *slash = strrchr(me, '/');
    size_t dir = (size_t)(slash - me);
    char *p = mallocCheck(dir + 8);
    memcpy(p, me, dir);
    strcpy(p + dir, "/train");
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

typedef struct {
    const SweepFile *sw;
    int *point_of;     // job -> point
    char **dirs;       // [n_points] run folders
    char **logs;       // [n_points] train.log paths
    int *status;       // [n_points] exit status of its run (-2: not run)
    int n_jobs, done;
    int width;         // digits of n_points
} RunState;

static void on_started(int job, void *ctx) {
    RunState *st = ctx;
    int p = st->point_of[job];
    printf("[%*d/%d] %s: started\n", st->width, p + 1, st->sw->n_points, st->sw->point_names[p]);
    fflush(stdout);
}

static void on_finished(int job, int status, double seconds, void *ctx) {
    RunState *st = ctx;
    int p = st->point_of[job];
    st->status[p] = status;
    st->done++;
    char took[32];
    format_duration(took, sizeof took, seconds);
    printf("[%*d/%d] %s: ", st->width, p + 1, st->sw->n_points, st->sw->point_names[p]);
    if (status == 0) {
        RunSummary r;
        run_summary_read(st->dirs[p], &r);
        if (r.status == RUN_DONE) printf("done in %s", took);
        else printf("stopped at step %ld in %s before the end (run the sweep again to continue)", r.step, took);
        if (isfinite(r.best_acc)) printf(", best acc %.4f", r.best_acc);
        if (r.steps_to_target >= 0) printf(", %.2f at step %ld", SUMMARY_TARGET_ACC, r.steps_to_target);
        run_summary_free(&r);
    } else if (status > 128 && status < 128 + 32 && (status - 128 == 2 || status - 128 == 15)) {
        printf("interrupted after %s (run the sweep again to continue)", took);
    } else {
        char *why = last_line(st->logs[p]);
        if (status < 0) printf("FAILED: could not start (%s)", st->logs[p]);
        else printf("FAILED (exit %d) after %s: %s (log: %s)", status, took, why ? why : "", st->logs[p]);
        free(why);
    }
    printf(" [%d/%d run]\n", st->done, st->n_jobs);
    fflush(stdout);
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

static int is_failure(int status) { return status != 0 && status != -2 && status != 128 + 2 && status != 128 + 15; }

int main(int argc, char **argv) {
    const char *file = NULL, *out = NULL;
    int print = 0, collect = 0, unfinished = 0;
    long jobs = 0, threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--print")) print = 1;
        else if (!strcmp(a, "--collect")) collect = 1;
        else if (!strcmp(a, "--unfinished")) unfinished = 1;
        else if (!strcmp(a, "--jobs")) jobs = parse_count(a, ++i < argc ? argv[i] : NULL);
        else if (!strcmp(a, "--threads")) threads = parse_count(a, ++i < argc ? argv[i] : NULL);
        else if (!strcmp(a, "--out")) {
            out = ++i < argc ? argv[i] : NULL;
            if (!out || !*out) die_input("--out: expected a folder");
        } else if (a[0] == '-' && a[1]) {
            die_input("sweep: unknown option '%s' (see ./sweep --help)", a);
        } else if (file) {
            die_input("sweep: one sweep file expected, got '%s' and '%s'", file, a);
        } else file = a;
    }
    if (!file) {
        usage(stderr);
        return 2;
    }
    if (print && collect) die_input("sweep: --print and --collect exclude each other");
    if (unfinished && !print) die_input("sweep: --unfinished goes with --print");

    SweepFile sw;
    char err[1024];
    if (sweep_load(file, &sw, err, sizeof err) != 0) die_input("%s", err);
    if (jobs) sw.jobs = (int)jobs;
    if (out) {
        free(sw.out);
        sw.out = strdupCheck(out);
    }
    check_setting_keys(&sw);
    // every point's config is checked before anything runs (exit 2 naming file:line)
    Config *configs = callocCheck((size_t)sw.n_points, sizeof(Config));
    for (int i = 0; i < sw.n_points; i++) sweep_point_config(&sw, i, &configs[i]);
    check_distinct_points(&sw, configs);
    if (!threads) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cpus > 0 ? cpus : 1;
    }
    int per_point = (int)(threads / sw.jobs);
    if (per_point < 1) per_point = 1;
    char *train = train_path(argv[0]);
    char **dirs = mallocCheck(sizeof(char *) * (size_t)sw.n_points);
    for (int i = 0; i < sw.n_points; i++) dirs[i] = sweep_point_dir(&sw, i);

    int rc = 0;
    if (print) {
        for (int i = 0; i < sw.n_points; i++) {
            if (unfinished && run_finished(dirs[i])) continue;
            char **a = sweep_point_argv(&sw, i, train, per_point);
            sweep_print_command(a, stdout);
            sweep_free_argv(a);
        }
    } else {
        RunState st = {&sw, NULL, dirs, NULL, NULL, 0, 0, 1};
        st.status = mallocCheck(sizeof(int) * (size_t)sw.n_points);
        for (int i = 0; i < sw.n_points; i++) st.status[i] = -2;
        int sig = 0, failed = 0;
        if (!collect) {
            for (int n = sw.n_points; n >= 10; n /= 10) st.width++;
            if (access(train, X_OK) != 0) die_input("sweep: cannot run %s (%s); build it with make", train, strerror(errno));
            st.logs = mallocCheck(sizeof(char *) * (size_t)sw.n_points);
            st.point_of = mallocCheck(sizeof(int) * (size_t)sw.n_points);
            RunnerJob *rj = callocCheck((size_t)sw.n_points, sizeof(RunnerJob));
            int skipped = 0;
            printf("sweep %s: %d points, %d at a time, threads=%d each -> %s/\n", sw.name, sw.n_points, sw.jobs,
                   sweep_entry_index(&sw, "threads") >= 0 ? (int)cfg_int(&configs[0], "threads") : per_point, sw.out);
            for (int i = 0; i < sw.n_points; i++) {
                st.logs[i] = mallocCheck(strlen(dirs[i]) + 12);
                sprintf(st.logs[i], "%s/train.log", dirs[i]);
                if (run_finished(dirs[i])) {
                    printf("[%*d/%d] %s: finished before, skipped\n", st.width, i + 1, sw.n_points, sw.point_names[i]);
                    skipped++;
                    continue;
                }
                if (mkdir_p(dirs[i]) != 0) die_input("sweep: cannot create '%s' (%s)", dirs[i], strerror(errno));
                RunnerJob *j = &rj[st.n_jobs];
                j->argv = sweep_point_argv(&sw, i, train, per_point);
                j->log = st.logs[i];
                // the log starts each attempt with the time and the command
                char *cmd = NULL;
                size_t cmd_len = 0;
                FILE *m = open_memstream(&cmd, &cmd_len);
                time_t now = time(NULL);
                char when[64];
                strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&now));
                fprintf(m, "== sweep %s, point %d/%d, %s:\n", sw.name, i + 1, sw.n_points, when);
                sweep_print_command(j->argv, m);
                fclose(m);
                j->header = cmd;
                st.point_of[st.n_jobs++] = i;
            }
            fflush(stdout);
            RunnerHooks hooks = {on_started, on_finished, &st};
            sig = runner_run(rj, st.n_jobs, sw.jobs, &hooks);
            for (int j = 0; j < st.n_jobs; j++) {
                sweep_free_argv(rj[j].argv);
                free((char *)rj[j].header);
            }
            free(rj);
            for (int i = 0; i < sw.n_points; i++) failed += is_failure(st.status[i]);
            printf("sweep %s: %d run, %d skipped (finished before), %d failed%s\n", sw.name, st.done, skipped, failed,
                   sig ? ", interrupted" : "");
        }
        RunSummary *runs = callocCheck((size_t)sw.n_points, sizeof(RunSummary));
        for (int i = 0; i < sw.n_points; i++) {
            run_summary_read(dirs[i], &runs[i]);
            if (is_failure(st.status[i])) runs[i].status = RUN_FAILED, runs[i].exit_code = st.status[i];
        }
        if (sweep_write_summary(&sw, configs, runs, stdout) != 0)
            die("sweep: cannot write the summary into %s/ (%s)", sw.out, strerror(errno));
        if (collect) {
            char path[1200];
            snprintf(path, sizeof path, "%s/summary.md", sw.out);
            char *md = read_file_text(path, NULL);
            if (md) fputs(md, stdout);
            free(md);
        }
        if (failed) {
            printf("failed points:\n");
            for (int i = 0; i < sw.n_points; i++)
                if (is_failure(st.status[i])) printf("  %s (exit %d): %s\n", sw.point_names[i], st.status[i], st.logs[i]);
        }
        for (int i = 0; i < sw.n_points; i++) run_summary_free(&runs[i]);
        free(runs);
        if (st.logs)
            for (int i = 0; i < sw.n_points; i++) free(st.logs[i]);
        free(st.logs);
        free(st.point_of);
        free(st.status);
        rc = sig ? 128 + sig : failed ? 1 : 0;
    }
    for (int i = 0; i < sw.n_points; i++) {
        free(dirs[i]);
        config_free(&configs[i]);
    }
    free(dirs);
    free(configs);
    free(train);
    sweep_free(&sw);
    return rc;
}
