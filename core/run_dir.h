// The files of a run folder (docs/outputs.md#the-run-folder): checkpoints ckpt_%08d.safetensors,
// the `latest` pointer, and the jsonl logs that a resumed run continues.
#pragma once

// Checkpoints in dir in step order (allocated paths "dir/ckpt_%08d.safetensors" and steps);
// returns the count. Temporary files of an interrupted save are not listed.
int run_dir_checkpoints(const char *dir, char ***paths, long **steps);
void run_dir_free_list(char **paths, long *steps, int n);
// Path of the checkpoint `latest` names (allocated), or NULL when there is none.
char *run_dir_latest(const char *dir);
// Atomically points `latest` at the checkpoint file name (not a path).
int run_dir_set_latest(const char *dir, const char *name);
// Deletes the oldest checkpoints so that at most keep_last remain (keep_last > 0).
void run_dir_prune(const char *dir, int keep_last);
// Keeps only the lines of a jsonl file whose "step" is <= step (atomic rewrite; no file: no-op).
int run_dir_truncate_jsonl(const char *path, long step);
// 1 when dir holds any file a run writes (config.conf, metrics.jsonl, checkpoints, ...).
int run_dir_has_run(const char *dir);
// Refuses (one line naming `key`, exit 2) an output path that would destroy what the program
// reads or a run: a folder, the same file as any of inputs[i].path (links and other spellings
// included; inputs[i].what names it: "input", "tokenizer", "checkpoint"), or a file in a folder
// that holds a run (its checkpoints, `latest`, config.conf, logs). A new file elsewhere passes.
typedef struct {
    const char *what;
    const char *path;
} RunDirInput;
void run_dir_check_output(const char *key, const char *out, const RunDirInput *inputs, int n_inputs);
// The same for an option that names a folder to write into: refused (one line naming `key`, exit
// 2) when it is a file, or, unless run_ok (./train's out_dir, whose run folder is its own), a
// folder that holds a run.
void run_dir_check_output_folder(const char *key, const char *dir, int run_ok);

// Every option of every program that names an output path, one row each (RUN_DIR_OUTPUT_OPTIONS):
// the key a program passes to the checks above, which die with an internal error for a key not
// listed, and tests/test_writers.c runs each row's program with the option aimed at a run's files
// and wants the refusal. A new output option gets a row here, a check, and a command in that test.
typedef struct {
    const char *program;  // "train", "evaluate", ...
    const char *key;      // as the user spells it: "out_dir", "compare", "--out"
    int folder;           // 1: a folder to write into (run_dir_check_output_folder), 0: a file
} RunDirOutputOption;
extern const RunDirOutputOption RUN_DIR_OUTPUT_OPTIONS[];
extern const int RUN_DIR_N_OUTPUT_OPTIONS;
// Removes the files a run writes (only those: never other files in the folder).
void run_dir_clear(const char *dir);

// The lock file of a run folder: held (flock, exclusive) by the ./train writing the run, and
// released by the kernel when that process ends, however it ends (kill -9 leaves no stale lock).
#define RUN_DIR_LOCK "train.lock"
// The best-validation checkpoint (keep_best): beside the ckpt_<step> files, never pruned.
#define RUN_DIR_BEST "best.safetensors"
// Takes the run folder's lock for the rest of the process and writes our pid into the lock file.
// 0; or -1 when another process holds it, with its pid in *holder (0 when unknown) ; or -2 with
// errno set when the lock file cannot be opened.
int run_dir_lock(const char *dir, long *holder);
// The same for the lock file `name` in dir (./sweep's SWEEP_LOCK in the sweep's folder).
int run_dir_lock_named(const char *dir, const char *name, long *holder);
// 1 when a live process holds the lock file `name` in dir, with its pid in *holder (0 when
// unknown); 0 when none does (no lock file, or its process has ended). Takes nothing: a probe
// that took the lock, even for a moment, could refuse a ./train starting just then, so it asks
// flock only when the pid written in the file is alive (or unknown), and then for a shared lock.
int run_dir_lock_held(const char *dir, const char *name, long *holder);
