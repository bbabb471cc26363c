// Error exits and checked I/O wrappers (llm.c's xxxCheck style).
// Exit status contract (docs/design.md#exit-status): 2 = bad input (config, file, arguments), with
// one line on stderr naming the file, line or key; 1 = anything else.
#pragma once
#include <stddef.h>
#include <stdio.h>

_Noreturn void die_input(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// Opening a path the user named: failure is bad input (exit 2).
FILE *fopenCheck(const char *path, const char *mode);
void freadCheck(void *ptr, size_t size, size_t n, FILE *f, const char *path);
void fwriteCheck(const void *ptr, size_t size, size_t n, FILE *f, const char *path);
void fcloseCheck(FILE *f, const char *path);
void *mallocCheck(size_t size);
void *callocCheck(size_t n, size_t size);
void *reallocCheck(void *p, size_t size);
char *strdupCheck(const char *s);

// Replacing a file atomically: atomic_open writes to PATH.tmp, atomic_close renames it over PATH,
// so a reader or a crash sees the old file or the whole new one, never a part. PATH a folder, or
// a temporary file that cannot be created, is bad input (exit 2); a write error at close, or the
// rename, exits 1 after removing the temporary file. Write with fwriteCheck(..., a.f, a.tmp).
typedef struct {
    FILE *f;
    char *tmp;         // PATH.tmp (allocated)
    const char *path;  // the caller's
} AtomicFile;
void atomic_open(AtomicFile *a, const char *path);
void atomic_close(AtomicFile *a);

// Reads a whole file into a NUL-terminated buffer; NULL (errno set) on failure.
char *read_file_text(const char *path, size_t *len);
// The same, refusing files (or endless devices) longer than max bytes: NULL, errno EFBIG.
char *read_file_text_max(const char *path, size_t max, size_t *len);
// Creates a directory and its parents; 0 on success.
int mkdir_p(const char *path);
// Path of `rel` interpreted relative to the folder of `base_file` (absolute `rel` is kept).
char *path_relative_to(const char *base_file, const char *rel);
int path_exists(const char *path);
int is_directory(const char *path);
// Wall-clock seconds (monotonic).
double now_seconds(void);
