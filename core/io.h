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

// Replacing a file atomically: atomic_open writes to PATH.tmp, atomic_close flushes it to the disk
// (fsync) and renames it over PATH, so a reader, a kill -9 or a crash sees the old file or the
// whole new one, never a part (at most a stray PATH.tmp, which the next writer replaces). Every
// file the programs write whole goes through here (docs/reliability.md#faults); logs that grow
// (metrics.jsonl, train.log) are appended to instead. PATH a folder, or a temporary file that
// cannot be created, is bad input (exit 2); a write error at close, or the rename, exits 1 after
// removing the temporary file. Write with fwriteCheck(..., a.f, a.tmp), or fprintf to a.f.
typedef struct {
    FILE *f;
    char *tmp;         // PATH.tmp (allocated)
    const char *path;  // the caller's
} AtomicFile;
void atomic_open(AtomicFile *a, const char *path);
void atomic_close(AtomicFile *a);
// The same for callers that report a failure themselves: 0, or -1 with errno set (EISDIR for a
// folder) and nothing left behind: no PATH.tmp, PATH as it was.
int atomic_try_open(AtomicFile *a, const char *path);
int atomic_try_close(AtomicFile *a);
// Gives up a file being written: closes and removes PATH.tmp; PATH stays as it was.
void atomic_abort(AtomicFile *a);

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
