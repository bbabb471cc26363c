// Two writers of one file (docs/reliability.md#concurrent-writers): the per-file lock around
// every read-modify-write (core/io.h file_lock) and the per-writer temporary names of the atomic
// writer. tests/faults/concurrent_writers.sh runs 50 rounds of concurrent evaluations and
// collects (`make faults`); here 2 rounds, and the pieces one at a time.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/io.h"
#include "core/run_dir.h"
#include "core/runlog.h"
#include "tests/test.h"

TEST(writers_concurrent_evaluations_and_collects_keep_every_record) {
    char out[16384];
    int st = test_run(out, sizeof out, "tests/faults/concurrent_writers.sh 2");
    CHECK(st == 0 && strstr(out, "concurrent writers: 2 rounds, every writer exited 0"), "exit %d: %s", st, out);
}

// A second locker of one file waits for the first, saying whom it waits for, and gets the lock
// once the first ends (here by kill -9: the kernel releases the lock, nothing stale remains).
TEST(writers_file_lock_waits_for_its_holder_and_survives_kill_9) {
    const char *path = test_path("shared.jsonl");
    int pipefd[2];
    CHECK(pipe(pipefd) == 0);
    pid_t holder = fork();
    if (holder == 0) {
        close(pipefd[0]);
        int fd = file_lock(path);
        char c = fd >= 0 ? 'y' : 'n';
        if (write(pipefd[1], &c, 1) != 1) _exit(3);
        pause();
        _exit(0);
    }
    close(pipefd[1]);
    char c = 0;
    CHECK(read(pipefd[0], &c, 1) == 1 && c == 'y', "the first locker failed");
    close(pipefd[0]);
    char msg[256], want[256];
    snprintf(want, sizeof want, "shared.jsonl: waiting for process %ld (another writer of this file)", (long)holder);
    // the waiter: a child that locks, with stderr to a file; kill the holder a moment later
    const char *err_path = test_path("waiter.err");
    pid_t waiter = fork();
    if (waiter == 0) {
        if (!freopen(err_path, "w", stderr)) _exit(3);
        int fd = file_lock(path);
        fflush(stderr);
        _exit(fd >= 0 ? 0 : 4);
    }
    usleep(300 * 1000);
    int status = 0;
    CHECK(waitpid(waiter, &status, WNOHANG) == 0, "the second locker did not wait");
    kill(holder, SIGKILL);
    waitpid(holder, NULL, 0);
    CHECK(waitpid(waiter, &status, 0) == waiter && WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
    char *text = read_file_text(err_path, NULL);
    snprintf(msg, sizeof msg, "%s", text ? text : "");
    free(text);
    CHECK(strstr(msg, want) && strchr(msg, '\n')[1] == 0, "%s", msg);
}

// Merging: a log whose last line has no newline (edited by hand) keeps that record; a line cut
// by a killed appender (its object not closed) is still no record.
TEST(writers_merge_keeps_a_last_record_without_its_newline) {
    const char *path = test_write_file("eval.jsonl",
                                       "{\"type\":\"eval\",\"step\":1,\"loss\":1}\n"
                                       "{\"type\":\"eval\",\"step\":2,\"loss\":2}");
    const char *fresh = "{\"type\":\"eval\",\"step\":3,\"loss\":3}\n";
    char err[512];
    CHECK(runlog_merge(path, fresh, strlen(fresh), RUNLOG_SAME_KEY, err, sizeof err) == 0, "%s", err);
    char *text = read_file_text(path, NULL);
    CHECK(text &&
              !strcmp(text,
                      "{\"type\":\"eval\",\"step\":1,\"loss\":1}\n{\"type\":\"eval\",\"step\":2,\"loss\":2}\n"
                      "{\"type\":\"eval\",\"step\":3,\"loss\":3}\n"),
          "%s", text);
    free(text);
    path = test_write_file("cut.jsonl", "{\"type\":\"eval\",\"step\":1,\"loss\":1}\n{\"type\":\"eval\",\"step\":2,\"lo");
    CHECK(runlog_merge(path, fresh, strlen(fresh), RUNLOG_SAME_KEY, err, sizeof err) == 0, "%s", err);
    text = read_file_text(path, NULL);
    CHECK(text && !strcmp(text, "{\"type\":\"eval\",\"step\":1,\"loss\":1}\n{\"type\":\"eval\",\"step\":3,\"loss\":3}\n"),
          "%s", text);
    free(text);
}

// A step beyond any long (1e300) was cast to long: undefined behaviour (UBSan, the fuzz target).
// Such a record is no record; the others stay.
TEST(writers_merge_huge_step_is_no_record) {
    const char *old =
        "{\"type\":\"eval\",\"step\":1e300}\n{\"type\":\"eval\",\"step\":-1e19}\n{\"type\":\"eval\",\"step\":5}\n";
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    runlog_merge_text(old, strlen(old), "", 0, RUNLOG_SAME_KEY, f);
    fclose(f);
    CHECK(buf && !strcmp(buf, "{\"type\":\"eval\",\"step\":5}\n"), "%s", buf);
    free(buf);
}

// Every row of RUN_DIR_OUTPUT_OPTIONS (core/run_dir.c), run with its option aimed at a run's
// metrics.jsonl (a folder option also at the run folder itself): exit 2, one line naming the key,
// the run's files unchanged. Before, ./evaluate compare=run/metrics.jsonl wrote an SVG over the log
// (exit 0). A row without a command here fails: a new output option needs one.
TEST(writers_every_output_option_refuses_a_runs_files) {
    static const struct {
        const char *program, *key, *command;
    } cmds[] = {
        {"train", "out_dir", "./train b.conf out_dir=%s"},
        {"train", "export_data", "./train b.conf export_data=%s"},
        {"evaluate", "compare", "./evaluate run run compare=%s"},
        {"tokenize", "out", "./tokenize train text.txt vocab_size=260 out=%s"},
        {"export", "out", "./export run out=%s"},
        {"sweep", "--out", "./sweep s.sweep --print --out %s"},
    };
    char out[8192], cwd[1024];
    CHECK(getcwd(cwd, sizeof cwd));
    const char *d = test_tmpdir();
    test_write_file("b.conf",
                    "vocab_size = 64\nseq_len = 16\nmqar_kv_pairs = 2\nmqar_train_examples = 64\n"
                    "mqar_val_examples = 16\nmqar_test_examples = 16\nd_model = 8\nn_head = 1\n"
                    "batch_size = 8\nsteps = 2\neval_every = 0\nsparsity_every = 0\nthreads = 1\n");
    test_write_file("s.sweep", "base = b.conf\nseed = 1, 2\n");
    test_write_file("text.txt", "some text to train a tokenizer on\n");
    int st = test_run(out, sizeof out, "cd %s && %s/train b.conf out_dir=run", d, cwd);
    CHECK(st == 0, "%s", out);
    char *before = read_file_text(test_path("run/metrics.jsonl"), NULL);
    CHECK(before);
    for (int i = 0; i < RUN_DIR_N_OUTPUT_OPTIONS; i++) {
        const RunDirOutputOption *o = &RUN_DIR_OUTPUT_OPTIONS[i];
        const char *cmd = NULL;
        for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++)
            if (!strcmp(cmds[k].program, o->program) && !strcmp(cmds[k].key, o->key)) cmd = cmds[k].command;
        CHECK(cmd, "output option %s of ./%s has no command in this test", o->key, o->program);
        const char *targets[] = {"run/metrics.jsonl", "run"};
        int n_targets = o->folder && strcmp(o->key, "out_dir") ? 2 : 1;  // out_dir: its run folder is its own
        for (int t = 0; t < n_targets; t++) {
            char line[512];
            snprintf(line, sizeof line, cmd, targets[t]);
            st = test_run(out, sizeof out, "cd %s && %s/%s 2>&1 >/dev/null", d, cwd, line);
            char key[64];
            snprintf(key, sizeof key, "%s: '%s", o->key, targets[t]);
            CHECK(st == 2 && strstr(out, key) && strchr(out, '\n') && strchr(out, '\n')[1] == 0, "%s: exit %d: %s",
                  line, st, out);
            char *after = read_file_text(test_path("run/metrics.jsonl"), NULL);
            CHECK(after && !strcmp(after, before), "%s changed run/metrics.jsonl", line);
            free(after);
        }
    }
    free(before);
}

// Bytes that are not UTF-8: a config value is refused at the start (one line, exit 2); a path
// given on the command line (a run folder named in Latin-1) is written as U+FFFD. Every JSON text
// and safetensors header the programs wrote then reads with a strict reader (tests/strict_json.py:
// Python's UTF-8 decoder, then json). Before, out_dir=caf\xe9 went raw into checkpoint headers
// (safetensors: "invalid UTF-8 in header") and intervention.jsonl's checkpoint field.
TEST(writers_non_utf8_values_refused_and_every_json_written_is_utf8) {
    char out[8192], cwd[1024];
    CHECK(getcwd(cwd, sizeof cwd));
    const char *d = test_tmpdir();
    test_write_file("b.conf",
                    "vocab_size = 64\nseq_len = 16\nmqar_kv_pairs = 2\nmqar_train_examples = 64\n"
                    "mqar_val_examples = 16\nmqar_test_examples = 16\nd_model = 8\nn_head = 1\n"
                    "batch_size = 8\nsteps = 2\neval_every = 1\nsparsity_every = 1\nthreads = 1\n");
    int st = test_run(out, sizeof out, "cd %s && %s/train b.conf out_dir=\"$(printf 'caf\\351')\" 2>&1", d, cwd);
    CHECK(st == 2 &&
              !strcmp(out,
                      "command line: out_dir: expected UTF-8 text, got the byte 0xe9 at offset 3 (the value "
                      "is written into JSON files)\n"),
          "exit %d: %s", st, out);
    st = test_run(out, sizeof out, "cd %s && %s/train b.conf out_dir=r sample_prompt=\"$(printf '\\377')\" 2>&1", d, cwd);
    CHECK(st == 2 && strstr(out, "command line: sample_prompt: expected UTF-8 text, got the byte 0xff at offset 0"),
          "exit %d: %s", st, out);
    // valid UTF-8 beyond ASCII passes through; a Latin-1 folder name given as a path is escaped
    st = test_run(out, sizeof out,
                  "cd %s && n=$(printf 'r\\351') && %s/train b.conf out_dir=café tensorboard=true > /dev/null && cp -r café \"$n\" && "
                  "%s/evaluate \"$n\" intervene=oracle threads=1 > /dev/null && %s/evaluate café threads=1 > /dev/null "
                  "&& %s/export \"$n\" format=safetensors out=exp.safetensors > /dev/null && "
                  "%s/export café format=hf out=hf > /dev/null",
                  d, cwd, cwd, cwd, cwd, cwd);
    CHECK(st == 0, "exit %d: %s", st, out);
    st = test_run(out, sizeof out, "cd %s && python3 %s/tests/strict_json.py .", d, cwd);
    CHECK(st == 0 && strstr(out, " files valid"), "exit %d: %s", st, out);
}

// The merger compared a record's split and options joined by a space: split "val x" without
// options was the series of split "val" with options "x", and a fresh record of one dropped the
// other (found writing fuzz_runlog's property). They are compared apart.
TEST(writers_merge_compares_split_and_options_apart) {
    const char *old = "{\"type\":\"eval\",\"step\":1,\"split\":\"val x\"}\n";
    const char *fresh = "{\"type\":\"eval\",\"step\":1,\"split\":\"val\",\"options\":\"x\"}\n";
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    runlog_merge_text(old, strlen(old), fresh, strlen(fresh), RUNLOG_SAME_SERIES, f);
    fclose(f);
    CHECK(buf && strstr(buf, old) && strstr(buf, fresh), "%s", buf);
    free(buf);
}
