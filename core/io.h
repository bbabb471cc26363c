// Error exits and checked I/O wrappers (llm.c's xxxCheck style).
// Exit status contract (docs/design.md#exit-status): 2 = bad input (config, file, arguments), with
// one line on stderr naming the file, line or key; 1 = anything else.
//
// The error rule: who returns an error and who dies.
// - Return an error (0, or -1 with one line naming the file in the caller's `char *err, size_t
//   errlen`, or errno where that is the whole story), leaving nothing half-written, wherever a
//   caller may go on or must say more: the parsers of files a program is handed (safetensors,
//   checkpoints, llm.c files, run folders), the atomic writer below and the writers built on it
//   whose failure a driver words itself (checkpoints, `latest`, figures, summaries, report.html),
//   and whatever ./evaluate does for one checkpoint among several (it reports that one, goes on).
// - Die (die_input for bad input, die for the rest) in the drivers: train.c, the *_main.c files
//   and bench/bench.c turn those errors into the exit status. Code whose failure no caller could
//   survive may die where it finds the problem and says so in its header: the config and its
//   keys, a task's data set, the files that are a program's whole output (token shards, a
//   tokenizer, exported data), out of memory (the xxxCheck wrappers).
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
// callocCheck for a big arena (the model's activations): on Linux 2 MB aligned and marked for
// transparent huge pages (madvise), which took 8-10% off every mixer's step on the MQAR cell
// (docs/performance.md); free() releases it.
void *callocArena(size_t n, size_t size);
void *reallocCheck(void *p, size_t size);
char *strdupCheck(const char *s);

// Replacing a file atomically. atomic_open creates PATH.<pid>.tmp (one per writer: two processes
// replacing one file never share it; stale ones of ended writers are removed); the caller writes to a.f; then
// atomic_commit flushes it to the disk (fsync), renames it over PATH and fsyncs the folder, so a
// reader, a kill -9, a crash or a power cut sees the old file or the whole new one, never a part
// (at most a stray PATH.<pid>.tmp, which the next writer of PATH removes). atomic_abort gives the new file up
// instead. Every file the programs write whole goes through here (docs/reliability.md#faults);
// logs that grow (metrics.jsonl, train.log) are appended to instead.
//
// Both return 0, or -1 with errno set and the reason in err (one line naming the file, for a
// driver to print as it is; err may be NULL when errno is enough), having left nothing behind:
// no PATH.<pid>.tmp, PATH as it was. The reasons: PATH a folder (errno EISDIR) or the temporary file that cannot
// be created, from atomic_open, are bad input (a driver exits 2); a write error or a failed rename,
// from atomic_commit, are not (exit 1). A driver's use:
//     if (atomic_open(&a, path, err, sizeof err) != 0) die_input("%s", err);
//     fprintf(a.f, ...);  // or fwriteCheck(..., a.f, a.tmp)
//     if (atomic_commit(&a, err, sizeof err) != 0) die("%s", err);
typedef struct {
    FILE *f;
    char *tmp;         // PATH.<pid>.tmp (allocated)
    const char *path;  // the caller's
} AtomicFile;
int atomic_open(AtomicFile *a, const char *path, char *err, size_t errlen);
int atomic_commit(AtomicFile *a, char *err, size_t errlen);
// The temporary file this process writes for PATH (allocated), for messages.
char *atomic_temp_path(const char *path);
// Gives up a file being written: closes and removes its temporary file; PATH stays as it was, and errno
// too (it still says why the caller gave up).
void atomic_abort(AtomicFile *a);

// A read-modify-write of a file that several processes may update (eval.jsonl merged by two
// ./evaluate, a sweep's summary written by a sweep and a --collect) holds the file's advisory lock
// for the whole cycle: file_lock takes an exclusive flock on PATH.lock, waiting for the holder
// (one line on stderr says whom it waits for) rather than failing, and returns its descriptor
// (-1 with errno when the lock file cannot be opened). The kernel releases it when the process
// ends however it ends (kill -9 leaves no stale lock); file_unlock releases it earlier. Not the
// run folder's train.lock: ./train holds that for its whole run, and ./evaluate works beside it.
int file_lock(const char *path);
// 1 when process pid (> 0) is alive; EPERM counts as alive (another user's process).
int process_alive(long pid);
void file_unlock(int fd);

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
