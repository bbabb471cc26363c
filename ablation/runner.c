#include "ablation/runner.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "core/io.h"

#define RUNNER_MAX_PARALLEL 4096

// Running children, read by the signal handler to pass a signal on.
static volatile pid_t g_pids[RUNNER_MAX_PARALLEL];
static volatile sig_atomic_t g_signal;

static void on_signal(int sig) {
    g_signal = sig;
    for (int i = 0; i < RUNNER_MAX_PARALLEL; i++)
        if (g_pids[i] > 0) kill(g_pids[i], sig);
}

// Starts one job; its pid, or -1 when it could not be started.
static pid_t start(const RunnerJob *job, const sigset_t *old_mask) {
    int fd = open(job->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) return -1;
    if (job->header) {
        size_t n = strlen(job->header);
        if (write(fd, job->header, n) != (ssize_t)n) {
            close(fd);
            return -1;
        }
    }
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        // The job ends soon after the sweep, however the sweep ends (kill -9 included): Linux
        // sends it SIGTERM (./train saves and stops); elsewhere ./train checks getppid() against
        // ATTNSCOPE_PARENT_PID between steps.
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGTERM);
#endif
        if (getppid() != parent) _exit(128 + SIGTERM);  // the sweep died before prctl
        char ppid[32];
        snprintf(ppid, sizeof ppid, "%ld", (long)parent);
        setenv("ATTNSCOPE_PARENT_PID", ppid, 1);
        setpgid(0, 0);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        sigprocmask(SIG_SETMASK, old_mask, NULL);
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
        int in = open("/dev/null", O_RDONLY);
        if (in >= 0) dup2(in, 0);
        execv(job->argv[0], job->argv);
        dprintf(2, "sweep: cannot run %s (%s)\n", job->argv[0], strerror(errno));
        _exit(127);
    }
    close(fd);
    if (pid > 0) setpgid(pid, pid);  // also here, so a signal right after fork finds the group
    return pid;
}

int runner_interrupted(void) { return (int)g_signal; }

int runner_run(int parallel, const RunnerHooks *hooks) {
    if (parallel < 1) parallel = 1;
    if (parallel > RUNNER_MAX_PARALLEL) parallel = RUNNER_MAX_PARALLEL;
    double *t0 = callocCheck((size_t)parallel, sizeof(double));
    int *job_of = mallocCheck(sizeof(int) * (size_t)parallel);
    for (int s = 0; s < RUNNER_MAX_PARALLEL; s++) g_pids[s] = 0;
    g_signal = 0;
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;  // no SA_RESTART: waitpid returns on a signal
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    // the signals wait while a child is started and recorded, so none can miss it
    sigset_t block, old_mask;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);

    int n_given = 0, running = 0;
    double last_tick = now_seconds();
    RunnerJob job;
    for (;;) {
        while (running < parallel) {
            // The signals wait from here until the child is recorded: after one that came
            // before, no job starts; one that comes while the job is made and started is
            // delivered once the child is recorded, so it reaches the child too.
            sigprocmask(SIG_BLOCK, &block, &old_mask);
            if (g_signal || !hooks->next(&job, hooks->ctx)) {
                sigprocmask(SIG_SETMASK, &old_mask, NULL);
                break;
            }
            int slot = 0;
            while (g_pids[slot] > 0) slot++;
            pid_t pid = start(&job, &old_mask);
            if (pid > 0) {
                g_pids[slot] = pid;
                job_of[slot] = n_given;
                t0[slot] = now_seconds();
                running++;
            }
            sigprocmask(SIG_SETMASK, &old_mask, NULL);
            if (pid > 0) {
                if (hooks->started) hooks->started(n_given, hooks->ctx);
            } else if (hooks->finished) {
                hooks->finished(n_given, -1, 0, hooks->ctx);
            }
            n_given++;
        }
        if (running == 0) break;
        int status;
        // with a tick hook: poll, so the hook runs about once a second while the jobs run
        pid_t pid = waitpid(-1, &status, hooks->tick ? WNOHANG : 0);
        if (pid == 0) {
            double now = now_seconds();
            if (now - last_tick >= 1) {
                last_tick = now;
                hooks->tick(hooks->ctx);
            }
            struct timespec nap = {0, 100 * 1000 * 1000};
            nanosleep(&nap, NULL);  // a signal ends it early: the loop then passes it on
            continue;
        }
        if (pid < 0) {
            if (errno == EINTR) continue;
            die("sweep: waitpid failed (%s)", strerror(errno));
        }
        int slot = 0;
        while (slot < parallel && g_pids[slot] != pid) slot++;
        if (slot == parallel) continue;  // not one of ours
        g_pids[slot] = 0;
        running--;
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
        if (hooks->finished) hooks->finished(job_of[slot], code, now_seconds() - t0[slot], hooks->ctx);
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    free(t0);
    free(job_of);
    return g_signal;
}
