// The evaluate program end to end (the float build, run as a subprocess on tiny training runs):
// one record per checkpoint per head, damaged checkpoints reported and skipped, the figures, a
// single checkpoint merged into eval.jsonl, several runs compared, and bad arguments (exit 2).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/json.h"
#include "tests/test.h"

#define TINY "vocab_size=64 seq_len=32 mqar_kv_pairs=4 mqar_train_examples=256 mqar_test_examples=40 " \
             "d_model=16 n_layer=2 n_head=2 batch_size=16 lr=3e-3 log_every=0 eval_every=0 threads=1"

// A run of 6 steps with checkpoints at 0, 2, 4, 6 in tmp/name.
static const char *tiny_run(const char *name, const char *mixer) {
    char conf[64];
    snprintf(conf, sizeof conf, "%s.conf", name);
    char text[128];
    snprintf(text, sizeof text, "mixer = %s\nmlp = false\n", mixer);
    const char *c = test_write_file(conf, text);
    const char *dir = test_path(name);
    char out[4096];
    int st = test_run(out, sizeof out, "./train %s " TINY " steps=6 save_every=2 out_dir=%s", c, dir);
    CHECK(st == 0, "train exit %d: %s", st, out);
    return dir;
}

static int count(const char *text, const char *needle) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p++) n++;
    return n;
}

// Every line of eval.jsonl parses; counts eval records and sparsity records per (step, layer, head).
static void check_records(const char *dir, const long *steps, int n_steps, int L, int H) {
    char path[512];
    snprintf(path, sizeof path, "%s/eval.jsonl", dir);
    char *text = read_file_text(path, NULL);
    CHECK(text, "no %s", path);
    int n_eval = 0, n_sp = 0;
    int seen[8][4][4] = {{{0}}};
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char err[128];
        JsonValue *v = json_parse(line, strlen(line), err, sizeof err);
        CHECK(v, "%s: %s", err, line);
        const char *type = json_get(v, "type")->string;
        long step = (long)json_get(v, "step")->number;
        int si = -1;
        for (int i = 0; i < n_steps; i++)
            if (steps[i] == step) si = i;
        CHECK(si >= 0, "unexpected step %ld: %s", step, line);
        if (!strcmp(type, "eval")) {
            n_eval++;
            CHECK(json_get(v, "loss") && json_get(v, "acc"), "%s", line);
        } else {
            CHECK(!strcmp(type, "sparsity"), "%s", line);
            int l = (int)json_get(v, "layer")->number, h = (int)json_get(v, "head")->number;
            CHECK(l < L && h < H, "%s", line);
            seen[si][l][h]++;
            n_sp++;
            double S = json_get(v, "S")->number;
            CHECK(S > 0 && S <= 1, "%s", line);
            CHECK(json_get(v, "rows")->number == 40 * 32 && json_get(v, "rows_recall")->number == 40 * 4, "%s", line);
            CHECK(json_get(v, "S_pred") && json_get(v, "S_pred_ratio") && !strcmp(json_get(v, "mixer")->string, "softmax"),
                  "%s", line);
        }
        json_free(v);
    }
    CHECK(n_eval == n_steps, "%d eval records for %d checkpoints", n_eval, n_steps);
    CHECK(n_sp == n_steps * L * H, "%d sparsity records", n_sp);
    for (int s = 0; s < n_steps; s++)
        for (int l = 0; l < L; l++)
            for (int h = 0; h < H; h++) CHECK(seen[s][l][h] == 1, "step %ld layer %d head %d: %d records", steps[s], l, h, seen[s][l][h]);
    free(text);
}

static void check_svg(const char *dir, const char *name, const char *must) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *t = read_file_text(path, NULL);
    CHECK(t, "no %s", path);
    CHECK(!strncmp(t, "<svg xmlns=\"http://www.w3.org/2000/svg\"", 39) && strstr(t, "</svg>\n"), "%s is not an SVG", path);
    CHECK(strstr(t, must), "%s lacks '%s'", path, must);
    free(t);
}

TEST(evaluate_run_folder_gives_one_record_per_checkpoint_per_head) {
    const char *dir = tiny_run("run", "softmax");
    // a trainer's sparsity.jsonl is drawn too
    char p[512];
    snprintf(p, sizeof p, "%s/sparsity.jsonl", dir);
    FILE *f = fopen(p, "w");
    for (int s = 0; s <= 6; s += 3)
        for (int l = 0; l < 2; l++)
            fprintf(f, "{\"step\":%d,\"layer\":%d,\"head\":0,\"mixer\":\"softmax\",\"S\":0.%d,\"S_recall\":0.5,\"rows\":9}\n", s, l, 9 - s);
    fclose(f);
    char out[16384];
    int st = test_run(out, sizeof out, "./evaluate %s threads=1", dir);
    CHECK(st == 0, "exit %d: %s", st, out);
    CHECK(count(out, "| val loss ") == 4, "one line per checkpoint: %s", out);
    long steps[] = {0, 2, 4, 6};
    check_records(dir, steps, 4, 2, 2);
    check_svg(dir, "sparsity_steps.svg", "layer 1: S_recall over query rows");
    check_svg(dir, "sparsity_steps.svg", "head 1 predicted (exp)");
    check_svg(dir, "sparsity_steps.svg", "one-hot (mean 1/sqrt(n))");
    check_svg(dir, "sparsity_heatmap.svg", "S per head at step 6");
    check_svg(dir, "sparsity_recall_heatmap.svg", "head");
    check_svg(dir, "loss_acc.svg", "validation accuracy");
    check_svg(dir, "sparsity_train.svg", "sparsity.jsonl");
    // evaluating again gives the same file (the pass is deterministic)
    snprintf(p, sizeof p, "%s/eval.jsonl", dir);
    char *first = read_file_text(p, NULL);
    st = test_run(out, sizeof out, "./evaluate %s/ threads=2", dir);
    CHECK(st == 0, "%s", out);
    char *second = read_file_text(p, NULL);
    CHECK(!strcmp(first, second), "eval.jsonl differs between runs or thread counts");
    // eval_batches and sparsity_rows change what is measured
    st = test_run(out, sizeof out, "./evaluate %s threads=1 eval_batches=1 sparsity_rows=100", dir);
    CHECK(st == 0, "%s", out);
    char *third = read_file_text(p, NULL);
    CHECK(strstr(third, "\"rows\":100,") && strstr(third, "\"sequences\":16}"), "%.400s", third);
    free(first);
    free(second);
    free(third);
}

TEST(evaluate_skips_a_damaged_checkpoint) {
    const char *dir = tiny_run("run", "softmax");
    char p[512], out[16384];
    // flip bytes in the data section of step 2's checkpoint; step 5 is not a safetensors file at all
    snprintf(p, sizeof p, "%s/ckpt_00000002.safetensors", dir);
    FILE *f = fopen(p, "r+b");
    CHECK(f);
    fseek(f, -100, SEEK_END);
    fputs("garbage", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/ckpt_00000005.safetensors", dir);
    f = fopen(p, "w");
    fputs("not a checkpoint", f);
    fclose(f);
    int st = test_run(out, sizeof out, "./evaluate %s threads=1", dir);
    CHECK(st == 0, "exit %d: %s", st, out);
    CHECK(strstr(out, "ckpt_00000002.safetensors: skipped: ") && strstr(out, "ckpt_00000005.safetensors: skipped: "), "%s", out);
    long steps[] = {0, 4, 6};
    check_records(dir, steps, 3, 2, 2);
    // a single damaged checkpoint is an error (exit 2, one line naming it)
    snprintf(p, sizeof p, "%s/ckpt_00000002.safetensors", dir);
    st = test_run(out, sizeof out, "./evaluate %s threads=1 2>&1 >/dev/null", p);
    CHECK(st == 2 && strstr(out, "ckpt_00000002.safetensors"), "exit %d: %s", st, out);
}

TEST(evaluate_single_checkpoint_merges_into_eval_jsonl) {
    const char *dir = tiny_run("run", "softmax");
    char out[16384];
    int st = test_run(out, sizeof out, "./evaluate %s threads=1", dir);
    CHECK(st == 0, "%s", out);
    st = test_run(out, sizeof out, "./evaluate %s/ckpt_00000004.safetensors threads=1 eval_batches=1", dir);
    CHECK(st == 0, "%s", out);
    long steps[] = {0, 2, 4, 6};
    char p[512];
    snprintf(p, sizeof p, "%s/eval.jsonl", dir);
    char *t = read_file_text(p, NULL);
    CHECK(count(t, "\"type\":\"eval\"") == 4 && count(t, "\"sequences\":16}") == 1, "%s", t);
    // records in step order
    CHECK(strstr(t, "\"step\":2,") < strstr(t, "\"step\":4,") && strstr(t, "\"step\":4,") < strstr(t, "\"step\":6,"));
    free(t);
    (void)steps;
}

TEST(evaluate_compares_several_runs) {
    const char *a = tiny_run("a", "softmax");
    const char *b = tiny_run("b", "softmax");
    char out[16384];
    const char *fig = test_path("cmp.svg");
    int st = test_run(out, sizeof out, "./evaluate %s %s threads=1 compare=%s", a, b, fig);
    CHECK(st == 0, "%s", out);
    check_svg(test_tmpdir(), "cmp.svg", "validation accuracy");
    check_svg(test_tmpdir(), "cmp.svg", "softmax (b) S_recall");
    st = test_run(out, sizeof out, "./evaluate %s %s threads=1", a, b);
    CHECK(st == 0, "%s", out);
    check_svg(test_tmpdir(), "compare.svg", "layer 1: S (mean over heads)");
    // ./sweep's run folders are named key=value: an existing path is a path, not a key
    const char *swept = tiny_run("seed=1", "softmax");
    st = test_run(out, sizeof out, "./evaluate %s threads=1", swept);
    CHECK(st == 0 && count(out, "| val loss ") == 4, "exit %d: %s", st, out);
}

TEST(evaluate_bad_arguments_exit_2) {
    const char *dir = tiny_run("run", "softmax");
    const char *empty = test_path("empty");
    mkdir_p(empty);
    struct {
        const char *args, *says;
    } cases[] = {
        {"", "expected a checkpoint or a run folder"},
        {"/nonexistent/run", "/nonexistent/run: no such checkpoint or run folder"},
        {"%s", "no checkpoints"},  // the empty folder
        {"RUN foo=1", "unknown key 'foo'"},
        {"RUN eval_batches=abc", "eval_batches"},
        {"RUN d_model=32", "d_model: fixed by the checkpoint"},
        {"RUN --bogus", "unknown option '--bogus'"},
        {"RUN compare=", "compare"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[1024] = "", out[8192];
        const char *a = cases[i].args;
        if (!strncmp(a, "RUN", 3)) snprintf(args, sizeof args, "%s%s", dir, a + 3);
        else if (!strcmp(a, "%s")) snprintf(args, sizeof args, "%s", empty);
        else snprintf(args, sizeof args, "%s", a);
        int st = test_run(out, sizeof out, "./evaluate %s 2>&1 >/dev/null", args);
        CHECK(st == 2, "'%s': exit %d: %s", args, st, out);
        CHECK(strstr(out, cases[i].says), "'%s': %s", args, out);
        // one line on stderr (the usage text goes with no PATH at all)
        if (i > 0) CHECK(count(out, "\n") == 1, "'%s': %s", args, out);
    }
}
