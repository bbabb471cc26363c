#include "core/run_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/io.h"

// "ckpt_" + 8 digits + ".safetensors"
static int checkpoint_step(const char *name, long *step) {
    if (strlen(name) != 25 || strncmp(name, "ckpt_", 5) || strcmp(name + 13, ".safetensors")) return 0;
    long s = 0;
    for (int i = 5; i < 13; i++) {
        if (name[i] < '0' || name[i] > '9') return 0;
        s = s * 10 + (name[i] - '0');
    }
    *step = s;
    return 1;
}

static int by_step(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

int run_dir_checkpoints(const char *dir, char ***paths, long **steps) {
    *paths = NULL;
    *steps = NULL;
    DIR *d = opendir(dir);
    if (!d) return 0;
    long *found = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        long step;
        if (!checkpoint_step(e->d_name, &step)) continue;
        if (n == cap) found = reallocCheck(found, sizeof(long) * (size_t)(cap = cap * 2 + 16));
        found[n++] = step;
    }
    closedir(d);
    if (n) qsort(found, (size_t)n, sizeof(long), by_step);  // found is NULL when n = 0
    *paths = callocCheck((size_t)n + 1, sizeof(char *));
    for (int i = 0; i < n; i++) {
        (*paths)[i] = mallocCheck(strlen(dir) + 40);
        sprintf((*paths)[i], "%s/ckpt_%08ld.safetensors", dir, found[i]);
    }
    *steps = found;
    return n;
}

void run_dir_free_list(char **paths, long *steps, int n) {
    for (int i = 0; i < n; i++) free(paths[i]);
    free(paths);
    free(steps);
}

static char *join(const char *dir, const char *name) {
    char *p = mallocCheck(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

char *run_dir_latest(const char *dir) {
    char *lp = join(dir, "latest");
    char *text = read_file_text(lp, NULL);
    free(lp);
    if (!text) return NULL;
    char *nl = strchr(text, '\n');
    if (nl) *nl = 0;
    long step;
    char *path = checkpoint_step(text, &step) ? join(dir, text) : NULL;
    free(text);
    return path;
}

int run_dir_set_latest(const char *dir, const char *name) {
    char *lp = join(dir, "latest");
    AtomicFile a;
    int ok = atomic_open(&a, lp, NULL, 0) == 0;
    if (ok && fprintf(a.f, "%s\n", name) < 0) ok = 0, atomic_abort(&a);
    else if (ok) ok = atomic_commit(&a, NULL, 0) == 0;
    free(lp);
    return ok ? 0 : -1;
}

void run_dir_prune(const char *dir, int keep_last) {
    char **paths;
    long *steps;
    int n = run_dir_checkpoints(dir, &paths, &steps);
    for (int i = 0; i < n - keep_last; i++) unlink(paths[i]);
    run_dir_free_list(paths, steps, n);
}

int run_dir_truncate_jsonl(const char *path, long step) {
    char *text = read_file_text(path, NULL);
    if (!text) return 0;
    AtomicFile a;
    if (atomic_open(&a, path, NULL, 0) != 0) {
        free(text);
        return -1;
    }
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line + 1) : strlen(line);
        char *s = strstr(line, "\"step\":");
        int keep = nl && (!s || s > nl || atol(s + 7) <= step);  // a torn last line is dropped
        if (keep) fwrite(line, 1, len, a.f);
        line += len;
    }
    free(text);
    return atomic_commit(&a, NULL, 0);
}

static const char *g_run_files[] = {
    "config.conf", "metrics.jsonl", "sparsity.jsonl", "eval.jsonl", "latest", RUN_DIR_BEST, NULL};

int run_dir_has_run(const char *dir) {
    for (int i = 0; g_run_files[i]; i++) {
        char *p = join(dir, g_run_files[i]);
        int e = path_exists(p);
        free(p);
        if (e) return 1;
    }
    char **paths;
    long *steps;
    int n = run_dir_checkpoints(dir, &paths, &steps);
    run_dir_free_list(paths, steps, n);
    return n > 0;
}

const RunDirOutputOption RUN_DIR_OUTPUT_OPTIONS[] = {
    {"train", "out_dir", 1},      // the run folder
    {"train", "export_data", 1},  // the folder of the exported MQAR sets (each file checked too)
    {"evaluate", "compare", 0},   // the several-run figure (its folder: the intervention figures)
    {"tokenize", "out", 0},       // the tokenizer, the shards' prefix, the encoded shard
    {"export", "out", 0},         // the file (llmc, safetensors) or each file of the folder (hf)
    {"sweep", "--out", 1},        // the sweep's folder
};
const int RUN_DIR_N_OUTPUT_OPTIONS = (int)(sizeof RUN_DIR_OUTPUT_OPTIONS / sizeof RUN_DIR_OUTPUT_OPTIONS[0]);

static void check_listed(const char *key) {
    for (int i = 0; i < RUN_DIR_N_OUTPUT_OPTIONS; i++)
        if (!strcmp(RUN_DIR_OUTPUT_OPTIONS[i].key, key)) return;
    die("internal error: output option '%s' is not in RUN_DIR_OUTPUT_OPTIONS (core/run_dir.c)", key);
}

void run_dir_check_output_folder(const char *key, const char *dir, int run_ok) {
    check_listed(key);
    if (path_exists(dir) && !is_directory(dir)) die_input("%s: '%s' is a file, expected a folder", key, dir);
    if (!run_ok && is_directory(dir) && run_dir_has_run(dir))
        die_input("command line: %s: '%s' is a run folder: writing there could replace its checkpoints, config or "
                  "logs (write it elsewhere)",
                  key, dir);
}

void run_dir_check_output(const char *key, const char *out, const RunDirInput *inputs, int n_inputs) {
    check_listed(key);
    struct stat so, si;
    int exists = stat(out, &so) == 0;
    if (exists && S_ISDIR(so.st_mode)) die_input("command line: %s: '%s' is a folder, expected a file name", key, out);
    for (int i = 0; exists && i < n_inputs; i++) {
        const char *in = inputs[i].path;
        if (!in || !strcmp(in, "-") || stat(in, &si) != 0) continue;
        if (si.st_dev == so.st_dev && si.st_ino == so.st_ino)
            die_input("command line: %s: '%s' is the %s '%s': writing it would replace it", key, out, inputs[i].what, in);
    }
    char *dir = strdupCheck(out), *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    const char *d = slash ? (slash == dir ? "/" : dir) : ".";
    if (is_directory(d) && run_dir_has_run(d)) {
        char msg[2048];  // dir is freed before die_input leaves
        snprintf(msg, sizeof msg,
                 "command line: %s: '%s' is in the run folder '%s': writing there could replace its "
                 "checkpoints, config or logs (write it elsewhere)",
                 key, out, d);
        free(dir);
        die_input("%s", msg);
    }
    free(dir);
}

static void remove_event_files(const char *dir) {
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (strncmp(e->d_name, "events.out.tfevents.", 20)) continue;
        char *p = join(dir, e->d_name);
        unlink(p);
        free(p);
    }
    if (d) closedir(d);
}

void run_dir_clear(const char *dir) {
    for (int i = 0; g_run_files[i]; i++) {
        char *p = join(dir, g_run_files[i]);
        unlink(p);
        free(p);
    }
    char **paths;
    long *steps;
    int n = run_dir_checkpoints(dir, &paths, &steps);
    for (int i = 0; i < n; i++) unlink(paths[i]);
    run_dir_free_list(paths, steps, n);
    // TensorBoard event files (tensorboard = true): one per process started, and ./evaluate's
    // mirror of its logs in evaluate/ (eval/tensorboard.h)
    remove_event_files(dir);
    char *ev = join(dir, "evaluate");
    remove_event_files(ev);
    char *lock = join(ev, "mirror.lock");  // the mirror's writers' lock (eval/tensorboard.c)
    unlink(lock);
    free(lock);
    rmdir(ev);  // only if nothing else is in it
    free(ev);
}

// The pid written in a lock file (0: none).
static long pid_in(int fd) {
    char buf[32] = {0};
    return pread(fd, buf, sizeof buf - 1, 0) > 0 ? atol(buf) : 0;
}

int run_dir_lock(const char *dir, long *holder) { return run_dir_lock_named(dir, RUN_DIR_LOCK, holder); }

int run_dir_lock_named(const char *dir, const char *name, long *holder) {
    *holder = 0;
    char *path = join(dir, name);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    free(path);
    if (fd < 0) return -2;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        // The holder writes its pid just after it takes the lock: until then the file is empty or
        // holds the pid of an earlier, ended holder. Read it again for a moment (at most 0.2 s).
        for (int tries = 0; e == EWOULDBLOCK && tries < 200; tries++) {
            *holder = pid_in(fd);
            if (*holder > 0 && process_alive(*holder)) break;
            *holder = 0;
            usleep(1000);
        }
        close(fd);
        if (e != EWOULDBLOCK) return errno = e, -2;
        return -1;
    }
    // fd stays open (the lock lives as long as the process); the pid is for the message only
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    // a lock file we cannot write (disk full) still locks: only the holder's pid is unknown
    int written = ftruncate(fd, 0) == 0 && pwrite(fd, pid, (size_t)n, 0) == n;
    (void)written;
    return 0;
}

int run_dir_lock_held(const char *dir, const char *name, long *holder) {
    *holder = 0;
    char *path = join(dir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    free(path);
    if (fd < 0) return 0;
    *holder = pid_in(fd);
    int alive = *holder <= 0 || process_alive(*holder);
    int held = 0;
    if (alive) {
        if (flock(fd, LOCK_SH | LOCK_NB) != 0) held = errno == EWOULDBLOCK;
        else flock(fd, LOCK_UN);
    }
    close(fd);
    if (!held) *holder = 0;
    return held;
}
