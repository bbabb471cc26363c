#include "core/io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#include <time.h>
#include <unistd.h>

// Sanitizer builds (make asan): an exit through die() leaves memory behind on purpose (the process
// ends there), so LeakSanitizer checks normal exits only. (The fuzz targets check leaks themselves.)
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IO_ASAN 1
#endif
#endif
#if (defined(__SANITIZE_ADDRESS__) || defined(IO_ASAN)) && !defined(ATTNSCOPE_FUZZ)
static volatile int g_dying;
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void) { return g_dying; }
#define MARK_DYING() (g_dying = 1)
#else
#define MARK_DYING() ((void)0)
#endif

static _Noreturn void vdie(int status, const char *fmt, va_list ap) {
    MARK_DYING();
    fflush(stdout);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    exit(status);
}

void die_input(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vdie(2, fmt, ap);
}

void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vdie(1, fmt, ap);
}

FILE *fopenCheck(const char *path, const char *mode) {
    FILE *f = fopen(path, mode);
    if (!f) die_input("%s: cannot open (%s)", path, strerror(errno));
    return f;
}

void freadCheck(void *ptr, size_t size, size_t n, FILE *f, const char *path) {
    size_t got = fread(ptr, size, n, f);
    if (got != n) {
        if (feof(f)) die_input("%s: file is truncated (wanted %zu items, got %zu)", path, n, got);
        die("%s: read error (%s)", path, strerror(errno));
    }
}

void fwriteCheck(const void *ptr, size_t size, size_t n, FILE *f, const char *path) {
    if (fwrite(ptr, size, n, f) != n) die("%s: write error (%s)", path, strerror(errno));
}

void fcloseCheck(FILE *f, const char *path) {
    if (fclose(f) != 0) die("%s: close error (%s)", path, strerror(errno));
}

void *mallocCheck(size_t size) {
    void *p = malloc(size ? size : 1);
    if (!p) die("out of memory allocating %zu bytes", size);
    return p;
}

void *callocCheck(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) die("out of memory allocating %zu x %zu bytes", n, size);
    return p;
}

void *callocArena(size_t n, size_t size) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    size_t bytes = (n ? n : 1) * (size ? size : 1), huge = (size_t)2 << 20;
    if (size && bytes / size != (n ? n : 1)) die("out of memory allocating %zu x %zu bytes", n, size);
    if (bytes >= huge) {
        void *p = NULL;
        size_t rounded = (bytes + huge - 1) / huge * huge;
        if (posix_memalign(&p, huge, rounded)) die("out of memory allocating %zu x %zu bytes", n, size);
        madvise(p, rounded, MADV_HUGEPAGE);  // a hint: where the kernel declines, 4 KB pages
        memset(p, 0, bytes);
        return p;
    }
#endif
    return callocCheck(n, size);
}

void *reallocCheck(void *p, size_t size) {
    void *q = realloc(p, size ? size : 1);
    if (!q) die("out of memory reallocating %zu bytes", size);
    return q;
}

char *strdupCheck(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = mallocCheck(n);
    memcpy(d, s, n);
    return d;
}

// The reason a call failed, in err when the caller gave room for it; errno kept for it.
static void say(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *err, size_t errlen, const char *fmt, ...) {
    int e = errno;
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    errno = e;
}

// "PATH.<pid>.tmp": each writer its own temporary file, so two processes that replace one file at
// once (two ./evaluate merging into eval.jsonl, two ./sweep --collect) never write into one
// temporary file or rename the other's away. The pid is enough: a process writes one file at a time.
static char *temp_name(const char *path, long pid) {
    size_t n = strlen(path) + 32;
    char *t = mallocCheck(n);
    snprintf(t, n, "%s.%ld.tmp", path, pid);
    return t;
}

char *atomic_temp_path(const char *path) { return temp_name(path, (long)getpid()); }

int process_alive(long pid) { return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM); }

// Removes the temporary files of PATH that writers killed mid-write left (PATH.<pid>.tmp whose
// process has ended), so they do not pile up; a live writer's is never touched.
static void remove_stale_temps(const char *path) {
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t blen = strlen(base);
    char *dir = slash ? strdupCheck(path) : strdupCheck(".");
    if (slash) dir[slash - path + (slash == path)] = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        const char *nm = e->d_name;
        if (strncmp(nm, base, blen) || nm[blen] != '.') continue;
        char *end;
        long pid = strtol(nm + blen + 1, &end, 10);
        if (end == nm + blen + 1 || strcmp(end, ".tmp") || pid == (long)getpid() || process_alive(pid)) continue;
        size_t n = strlen(dir) + strlen(nm) + 2;
        char *p = mallocCheck(n);
        snprintf(p, n, "%s/%s", dir, nm);
        unlink(p);
        free(p);
    }
    if (d) closedir(d);
    free(dir);
}

int atomic_open(AtomicFile *a, const char *path, char *err, size_t errlen) {
    a->path = path;
    a->f = NULL;
    a->tmp = NULL;
    if (is_directory(path)) {
        errno = EISDIR;
        say(err, errlen, "%s: is a folder, expected a file name", path);
        return -1;
    }
    remove_stale_temps(path);
    a->tmp = temp_name(path, (long)getpid());
    a->f = fopen(a->tmp, "wb");
    if (a->f) return 0;
    say(err, errlen, "%s: cannot write (%s)", a->tmp, strerror(errno));
    free(a->tmp);
    a->tmp = NULL;
    return -1;
}

int file_lock(const char *path) {
    size_t n = strlen(path) + 6;
    char *lp = mallocCheck(n);
    snprintf(lp, n, "%s.lock", path);
    int fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) goto fail;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK) goto fail;
        char buf[32] = {0};
        long holder = pread(fd, buf, sizeof buf - 1, 0) > 0 ? atol(buf) : 0;
        if (holder > 0) fprintf(stderr, "%s: waiting for process %ld (another writer of this file)\n", path, holder);
        else fprintf(stderr, "%s: waiting for another writer of this file (%s)\n", path, lp);
        while (flock(fd, LOCK_EX) != 0)
            if (errno != EINTR) goto fail;
    }
    free(lp);
    char pid[32];
    int k = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    int written = ftruncate(fd, 0) == 0 && pwrite(fd, pid, (size_t)k, 0) == k;  // for the message only
    (void)written;
    return fd;
fail:;  // errno as the failing call left it
    int e = errno;
    if (fd >= 0) close(fd);
    free(lp);
    errno = e;
    return -1;
}

void file_unlock(int fd) {
    if (fd < 0) return;
    int e = errno;
    close(fd);  // closing the last descriptor of the open file releases the flock
    errno = e;
}

// The rename is on the disk once the folder's entry is: without this fsync a power cut soon
// after could bring back the old file (or none). Some file systems refuse to sync a folder;
// the file itself is safe by then, so a failure here is not an error.
static void fsync_folder_of(const char *path) {
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strdupCheck(path) : strdupCheck(".");
    if (slash) dir[slash - path + (slash == path)] = 0;  // "/x" -> "/"
    int fd = open(dir, O_RDONLY);
    free(dir);
    if (fd < 0) return;
    fsync(fd);
    close(fd);
}

// Flush, fsync (the data is on the disk before the name points at it: a power cut after the
// rename cannot leave an empty file under the new name), close, rename, fsync of the folder.
// The temporary file is gone either way.
int atomic_commit(AtomicFile *a, char *err, size_t errlen) {
    // errno as the failed write left it: ferror() here may stand for an fwrite long ago
    int bad = fflush(a->f) != 0 || ferror(a->f) || fsync(fileno(a->f)) != 0;
    int e = bad ? (errno ? errno : EIO) : 0;
    if (fclose(a->f) != 0 && !bad) bad = 1, e = errno;
    a->f = NULL;
    if (bad) {
        errno = e;
        say(err, errlen, "%s: write error (%s)", a->tmp, strerror(e));
    } else if (rename(a->tmp, a->path) != 0) {
        bad = 1;
        say(err, errlen, "%s: cannot rename %s (%s)", a->path, a->tmp, strerror(errno));
    }
    if (bad) {
        e = errno;
        unlink(a->tmp);
        errno = e;
    } else {
        fsync_folder_of(a->path);
    }
    free(a->tmp);
    a->tmp = NULL;
    return bad ? -1 : 0;
}

void atomic_abort(AtomicFile *a) {
    int e = errno;
    if (a->f) fclose(a->f);
    if (a->tmp) unlink(a->tmp);
    free(a->tmp);
    a->f = NULL;
    a->tmp = NULL;
    errno = e;
}

char *read_file_text(const char *path, size_t *len) { return read_file_text_max(path, (size_t)-1, len); }

char *read_file_text_max(const char *path, size_t max, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = mallocCheck(cap);
    for (;;) {
        if (n + 1 >= cap) buf = reallocCheck(buf, cap *= 2);
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0 || n > max) break;
    }
    int err = ferror(f) ? EIO : n > max ? EFBIG : 0;
    fclose(f);
    if (err) {
        free(buf);
        errno = err;
        return NULL;
    }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

int mkdir_p(const char *path) {
    char *p = strdupCheck(path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = 0;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            free(p);
            return -1;
        }
        *s = '/';
    }
    int rc = mkdir(p, 0777);
    int ok = rc == 0 || (errno == EEXIST && is_directory(p));
    free(p);
    return ok ? 0 : -1;
}

char *path_relative_to(const char *base_file, const char *rel) {
    if (rel[0] == '/') return strdupCheck(rel);
    const char *slash = strrchr(base_file, '/');
    if (!slash) return strdupCheck(rel);
    size_t dlen = (size_t)(slash - base_file) + 1;
    char *out = mallocCheck(dlen + strlen(rel) + 1);
    memcpy(out, base_file, dlen);
    strcpy(out + dlen, rel);
    return out;
}

int path_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

int is_directory(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
