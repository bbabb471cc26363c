// Runs a list of commands as child processes, a few at a time (./sweep's points). Each child
// gets its own process group, so a Ctrl-C reaches it only through the runner: the first
// SIGINT/SIGTERM stops starting new commands and is passed on once to the running ones (./train
// saves a checkpoint and exits); a second one is passed on again (./train then stops at once).
#pragma once

typedef struct {
    char **argv;      // NULL-terminated; argv[0] is the program's path
    const char *log;  // the child's stdout and stderr are appended to this file
    const char *header;  // written to the log before the child starts (NULL: nothing)
} RunnerJob;

typedef struct {
    void (*started)(int job, void *ctx);
    // status: the exit status, 128 + signal when killed, -1 when it could not be started
    void (*finished)(int job, int status, double seconds, void *ctx);
    void *ctx;
} RunnerHooks;

// Runs jobs[0..n) in order, at most `parallel` at once, and waits for all of them. Returns the
// signal that interrupted the run (the remaining jobs were not started), 0 when none did.
int runner_run(const RunnerJob *jobs, int n, int parallel, const RunnerHooks *hooks);
