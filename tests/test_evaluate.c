// The evaluate program end to end (the float build, run as a subprocess on tiny training runs):
// one record per checkpoint per head, damaged checkpoints reported and skipped, the figures, a
// single checkpoint merged into eval.jsonl, several runs compared, and bad arguments (exit 2).
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ablation/run_summary.h"
#include "core/io.h"
#include "core/json.h"
#include "core/safetensors.h"
#include "data/shards.h"
#include "tests/test.h"

#define TINY                                                                                                           \
    "vocab_size=64 seq_len=32 mqar_kv_pairs=4 mqar_train_examples=256 mqar_test_examples=40 mqar_val_examples=40 "     \
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
            CHECK(json_get(v, "S_pred") && json_get(v, "S_pred_ratio_median") &&
                      !strcmp(json_get(v, "mixer")->string, "softmax"),
                  "%s", line);
            // the row sets, the answer metrics and S by position
            CHECK(json_get(v, "rows_kv")->number == 40 * 8 && json_get(v, "rows_other")->number == 40 * 20, "%s", line);
            CHECK(json_get(v, "rows_answer")->number == 40 * 4 && json_get(v, "ans_share") && json_get(v, "n90"), "%s", line);
            CHECK(json_get(v, "S_by_pos")->n == 16 && json_get(v, "pos_bin_width")->number == 2, "%s", line);
        }
        json_free(v);
    }
    CHECK(n_eval == n_steps, "%d eval records for %d checkpoints", n_eval, n_steps);
    CHECK(n_sp == n_steps * L * H, "%d sparsity records", n_sp);
    for (int s = 0; s < n_steps; s++)
        for (int l = 0; l < L; l++)
            for (int h = 0; h < H; h++)
                CHECK(seen[s][l][h] == 1, "step %ld layer %d head %d: %d records", steps[s], l, h, seen[s][l][h]);
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

// report.html exists, inlines its figures and fetches nothing; with maps, the heatmaps are in it.
static void check_report(const char *dir, int with_maps) {
    char path[512];
    snprintf(path, sizeof path, "%s/report.html", dir);
    char *t = read_file_text(path, NULL);
    CHECK(t, "no %s", path);
    CHECK(!strncmp(t, "<!DOCTYPE html>", 15) && strstr(t, "</html>\n"), "%.200s", t);
    CHECK(strstr(t, "data:image/svg+xml;base64,") && strstr(t, "alt=\"sparsity_steps.svg\"") &&
          strstr(t, "alt=\"loss_acc.svg\""));
    CHECK(strstr(t, "alt=\"sparsity_by_pos.svg\"") && strstr(t, "alt=\"sparsity_scatter.svg\"") &&
          strstr(t, "<th>answer share</th>"));
    CHECK(strstr(t, "mixer = softmax"), "the config is on the page");
    CHECK(!strstr(t, "http:") && !strstr(t, "https:") && !strstr(t, "<script"), "the page must not reach out");
    CHECK(!!strstr(t, "alt=\"map_L1_H1.svg\"") == with_maps, "heatmaps %d", with_maps);
    free(t);
}

TEST(evaluate_maps_draw_heatmaps_save_safetensors_and_fill_the_report) {
    const char *dir = tiny_run("run", "softmax");
    char out[16384], path[512];
    int st = test_run(out, sizeof out, "./evaluate %s --maps threads=1", dir);
    CHECK(st == 0, "exit %d: %s", st, out);
    CHECK(strstr(out, "wrote 4 attention maps") && strstr(out, "step 6, validation sequence 0"), "%s", out);
    for (int l = 0; l < 2; l++)
        for (int h = 0; h < 2; h++) {
            char name[64];
            snprintf(name, sizeof name, "map_L%d_H%d.svg", l, h);
            check_svg(dir, name, "green box: its answer");
        }
    check_svg(dir, "map_L1_H0.svg", "fill=\"#d62728\" font-weight=\"bold\"");  // a query row label
    check_svg(dir, "sparsity_by_pos.svg", "one-hot 1/sqrt(n)");
    check_svg(dir, "sparsity_scatter.svg", "measured = predicted");
    check_report(dir, 1);
    // the maps as safetensors: rows of softmax maps sum to 1, tokens and answers beside them
    snprintf(path, sizeof path, "%s/maps.safetensors", dir);
    SafeTensors sf;
    char err[256];
    CHECK(st_read(path, &sf, err, sizeof err) == 0, "%s", err);
    const StTensor *m = st_find(&sf, "L1.H0"), *ans = st_find(&sf, "answer");
    CHECK(m && m->ndim == 2 && m->shape[0] == 32 && m->shape[1] == 32 && ans && st_find(&sf, "inputs"));
    const float *a = (const float *)(sf.data + m->begin), *an = (const float *)(sf.data + ans->begin);
    for (int i = 0; i < 32; i++) {
        double sum = 0;
        for (int j = 0; j < 32; j++) sum += a[i * 32 + j];
        CHECK(fabs(sum - 1) < 1e-4, "row %d sums to %g", i, sum);
    }
    int answers = 0;
    for (int i = 0; i < 32; i++) answers += an[i] >= 0;
    CHECK(answers == 4 && !strcmp(st_meta(&sf, "step"), "6") && !strcmp(st_meta(&sf, "mixer"), "softmax"));
    st_free(&sf);
    // another checkpoint, one layer and head, another sequence: given as key=value
    const char *one = test_path("one");
    mkdir_p(one);
    st = test_run(out, sizeof out,
                  "cp %s/ckpt_00000002.safetensors %s/ && ./evaluate %s/ckpt_00000002.safetensors --maps "
                  "map_layer=1 map_head=0 map_seq=3 threads=1",
                  dir, one, one);
    CHECK(st == 0 && strstr(out, "wrote 1 attention map ") && strstr(out, "step 2, validation sequence 3"),
          "exit %d: %s", st, out);
    snprintf(path, sizeof path, "%s/map_L0_H0.svg", one);
    CHECK(!path_exists(path));
    // bad choices: one line, exit 2
    BadInput bad[] = {
        {"--maps map_seq=40", "map_seq: 40 is out of range"},
        {"--maps map_layer=2", "map_layer: 2 is out of range"},
        {"--maps map_head=2", "map_head: 2 is out of range"},
        {"--maps map_head=x", "map_head: expected an integer"},
        {"--maps map_answers=maybe", "map_answers: expected auto, on or off"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        st = test_run(out, sizeof out, "./evaluate %s %s threads=1 2>&1 >/dev/null", dir, bad[i].in);
        CHECK(st == 2 && strstr(out, bad[i].want) && count(out, "\n") == 1, "'%s': exit %d: %s", bad[i].in, st, out);
    }
}

// Layer and head indices are checked against the checkpoint's header before the validation data
// is opened (an MQAR set takes seconds to generate): with the run's data gone, the index error
// still comes first.
TEST(evaluate_checks_layer_and_head_before_making_data) {
    const char *shard;
    const char *dir = test_text_run("textrun", 2000, 2, 2, &shard);
    char out[8192];
    int st;
    CHECK(remove(shard) == 0);
    BadInput bad[] = {
        {"intervene=flatten layer=5", "layer: expected 0 to 1 or all, got 5"},
        {"intervene=flatten head=3", "head: expected 0 to 0 or all, got 3"},
        {"--maps map_layer=2", "map_layer: 2 is out of range"},
        {"--maps map_head=1", "map_head: 1 is out of range"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        st = test_run(out, sizeof out, "./evaluate %s %s threads=1 2>&1 >/dev/null", dir, bad[i].in);
        CHECK(st == 2 && strstr(out, bad[i].want) && count(out, "\n") == 1, "'%s': exit %d: %s", bad[i].in, st, out);
    }
}

// A text run has no answer positions: asking for them is refused; the maps are drawn unmarked.
TEST(evaluate_maps_on_a_text_run) {
    const char *dir = test_text_run("textrun", 4000, 1, 2, NULL);
    char out[8192];
    int st;
    st = test_run(out, sizeof out, "./evaluate %s --maps map_answers=on eval_batches=1 threads=1 2>&1 >/dev/null", dir);
    CHECK(st == 2 && strstr(out, "map_answers: ") && strstr(out, "is not an MQAR run") && count(out, "\n") == 1,
          "exit %d: %s", st, out);
    st = test_run(out, sizeof out, "./evaluate %s --maps eval_batches=1 threads=1", dir);
    CHECK(st == 0 && strstr(out, "wrote 1 attention map "), "exit %d: %s", st, out);
    check_svg(dir, "map_L0_H0.svg", "a_ij");
    char path[512];
    snprintf(path, sizeof path, "%s/map_L0_H0.svg", dir);
    char *t = read_file_text(path, NULL);
    CHECK(t && !strstr(t, "stroke=\"#2ca02c\""), "no answers marked on text");
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
            fprintf(f, "{\"step\":%d,\"layer\":%d,\"head\":0,\"mixer\":\"softmax\",\"S\":0.%d,\"S_recall\":0.5,\"rows\":9}\n",
                    s, l, 9 - s);
    fclose(f);
    char out[16384];
    int st = test_run(out, sizeof out, "./evaluate %s threads=1", dir);
    CHECK(st == 0, "exit %d: %s", st, out);
    CHECK(count(out, "| val loss ") == 4, "one line per checkpoint: %s", out);
    long steps[] = {0, 2, 4, 6};
    check_records(dir, steps, 4, 2, 2);
    check_svg(dir, "sparsity_steps.svg", "layer 1: S_recall over query rows");
    check_svg(dir, "sparsity_steps.svg", "head 1 predicted (softmax)");
    check_svg(dir, "sparsity_steps.svg", "one-hot (mean 1/sqrt(n))");
    check_svg(dir, "sparsity_heatmap.svg", "S per head at step 6");
    check_svg(dir, "sparsity_recall_heatmap.svg", "head");
    check_svg(dir, "loss_acc.svg", "checkpoints (eval.jsonl)");
    check_svg(dir, "sparsity_train.svg", "sparsity.jsonl");
    // evaluating again gives the same file (the pass is deterministic)
    snprintf(p, sizeof p, "%s/eval.jsonl", dir);
    char *first = read_file_text(p, NULL);
    st = test_run(out, sizeof out, "./evaluate %s/ threads=2", dir);
    CHECK(st == 0, "%s", out);
    char *second = read_file_text(p, NULL);
    CHECK(!strcmp(first, second), "eval.jsonl differs between runs or thread counts");
    // eval_batches and sparsity_rows change what is measured
    st = test_run(out, sizeof out, "./evaluate %s threads=1 eval_batches=1 sparsity_rows=16", dir);
    CHECK(st == 0, "%s", out);
    char *third = read_file_text(p, NULL);
    // sparsity_rows = 16 query rows: every row of 4 sequences of 4 pairs (the validation pass: the
    // first batch of 16)
    CHECK(strstr(third, "\"rows\":128,") && strstr(third, "\"sequences\":4}"), "%.400s", third);
    // report.html: one self-contained page
    check_report(dir, 0);
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
    CHECK(strstr(out, "ckpt_00000002.safetensors: skipped: ") && strstr(out, "ckpt_00000005.safetensors: skipped: "),
          "%s", out);
    long steps[] = {0, 4, 6};
    check_records(dir, steps, 3, 2, 2);
    // a single damaged checkpoint is an error (exit 2, one line naming it)
    snprintf(p, sizeof p, "%s/ckpt_00000002.safetensors", dir);
    st = test_run(out, sizeof out, "./evaluate %s threads=1 2>&1 >/dev/null", p);
    CHECK(st == 2 && strstr(out, "ckpt_00000002.safetensors"), "exit %d: %s", st, out);
}

// A checkpoint of another model copied into a run folder is skipped with a line, not plotted as
// one of the run's steps; val_data given for an MQAR run gets a note (it is not used).
TEST(evaluate_skips_a_foreign_model_and_notes_val_data_on_mqar) {
    const char *dir = tiny_run("own", "softmax");
    const char *other = tiny_run("other", "linear");
    char cmd[2048], out[16384];
    snprintf(cmd, sizeof cmd, "cp %s/ckpt_00000004.safetensors %s/ckpt_00000005.safetensors", other, dir);
    CHECK(system(cmd) == 0);
    int st = test_run(out, sizeof out, "./evaluate %s threads=1 val_data=nothing.bin", dir);
    CHECK(st == 0, "exit %d: %s", st, out);
    CHECK(strstr(out, "ckpt_00000005.safetensors: skipped: not this run's model (mixer is 'linear' here, 'softmax' in"),
          "%s", out);
    CHECK(count(out, "note: ") == 1 && strstr(out, "val_data is not used"), "%s", out);
    long steps[] = {0, 2, 4, 6};
    check_records(dir, steps, 4, 2, 2);
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

// An evaluation on other cells or data is another measurement: it is recorded under its own key
// (options), and the run's own records stay byte for byte, as does what report.html and
// loss_acc.svg show (the README's `./evaluate CKPT mqar_cells=...` made the report show accuracy
// falling at that step).
TEST(evaluate_on_other_cells_leaves_the_runs_records_byte_identical) {
    const char *dir = tiny_run("run", "softmax");
    char out[16384], p[512];
    int st = test_run(out, sizeof out, "./evaluate %s threads=1", dir);
    CHECK(st == 0, "%s", out);
    snprintf(p, sizeof p, "%s/eval.jsonl", dir);
    char *before = read_file_text(p, NULL);
    snprintf(p, sizeof p, "%s/report.html", dir);
    char *report_before = read_file_text(p, NULL);
    CHECK(before && report_before);
    st = test_run(out, sizeof out, "./evaluate %s/ckpt_00000004.safetensors mqar_cells=2x16,6x32 threads=1", dir);
    CHECK(st == 0, "%s", out);
    st = test_run(out, sizeof out, "./evaluate %s/ckpt_00000006.safetensors mqar_test_seed=77 threads=1", dir);
    CHECK(st == 0, "%s", out);
    snprintf(p, sizeof p, "%s/eval.jsonl", dir);
    char *after = read_file_text(p, NULL);
    // the run's own lines, in order, are exactly the lines before
    char own[1 << 16];
    size_t k = 0;
    int other = 0;
    for (char *line = after; line && *line;) {
        char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line + 1) : strlen(line);
        int has_options = memmem(line, n, "\"options\":", 10) != NULL;
        if (!has_options && k + n < sizeof own) memcpy(own + k, line, n), k += n;
        other += has_options;
        line += n;
    }
    own[k] = 0;
    CHECK(!strcmp(own, before), "the run's own records changed:\nbefore:\n%.400s\nafter:\n%.400s", before, own);
    CHECK(strstr(after, "\"options\":\"mqar_test_cells=2x16,6x32\"") && strstr(after, "\"options\":\"mqar_test_seed=77\""),
          "%s", after);
    CHECK(other == 2 * (1 + 2 * 2), "%d records with options", other);  // per checkpoint: eval + 2 layers x 2 heads
    // the report still shows the run's own last step and accuracy
    snprintf(p, sizeof p, "%s/report.html", dir);
    char *report_after = read_file_text(p, NULL);
    const char *a = strstr(report_before, "Last checkpoint:"),
               *b = report_after ? strstr(report_after, "Last checkpoint:") : NULL;
    CHECK(a && b && !strncmp(a, b, 80), "report.html changed its run: %.80s / %.80s", a, b ? b : "");
    CHECK(strstr(report_after, "<h3>Other evaluations</h3>") && strstr(report_after, "mqar_test_cells=2x16,6x32") &&
              strstr(report_after, "kv6_L32"),
          "report.html does not list the other evaluations");
    // the same evaluation again replaces only its own records
    st = test_run(out, sizeof out, "./evaluate %s/ckpt_00000004.safetensors mqar_cells=2x16,6x32 threads=1", dir);
    CHECK(st == 0, "%s", out);
    char *again = read_file_text(p[0] ? (snprintf(p, sizeof p, "%s/eval.jsonl", dir), p) : p, NULL);
    CHECK(again && strlen(again) == strlen(after), "the repeated evaluation added records instead of replacing them");
    free(before), free(after), free(again), free(report_before), free(report_after);
}

// loss_acc.svg (and so report.html) drew only the checkpoints: it draws the trainer's curve too,
// every train record and every validation point of metrics.jsonl.
TEST(evaluate_loss_figure_draws_the_training_curve) {
    const char *c = test_write_file("curve.conf", "mixer = softmax\nmlp = false\n");
    const char *dir = test_path("curve");
    char out[16384];
    int st =
        test_run(out, sizeof out, "./train %s " TINY " steps=6 save_every=3 log_every=1 eval_every=2 out_dir=%s", c, dir);
    CHECK(st == 0, "%s", out);
    st = test_run(out, sizeof out, "./evaluate %s threads=1", dir);
    CHECK(st == 0, "%s", out);
    check_svg(dir, "loss_acc.svg", "training (metrics.jsonl)");
    check_svg(dir, "loss_acc.svg", "validation during training");
    check_svg(dir, "loss_acc.svg", "checkpoints (eval.jsonl)");
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
    BadInput cases[] = {
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
        const char *a = cases[i].in;
        if (!strncmp(a, "RUN", 3)) snprintf(args, sizeof args, "%s%s", dir, a + 3);
        else if (!strcmp(a, "%s")) snprintf(args, sizeof args, "%s", empty);
        else snprintf(args, sizeof args, "%s", a);
        int st = test_run(out, sizeof out, "./evaluate %s 2>&1 >/dev/null", args);
        CHECK(st == 2, "'%s': exit %d: %s", args, st, out);
        CHECK(strstr(out, cases[i].want), "'%s': %s", args, out);
        // one line on stderr (the usage text goes with no PATH at all)
        if (i > 0) CHECK(count(out, "\n") == 1, "'%s': %s", args, out);
    }
}

// The float build's row statistics (./evaluate; the suite itself is the double build): S,
// entropy, max weight and negative mass of every head, measured on one sequence, against the same
// statistics computed here in double from the maps ./evaluate --maps saved for that sequence.
// identity's maps are signed, so the negative mass is tested too.
TEST(evaluate_float_row_statistics_match_the_saved_maps) {
    const char *mixers[2] = {"softmax", "identity"};
    for (int k = 0; k < 2; k++) {
        char name[32];
        snprintf(name, sizeof name, "rows_%s", mixers[k]);
        const char *dir = tiny_run(name, mixers[k]);
        char out[16384], path[512];
        int st = test_run(out, sizeof out,
                          "./evaluate %s/ckpt_00000006.safetensors --maps map_seq=0 eval_batches=1 "
                          "batch_size=1 threads=1",
                          dir);
        CHECK(st == 0, "exit %d: %s", st, out);
        snprintf(path, sizeof path, "%s/maps.safetensors", dir);
        SafeTensors sf;
        char err[256];
        CHECK(st_read(path, &sf, err, sizeof err) == 0, "%s", err);
        snprintf(path, sizeof path, "%s/eval.jsonl", dir);
        char *text = read_file_text(path, NULL);
        CHECK(text, "no %s", path);
        int records = 0;
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
            JsonValue *v = json_parse(line, strlen(line), err, sizeof err);
            CHECK(v, "%s", err);
            if (strcmp(json_get(v, "type")->string, "sparsity")) {
                json_free(v);
                continue;
            }
            int l = (int)json_get(v, "layer")->number, h = (int)json_get(v, "head")->number;
            char tn[32];
            snprintf(tn, sizeof tn, "L%d.H%d", l, h);
            const StTensor *t = st_find(&sf, tn);
            CHECK(t && t->ndim == 2, "no %s", tn);
            int T = (int)t->shape[0], rows = 0;
            const float *a = (const float *)(sf.data + t->begin);
            double S = 0, ent = 0, mw = 0, neg = 0;
            for (int i = 0; i < T; i++) {
                int n = i + 1;
                double l1 = 0, l2 = 0, mx = 0, ng = 0, xl = 0;
                for (int j = 0; j < n; j++) {
                    double x = a[i * T + j], ax = fabs(x);
                    l1 += ax, l2 += x * x, mx = ax > mx ? ax : mx, ng += x < 0 ? ax : 0;
                    if (ax > 0) xl += ax * log(ax);
                }
                if (l1 == 0) continue;
                rows++;
                S += (l1 / n) / sqrt(l2 / n);
                ent += n > 1 ? (log(l1) - xl / l1) / log((double)n) : 1;
                mw += mx / l1, neg += ng / l1;
            }
            CHECK(rows == (long)json_get(v, "rows")->number, "%s %s: %d rows vs %g", mixers[k], tn, rows,
                  json_get(v, "rows")->number);
            CHECK_CLOSE(json_get(v, "S")->number, S / rows, 1e-5);
            CHECK_CLOSE(json_get(v, "entropy")->number, ent / rows, 1e-5);
            CHECK_CLOSE(json_get(v, "max_weight")->number, mw / rows, 1e-5);
            CHECK_CLOSE(json_get(v, "neg_mass")->number, neg / rows, 1e-5);
            if (k == 1) CHECK(neg > 0, "identity's maps are signed");
            records++;
            json_free(v);
        }
        CHECK(records == 4, "%s: %d records", mixers[k], records);
        free(text);
        st_free(&sf);
    }
}

// Mean S of every (layer, head) record of dir/eval.jsonl into S[4] (2 layers x 2 heads).
static void read_S(const char *dir, double *S, long *rows) {
    char path[512];
    snprintf(path, sizeof path, "%s/eval.jsonl", dir);
    char *text = read_file_text(path, NULL);
    CHECK(text, "no %s", path);
    int n = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char err[128];
        JsonValue *v = json_parse(line, strlen(line), err, sizeof err);
        CHECK(v, "%s", err);
        if (!strcmp(json_get(v, "type")->string, "sparsity")) {
            int c = (int)json_get(v, "layer")->number * 2 + (int)json_get(v, "head")->number;
            S[c] = json_get(v, "S")->number;
            rows[c] = (long)json_get(v, "rows")->number;
            n++;
        }
        json_free(v);
    }
    CHECK(n == 4, "%d records", n);
    free(text);
}

// On a trained checkpoint, S from sparsity_rows = 3000 (every row of 94 of 400 sequences) is within
// 1% of S over every row, for every head.
TEST(evaluate_sampled_rows_match_all_rows_on_a_trained_model) {
    const char *conf = test_write_file("t.conf", "mixer = softmax\nmlp = false\n");
    const char *dir = test_path("trained");
    char out[8192];
    int st = test_run(out, sizeof out,
                      "./train %s vocab_size=64 seq_len=32 mqar_kv_pairs=4 mqar_train_examples=1024 "
                      "mqar_test_examples=400 mqar_val_examples=400 d_model=32 n_layer=2 n_head=2 batch_size=32 lr=3e-3 steps=80 save_every=80 "
                      "eval_every=0 log_every=0 sparsity_every=0 threads=1 out_dir=%s",
                      conf, dir);
    CHECK(st == 0, "train: %s", out);
    double all[4], sampled[4];
    long rows_all[4], rows_sampled[4];
    st = test_run(out, sizeof out, "./evaluate %s/ckpt_00000080.safetensors threads=1", dir);
    CHECK(st == 0, "%s", out);
    read_S(dir, all, rows_all);
    st = test_run(out, sizeof out, "./evaluate %s/ckpt_00000080.safetensors sparsity_rows=376 threads=1", dir);
    CHECK(st == 0, "%s", out);
    read_S(dir, sampled, rows_sampled);
    double lowest = 1;
    for (int c = 0; c < 4; c++) {
        CHECK(rows_all[c] == 400 * 32 && rows_sampled[c] == 94 * 32, "rows %ld %ld", rows_all[c], rows_sampled[c]);
        CHECK(fabs(sampled[c] / all[c] - 1) < 0.01, "head %d: sampled S %g, all rows %g", c, sampled[c], all[c]);
        lowest = all[c] < lowest ? all[c] : lowest;
    }
    CHECK(lowest < 0.8, "every head is still near flat (lowest S %g): the model did not train", lowest);
}

// The recall layer has one definition (eval/derived.h), computed once per sparsity pass and
// recorded: the trainer's log stars it, ./evaluate stars it, report.html shades it and ./sweep's
// summary reads it, and all four name the same layer. On a run behind a short convolution and on
// a Mamba run (whose answer window is its own convolution's), where shares of window and value
// position differ and readers that picked by another field disagreed.
TEST(evaluate_recall_layer_is_the_same_for_every_reader) {
    const char *conf = test_write_file("r.conf", "mlp = false\n");
    static const char *variants[2][2] = {{"conv", "mixer=softmax short_conv=3"}, {"mamba", "mixer=mamba pos_emb=none"}};
    for (int v = 0; v < 2; v++) {
        const char *dir = test_path(variants[v][0]);
        static char out[65536];
        int st = test_run(out, sizeof out,
                          "./train %s " TINY " %s steps=40 eval_every=40 sparsity_every=40 save_every=40 out_dir=%s 2>&1",
                          conf, variants[v][1], dir);
        CHECK(st == 0, "%s", out);
        // the trainer: the starred layer of its last step-40 line
        int trainer = -1;
        for (const char *q = out; (q = strstr(q, "step     40 | L")); q++)
            if (q[16] == '*' || q[17] == '*') trainer = atoi(q + 15);
        char out2[8192];
        st = test_run(out2, sizeof out2, "./evaluate %s/ckpt_00000040.safetensors threads=1 2>&1", dir);
        CHECK(st == 0, "%s", out2);
        int evaluate = -1;
        const char *star = strchr(strstr(out2, "| S L") ? strstr(out2, "| S L") : out2, '*');
        if (star && star[-2] == 'L') evaluate = star[-1] - '0';
        char p[1024];
        snprintf(p, sizeof p, "%s/report.html", dir);
        char *html = read_file_text(p, NULL);
        const char *shaded = html ? strstr(html, "is layer ") : NULL;
        int report = shaded ? atoi(shaded + 9) : -1;
        free(html);
        RunSummary r;
        run_summary_read(dir, &r);
        int sweep = r.recall_layer;
        run_summary_free(&r);
        CHECK(trainer >= 0 && trainer == evaluate && evaluate == report && report == sweep,
              "%s: trainer L%d, ./evaluate L%d, report.html L%d, sweep L%d\n%s\n%s", variants[v][0], trainer, evaluate,
              report, sweep, out, out2);
    }
}

// ./evaluate intervene=: a run folder's best (here: last) checkpoint, the model as it is and each
// strength into intervention.jsonl (merged by key: a second call with other rows adds, the same
// call replaces), the figure, the report's section; ablate names the causal recall layer; bad
// choices are one line and exit 2.
TEST(evaluate_intervene_writes_records_figures_and_report) {
    const char *dir = tiny_run("iv_run", "softmax");
    char out[8192], path[512];
    int st = test_run(out, sizeof out, "./evaluate %s intervene=flatten:0,1 layer=1 threads=1", dir);
    CHECK(st == 0 && strstr(out, "ckpt_00000006.safetensors (step 6, softmax): intervene=flatten on the val set") &&
              strstr(out, "flatten:1") && strstr(out, "3 passes in"),
          "exit %d: %s", st, out);
    // the chance level once, a closing line that reads the curve, the figures by name
    CHECK(count(out, "(chance: a uniform row puts ") == 1 && count(out, "chance") == 1, "%s", out);
    CHECK(strstr(out, "  => ") && (strstr(out, "already below 0.99") || strstr(out, "0.99 or more")), "%s", out);
    CHECK(strstr(out, "/intervention_flatten.svg\n") && !strstr(out, "<kind>"), "%s", out);
    snprintf(path, sizeof path, "%s/intervention.jsonl", dir);
    char *text = read_file_text(path, NULL);
    CHECK(text && count(text, "\"type\":\"intervention\"") == 3 && count(text, "\"layer\":1,") == 3 &&
              strstr(text, "\"options\":\"intervene=flatten:1 rows=query\"") && strstr(text, "\"kind\":\"none\""),
          "%s", text ? text : "(none)");
    free(text);
    st = test_run(out, sizeof out,
                  "./evaluate %s intervene=flatten:0,1 layer=1 threads=1 && ./evaluate %s "
                  "intervene=flatten:1 layer=1 rows=all threads=1",
                  dir, dir);
    CHECK(st == 0, "exit %d: %s", st, out);
    text = read_file_text(path, NULL);
    CHECK(text && count(text, "\n") == 5 && count(text, "rows=all") == 2, "%s", text ? text : "(none)");
    free(text);
    st = test_run(out, sizeof out, "./evaluate %s intervene=flatten:1 layer=1 split=test threads=1", dir);
    CHECK(st == 0 && strstr(out, "on the test set"), "exit %d: %s", st, out);
    text = read_file_text(path, NULL);  // the test set's records beside the validation set's
    CHECK(text && count(text, "\n") == 7 && count(text, "\"split\":\"test\"") == 2, "%s", text ? text : "(none)");
    free(text);
    st = test_run(out, sizeof out, "./evaluate %s intervene=ablate threads=1", dir);
    CHECK(st == 0 && strstr(out, "causal recall layer: "), "exit %d: %s", st, out);
    st = test_run(out, sizeof out, "./evaluate %s intervene=derange layer=causal threads=1", dir);
    const char *at = strstr(out, "causal recall layer: ");
    CHECK(st == 0 && at && strstr(out, "intervene=derange acts there") && count(out, "ablate ") == 2, "exit %d: %s", st, out);
    char want[32];
    snprintf(want, sizeof want, "derange            L%c", at[strlen("causal recall layer: ")]);
    CHECK(strstr(out, want), "derange not on the causal layer: %s", out);
    snprintf(path, sizeof path, "%s/intervention_flatten.svg", dir);
    CHECK(path_exists(path), "no %s", path);
    snprintf(path, sizeof path, "%s/report.html", dir);
    text = read_file_text(path, NULL);
    CHECK(text && strstr(text, "<h2>Interventions</h2>") && strstr(text, "intervention_flatten.svg") &&
              strstr(text, "<td>flatten:1</td>") && strstr(text, "Causal recall layer at step 6: <b>layer "),
          "report.html lacks the interventions");
    free(text);
    BadInput bad[] = {
        {"layer=1", "layer=, head= and rows= choose where intervene= acts"},
        {"intervene=flatten layer=2", "layer: expected 0 to 1 or all, got 2"},
        {"intervene=flatten layer=x", "layer: expected an index >= 0, all or causal, got 'x'"},
        {"intervene=flatten head=causal", "head: expected an index >= 0 or all, got 'causal'"},
        {"intervene=topk head=5", "head: expected 0 to 1 or all, got 5"},
        {"intervene=topk rows=some", "rows: expected query or all, got 'some'"},
        {"intervene=flatten:2", "intervene: flatten: expected a number in [0, 1], got '2'"},
        {"intervene=flatten --maps", "--maps and intervene= are separate runs"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        st = test_run(out, sizeof out, "./evaluate %s %s threads=1 2>&1 >/dev/null", dir, bad[i].in);
        CHECK(st == 2 && strstr(out, bad[i].want) && count(out, "\n") == 1, "'%s': exit %d: %s", bad[i].in, st, out);
    }
    const char *gla = tiny_run("iv_gla", "gla");
    const char *cmp = test_path("iv_cmp/x.svg");  // two runs: a line per run in compare='s folder
    mkdir_p(test_path("iv_cmp"));
    st = test_run(out, sizeof out, "./evaluate %s %s intervene=topk:1,2 layer=1 compare=%s threads=1", dir, gla, cmp);
    CHECK(st == 0 && strstr(out, "comparing 2 runs: wrote ") && count(out, "iv_cmp/intervention_") == 4 &&
              strstr(out, "iv_cmp/intervention_topk.svg"),
          "exit %d: %s", st, out);
    snprintf(path, sizeof path, "%s/intervention_topk.svg", test_path("iv_cmp"));
    text = read_file_text(path, NULL);
    CHECK(text && strstr(text, "iv_run: layer 1") && strstr(text, "iv_gla: layer 1"), "%s", path);
    free(text);
    st = test_run(out, sizeof out, "./evaluate %s intervene=temperature threads=1 2>&1 >/dev/null", gla);
    CHECK(st == 2 && strstr(out, "temperature acts on softmax logits; layer 0's mixer 'gla' has none"), "exit %d: %s",
          st, out);
}

// ./evaluate intervene=oracle_lag (docs/interventions.md#the-lag-oracle): on a map behind a
// convolution (Mamba's d_conv 4: a window of 4) each lag 0..3 with its control, then the reading;
// on softmax's point map lag 0 alone. Every record has the accuracy's interval.
TEST(evaluate_lag_oracle_runs_each_lag_of_the_window_with_its_control) {
    const char *runs[2][2] = {{"lag_mamba", "mamba"}, {"lag_softmax", "softmax"}};
    for (int i = 0; i < 2; i++) {
        const char *dir = tiny_run(runs[i][0], runs[i][1]);
        char out[8192], path[512];
        int st = test_run(out, sizeof out, "./evaluate %s intervene=oracle_lag layer=1 threads=1", dir);
        int lags = i == 0 ? 4 : 1;
        CHECK(st == 0 && count(out, "oracle_lag:") == lags && count(out, "oracle_lag_control:") == lags &&
                  strstr(out, "  lag oracle: ") &&
                  (strstr(out, "best lag ") || strstr(out, "not a valid probe for this map")),
              "exit %d: %s", st, out);
        snprintf(path, sizeof path, "%s/intervention.jsonl", dir);
        char *text = read_file_text(path, NULL);
        CHECK(text && count(text, "\"type\":\"intervention\"") == 1 + 2 * lags && count(text, "\"acc_lo\":") == 1 + 2 * lags &&
                  strstr(text, "\"options\":\"intervene=oracle_lag_control:0 rows=query\""),
              "%s", text ? text : "(none)");
        free(text);
    }
    char out[1024];
    const char *dir = test_path("lag_softmax");
    int st = test_run(out, sizeof out, "./evaluate %s intervene=oracle_lag:64 threads=1 2>&1 >/dev/null", dir);
    CHECK(st == 2 && strstr(out, "intervene: oracle_lag: expected a lag, an integer in [0, 63], got '64'"),
          "exit %d: %s", st, out);
}

// ./evaluate intervene=derange_values (docs/interventions.md#the-kinds): the record has the
// accuracy against the clean answers and against the permuted ones, on a point map and behind
// Mamba's window; map-space derange behind the window is one line and exit 2.
TEST(evaluate_derange_values_records_both_answers_and_refuses_map_derange_behind_a_window) {
    const char *runs[2][2] = {{"dv_softmax", "softmax"}, {"dv_mamba", "mamba"}};
    for (int i = 0; i < 2; i++) {
        const char *dir = tiny_run(runs[i][0], runs[i][1]);
        char out[8192], path[512];
        int st = test_run(out, sizeof out, "./evaluate %s intervene=derange_values layer=1 threads=1", dir);
        CHECK(st == 0 && strstr(out, "derange_values") && strstr(out, "| permuted answers 0."), "exit %d: %s", st, out);
        snprintf(path, sizeof path, "%s/intervention.jsonl", dir);
        char *text = read_file_text(path, NULL);
        CHECK(text && count(text, "\"acc_permuted\":") == 1 && strstr(text, "\"kind\":\"derange_values\""), "%s",
              text ? text : "(none)");
        free(text);
        st = test_run(out, sizeof out, "./evaluate %s intervene=derange layer=1 threads=1 2>&1 >/dev/null", dir);
        if (i == 0) CHECK(st == 0, "softmax derange: exit %d: %s", st, out);
        else
            CHECK(st == 2 && count(out, "\n") == 1 &&
                      strstr(out, "answer window of 4 spans the neighbouring pairs ('mamba'): use derange_values"),
                  "exit %d: %s", st, out);
    }
}

// ./evaluate intervene=patch (docs/interventions.md#activation-patching): each layer patched in
// turn, a record each with patch_follows and patch_control, and the causal layer by patching named
// (or none); layer=causal patches each layer before it ablates each.
TEST(evaluate_patch_patches_each_layer_and_names_the_causal_one) {
    const char *dir = tiny_run("patch_run", "gated_deltanet");
    char out[8192], path[512];
    int st = test_run(out, sizeof out, "./evaluate %s intervene=patch threads=1", dir);
    CHECK(st == 0 && count(out, "  patch ") == 2 && strstr(out, "follows A' ") &&
              strstr(out, "  causal recall layer by patching: "),
          "exit %d: %s", st, out);
    snprintf(path, sizeof path, "%s/intervention.jsonl", dir);
    char *text = read_file_text(path, NULL);
    CHECK(text && count(text, "\"kind\":\"patch\"") == 2 && count(text, "\"patch_control\":") == 2 &&
              count(text, "\"patch_rows\":") == 2,
          "%s", text ? text : "(none)");
    free(text);
    st = test_run(out, sizeof out, "./evaluate %s intervene=topk:1 layer=causal threads=1", dir);
    CHECK(st == 0 && count(out, "  patch ") == 2 && count(out, "  ablate ") == 2 && strstr(out, "causal recall layer: "),
          "exit %d: %s", st, out);
}

// ./evaluate split=test: the eval record carries each example's counts and the accuracy's 95%
// interval over them (docs/mqar.md#verdicts), as the trainer's test record does: one count per
// sequence measured (40: the tiny config's mqar_test_examples).
TEST(evaluate_split_test_records_the_interval_over_examples) {
    const char *dir = tiny_run("split_test_run", "softmax");
    char out[8192], path[512];
    int st = test_run(out, sizeof out, "./evaluate %s split=test threads=1", dir);
    CHECK(st == 0, "exit %d: %s", st, out);
    snprintf(path, sizeof path, "%s/eval.jsonl", dir);
    char *text = read_file_text(path, NULL);
    CHECK(text && strstr(text, "\"split\":\"test\"") && strstr(text, "\"sequences\":40,") &&
              strstr(text, "\"examples\":40,\"acc_lo\":") &&
              count(text, "\"example_correct\":[") == count(text, "\"type\":\"eval\""),
          "%s", text ? text : "(none)");
    free(text);
}
