// The fuzz targets' shared harness (tests/fuzz/fuzz.h). Linked with -Wl,--wrap=exit so that the
// library's die() lands in __wrap_exit, which jumps back into fuzz_call.
#include "tests/fuzz/fuzz.h"

#include <fcntl.h>
#include <sanitizer/allocator_interface.h>
#include <sanitizer/lsan_interface.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static jmp_buf g_jump;
static int g_in_call, g_status;

_Noreturn void __real_exit(int status);
_Noreturn void __wrap_exit(int status);
void __wrap_exit(int status) {
    if (g_in_call) {
        g_in_call = 0;
        g_status = status;
        longjmp(g_jump, 1);
    }
    __real_exit(status);
}

// Mappings made during a call, unmapped after an exit (shard_open maps files).
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __real_munmap(void *addr, size_t len);
static struct {
    void *p;
    size_t n;
} g_maps[64];
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __wrap_munmap(void *addr, size_t len);
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    void *p = __real_mmap(addr, len, prot, flags, fd, off);
    if (p != MAP_FAILED && g_in_call)
        for (int i = 0; i < 64; i++)
            if (!g_maps[i].p) {
                g_maps[i].p = p, g_maps[i].n = len;
                break;
            }
    return p;
}
int __wrap_munmap(void *addr, size_t len) {
    for (int i = 0; i < 64; i++)
        if (g_maps[i].p == addr) g_maps[i].p = NULL;
    return __real_munmap(addr, len);
}

// Heap blocks allocated minus freed by this thread while counting, and the blocks themselves (an
// open-addressing set cleared by bumping the generation), freed after an exit: a million inputs
// that exit would otherwise pile up gigabytes. The hooks run inside malloc: no allocation here.
#define TRACK_CAP (1 << 17)
static __thread int g_counting;
static __thread long g_live;
static const volatile void **g_track;  // [TRACK_CAP] (mmap'd)
static unsigned *g_track_gen;          // generation of each slot; a slot is in use when = g_gen
static unsigned *g_track_order;        // slots in insertion order [g_track_n]
static unsigned g_gen = 1;
static long g_track_n;
static int g_track_full;
static const char g_tombstone;

static unsigned track_slot(const volatile void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
    return (unsigned)(x >> 40) & (TRACK_CAP - 1);
}
static void on_malloc(const volatile void *p, size_t n) {
    (void)n;
    if (!g_counting) return;
    g_live++;
    if (g_track_n >= TRACK_CAP / 2) {
        g_track_full = 1;
        return;
    }
    unsigned i = track_slot(p);
    while (g_track_gen[i] == g_gen) i = (i + 1) & (TRACK_CAP - 1);
    g_track[i] = p, g_track_gen[i] = g_gen;
    g_track_order[g_track_n++] = i;
}
static void on_free(const volatile void *p) {
    if (!g_counting || !p) return;
    g_live--;
    for (unsigned i = track_slot(p); g_track_gen[i] == g_gen; i = (i + 1) & (TRACK_CAP - 1))
        if (g_track[i] == p) {
            g_track[i] = &g_tombstone;
            return;
        }
}
// Frees the blocks an exited call left (when all were tracked), then forgets them all.
static void track_release(int free_them) {
    if (free_them && !g_track_full)
        for (long k = 0; k < g_track_n; k++) {
            unsigned i = g_track_order[k];
            if (g_track[i] != &g_tombstone) free((void *)g_track[i]);
        }
    g_gen++;
    g_track_n = 0;
    g_track_full = 0;
}

static char g_dir[64];
static char g_names[8][32], g_paths[8][128];
static char g_msg[4096];
static FILE *g_capture;
static int g_fd_lo, g_fd_open[32];  // descriptors [g_fd_lo, +32) open before any call

static void cleanup(void) {
    for (int i = 0; i < 8; i++)
        if (g_paths[i][0]) unlink(g_paths[i]);
    rmdir(g_dir);
}

static void setup(void) {
    if (g_dir[0]) return;
    snprintf(g_dir, sizeof g_dir, "%s/attnscope_fuzz_XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        abort();
    }
    atexit(cleanup);
    g_capture = fmemopen(g_msg, sizeof g_msg - 1, "w");
    setvbuf(g_capture, NULL, _IONBF, 0);
    g_track = mmap(NULL, TRACK_CAP * (sizeof *g_track + sizeof *g_track_gen + sizeof *g_track_order),
                   PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (g_track == MAP_FAILED) abort();
    g_track_gen = (unsigned *)(g_track + TRACK_CAP);
    g_track_order = g_track_gen + TRACK_CAP;
    __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
    g_fd_lo = dup(0);
    close(g_fd_lo);
    for (int i = 0; i < 32; i++) g_fd_open[i] = fcntl(g_fd_lo + i, F_GETFD) != -1;
}

const char *fuzz_file(const char *name, const void *data, size_t size) {
    setup();
    int slot = 0;
    while (slot < 8 && g_names[slot][0] && strcmp(g_names[slot], name)) slot++;
    if (slot == 8) fuzz_fail("fuzz_file: more than 8 names");
    snprintf(g_names[slot], sizeof g_names[slot], "%s", name);
    snprintf(g_paths[slot], sizeof g_paths[slot], "%s/%s", g_dir, name);
    int fd = open(g_paths[slot], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size) || close(fd) != 0)
        fuzz_fail("cannot write %s", g_paths[slot]);
    return g_paths[slot];
}

const char *fuzz_message(void) { return g_msg; }

void fuzz_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    fprintf(stdout, "fuzz property failed: ");
    vfprintf(stdout, fmt, ap);
    fprintf(stdout, "\n");
    fflush(stdout);
    va_end(ap);
    abort();
}

int fuzz_call(void (*fn)(void *), void *arg) {
    setup();
    memset(g_msg, 0, sizeof g_msg);
    rewind(g_capture);
    FILE *saved = stderr;
    stderr = g_capture;
    g_live = 0;
    // An exit leaves the parser's memory behind, as the real program does at its exit: those
    // blocks are not leaks (and are freed below). Blocks left after a normal return are leaks
    // (counted here; LeakSanitizer shows where they came from).
    __lsan_disable();
    g_counting = 1;
    g_in_call = 1;
    volatile int exited = 0;
    if (setjmp(g_jump) == 0) fn(arg);
    else exited = 1;
    g_in_call = 0;
    g_counting = 0;
    __lsan_enable();
    stderr = saved;
    track_release(exited);
    if (exited) {
        for (int i = 0; i < 64; i++)
            if (g_maps[i].p) __real_munmap(g_maps[i].p, g_maps[i].n), g_maps[i].p = NULL;
        for (int i = 0; i < 32; i++)
            if (!g_fd_open[i] && fcntl(g_fd_lo + i, F_GETFD) != -1) close(g_fd_lo + i);
        if (g_status != 2) fuzz_fail("exit status %d (bad input must exit 2): %s", g_status, g_msg);
        char *nl = strchr(g_msg, '\n');
        if (!g_msg[0] || !nl || nl[1]) fuzz_fail("the message is not one line: '%s'", g_msg);
        return 2;
    }
    for (int i = 0; i < 64; i++) g_maps[i].p = NULL;  // kept by the caller (e.g. an open shard)
    if (g_live > 0) {
        // Run it again under LeakSanitizer for the allocation stacks, then stop.
        fprintf(stderr, "fuzz: %ld heap blocks not freed after a normal return; LeakSanitizer:\n", g_live);
        fn(arg);
        __lsan_do_recoverable_leak_check();
        fuzz_fail("%ld heap blocks leaked", g_live);
    }
    return -1;
}
