// build/bench (the float build, run as a program): --interleave times every mixer of a seq_len
// in one process, their steps in turn.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/io.h"
#include "tests/test.h"

// The bench program of the default build (build/bench, which `make test` makes): from the
// repository root, or from a variant's folder (build/ARCH, build/asan: the suites of tests/
// reliability.mk run there) one level up. The case is about the bench's logic, not the ISA.
static const char *bench_program(void) {
    struct stat st;
    if (stat("build/bench", &st) == 0 && S_ISREG(st.st_mode)) return "build/bench";
    if (stat("../bench", &st) == 0 && S_ISREG(st.st_mode)) return "../bench";
    return NULL;
}

// A model small enough that a row takes well under a second: random tokens, one layer.
static const char *tiny_bench_conf(void) {
    return test_write_file("bench_tiny.conf",
                           "bench_data = lm\nvocab_size = 32\nseq_len = 16\nbatch_size = 2\nd_model = 8\n"
                           "n_layer = 1\nn_head = 1\nmlp = false\nbench_warmup = 1\nbench_steps = 3\n"
                           "bench_torch = false\nthreads = 1\n");
}

// Lines of text that contain every one of a, b (b may be NULL).
static int count_lines(const char *text, const char *a, const char *b) {
    int n = 0;
    for (const char *l = text; l && *l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        char line[4096];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), l);
        n += strstr(line, a) && (!b || strstr(line, b));
        l = e ? e + 1 : NULL;
    }
    return n;
}

TEST(bench_interleave_times_every_mixer_in_one_process) {
    const char *conf = tiny_bench_conf(), *jl = test_path("interleaved.jsonl"), *sep = test_path("rows.jsonl");
    char out[16384];
    const char *bench = bench_program();
    CHECK(bench, "build/bench not found: make build/bench");
    if (!bench) return;
    int st = test_run(out, sizeof out, "%s --interleave --no-torch --mixers softmax,linear,nosuch --out %s %s", bench,
                      jl, conf);
    CHECK(st == 0, "exit %d: %s", st, out);
    CHECK(strstr(out, "nosuch    unknown mixer"), "%s", out);  // named, and the others still run
    char *text = read_file_text(jl, NULL);
    CHECK(count_lines(text, "\"interleaved\":true", NULL) == 2, "%s", text);
    CHECK(count_lines(text, "\"mixer\":\"softmax\"", "\"interleaved\":true") == 1, "%s", text);
    CHECK(count_lines(text, "\"mixer\":\"linear\"", "\"interleaved\":true") == 1, "%s", text);
    CHECK(!strstr(text, "\"ms_per_step\":0.000"), "%s", text);  // each row timed its own steps
    // each row's 3 timed steps in run order, the first of them not faster than its best
    for (const char *l = strstr(text, "\"step_ms\":["); l; l = strstr(l + 1, "\"step_ms\":[")) {
        double a, b, c;
        CHECK(sscanf(l, "\"step_ms\":[%lf,%lf,%lf]", &a, &b, &c) == 3 && a > 0 && b > 0 && c > 0, "%.60s", l);
    }
    CHECK(count_lines(text, "\"step_ms\":[", NULL) == 2, "%s", text);
    free(text);
    // bench/paired_table.sh reads them: a row per mixer, softmax against itself 1.00x
    st = test_run(out, sizeof out, "sh bench/paired_table.sh %s", jl);
    CHECK(st == 0 && strstr(out, "| softmax | 1 | 1.00x (1.00-1.00) |") && strstr(out, "| linear | 1 | "), "%d %s", st, out);
    // without it, a process a row, and no "interleaved" field
    st = test_run(out, sizeof out, "%s --no-torch --mixers softmax --out %s %s", bench, sep, conf);
    CHECK(st == 0, "exit %d: %s", st, out);
    text = read_file_text(sep, NULL);
    CHECK(count_lines(text, "\"mixer\":\"softmax\"", NULL) == 1 && !strstr(text, "interleaved"), "%s", text);
    free(text);
}
