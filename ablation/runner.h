// Runs a list of commands as child processes, a few at a time (./sweep's points). Each child
// gets its own process group, so a Ctrl-C reaches it only through the runner: the first
// SIGINT/SIGTERM stops starting new commands and is passed on once to the running ones (./train
// saves a checkpoint and exits); a second one is passed on again (./train then stops at once).
#pragma once

typedef struct {
    char **argv;         // NULL-terminated; argv[0] is the program's path
    const char *log;     // the child's stdout and stderr are appended to this file
    const char *header;  // written to the log before the child starts (NULL: nothing)
} RunnerJob;

typedef struct {
    // The next job to start, asked for whenever a slot is free: fills *job and returns 1, or
    // returns 0 when none can start now. The runner then waits for a running job to end and asks
    // again (its `finished` hook may have made new jobs ready); with none running it returns.
    // *job's strings must live until the job has started.
    int (*next)(RunnerJob *job, void *ctx);
    // jobs are numbered 0, 1, ... in the order `next` gave them
    void (*started)(int job, void *ctx);
    // status: the exit status, 128 + signal when killed, -1 when it could not be started
    void (*finished)(int job, int status, double seconds, void *ctx);
    // about once a second while jobs run (NULL: none), for a live status line
    void (*tick)(void *ctx);
    void *ctx;
} RunnerHooks;

// Runs the jobs hooks->next gives, at most `parallel` at once, until it has none and all have
// ended. Returns the signal that interrupted the run (no job was started after it), 0 when none did.
int runner_run(int parallel, const RunnerHooks *hooks);
// The signal (SIGINT, SIGTERM) that has interrupted the running runner_run, 0 while none has: a
// job that ends after it ended because of it, whatever its exit status.
int runner_interrupted(void);
