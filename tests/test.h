// A small test framework. Each TEST runs in its own process (a crash fails that case only).
// CHECK/CHECK_CLOSE stop the case with a message naming file and line.
#pragma once
#include <stddef.h>

typedef void (*test_fn)(void);
void test_register(const char *name, const char *file, test_fn fn);

#define TEST(name)                                                                                                     \
    static void test_##name(void);                                                                                     \
    __attribute__((constructor)) static void register_test_##name(void) {                                              \
        test_register(#name, __FILE__, test_##name);                                                                   \
    }                                                                                                                  \
    static void test_##name(void)

_Noreturn void test_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
_Noreturn void test_check_fail(const char *file, int line, const char *cond, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

// CHECK(cond) or CHECK(cond, "format", args...)
#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) test_check_fail(__FILE__, __LINE__, #cond, " " __VA_ARGS__);                                      \
    } while (0)

// |a - b| <= tol * max(1, |a|, |b|)
#define CHECK_CLOSE(a, b, tol)                                                                                         \
    do {                                                                                                               \
        double a_ = (double)(a), b_ = (double)(b);                                                                     \
        if (!test_close(a_, b_, (tol)))                                                                                \
            test_fail(__FILE__, __LINE__, "%s = %.17g vs %s = %.17g (tol %g)", #a, a_, #b, b_, (double)(tol));         \
    } while (0)

int test_close(double a, double b, double tol);

// A row of the tests' tables of bad input: what is given (arguments, a file's text or path) and
// what the one line it makes the program print must contain.
typedef struct {
    const char *in, *want;
} BadInput;

// A fresh scratch folder for the running case (removed when the runner exits).
const char *test_tmpdir(void);
// Path inside the scratch folder (allocated; lives as long as the case).
const char *test_path(const char *name);
// Runs a shell command, capturing stdout+stderr into out (NUL-terminated, truncated to outlen).
// Returns the exit status (or 128+signal).
int test_run(char *out, size_t outlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
// Runs fn(arg) in a child process; captures what it writes to stderr; returns its exit status.
int test_fork(void (*fn)(void *), void *arg, char *err, size_t errlen);
// 1 when a temporary file of the atomic writer for path is left (path.<pid>.tmp, or an older
// writer's path.tmp).
int test_temp_left(const char *path);
// Writes text to a file in the scratch folder and returns its path.
const char *test_write_file(const char *name, const char *text);
// A tiny text run in the scratch folder: a token shard of n_tokens (a fixed pattern over 50 ids,
// its path in *shard unless NULL; it is both train and val data) and a softmax model of n_layer
// layers without MLP trained for `steps` (a checkpoint at the last) into the returned folder.
const char *test_text_run(const char *name, int n_tokens, int n_layer, int steps, const char **shard);
