// The test runner: `build/run_tests [substring ...] [--skip=NAME ...]` runs the matching cases,
// each in a child process, and ends with the line `N passed, N failed` (exit status 1 when any
// case failed).
// The runner itself never starts OpenMP threads, so forking stays safe.
#include "tests/test.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/io.h"
#include "data/shards.h"

typedef struct {
    const char *name, *file;
    test_fn fn;
} TestCase;
static TestCase g_tests[1024];
static int g_ntests;
static char g_tmpdir[256];

void test_register(const char *name, const char *file, test_fn fn) {
    if (g_ntests == (int)(sizeof g_tests / sizeof g_tests[0])) die("too many tests");
    g_tests[g_ntests++] = (TestCase){name, file, fn};
}

void test_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    _exit(1);
}

void test_check_fail(const char *file, int line, const char *cond, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: CHECK(%s) ", file, line, cond);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    _exit(1);
}

int test_close(double a, double b, double tol) {
    double scale = 1.0;
    if (fabs(a) > scale) scale = fabs(a);
    if (fabs(b) > scale) scale = fabs(b);
    return fabs(a - b) <= tol * scale;
}

const char *test_tmpdir(void) { return g_tmpdir; }

const char *test_path(const char *name) {
    char *b = mallocCheck(strlen(g_tmpdir) + strlen(name) + 2);  // freed when the case's process ends
    sprintf(b, "%s/%s", g_tmpdir, name);
    return b;
}

int test_run(char *out, size_t outlen, const char *fmt, ...) {
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char full[4200];
    snprintf(full, sizeof full, "(%s) 2>&1", cmd);
    fflush(stdout);
    FILE *p = popen(full, "r");
    if (!p) die("popen failed");
    size_t n = 0;
    char tmp[4096];
    size_t got;
    while ((got = fread(tmp, 1, sizeof tmp, p)) > 0) {
        if (out && n + 1 < outlen) {
            size_t take = got < outlen - 1 - n ? got : outlen - 1 - n;
            memcpy(out + n, tmp, take);
            n += take;
        }
    }
    if (out && outlen) out[n] = 0;
    int st = pclose(p);
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return -1;
}

int test_fork(void (*fn)(void *), void *arg, char *err, size_t errlen) {
    int fds[2];
    if (pipe(fds) != 0) die("pipe failed");
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) die("fork failed");
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        fn(arg);
        fflush(stderr);
        _exit(0);
    }
    close(fds[1]);
    size_t n = 0;
    char tmp[1024];
    ssize_t got;
    while ((got = read(fds[0], tmp, sizeof tmp)) > 0) {
        if (err && n + 1 < errlen) {
            size_t take = (size_t)got < errlen - 1 - n ? (size_t)got : errlen - 1 - n;
            memcpy(err + n, tmp, take);
            n += take;
        }
    }
    if (err && errlen) err[n] = 0;
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    return 128 + WTERMSIG(st);
}

int test_temp_left(const char *path) {
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t blen = strlen(base);
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    DIR *d = opendir(dir);
    int left = 0;
    for (struct dirent *e; d && !left && (e = readdir(d));) {
        const char *p = e->d_name + blen;
        if (strncmp(e->d_name, base, blen) || *p != '.') continue;
        for (p++; *p >= '0' && *p <= '9';) p++;
        left = !strcmp(p, "tmp") || !strcmp(p, ".tmp");
    }
    if (d) closedir(d);
    return left;
}

const char *test_write_file(const char *name, const char *text) {
    const char *path = test_path(name);
    FILE *f = fopenCheck(path, "wb");
    fwriteCheck(text, 1, strlen(text), f, path);
    fcloseCheck(f, path);
    return path;
}

// argv: substrings of case names or files to run (none: every case), and --skip=NAME for a case
// left out by its exact name (make test leaves out the slow ones that make test-all runs)
const char *test_text_run(const char *name, int n_tokens, int n_layer, int steps, const char **shard) {
    uint32_t *tok = mallocCheck(sizeof(uint32_t) * (size_t)n_tokens);
    for (int i = 0; i < n_tokens; i++) tok[i] = (uint32_t)((i * 7 + i / 13) % 50);
    char file[300];
    snprintf(file, sizeof file, "%s.bin", name);
    const char *sh = test_path(file);
    shard_write(sh, tok, n_tokens, 0);
    free(tok);
    snprintf(file, sizeof file, "%s.conf", name);
    const char *conf = test_write_file(file, "mixer = softmax\nmlp = false\n");
    const char *dir = test_path(name);
    char out[8192];
    int st = test_run(out, sizeof out,
                      "./train %s task=shards train_data=%s val_data=%s vocab_size=64 seq_len=16 d_model=16 n_layer=%d "
                      "n_head=1 batch_size=4 steps=%d save_every=%d eval_every=0 log_every=0 threads=1 out_dir=%s",
                      conf, sh, sh, n_layer, steps, steps, dir);
    if (st != 0) test_fail(__FILE__, __LINE__, "test_text_run: ./train exit %d: %s", st, out);
    if (shard) *shard = sh;
    return dir;
}

static int matches(const TestCase *t, int argc, char **argv) {
    int filters = 0, hit = 0;
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--skip=", 7)) {
            if (!strcmp(t->name, argv[i] + 7)) return 0;
            continue;
        }
        filters++;
        if (strstr(t->name, argv[i]) || strstr(t->file, argv[i])) hit = 1;
    }
    return filters == 0 || hit;
}

static int cmp_case(const void *a, const void *b) {
    const TestCase *x = a, *y = b;
    int c = strcmp(x->file, y->file);
    return c ? c : strcmp(x->name, y->name);
}

// "42 s" or "3 min 05 s": the run's elapsed time on each case's line and at the end
static const char *format_elapsed(double secs) {
    static char b[32];
    long s = (long)(secs + 0.5);
    if (s < 60) snprintf(b, sizeof b, "%ld s", s);
    else snprintf(b, sizeof b, "%ld min %02ld s", s / 60, s % 60);
    return b;
}

// the n slowest cases of this run (secs < 0: not run), slowest first
static void print_slowest(const double *secs, int n) {
    int shown[8];
    if (n > 8) n = 8;
    int k = 0;
    for (; k < n; k++) {
        int best = -1;
        for (int i = 0; i < g_ntests; i++) {
            int taken = 0;
            for (int j = 0; j < k; j++) taken |= shown[j] == i;
            if (!taken && secs[i] >= 0 && (best < 0 || secs[i] > secs[best])) best = i;
        }
        if (best < 0) break;
        shown[k] = best;
    }
    if (k < 2) return;
    printf("slowest %d:", k);
    for (int j = 0; j < k; j++) printf("%s %s %.1fs", j ? "," : "", g_tests[shown[j]].name, secs[shown[j]]);
    printf("\n");
}

int main(int argc, char **argv) {
    // OpenMP threads that spin at barriers cost milliseconds per parallel region when another
    // process holds the other core (CI machines, parallel builds); the tests' own programs
    // inherit this too. A user's setting wins.
    setenv("OMP_WAIT_POLICY", "passive", 0);
    qsort(g_tests, (size_t)g_ntests, sizeof g_tests[0], cmp_case);
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    // each line says how far the run is ([n/N]) and how long it has run, so a slow machine
    // shows progress rather than silence; the slowest cases are listed at the end
    int total = 0;
    for (int i = 0; i < g_ntests; i++) total += matches(&g_tests[i], argc, argv);
    int passed = 0, failed = 0, done = 0;
    double *case_secs = mallocCheck(sizeof(double) * (size_t)(g_ntests ? g_ntests : 1));
    struct timespec run0;
    clock_gettime(CLOCK_MONOTONIC, &run0);
    for (int i = 0; i < g_ntests; i++) {
        TestCase *t = &g_tests[i];
        case_secs[i] = -1;
        if (!matches(t, argc, argv)) continue;
        snprintf(g_tmpdir, sizeof g_tmpdir, "%s/tinylm_test_XXXXXX", base);
        if (!mkdtemp(g_tmpdir)) die("mkdtemp failed in %s", base);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) die("fork failed");
        if (pid == 0) {
            // what the case prints on stdout (a library's progress, a sample) goes to a file in
            // its scratch folder, shown only if the case fails: the list stays one line a case
            char out_path[600];
            snprintf(out_path, sizeof out_path, "%s/.stdout", g_tmpdir);
            int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd >= 0) dup2(fd, 1), close(fd);
            t->fn();
            fflush(stdout);
            _exit(0);
        }
        int st;
        waitpid(pid, &st, 0);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        double elapsed = (double)(t1.tv_sec - run0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - run0.tv_nsec);
        case_secs[i] = secs;
        done++;
        int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
        if (ok) {
            passed++;
            printf("ok   [%*d/%d] %-44s %6.2fs  (%s in)\n", total >= 100 ? 3 : 2, done, total, t->name, secs,
                   format_elapsed(elapsed));
        } else {
            failed++;
            char out_path[600];
            snprintf(out_path, sizeof out_path, "%s/.stdout", g_tmpdir);
            char *printed = read_file_text(out_path, NULL);
            if (printed && *printed) printf("---- what %s printed on stdout:\n%s----\n", t->name, printed);
            free(printed);
            int w = total >= 100 ? 3 : 2;
            if (WIFSIGNALED(st))
                printf("FAIL [%*d/%d] %-44s killed by signal %d\n", w, done, total, t->name, WTERMSIG(st));
            else printf("FAIL [%*d/%d] %-44s (%s)\n", w, done, total, t->name, t->file);
        }
        fflush(stdout);
        char cmd[512];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmpdir);
        if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", g_tmpdir);
    }
    print_slowest(case_secs, 5);
    struct timespec run1;
    clock_gettime(CLOCK_MONOTONIC, &run1);
    printf("%d case%s in %s\n", done, done == 1 ? "" : "s",
           format_elapsed((double)(run1.tv_sec - run0.tv_sec) + 1e-9 * (double)(run1.tv_nsec - run0.tv_nsec)));
    free(case_secs);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
