// Sweeps (ablation/): the sweep file parser and its grid/zip expansion in process, then ./sweep
// end to end on tiny MQAR runs (a few steps of a 2-layer d_model 8-16 model: well under a second each).
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ablation/select.h"
#include "ablation/summary.h"
#include "ablation/summary_data.h"
#include "ablation/sweep_file.h"
#include "core/io.h"
#include "tests/test.h"

static int parse(const char *text, SweepFile *sw, char *err, size_t n) {
    return sweep_parse(text, strlen(text), "x.sweep", sw, err, n);
}

TEST(sweep_grid_expands_in_file_order_first_axis_slowest) {
    SweepFile sw;
    char err[512];
    int rc = parse("# a grid\nbase = b.conf\nsteps = 5\nmixer = softmax, linear\nd_model = 64, 128\nseed = 0, 1, 2\n",
                   &sw, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    CHECK(sw.n_points == 12 && sw.n_dims == 3, "%d points, %d dims", sw.n_points, sw.n_dims);
    CHECK(!strcmp(sw.name, "x") && !strcmp(sw.out, "checkpoints/x") && sw.jobs == 1, "%s %s %d", sw.name, sw.out, sw.jobs);
    CHECK(!strcmp(sw.point_names[0], "mixer=softmax,d_model=64,seed=0"), "%s", sw.point_names[0]);
    CHECK(!strcmp(sw.point_names[1], "mixer=softmax,d_model=64,seed=1"), "%s", sw.point_names[1]);
    CHECK(!strcmp(sw.point_names[3], "mixer=softmax,d_model=128,seed=0"), "%s", sw.point_names[3]);
    CHECK(!strcmp(sw.point_names[11], "mixer=linear,d_model=128,seed=2"), "%s", sw.point_names[11]);
    int steps = sweep_entry_index(&sw, "steps"), seed = sweep_entry_index(&sw, "seed");
    CHECK(!sweep_entry_varies(&sw, steps) && !strcmp(sweep_value(&sw, 7, steps), "5"));
    CHECK(!strcmp(sweep_value(&sw, 7, seed), "1"));
    // the command of a point: train, the base next to the sweep file, every key, out_dir, threads
    char **argv = sweep_point_argv(&sw, 4, "./train", 3);
    char line[1024] = "";
    for (int i = 0; argv[i]; i++)
        snprintf(line + strlen(line), sizeof line - strlen(line), "%s%s", i ? " " : "", argv[i]);
    CHECK(!strcmp(line,
                  "./train b.conf steps=5 mixer=softmax d_model=128 seed=1 "
                  "out_dir=checkpoints/x/mixer=softmax,d_model=128,seed=1 threads=3"),
          "%s", line);
    sweep_free_argv(argv);
    sweep_free(&sw);
}

TEST(sweep_zip_pairs_axes_and_names_by_the_first_key) {
    SweepFile sw;
    char err[512];
    const char *text = "name = cells\nout = /tmp/o\njobs = 3\n"
                       "mixer = softmax, mamba\npos_emb = learned, none\nzip = mixer, pos_emb\n"
                       "seq_len = 64, 128\nmqar_kv_pairs = 4, 8\nlr = 1e-3, 1e-2\n"
                       "zip = seq_len, mqar_kv_pairs\n";
    CHECK(parse(text, &sw, err, sizeof err) == 0, "%s", err);
    CHECK(sw.n_points == 8 && sw.n_dims == 3 && sw.jobs == 3, "%d %d", sw.n_points, sw.n_dims);
    // mixer names its zip (its values differ); pos_emb follows it
    CHECK(!strcmp(sw.point_names[0], "mixer=softmax,seq_len=64,lr=1e-3"), "%s", sw.point_names[0]);
    CHECK(!strcmp(sw.point_names[7], "mixer=mamba,seq_len=128,lr=1e-2"), "%s", sw.point_names[7]);
    int pe = sweep_entry_index(&sw, "pos_emb"), kv = sweep_entry_index(&sw, "mqar_kv_pairs");
    CHECK(!strcmp(sweep_value(&sw, 5, pe), "none") && !strcmp(sweep_value(&sw, 5, kv), "4"));
    CHECK(!strcmp(sweep_value(&sw, 6, kv), "8"));
    char *dir = sweep_point_dir(&sw, 7);
    CHECK(!strcmp(dir, "/tmp/o/mixer=mamba,seq_len=128,lr=1e-2"), "%s", dir);
    free(dir);
    sweep_free(&sw);
    // a zip whose first key repeats a value is named by all its keys; quoted values keep commas
    CHECK(parse("a.b = 1, 1, 2\nc = x, y, y\nzip = a.b, c\nsample_prompt = \"1,2\", \"3\"\n", &sw, err, sizeof err) == 0,
          "%s", err);
    CHECK(sw.n_points == 6 && !strcmp(sw.point_names[0], "a.b=1,c=x,sample_prompt=1_2"), "%s", sw.point_names[0]);
    CHECK(!strcmp(sweep_value(&sw, 0, sweep_entry_index(&sw, "sample_prompt")), "1,2"));
    sweep_free(&sw);
    // base as an axis: named by file name, paths relative to the sweep file and tidied
    CHECK(sweep_parse("base = ../b.conf, ./d/../../e.conf, /abs/f.conf\n", 48, "cfg/abl/x.sweep", &sw, err, sizeof err) == 0,
          "%s", err);
    CHECK(sw.n_points == 3 && !strcmp(sw.point_names[1], "base=e"), "%s", sw.point_names[1]);
    static const char *want_base[3] = {"cfg/b.conf", "cfg/e.conf", "/abs/f.conf"};
    for (int i = 0; i < 3; i++) {
        char *b = sweep_base_path(&sw, sweep_value(&sw, i, sw.base_entry));
        CHECK(!strcmp(b, want_base[i]), "%s", b);
        free(b);
    }
    sweep_free(&sw);
    // no axes: one point named run
    CHECK(parse("steps = 3\n", &sw, err, sizeof err) == 0 && sw.n_points == 1 && !strcmp(sw.point_names[0], "run"));
    sweep_free(&sw);
}

// after_run: ./evaluate argument lists separated by ';', read as written (commas kept), blanks
// folded; each becomes `./evaluate <run folder> <arguments> threads=N`.
TEST(sweep_after_run_lists_become_evaluate_commands) {
    SweepFile sw;
    char err[512];
    CHECK(parse("seed = 0, 1\nafter_run = intervene=topk:1,2,4 \t layer=causal ;intervene=ablate threads=3 # note\n",
                &sw, err, sizeof err) == 0,
          "%s", err);
    CHECK(sw.n_after_run == 2 && !sw.after_run_all && !strcmp(sw.after_run[0], "intervene=topk:1,2,4 layer=causal") &&
              !strcmp(sw.after_run[1], "intervene=ablate threads=3"),
          "%d '%s'", sw.n_after_run, sw.n_after_run ? sw.after_run[0] : "");
    CHECK(sw.n_points == 2 && sweep_entry_index(&sw, "after_run") < 0, "after_run is not an axis");
    static const char *want[2] = {"./evaluate out/seed=1 intervene=topk:1,2,4 layer=causal threads=2",
                                  "./evaluate out/seed=1 intervene=ablate threads=3"};
    for (int k = 0; k < 2; k++) {
        char **argv = sweep_after_run_argv(&sw, k, "./evaluate", "out/seed=1", 2);
        char line[512] = "";
        for (int i = 0; argv[i]; i++)
            snprintf(line + strlen(line), sizeof line - strlen(line), "%s%s", i ? " " : "", argv[i]);
        CHECK(!strcmp(line, want[k]), "%s", line);
        sweep_free_argv(argv);
    }
    sweep_free(&sw);
    CHECK(parse("after_run = intervene=oracle\nafter_run_on = all\n", &sw, err, sizeof err) == 0 && sw.after_run_all,
          "%s", err);
    sweep_free(&sw);
}

// Every syntax error: -1 with one line naming the file and line.
TEST(sweep_parse_errors_name_file_and_line) {
    static const BadInput cases[] = {
        {"steps = 3\nlr = 1e-3, , 1e-2\n", "x.sweep:2: lr: an empty value in the list"},
        {"lr = 1e-3,\n", "x.sweep:1: lr: an empty value in the list"},
        {"\n\nlr =\n", "x.sweep:3: lr: no value"},
        {"a = 1, 2\nb = 1, 2, 3\nzip = a, b\n", "x.sweep:3: zip: axes of different lengths: a has 2 values (line 1), b has 3"},
        {"a = 1, 2\nzip = a, c\n", "x.sweep:2: zip: 'c' is not set in this file"},
        {"a = 1, 2\nb = 3, 4\nzip = a\n", "x.sweep:3: zip: expected two or more keys"},
        {"a = 1, 2\nb = 3, 4\nc = 5, 6\nzip = a, b\nzip = b, c\n", "x.sweep:5: zip: 'b' is already in the zip at line 4"},
        {"lr = 1\nlr = 2\n", "x.sweep:2: lr: set twice (first at line 1)"},
        {"lr = 1e-3, 1e-3\n", "x.sweep:1: lr: the value '1e-3' appears twice"},
        {"train_data = a/b, a_b\n", "x.sweep:1: train_data: two points get the same folder name"},
        {"out_dir = x\n", "x.sweep:1: out_dir: the sweep sets each point's out_dir"},
        {"include = a.conf\n", "x.sweep:1: include: not in a sweep file"},
        {"just words\n", "x.sweep:1: expected 'key = value'"},
        {"jobs = 0\n", "x.sweep:1: jobs: expected a positive integer"},
        {"name = a/b\n", "x.sweep:1: name: expected letters"},
        {"p = \"abc\n", "x.sweep:1: p: a quoted value has no closing"},
        {"p = \"a\"b\n", "x.sweep:1: p: text after a closing"},
        {"after_run = intervene=ablate;; intervene=oracle\n", "x.sweep:1: after_run: entry 2 is empty"},
        {"after_run = ;\n", "x.sweep:1: after_run: entry 1 is empty"},
        {"lr = 1\nafter_run =\n", "x.sweep:2: after_run: no value"},
        {"after_run = intervene=ablate; layer\n", "x.sweep:1: after_run: entry 2: 'layer' is not a ./evaluate argument"},
        {"after_run = intervene=ablate; intervene=ablate\n", "x.sweep:1: after_run: entry 2 repeats entry 1"},
        {"after_run = \"intervene=ablate\"\n", "x.sweep:1: after_run: '\"' is not read here"},
        {"after_run = a=1\nafter_run = b=2\n", "x.sweep:2: after_run: set twice (first at line 1)"},
        {"after_run_on = all\n", "x.sweep:1: after_run_on: without after_run"},
        {"after_run = a=1\nafter_run_on = some\n", "x.sweep:2: after_run_on: expected held_out or all"},
        {"a = 0,1,2,3,4,5,6,7,8,9\nb = 0,1,2,3,4,5,6,7,8,9\nc = 0,1,2,3,4,5,6,7,8,9\nd = 0,1,2,3,4,5,6,7,8,9\n"
         "e = 0,1\n",
         "x.sweep: more than 10000 points"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        SweepFile sw;
        char err[512];
        int rc = parse(cases[i].in, &sw, err, sizeof err);
        CHECK(rc == -1 && strstr(err, cases[i].want) && !strchr(err, '\n'), "case %zu: rc %d, '%s' (want '%s')", i, rc,
              err, cases[i].want);
        CHECK(sw.n_points == 0 && sw.entries == NULL);
        sweep_free(&sw);
    }
    // any bytes: a NUL is refused, not read past
    SweepFile sw;
    char err[256];
    CHECK(sweep_parse("lr = 1\0x", 8, "x.sweep", &sw, err, sizeof err) == -1 && strstr(err, "x.sweep:1: a NUL byte"),
          "%s", err);
}

// A run folder with known records: the summary's numbers by hand.
// A mixture run: the run record's state size, the cells' accuracies at the best mean accuracy
// (not the last evaluation) and the recall layer's per-cell S_recall at the last sparsity step.
TEST(sweep_run_summary_reads_state_and_cells) {
    const char *dir = test_tmpdir();
    test_write_file(
        "metrics.jsonl",
        "{\"type\":\"run\",\"step\":0,\"mixer\":\"gla\",\"params\":10,\"state_floats\":2048,"
        "\"state_floats_by_layer\":[2048,2048]}\n"
        "{\"type\":\"eval\",\"step\":10,\"split\":\"val\",\"loss\":4,\"acc\":0.6,\"acc_kv4_L64\":0.9,\"acc_kv16_L256\":0.3}\n"
        "{\"type\":\"eval\",\"step\":20,\"split\":\"val\",\"loss\":4,\"acc\":0.5,\"acc_kv4_L64\":1,\"acc_kv16_L256\":0}\n");
    test_write_file("sparsity.jsonl",
                    "{\"step\":20,\"layer\":0,\"head\":0,\"S\":0.9,\"S_recall\":0.9,\"ans_share\":0.1,"
                    "\"S_recall_kv4_L64\":0.8,\"S_recall_kv16_L256\":0.95}\n"
                    "{\"step\":20,\"layer\":1,\"head\":0,\"S\":0.5,\"S_recall\":0.4,\"ans_share\":0.6,"
                    "\"S_recall_kv4_L64\":0.3,\"S_recall_kv16_L256\":0.7}\n"
                    "{\"step\":20,\"layer\":1,\"head\":1,\"S\":0.5,\"S_recall\":0.4,\"ans_share\":0.4,"
                    "\"S_recall_kv4_L64\":0.5,\"S_recall_kv16_L256\":null}\n");
    RunSummary r;
    run_summary_read(dir, &r);
    CHECK(r.state_floats == 2048 && r.n_cells == 2, "%g %d", r.state_floats, r.n_cells);
    CHECK(!strcmp(r.cell[0], "kv4_L64") && !strcmp(r.cell[1], "kv16_L256"));
    CHECK(r.cell_acc[0] == 0.9 && r.cell_acc[1] == 0.3, "%g %g", r.cell_acc[0], r.cell_acc[1]);  // step 10: best mean
    CHECK(r.recall_layer == 1, "%d", r.recall_layer);  // mean answer share 0.5 over 0.1
    CHECK_CLOSE(r.cell_S_recall[0], 0.4, 1e-12);       // (0.3 + 0.5) / 2
    CHECK_CLOSE(r.cell_S_recall[1], 0.7, 1e-12);       // the null head left out
    run_summary_free(&r);
}

TEST(sweep_run_summary_reads_metrics_and_sparsity) {
    const char *dir = test_tmpdir();
    test_write_file("metrics.jsonl",
                    "{\"type\":\"eval\",\"step\":0,\"split\":\"val\",\"loss\":9,\"acc\":0}\n"
                    "{\"type\":\"train\",\"step\":10,\"loss\":5,\"acc\":0.2,\"tok_per_s\":1000,\"ms_per_step\":100}\n"
                    "{\"type\":\"eval\",\"step\":10,\"split\":\"val\",\"loss\":4,\"acc\":0.5}\n"
                    "{\"type\":\"train\",\"step\":20,\"loss\":1,\"acc\":0.9,\"tok_per_s\":3000,\"ms_per_step\":200}\n"
                    "{\"type\":\"eval\",\"step\":20,\"split\":\"val\",\"loss\":0.5,\"acc\":0.995}\n"
                    "{\"type\":\"train\",\"step\":30,\"loss\":1,\"acc\":0.9,\"tok_per_s\":2000,\"ms_per_step\":300}\n"
                    "{\"type\":\"eval\",\"step\":30,\"split\":\"val\",\"loss\":0.25,\"acc\":0.993}\n"
                    "{\"type\":\"done\",\"step\":30,\"reason\":\"steps\"}\n");
    test_write_file("sparsity.jsonl",
                    "{\"step\":0,\"layer\":0,\"head\":0,\"S\":0.9,\"S_recall\":0.9}\n"
                    "{\"step\":0,\"layer\":1,\"head\":0,\"S\":0.8,\"S_recall\":0.8}\n"
                    "{\"step\":30,\"layer\":0,\"head\":0,\"S\":0.4,\"S_recall\":0.5,\"ans_share\":0.1,\"ans_hit\":0}\n"
                    "{\"step\":30,\"layer\":0,\"head\":1,\"S\":0.6,\"S_recall\":null}\n"
                    "{\"step\":30,\"layer\":1,\"head\":0,\"S\":0.3,\"S_recall\":0.2,\"ans_share\":0.7,\"ans_hit\":1}\n"
                    "{\"step\":30,\"layer\":1,\"head\":1,\"S\":0.5,\"S_recall\":0.4,\"ans_share\":0.5,\"ans_hit\":0.5}\n"
                    "{\"step\":40,\"layer\":0,\"he");  // a line cut off by a kill is skipped
    RunSummary r;
    run_summary_read(dir, &r);
    CHECK(r.status == RUN_DONE && r.step == 30 && run_finished(dir));
    CHECK_CLOSE(r.final_loss, 0.25, 1e-12);
    CHECK_CLOSE(r.best_acc, 0.995, 1e-12);
    CHECK(r.steps_to_target == 20, "%ld", r.steps_to_target);
    CHECK_CLOSE(r.minutes_to_target, (10 * 100.0 + 10 * 200.0) / 60000, 1e-12);
    CHECK_CLOSE(r.minutes, 6000.0 / 60000, 1e-12);
    CHECK_CLOSE(r.tok_per_s, 2000, 1e-12);
    CHECK(r.S_step == 30 && r.n_layers == 2);
    CHECK_CLOSE(r.S_mean[0], 0.5, 1e-12);
    CHECK_CLOSE(r.S_min[0], 0.4, 1e-12);
    CHECK_CLOSE(r.S_recall[0], 0.5, 1e-12);
    CHECK_CLOSE(r.S_mean[1], 0.4, 1e-12);
    CHECK_CLOSE(r.S_min_all, 0.3, 1e-12);
    CHECK_CLOSE(r.S_mean_all, 0.45, 1e-12);
    CHECK_CLOSE(r.S_recall_min_all, 0.2, 1e-12);
    CHECK(r.n_curve == 2 && r.curve_step[1] == 30);
    CHECK_CLOSE(r.curve_S[0], 0.8, 1e-12);
    CHECK_CLOSE(r.curve_S[1], 0.4, 1e-12);
    // the recall layer (largest answer share at the last step) is layer 1; its S_recall over the curve
    CHECK(r.recall_layer == 1, "%d", r.recall_layer);
    CHECK_CLOSE(r.recall_ans_share, 0.6, 1e-12);
    CHECK_CLOSE(r.curve_recall[0], 0.8, 1e-12);
    CHECK_CLOSE(r.curve_recall[1], 0.3, 1e-12);
    run_summary_free(&r);
    // not finished: the last record is not done
    test_write_file("metrics.jsonl",
                    "{\"type\":\"done\",\"step\":30,\"reason\":\"steps\"}\n{\"type\":\"train\",\"step\":31}\n");
    run_summary_read(dir, &r);
    CHECK(r.status == RUN_PARTIAL && !run_finished(dir) && r.steps_to_target < 0 && isnan(r.best_acc));
    run_summary_free(&r);
    run_summary_read(test_path("nothing"), &r);
    CHECK(r.status == RUN_MISSING && !run_finished(test_path("nothing")));
    run_summary_free(&r);
}

// --- ./sweep end to end ------------------------------------------------------------------------------

// A tiny MQAR base config next to the sweep files.
static void tiny_base(void) {
    test_write_file("tiny.conf",
                    "mlp = false\nvocab_size = 64\nseq_len = 32\nmqar_kv_pairs = 4\n"
                    "mqar_train_examples = 256\nmqar_test_examples = 32\nmqar_val_examples = 32\nd_model = 8\nbatch_size = 8\n"
                    "lr = 3e-3\nsteps = 4\nlog_every = 1\neval_every = 2\nsparsity_every = 2\nsave_every = 2\n");
}

// Writes a sweep file "<name>.sweep" with its out folder in the scratch folder; returns the path.
static const char *sweep_file(const char *name, const char *body) {
    tiny_base();
    char text[2048], file[256];
    snprintf(text, sizeof text, "base = tiny.conf\nout = %s/out_%s\n%s", test_tmpdir(), name, body);
    snprintf(file, sizeof file, "%s.sweep", name);
    return test_write_file(file, text);
}

static char *read_out(const char *name, const char *file) {
    char p[1024];
    snprintf(p, sizeof p, "%s/out_%s/%s", test_tmpdir(), name, file);
    return read_file_text(p, NULL);
}

// Bad input stops before anything runs: exit 2, one line naming file:line.
// A finished run folder whose best accuracy is acc.
// A finished run's log: validation accuracy acc at step 10 and, read once at the end, a test
// accuracy of 1 - acc: a selection that read the test set would choose the other way.
static void fake_run(const char *dir, double acc) {
    CHECK(mkdir_p(dir) == 0);
    char p[1024], text[512];
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    snprintf(text, sizeof text,
             "{\"type\":\"run\",\"step\":0,\"mixer\":\"softmax\",\"protocol\":2}\n"
             "{\"type\":\"eval\",\"step\":10,\"split\":\"val\",\"loss\":1,\"acc\":%.4f}\n"
             "{\"type\":\"eval\",\"step\":10,\"split\":\"test\",\"selected\":\"best\",\"loss\":1,\"acc\":%.4f}\n"
             "{\"type\":\"done\",\"step\":10,\"reason\":\"steps\"}\n",
             acc, 1 - acc);
    FILE *f = fopenCheck(p, "w");
    fputs(text, f);
    fcloseCheck(f, p);
}

// A finished run's log as written before the validation split: no protocol in its run record
// (none at all here), its "val" records read the test set; and a run that reaches 0.99 at a step.
static void fake_log(const char *dir, const char *text) {
    CHECK(mkdir_p(dir) == 0);
    char p[1024];
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    FILE *f = fopenCheck(p, "w");
    fputs(text, f);
    fcloseCheck(f, p);
}

// The summaries' sample sd: exactly 0 for equal values (the one-pass sum2 - sum^2 / n left rounding
// noise there, 9.3e-10 for three chance levels of 0.061, which an -O2 and an -O3 build rounded
// differently), and the two-pass value where a small spread sits on a large mean.
TEST(summary_stat_sd_is_zero_for_equal_values_and_two_pass_otherwise) {
    Stat s = {0};
    for (int i = 0; i < 3; i++) stat_add(&s, 0.06108601);
    CHECK(stat_sd(&s) == 0, "sd of equal values %.17g", stat_sd(&s));
    Stat t = {0};
    const double v[3] = {0.99975, 0.99991667, 0.99983333};  // Gated DeltaNet's best accuracies
    for (int i = 0; i < 3; i++) stat_add(&t, v[i]);
    double mean = (v[0] + v[1] + v[2]) / 3, ss = 0;
    for (int i = 0; i < 3; i++) ss += (v[i] - mean) * (v[i] - mean);
    CHECK(fabs(stat_sd(&t) - sqrt(ss / 2)) <= 1e-15 * sqrt(ss / 2), "%.17g against %.17g", stat_sd(&t), sqrt(ss / 2));
    Stat one = {0};
    stat_add(&one, 1);
    stat_add(&one, NAN);  // left out
    CHECK(one.n == 1 && isnan(stat_sd(&one)));
}

// Ties in selection (on validation): reaching 0.99 beats not reaching it; then fewer steps to it;
// then the higher accuracy; then the smaller value. The summary reader keeps the test record
// apart (test_acc) and never in the curve; an older log is recognised and its choice labelled.
TEST(sweep_select_breaks_ties_by_steps_then_accuracy_on_validation) {
    SweepFile sw;
    char err[512], text[512];
    snprintf(text, sizeof text, "out = %s/ties\nmixer = softmax, gla\nlr = 1e-3, 1e-2\nseed = 0, 1\nselect = lr\n",
             test_tmpdir());
    CHECK(parse(text, &sw, err, sizeof err) == 0, "%s", err);
    char *dirs[8];
    for (int i = 0; i < 8; i++) dirs[i] = sweep_point_dir(&sw, i);
    // point = mixer * 4 + lr * 2 + seed; first stage 0, 2 (softmax) and 4, 6 (gla)
    const char *proto = "{\"type\":\"run\",\"step\":0,\"mixer\":\"softmax\",\"protocol\":2}\n";
    char log[1024];
    // softmax: 1e-3 reaches 0.99 at step 40 (best 0.995), 1e-2 at step 20 (best 0.992): fewer steps win
    snprintf(log, sizeof log,
             "%s{\"type\":\"eval\",\"step\":20,\"split\":\"val\",\"loss\":1,\"acc\":0.5}\n"
             "{\"type\":\"eval\",\"step\":40,\"split\":\"val\",\"loss\":1,\"acc\":0.995}\n"
             "{\"type\":\"eval\",\"step\":40,\"split\":\"test\",\"selected\":\"best\",\"loss\":1,\"acc\":0.999}\n"
             "{\"type\":\"done\",\"step\":40,\"reason\":\"stop_at_acc\"}\n",
             proto);
    fake_log(dirs[0], log);
    snprintf(log, sizeof log,
             "%s{\"type\":\"eval\",\"step\":20,\"split\":\"val\",\"loss\":1,\"acc\":0.992}\n"
             "{\"type\":\"eval\",\"step\":20,\"split\":\"test\",\"selected\":\"best\",\"loss\":1,\"acc\":0.9}\n"
             "{\"type\":\"done\",\"step\":20,\"reason\":\"stop_at_acc\"}\n",
             proto);
    fake_log(dirs[2], log);
    // gla, an older log: 1e-3 at 0.97 never reaching 0.99, 1e-2 reaching it: reached wins
    fake_log(dirs[4],
             "{\"type\":\"eval\",\"step\":20,\"split\":\"val\",\"loss\":1,\"acc\":0.97}\n"
             "{\"type\":\"done\",\"step\":20,\"reason\":\"steps\"}\n");
    fake_log(dirs[6],
             "{\"type\":\"eval\",\"step\":20,\"split\":\"val\",\"loss\":1,\"acc\":0.991}\n"
             "{\"type\":\"done\",\"step\":20,\"reason\":\"stop_at_acc\"}\n");
    Selection s;
    selection_make(&sw, dirs, &s);
    CHECK(s.choice[0] == 1 && s.choice[4] == 1, "softmax %d gla %d", s.choice[0], s.choice[4]);
    char *md = selection_markdown(&sw, &s);
    CHECK(strstr(md, "| mixer=softmax | 1e-3: 0.9950, 1e-2: 0.9920 | 1e-2 | fewer steps to 0.99 (20 against 40) |"),
          "%s", md);
    CHECK(strstr(md,
                 "| 1e-2 | reached 0.99 (1e-3: best 0.9700); chosen on the TEST set (a log older than the "
                 "validation split) |"),
          "%s", md);
    free(md);
    RunSummary r;
    run_summary_read(dirs[0], &r);
    CHECK(r.protocol == 2 && r.best_acc == 0.995 && r.best_step == 40 && r.test_acc == 0.999 && r.test_step == 40 &&
              !strcmp(r.test_selected, "best") && r.steps_to_target == 40,
          "%g %ld %g", r.best_acc, r.best_step, r.test_acc);
    run_summary_free(&r);
    run_summary_read(dirs[4], &r);
    CHECK(r.protocol == 0 && r.best_acc == 0.97 && !isfinite(r.test_acc));
    run_summary_free(&r);
    selection_free(&s);
    for (int i = 0; i < 8; i++) free(dirs[i]);
    sweep_free(&sw);
}

// Two stages: the choice per group is the best first-stage accuracy, a tie goes to the smaller
// value (as a number: 1e-2 < 2e-2 whatever the file order), and nothing is chosen while a
// first-stage run is unfinished.
TEST(sweep_select_chooses_the_best_first_stage_value) {
    SweepFile sw;
    char err[512];
    char text[512];
    snprintf(text, sizeof text, "out = %s/selx\nmixer = softmax, gla\nlr = 2e-2, 1e-2\nseed = 0, 1, 2\nselect = lr\n",
             test_tmpdir());
    CHECK(parse(text, &sw, err, sizeof err) == 0, "%s", err);
    CHECK(sw.n_points == 12);
    char *dirs[12];
    for (int i = 0; i < 12; i++) dirs[i] = sweep_point_dir(&sw, i);
    // point = mixer * 6 + lr * 3 + seed: first stage 0, 3 (softmax) and 6, 9 (gla)
    fake_run(dirs[0], 0.5);
    fake_run(dirs[3], 0.5);  // softmax: a tie: 1e-2 (the second value) is the smaller
    fake_run(dirs[6], 0.9);  // gla: 2e-2 is better; 1e-2 not run yet
    Selection s;
    selection_make(&sw, dirs, &s);
    CHECK(s.on && s.stage[0] == 1 && s.stage[1] == 2 && s.stage[3] == 1 && s.stage[4] == 2);
    CHECK(s.choice[1] == 1 && s.choice[0] == 1, "softmax chose value %d", s.choice[1]);
    CHECK(selection_runs(&s, 4) && selection_runs(&s, 5) && !selection_runs(&s, 1) && !selection_runs(&s, 2));
    CHECK(s.choice[7] == -1 && !selection_runs(&s, 7) && !selection_runs(&s, 10) && selection_runs(&s, 9));
    CHECK(selection_pending(&s) == 4, "%d", selection_pending(&s));
    selection_free(&s);
    fake_run(dirs[9], 0.7);
    selection_make(&sw, dirs, &s);
    CHECK(s.choice[7] == 0 && selection_runs(&s, 7) && !selection_runs(&s, 10) && selection_pending(&s) == 0);
    RunSummary runs[12];
    for (int i = 0; i < 12; i++) run_summary_read(dirs[i], &runs[i]);
    selection_mark(&s, runs);
    CHECK(runs[3].selected == SEL_CHOSEN && runs[0].selected == SEL_NOT_CHOSEN && runs[1].status == RUN_NOT_SELECTED);
    CHECK(runs[4].status == RUN_MISSING && runs[6].selected == SEL_CHOSEN && runs[10].status == RUN_NOT_SELECTED);
    char *md = selection_markdown(&sw, &s);
    CHECK(strstr(md, "| mixer=softmax | 2e-2: 0.5000, 1e-2: 0.5000 | 1e-2 | a tie with 2e-2: the smaller |"), "%s", md);
    CHECK(strstr(md, "| mixer=gla | 2e-2: 0.9000, 1e-2: 0.7000 | 2e-2 | best accuracy (0.9000 against 0.7000) |"), "%s", md);
    free(md);
    for (int i = 0; i < 12; i++) run_summary_free(&runs[i]), free(dirs[i]);
    selection_free(&s);
    sweep_free(&sw);
}

// ./sweep runs both stages in one go; --print lists what can run and says what waits.
TEST(sweep_select_runs_two_stages) {
    const char *f =
        sweep_file("sel", "steps = 4\neval_every = 2\nmixer = softmax\nlr = 1e-3, 1e-2\nseed = 0, 1\nselect = lr\n");
    char out[8192];
    int st = test_run(out, sizeof out, "./sweep %s --print 2>&1", f);
    CHECK(st == 0 && strstr(out, "2 second-stage points wait") && strstr(out, "lr=1e-3,seed=0") &&
              strstr(out, "lr=1e-2,seed=0") && !strstr(out, "seed=1"),
          "%s", out);
    st = test_run(out, sizeof out, "./sweep %s --threads 1", f);
    CHECK(st == 0 && strstr(out, "first stage: every lr at the first seed") &&
              strstr(out, "sweep sel: chosen: all: lr = 1e-3, a tie with 1e-2: the smaller\n") &&
              strstr(out, "[2/4] lr=1e-3,seed=1: done") && strstr(out, "[3/3 run]") && strstr(out, "the choices of lr:"),
          "%s", out);
    CHECK(strstr(out, "sweep sel: 3 run, 0 skipped (finished before), 0 failed, in "), "%s", out);
    const char *line = strstr(out, "[1/4] lr=1e-3,seed=0: started");  // after the time of day
    CHECK(line && line - out >= 9 && line[-1] == ' ' && line[-4] == ':' && line[-7] == ':' &&
              isdigit((unsigned char)line[-9]),
          "%s", out);
    char *md = read_out("sel", "summary.md");
    CHECK(md && strstr(md, "## Selection of `lr`") && strstr(md, "not selected") && strstr(md, ", chosen"), "%s", md);
    free(md);
    st = test_run(out, sizeof out, "./sweep %s --print --unfinished 2>&1", f);
    CHECK(st == 0 && !strstr(out, "./train"), "%s", out);
}

// A group's second stage starts as soon as its choice is made, on a slot the first stage leaves
// free, not after the whole first stage. With 2 slots and 2 groups the first group to finish its
// first stage leaves the other one with a run still going; the runner fills a freed slot before
// it reaps the next run, so the first seed-1 run starts before the last seed-0 run is reported
// done, whichever group finishes first and however the runs are timed.
TEST(sweep_select_starts_a_decided_group_while_the_first_stage_runs) {
    const char *f = sweep_file("early",
                               "steps = 4\neval_every = 2\nmixer = softmax, linear\nlr = 1e-3, 1e-2\n"
                               "seed = 0, 1\nselect = lr\njobs = 2\n");
    char out[8192];
    int st = test_run(out, sizeof out, "./sweep %s --threads 2", f);
    const char *chosen = strstr(out, "chosen: mixer="), *seed1 = strstr(out, ",seed=1: started"), *last_first = NULL;
    for (const char *q = out; (q = strstr(q, ",seed=0: done")); q++) last_first = q;
    CHECK(st == 0 && chosen && seed1 && last_first, "%s", out);
    CHECK(chosen < seed1 && seed1 < last_first, "%s", out);
    CHECK(strstr(out, "sweep early: 6 run, 0 skipped (finished before), 0 failed, in ") && strstr(out, "[6/6 run]"),
          "%s", out);
    // run again: everything is finished and both choices are said once
    st = test_run(out, sizeof out, "./sweep %s --threads 2", f);
    const char *soft = strstr(out, "chosen: mixer=softmax: lr =");
    CHECK(st == 0 && strstr(out, "sweep early: 0 run, 6 skipped (finished before), 0 failed, in ") &&
              strstr(out, "chosen: mixer=linear: lr =") && soft && !strstr(soft + 1, "chosen: mixer=softmax"),
          "%s", out);
}

// A point whose run folder cannot be made fails alone (the others run, the summary is written);
// the point numbers are padded to the width of the count.
TEST(sweep_point_folder_that_cannot_be_made_fails_alone) {
    const char *f = sweep_file("nodir", "steps = 2\neval_every = 1\nmixer = softmax, linear\nseed = 0, 1, 2, 3, 4\n");
    char path[1024];
    snprintf(path, sizeof path, "%s/out_nodir", test_tmpdir());
    CHECK(mkdir_p(path) == 0);
    snprintf(path, sizeof path, "%s/out_nodir/mixer=linear,seed=2", test_tmpdir());
    fclose(fopenCheck(path, "w"));  // a file where the folder should be
    char out[16384];
    int st = test_run(out, sizeof out, "./sweep %s --threads 1 2>&1", f);
    CHECK(st == 1, "exit %d: %s", st, out);
    CHECK(strstr(out, "sweep: cannot create '") && strstr(out, "[ 8/10] mixer=linear,seed=2: FAILED: could not start") &&
              strstr(out, "[ 1/10] mixer=softmax,seed=0: done") && strstr(out, "[10/10] mixer=linear,seed=4: done") &&
              strstr(out, "10 run, 0 skipped (finished before), 1 failed"),
          "%s", out);
    char *md = read_out("nodir", "summary.md");
    CHECK(md != NULL);
    free(md);
}

// A first-stage run that fails leaves its group undecided: the count of runs to come drops the
// group's second stage, and the sweep ends on [n/n] with that stage waiting.
TEST(sweep_select_failed_first_stage_drops_its_second_stage_from_the_count) {
    const char *f = sweep_file("selfail",
                               "steps = 4\neval_every = 2\nmixer = softmax, linear\nn_head = 1, 3\n"
                               "zip = mixer, n_head\nlr = 1e-3, 1e-2\nseed = 0, 1\nselect = lr\n");
    char out[8192];
    int st = test_run(out, sizeof out, "./sweep %s --threads 1", f);  // linear's n_head 3 does not divide d_model
    CHECK(st == 1, "exit %d: %s", st, out);
    CHECK(strstr(out, "[5/5 run]") &&
              strstr(out, "5 run, 0 skipped (finished before), 2 failed, 2 waiting for the choice of lr"),
          "%s", out);
}

TEST(sweep_bad_sweep_files_exit_2_before_running) {
    static const BadInput cases[] = {
        {"steps = 2\nn_heads = 1, 2\n", "bad0.sweep:4: unknown key 'n_heads' (did you mean 'n_head'?)"},
        {"lr = 1e-3, 2e-3, abc\n", "bad1.sweep:3: lr: expected a positive number, got 'abc'"},
        {"mixer = softmax, nope\n", "bad2.sweep:3: mixer: expected one of softmax|"},
        {"lr = 1e-3,,1e-2\n", "bad3.sweep:3: lr: an empty value in the list"},
        {"a = 1, 2\nlr = 1e-3\nzip = a, lr\n", "bad4.sweep:5: zip: axes of different lengths"},
        {"plot_x = dmodel\n", "bad5.sweep:3: plot_x: unknown key 'dmodel'"},
        {"base = missing.conf\n", "bad6.sweep:3: base: set twice (first at line 1)"},
        {"lr = 1e-3\nseed = 0, 1\nselect = lr\n", "bad7.sweep:5: select: 'lr' is not an axis of this sweep"},
        {"lr = 1e-3, 1e-2\nseed = 0, 1\nselect = seed\n", "bad8.sweep:5: select: 'seed' is also in group_over"},
        {"lr = 1e-3, 1e-2\nselect = lr\n", "bad9.sweep:4: select: no group_over key (seed) varies, so there is no second stage"},
        {"after_run = intervene=ablate;; intervene=oracle\n", "bad10.sweep:3: after_run: entry 2 is empty"},
        {"after_run = intervene=nope\n", "bad11.sweep:3: after_run: entry 1: intervene=nope: expected intervene=KIND"},
        {"after_run = intervene=ablate; lyer=causal\n",
         "bad12.sweep:3: after_run: entry 2: lyer=causal: not a ./evaluate argument"},
        {"after_run = intervene=ablate:2\n", "bad13.sweep:3: after_run: entry 1: intervene=ablate:2: ablate takes no strengths"},
        {"after_run = intervene=topk:1,x\n", "bad14.sweep:3: after_run: entry 1: intervene=topk:1,x: expected numbers"},
        {"after_run = intervene=ablate layer=last\n",
         "bad15.sweep:3: after_run: entry 1: layer=last: expected an index >= 0, all or causal"},
        {"after_run = intervene=ablate rows=some\n", "bad16.sweep:3: after_run: entry 1: rows=some: expected rows=query"},
        {"after_run = compare=x intervene=ablate\n", "bad17.sweep:3: after_run: entry 1: compare=x: not in after_run"},
        {"after_run_on = everything\nafter_run = intervene=ablate\n", "bad18.sweep:3: after_run_on: expected held_out or all"},
        {"after_run_on = all\n", "bad19.sweep:3: after_run_on: without after_run"},
        {"keep_best = false\nseed = 0, 1\nafter_run = intervene=ablate\n",
         "bad20.sweep:5: after_run: point 'seed=0' has keep_best = false"},
        {"lr = 1e-3, 1e-2\nseed = 0, 1\nselect = lr\nsave_every = 0\nafter_run = intervene=ablate\n",
         "bad21.sweep:7: after_run: point 'lr=1e-3,seed=1' has save_every = 0"},
    };
    char out[4096];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[16];
        snprintf(name, sizeof name, "bad%zu", i);
        const char *f = sweep_file(name, cases[i].in);
        int st = test_run(out, sizeof out, "./sweep %s", f);
        char *nl = strchr(out, '\n');
        CHECK(st == 2 && strstr(out, cases[i].want) && (!nl || !nl[1]), "case %zu: exit %d: %s (want %s)", i, st, out,
              cases[i].want);
        char p[512];
        snprintf(p, sizeof p, "%s/out_%s", test_tmpdir(), name);
        CHECK(!path_exists(p), "case %zu: the sweep created %s", i, p);
    }
    // a base that does not exist, and bad flags
    const char *f = test_write_file("nobase.sweep", "base = missing.conf\nlr = 1e-3, 1e-2\n");
    int st = test_run(out, sizeof out, "./sweep %s", f);
    CHECK(st == 2 && strstr(out, "nobase.sweep:1: base: cannot open"), "%d %s", st, out);
    st = test_run(out, sizeof out, "./sweep %s --jobs 0", f);
    CHECK(st == 2 && strstr(out, "--jobs: expected a positive integer"), "%d %s", st, out);
    st = test_run(out, sizeof out, "./sweep %s --frobnicate", f);
    CHECK(st == 2 && strstr(out, "unknown option '--frobnicate'"), "%d %s", st, out);
}

static long file_size(const char *path) {
    struct stat s;
    return stat(path, &s) == 0 ? (long)s.st_size : -1;
}

// Runs the points (two at a time), skips them when run again, resumes an interrupted one, goes
// on past a failed one and exits 1 naming it.
TEST(sweep_runs_points_skips_finished_resumes_and_survives_a_failure) {
    const char *f = sweep_file("run", "jobs = 2\nmixer = softmax, linear\nn_head = 1, 3\n");
    char out[8192], cmd[8300];
    // interrupt point 1 (softmax, n_head 1) half way through with its own printed command
    int st = test_run(out, sizeof out, "./sweep %s --print | head -1", f);
    CHECK(st == 0 && !strncmp(out, "./train ", 8) && strstr(out, "n_head=1") && strstr(out, " threads="), "%s", out);
    out[strcspn(out, "\n")] = 0;
    snprintf(cmd, sizeof cmd, "%s stop_at_step=2", out);
    st = test_run(out, sizeof out, "%s", cmd);
    CHECK(st == 0 && strstr(out, "stop_at_step 2 reached"), "%d %s", st, out);

    st = test_run(out, sizeof out, "./sweep %s --threads 2", f);
    CHECK(st == 1, "exit %d: %s", st, out);
    CHECK(strstr(out, "4 points, 2 at a time, threads=1 each"), "%s", out);
    // n_head 3 does not divide d_model 8: both such points fail, the others finish
    CHECK(strstr(out, "mixer=softmax,n_head=3: FAILED (exit 2)") && strstr(out, "not divisible by n_head 3"), "%s", out);
    CHECK(strstr(out, "mixer=linear,n_head=3: FAILED (exit 2)"), "%s", out);
    CHECK(strstr(out, "mixer=softmax,n_head=1: done") && strstr(out, "mixer=linear,n_head=1: done"), "%s", out);
    CHECK(strstr(out, "4 run, 0 skipped (finished before), 2 failed") &&
              strstr(out, "failed points:\n  mixer=softmax,n_head=3 (exit 2)"),
          "%s", out);
    char *log = read_out("run", "mixer=softmax,n_head=1/train.log");
    CHECK(log && strstr(log, "== sweep run, point 1/4") && strstr(log, "resuming from") && strstr(log, "step 2"), "%s", log);
    char *csv = read_out("run", "summary.csv");
    CHECK(csv && strstr(csv, "\"mixer=softmax,n_head=1\",softmax,1,done,,4,") &&
              strstr(csv, "\"mixer=linear,n_head=3\",linear,3,failed,2,"),
          "%s", csv);

    // again: the finished points are skipped (their logs untouched), the failed ones run again
    char p[1024];
    snprintf(p, sizeof p, "%s/out_run/mixer=linear,n_head=1/train.log", test_tmpdir());
    long before = file_size(p);
    st = test_run(out, sizeof out, "./sweep %s --threads 2", f);
    CHECK(st == 1 && strstr(out, "mixer=softmax,n_head=1: finished before, skipped") &&
              strstr(out, "mixer=linear,n_head=1: finished before, skipped") && strstr(out, "2 run, 2 skipped"),
          "%s", out);
    CHECK(file_size(p) == before, "a finished point ran again");
    // --unfinished prints only the failed points' commands
    st = test_run(out, sizeof out, "./sweep %s --print --unfinished", f);
    CHECK(st == 0 && strstr(out, "n_head=3") && !strstr(out, "n_head=1"), "%s", out);
}

// after_run runs ./evaluate on each held-out point once its run has finished (the second stage
// of a two-stage sweep, not the first), records what succeeded in after_run.done, and a sweep run
// again runs only what is missing; with the checkpoint gone it says so and skips.
TEST(sweep_after_run_evaluates_held_out_points_once_and_resumes) {
    const char *f = sweep_file("ar",
                               "steps = 4\neval_every = 2\nmixer = softmax\nlr = 1e-3, 1e-2\nseed = 0, 1\nselect = lr\n"
                               "after_run = intervene=ablate; intervene=flatten:0.5 layer=causal\n");
    char out[16384];
    int st = test_run(out, sizeof out, "./sweep %s --print 2>&1 >/dev/null", f);
    CHECK(st == 0 && strstr(out, "after_run: these are the ./train commands only; the 2 evaluations after each held-out run"),
          "%s", out);
    st = test_run(out, sizeof out, "./sweep %s --slurm --out %s/out_ar_slurm 2>/dev/null", f, test_tmpdir());
    CHECK(st == 0 && strstr(out, "after_run: these are the ./train commands only") && strstr(out, ".sweep --out ") &&
              strstr(out, "/out_ar_slurm` runs them on every finished point"),
          "%s", out);
    st = test_run(out, sizeof out, "./sweep %s --threads 1", f);
    CHECK(st == 0 && strstr(out, "chosen: all: lr = 1e-3"), "%d %s", st, out);
    CHECK(strstr(out, "[2/4] lr=1e-3,seed=1: after_run 'intervene=ablate': done in ") &&
              strstr(out, "[2/4] lr=1e-3,seed=1: after_run 'intervene=flatten:0.5 layer=causal': done in ") &&
              strstr(out, "sweep ar: after_run: 2 evaluations run, 0 failed\n"),
          "%s", out);
    CHECK(!strstr(out, "seed=0: after_run"), "a first-stage point was evaluated: %s", out);
    char *done = read_out("ar", "lr=1e-3,seed=1/after_run.done");
    CHECK(done && !strcmp(done, "intervene=ablate\nintervene=flatten:0.5 layer=causal\n"), "%s", done);
    free(done);
    char *iv = read_out("ar", "lr=1e-3,seed=1/intervention.jsonl");
    CHECK(iv && strstr(iv, "\"ablate\"") && strstr(iv, "flatten"), "%s", iv ? iv : "no intervention.jsonl");
    free(iv);
    char *log = read_out("ar", "lr=1e-3,seed=1/after_run.log");
    CHECK(log && strstr(log, "== sweep ar, point 2/4, after_run 1/2") &&
              strstr(log, "/lr=1e-3,seed=1 intervene=ablate threads=1\n"),
          "%s", log);
    free(log);
    static const char *first[2] = {"lr=1e-3,seed=0", "lr=1e-2,seed=0"};
    for (int i = 0; i < 2; i++) {
        char p[1024];
        snprintf(p, sizeof p, "%s/out_ar/%s/intervention.jsonl", test_tmpdir(), first[i]);
        CHECK(!path_exists(p), "%s", p);
        snprintf(p, sizeof p, "%s/out_ar/%s/after_run.done", test_tmpdir(), first[i]);
        CHECK(!path_exists(p), "%s", p);
    }
    // again: nothing runs, the records are untouched
    char ivp[1024], marker[1024];
    snprintf(ivp, sizeof ivp, "%s/out_ar/lr=1e-3,seed=1/intervention.jsonl", test_tmpdir());
    snprintf(marker, sizeof marker, "%s/out_ar/lr=1e-3,seed=1/after_run.done", test_tmpdir());
    long size = file_size(ivp);
    st = test_run(out, sizeof out, "./sweep %s --threads 1", f);
    CHECK(st == 0 && strstr(out, "after_run: 0 evaluations run, 0 failed") && !strstr(out, "after_run '"), "%s", out);
    CHECK(file_size(ivp) == size, "an evaluation ran again");
    // a marker missing its second entry (an interrupted sitting): only that one runs
    FILE *m = fopenCheck(marker, "w");
    fputs("intervene=ablate\n", m);
    fcloseCheck(m, marker);
    st = test_run(out, sizeof out, "./sweep %s --threads 1", f);
    CHECK(st == 0 && strstr(out, "after_run 'intervene=flatten:0.5 layer=causal': done") &&
              !strstr(out, "after_run 'intervene=ablate'") && strstr(out, "after_run: 1 evaluation run, 0 failed"),
          "%s", out);
    // the logs without the checkpoints (a fresh clone): said in one line and skipped
    m = fopenCheck(marker, "w");
    fcloseCheck(m, marker);
    char best[1024];
    snprintf(best, sizeof best, "%s/out_ar/lr=1e-3,seed=1/best.safetensors", test_tmpdir());
    CHECK(remove(best) == 0);
    st = test_run(out, sizeof out, "./sweep %s --threads 1", f);
    CHECK(st == 0 && strstr(out, "[2/4] lr=1e-3,seed=1: after_run: 2 of 2 evaluations not done, but ") &&
              strstr(out, "best.safetensors is gone; skipped\n") &&
              strstr(out, "after_run: 0 evaluations run, 0 failed, 1 point skipped (best.safetensors gone)"),
          "%s", out);
}

// A restart runs the evaluations an earlier sitting left undone before it starts new runs (their
// checkpoints may not outlive the sitting), even those of a group whose second stage comes after
// another group's unfinished first stage in the order of the points.
TEST(sweep_after_run_left_undone_runs_before_new_runs_on_a_restart) {
    const char *f = sweep_file("arfirst",
                               "steps = 4\neval_every = 2\nmixer = linear, softmax\nlr = 1e-3, 1e-2\nseed = 0, 1\n"
                               "select = lr\nafter_run = intervene=oracle\n");
    char out[16384], p[1024];
    int st = test_run(out, sizeof out, "./sweep %s --threads 1", f);
    CHECK(st == 0 && strstr(out, "after_run: 2 evaluations run, 0 failed"), "%d %s", st, out);
    // sitting 2: softmax's held-out evaluation lost, linear's first stage to run again
    snprintf(p, sizeof p, "%s/out_arfirst/mixer=softmax,lr=1e-3,seed=1/after_run.done", test_tmpdir());
    CHECK(remove(p) == 0);
    snprintf(p, sizeof p, "rm -r '%s/out_arfirst/mixer=linear,lr=1e-3,seed=0'", test_tmpdir());
    CHECK(system(p) == 0);
    st = test_run(out, sizeof out, "./sweep %s --threads 1", f);
    const char *ev = strstr(out, "mixer=softmax,lr=1e-3,seed=1: after_run 'intervene=oracle': done"),
               *run = strstr(out, "mixer=linear,lr=1e-3,seed=0: started");
    CHECK(st == 0 && ev && run && ev < run, "%d %s", st, out);
}

// after_run_on = all evaluates the first stage too; a failed evaluation is reported with its log's
// last line, the others and the sweep go on, the sweep exits 1, and after_run.done lists only what
// succeeded.
TEST(sweep_after_run_failure_is_reported_and_on_all_covers_the_first_stage) {
    const char *f = sweep_file("arall",
                               "steps = 4\neval_every = 2\nmixer = softmax\nlr = 1e-3, 1e-2\nseed = 0, 1\nselect = lr\n"
                               "after_run = intervene=derange layer=5; intervene=oracle\nafter_run_on = all\njobs = 2\n");
    char out[16384];
    int st = test_run(out, sizeof out, "./sweep %s --threads 2", f);
    CHECK(st == 1, "exit %d: %s", st, out);
    CHECK(strstr(out, "[1/4] lr=1e-3,seed=0: after_run 'intervene=derange layer=5': FAILED (exit 2) after ") &&
              strstr(out, "layer: expected 0 to 1") && strstr(out, "after_run.log)") &&
              strstr(out, "[3/4] lr=1e-2,seed=0: after_run 'intervene=oracle': done") &&
              strstr(out, "[2/4] lr=1e-3,seed=1: after_run 'intervene=oracle': done") &&
              strstr(out, "sweep arall: 3 run, 0 skipped (finished before), 0 failed") &&
              strstr(out, "after_run: 3 evaluations run, 3 failed"),
          "%s", out);
    char *done = read_out("arall", "lr=1e-2,seed=0/after_run.done");
    CHECK(done && !strcmp(done, "intervene=oracle\n"), "%s", done);
    free(done);
}

// --print gives commands that run anywhere; --collect summarises the folders they made.
TEST(sweep_print_then_collect_builds_the_summary) {
    const char *f = sweep_file("col", "mixer = softmax, linear\nd_model = 8, 16\nseed = 0, 1\n");
    char out[16384];
    int st = test_run(out, sizeof out, "./sweep %s --print --jobs 2 --threads 4", f);
    int lines = 0;
    for (char *c = out; *c; c++) lines += *c == '\n';
    CHECK(st == 0 && lines == 8 && strstr(out, "threads=2\n"), "%d %d %s", st, lines, out);
    // run all but the last point, as a scheduler would
    st = test_run(out, sizeof out, "./sweep %s --print --threads 1 | head -7 | sh > /dev/null 2>&1", f);
    CHECK(st == 0, "%s", out);
    st = test_run(out, sizeof out, "./sweep %s --collect", f);
    CHECK(st == 0 && strstr(out, "7 done, 0 partial, 0 failed, 1 missing"), "%d %s", st, out);
    CHECK(strstr(out, "## Grouped over `seed`") && strstr(out, "| softmax | 8 | 2/2 | 0/2 |") &&
              strstr(out, "| linear | 16 | 1/2 | 0/1 |"),
          "%s", out);
    CHECK(strstr(out, "| linear | 16 | 1 | missing | - |"), "%s", out);
    char *csv = read_out("col", "summary.csv");
    CHECK(csv && !strncmp(csv, "point,mixer,d_model,seed,status,", 32) && strstr(csv, "S_recall_L1"), "%s", csv);
    char *groups = read_out("col", "summary_groups.csv");
    CHECK(groups && strstr(groups, "\nsoftmax,8,2,2,0,0,") && strstr(groups, "\nlinear,16,2,1,0,") &&
              strstr(groups, "reached_0.99,capped_improving,") &&
              strstr(groups, ",state_floats_n,state_floats_mean,state_floats_sd,state_floats_values,selection_point,") &&
              strstr(groups, ",selection_best_val_acc,selection_test_acc,solves,undecided,fails,no_interval\n"),
          "%s", groups);
    char *svg = read_out("col", "acc_vs_d_model.svg");
    CHECK(svg && strstr(svg, "<svg") && strstr(svg, ">softmax<") && strstr(svg, ">linear<"), "no accuracy figure");
    svg = read_out("col", "S_steps.svg");
    CHECK(svg && strstr(svg, "mixer = softmax") && strstr(svg, "d_model=16"), "no S figure");
    svg = read_out("col", "S_recall_steps.svg");
    CHECK(svg && strstr(svg, "S_recall (recall layer)") && strstr(svg, "mixer = linear"), "no S_recall figure");
    // a line per seed, named in the legend; the group's second seed dashed in the group's colour
    CHECK(strstr(svg, ">d_model=16, seed=0<") && strstr(svg, ">d_model=16, seed=1<") &&
              strstr(svg, "stroke-dasharray=\"6 4\""),
          "the seeds' lines are not told apart:\n%s", svg);
    char *md = read_out("col", "summary.md");
    CHECK(md && strstr(md, "![best accuracy vs d_model](acc_vs_d_model.svg)") && strstr(md, "![S over steps](S_steps.svg)"));
    // the first table is the short one, and it fits a terminal of 100 columns
    const char *glance = strstr(md, "## At a glance\n"), *first = strstr(md, "\n| ");
    CHECK(glance && first && first > glance, "the first table is not the glance table:\n%s", md);
    for (const char *line = first + 1; *line == '|';) {
        size_t len = strcspn(line, "\n");
        CHECK(len <= 100, "a line of %zu columns in the first table: %.*s", len, (int)len, line);
        line += len + (line[len] == '\n');
    }
}

// Two variants of one mixer (a zip partner that varies for it) get panels and lines of their own
// in the figures, named by the partner; a mixer with one variant keeps its bare name.
TEST(sweep_figures_split_the_variants_of_a_mixer) {
    const char *f = sweep_file("var",
                               "mixer = softmax, linear, linear\nshort_conv = 0, 0, 4\nzip = mixer, short_conv\n"
                               "d_model = 8, 16\n");
    char out[16384];
    int st = test_run(out, sizeof out, "./sweep %s --threads 1", f);
    CHECK(st == 0 && strstr(out, "6 run, 0 skipped"), "%d %s", st, out);
    char *svg = read_out("var", "S_steps.svg");
    CHECK(svg && strstr(svg, ">mixer = linear, short_conv=0<") && strstr(svg, ">mixer = linear, short_conv=4<") &&
              strstr(svg, ">mixer = softmax<"),
          "%s", svg ? svg : "no S figure");
    free(svg);
    svg = read_out("var", "acc_vs_d_model.svg");
    CHECK(svg && strstr(svg, ">linear, short_conv=4<") && strstr(svg, ">linear, short_conv=0<") && strstr(svg, ">softmax<"),
          "%s", svg ? svg : "no accuracy figure");
    free(svg);
    svg = read_out("var", "acc_vs_state.svg");
    CHECK(svg && strstr(svg, ">linear, short_conv=4<") && strstr(svg, ">linear, short_conv=0<") && !strstr(svg, "unfinished"),
          "%s", svg ? svg : "no state figure");
    free(svg);
    // a run without its done record is not drawn as a result: a grey ring at its best so far
    st = test_run(out, sizeof out,
                  "sed -i '/\"type\":\"done\"/d' $(ls %s/out_var/*/metrics.jsonl | head -1) && ./sweep %s --collect",
                  test_tmpdir(), f);
    CHECK(st == 0, "%d %s", st, out);
    svg = read_out("var", "acc_vs_state.svg");
    CHECK(svg && strstr(svg, ">unfinished (best so far)<") && strstr(svg, "r=\"6\" fill=\"none\""), "%s",
          svg ? svg : "no state figure");
    free(svg);
}

// --slurm writes an sbatch job array of the unfinished points; its tasks run as ./sweep runs a
// point (log header, train.log), skip a finished point at once and report a failed one. The
// tasks are run here by hand with SLURM_ARRAY_TASK_ID set, as Slurm runs them (a real Slurm runs
// the script in `make slurm-test`, tests/engines/slurm.sh).
TEST(sweep_slurm_writes_a_job_array_of_the_unfinished_points) {
    const char *f = sweep_file("slu", "mixer = softmax, linear\nseed = 0, 1\n");
    char out[8192];
    int st = test_run(out, sizeof out, "./sweep %s --print --threads 1 | head -1 | sh > /dev/null 2>&1", f);
    CHECK(st == 0, "%s", out);
    st = test_run(out, sizeof out, "./sweep %s --slurm --threads 2 --jobs 3", f);
    char script[1024];
    snprintf(script, sizeof script, "%s/out_slu/slurm.sbatch", test_tmpdir());
    CHECK(st == 0 && strstr(out, "4 points, 3 not finished: a Slurm array of 3 tasks, 2 CPUs each") &&
              strstr(out, "at most 3 tasks at once") && strstr(out, "\n  sbatch ") && strstr(out, script) &&
              strstr(out, "slu.sweep --collect\n"),
          "%d %s", st, out);
    char *text = read_file_text(script, NULL);
    CHECK(text && !strncmp(text, "#!/bin/bash\n", 12) && strstr(text, "\n#SBATCH --array=1-3%3\n") &&
              strstr(text, "\n#SBATCH --cpus-per-task=2\n") && strstr(text, "\n#SBATCH --chdir=/") &&
              strstr(text, "/out_slu/slurm/%A_%a.out\n"),
          "%s", text);
    // the finished point has no task; the others, in order, with the commands --print writes
    CHECK(!strstr(text, "point=mixer=softmax,seed=0") && strstr(text, "1) n=2 point=mixer=softmax,seed=1 ") &&
              strstr(text, "3) n=4 point=mixer=linear,seed=1 ") && strstr(text, " threads=2' ;;"),
          "%s", text);
    st = test_run(out, sizeof out, "bash -n %s", script);
    CHECK(st == 0, "bash -n: %s", out);

    st = test_run(out, sizeof out, "SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_JOB_ID=77 bash %s", script);
    CHECK(st == 0 && strstr(out, "[2/4] mixer=softmax,seed=1: started on ") &&
              strstr(out, "[2/4] mixer=softmax,seed=1: done in "),
          "%d %s", st, out);
    char *log = read_out("slu", "mixer=softmax,seed=1/train.log");
    CHECK(log && strstr(log, "== sweep slu, point 2/4, ") && strstr(log, ", Slurm job 77_1:\n./train ") &&
              strstr(log, "done: 4 steps"),
          "%s", log);
    char p[1024];
    snprintf(p, sizeof p, "%s/out_slu/mixer=softmax,seed=1", test_tmpdir());
    CHECK(run_finished(p));
    // submitted again, a finished point's task exits at once without touching its log
    snprintf(p, sizeof p, "%s/out_slu/mixer=softmax,seed=1/train.log", test_tmpdir());
    long before = file_size(p);
    st = test_run(out, sizeof out, "SLURM_ARRAY_TASK_ID=1 bash %s", script);
    CHECK(st == 0 && !strcmp(out, "[2/4] mixer=softmax,seed=1: finished before, skipped\n") && file_size(p) == before,
          "%d %s", st, out);
    st = test_run(out, sizeof out, "SLURM_ARRAY_TASK_ID=4 bash %s", script);
    CHECK(st == 2 && strstr(out, "task '4': expected 1 to 3"), "%d %s", st, out);
    st = test_run(out, sizeof out, "bash %s", script);
    CHECK(st == 2 && strstr(out, "submit this script with sbatch"), "%d %s", st, out);
    for (int t = 2; t <= 3; t++) test_run(out, sizeof out, "SLURM_ARRAY_TASK_ID=%d bash %s", t, script);
    st = test_run(out, sizeof out, "./sweep %s --slurm", f);
    CHECK(st == 0 && strstr(out, "every point is finished; nothing to submit") && strstr(out, "slu.sweep --collect"),
          "%d %s", st, out);
    st = test_run(out, sizeof out, "./sweep %s --collect", f);
    CHECK(st == 0 && strstr(out, "4 done, 0 partial, 0 failed, 0 missing"), "%d %s", st, out);

    // a failing point's task exits with ./train's status and says why
    f = sweep_file("slf", "n_head = 3\nseed = 0, 1\n");
    st = test_run(out, sizeof out, "./sweep %s --slurm --out %s/out_slf", f, test_tmpdir());
    CHECK(st == 0 && strstr(out, "--collect --out "), "%d %s", st, out);
    snprintf(script, sizeof script, "%s/out_slf/slurm.sbatch", test_tmpdir());
    st = test_run(out, sizeof out, "SLURM_ARRAY_TASK_ID=2 bash %s", script);
    CHECK(st == 2 && strstr(out, "[2/2] seed=1: FAILED (exit 2) after ") && strstr(out, "not divisible by n_head 3") &&
              strstr(out, "(log: ") && strstr(out, "seed=1/train.log)"),
          "%d %s", st, out);
    // a threads axis: each command keeps its own, the array asks for the largest
    f = sweep_file("slt", "threads = 1, 3\n");
    st = test_run(out, sizeof out, "./sweep %s --slurm --threads 2", f);
    CHECK(st == 0 && strstr(out, "a Slurm array of 2 tasks, 3 CPUs each"), "%d %s", st, out);
    snprintf(script, sizeof script, "%s/out_slt/slurm.sbatch", test_tmpdir());
    free(text);
    text = read_file_text(script, NULL);
    CHECK(text && strstr(text, "\n#SBATCH --cpus-per-task=3\n") && strstr(text, " threads=1 out_dir=") &&
              strstr(text, " threads=3 out_dir=") && !strstr(text, "threads=2"),
          "%s", text);
    // bad input: a folder #SBATCH lines cannot name, bad combinations
    st = test_run(out, sizeof out, "./sweep %s --slurm --out '%s/a b'", f, test_tmpdir());
    CHECK(st == 2 && strstr(out, "a b' holds a space or a %, which #SBATCH lines cannot") && !strchr(out, '\n')[1],
          "%d %s", st, out);
    st = test_run(out, sizeof out, "./sweep %s --slurm --print", f);
    CHECK(st == 2 && strstr(out, "--print, --collect and --slurm exclude each other"), "%d %s", st, out);
    st = test_run(out, sizeof out, "./sweep %s --slurm --unfinished", f);
    CHECK(st == 2 && strstr(out, "--unfinished goes with --print"), "%d %s", st, out);
}

// Two ./sweep on one folder: the points' locks kept each run single, but both sweeps exited 1
// and the summary marked the other's points failed (exit 2). Now the second is refused at its
// start naming the first's pid, and a point whose folder a live ./train holds (here one started
// by hand, stopped with SIGSTOP so that it holds it as long as the test needs) is reported
// running, not failed. tests/faults/two_sweeps.sh does it with sweeps started together.
TEST(sweep_second_sweep_on_a_folder_is_refused_and_a_locked_point_is_running) {
    const char *f = sweep_file("two", "seed = 1, 2\n");
    const char *d = test_tmpdir();
    char out[16384];
    int st = test_run(out, sizeof out,
                      "./sweep %s --threads 1 > %s/a.log 2>&1 & a=$!; "
                      "for i in $(seq 3000); do [ -s %s/out_two/sweep.lock ] && break; sleep 0.005; done; kill -STOP $a; "
                      "echo pid $a; ./sweep %s --threads 1 2>&1; echo exit $?; kill -CONT $a; wait $a; echo first $?",
                      f, d, d, f);
    long pid = 0;
    CHECK(st == 0 && sscanf(out, "pid %ld", &pid) == 1, "%s", out);
    char want[1024];
    snprintf(want, sizeof want,
             "sweep: '%s/out_two' is in use by process %ld (another ./sweep running this sweep); wait "
             "for it to end or choose another --out\nexit 2\nfirst 0\n",
             d, pid);
    CHECK(strstr(out, want), "not refused with the first sweep's pid:\n%s", out);
    // a point's folder held by a live ./train: reported running, the sweep does not fail
    char text[1024];
    snprintf(text, sizeof text, "base = tiny.conf\nout = %s/out_held\nseed = 1, 2\n", d);
    f = test_write_file("held.sweep", text);
    st = test_run(
        out, sizeof out,
        "{ printf 'exec '; ./sweep %s --print --threads 1 | grep seed=2; } > %s/cmd; sh %s/cmd > /dev/null 2>&1 & t=$!; "
        "for i in $(seq 3000); do [ -s %s/out_held/seed=2/train.lock ] && break; sleep 0.005; done; kill -STOP $t; "
        "echo pid $t; ./sweep %s --threads 1; echo exit $?; "
        "grep -o 'running (process [0-9]*)' %s/out_held/summary.md; grep -o '^seed=2,2,softmax,[a-z]*,' %s/out_held/summary.csv; "
        "kill -CONT $t; wait $t; echo train $?; ./sweep %s --threads 1; echo again $?",
        f, d, d, d, f, d, d, f);
    CHECK(st == 0 && sscanf(out, "pid %ld", &pid) == 1, "%s", out);
    snprintf(want, sizeof want,
             "[2/2] seed=2: running in process %ld (another ./train holds %s/out_held/seed=2), not here; "
             "run the sweep again when it ends\n",
             pid, d);
    CHECK(strstr(out, want), "%s", out);
    CHECK(strstr(out, "sweep held: 1 run, 0 skipped (finished before), 1 running elsewhere, 0 failed, in ") &&
              !strstr(out, "FAILED"),
          "%s", out);
    snprintf(want, sizeof want, "exit 0\nrunning (process %ld)\nseed=2,2,softmax,running,\ntrain 0\n", pid);
    CHECK(strstr(out, want), "the summary does not say running:\n%s", out);
    // once it has ended, the next sweep finds both finished
    CHECK(strstr(out, "sweep held: 0 run, 2 skipped (finished before), 0 failed") && strstr(out, "again 0\n"), "%s", out);
}

// A first-stage point whose metrics.jsonl was deleted was resumed into a log holding only its
// done record; the selection then compared against its NaN accuracy, chose the other learning
// rate, trained a new second stage and marked the finished points not selected. Now the sweep
// names the point (exit 2) before anything runs, and the selection never compares a NaN.
TEST(sweep_select_point_with_lost_records_is_named_not_compared_as_nan) {
    const char *f =
        sweep_file("lost", "steps = 4\neval_every = 2\nmixer = softmax\nlr = 1e-3, 1e-2\nseed = 0, 1\nselect = lr\n");
    char out[8192], p[1024];
    int st = test_run(out, sizeof out, "./sweep %s --threads 1", f);
    CHECK(st == 0 && strstr(out, "chosen: all: lr = 1e-3, a tie with 1e-2: the smaller"), "%s", out);
    char *csv = read_out("lost", "summary.csv");
    snprintf(p, sizeof p, "%s/out_lost/lr=1e-3,seed=0/metrics.jsonl", test_tmpdir());
    CHECK(unlink(p) == 0);
    // every mode that would run it refuses, naming the folder; nothing runs, the summary stays
    for (int mode = 0; mode < 3; mode++) {
        static const char *flags[] = {"--threads 1", "--print", "--slurm"};
        st = test_run(out, sizeof out, "./sweep %s %s 2>&1 >/dev/null", f, flags[mode]);
        char want[1024];
        snprintf(want, sizeof want,
                 "sweep: %s/out_lost/lr=1e-3,seed=0: checkpoints but no metrics.jsonl: the records of "
                 "point 'lr=1e-3,seed=0' are lost (a resume would log only what follows its checkpoint); restore "
                 "metrics.jsonl, or remove the folder to run the point again\n",
                 test_tmpdir());
        CHECK(st == 2 && !strcmp(out, want), "%s: exit %d: %s", flags[mode], st, out);
    }
    char *again = read_out("lost", "summary.csv");
    CHECK(csv && again && !strcmp(csv, again), "the summary changed:\n%s", again);
    snprintf(p, sizeof p, "%s/out_lost/lr=1e-2,seed=1", test_tmpdir());
    CHECK(!path_exists(p), "a second stage at the other lr was started");
    // the log an old sweep left: only the done record. A finished run without an accuracy.
    snprintf(p, sizeof p, "%s/out_lost/lr=1e-3,seed=0/metrics.jsonl", test_tmpdir());
    FILE *m = fopenCheck(p, "w");
    fputs("{\"type\":\"done\",\"step\":4,\"reason\":\"steps\"}\n", m);
    fcloseCheck(m, p);
    for (int mode = 0; mode < 2; mode++) {
        st = test_run(out, sizeof out, "./sweep %s %s 2>&1 >/dev/null", f, mode ? "--collect" : "--threads 1");
        char want[2048];
        snprintf(want, sizeof want,
                 "sweep: %s: point 'lr=1e-3,seed=0' is finished but its log has no validation "
                 "accuracy (no eval record), which the choice of lr needs; remove the folder to run the point again\n",
                 p);
        CHECK(st == 2 && !strcmp(out, want), "exit %d: %s", st, out);
    }
    free(again);
    again = read_out("lost", "summary.csv");
    CHECK(!strcmp(csv, again), "the summary changed:\n%s", again);
    free(csv), free(again);
    // the selection itself: the group waits, it does not choose the other value
    SweepFile sw;
    char err[512], text[512];
    snprintf(text, sizeof text, "out = %s/out_lost\nmixer = softmax\nlr = 1e-3, 1e-2\nseed = 0, 1\nselect = lr\n",
             test_tmpdir());
    CHECK(parse(text, &sw, err, sizeof err) == 0, "%s", err);
    char *dirs[4];
    for (int i = 0; i < 4; i++) dirs[i] = sweep_point_dir(&sw, i);
    Selection s;
    selection_make(&sw, dirs, &s);
    CHECK(s.unread[0] && selection_unread(&s) == 0 && s.choice[0] == -1 && s.choice[1] == -1 && !selection_runs(&s, 3),
          "choice %d", s.choice[1]);
    selection_free(&s);
    for (int i = 0; i < 4; i++) free(dirs[i]);
    sweep_free(&sw);
    // a two-stage sweep without evaluations has nothing to choose by
    f = sweep_file("noeval", "eval_every = 0\nlr = 1e-3, 1e-2\nseed = 0, 1\nselect = lr\n");
    st = test_run(out, sizeof out, "./sweep %s --print 2>&1 >/dev/null", f);
    CHECK(st == 2 &&
              strstr(out,
                     "noeval.sweep:6: select: the choice of lr is by validation accuracy, but point "
                     "'lr=1e-3,seed=0' has eval_every = 0 (expected eval_every > 0)\n"),
          "exit %d: %s", st, out);
}

// The protocol end to end (docs/sweeps.md#two-stage-sweeps, issue: an instrument that cannot
// flatter): 2 rates x 4 seeds on a small cell. The summary reports the held-out seeds (seeds 1-3
// at the chosen rate) with each seed's value and, from 3 values on, mean ± sd; the selection seed
// apart, never averaged; the test set read once per run; chance, lift and effective tokens; every
// layer; the rows answered right and wrong; the recall layer at the best and the last step. With
// one held-out run gone, 2 values are listed without a ±.
TEST(sweep_two_stage_summary_reports_held_out_seeds_with_chance) {
    const char *f = sweep_file("proto",
                               "steps = 6\neval_every = 2\nmixer = softmax\nlr = 3e-3, 1e-2\n"
                               "seed = 0, 1, 2, 3\nselect = lr\n");
    char out[16384];
    int st = test_run(out, sizeof out, "./sweep %s --threads 1 2>&1", f);
    CHECK(st == 0 && strstr(out, "sweep proto: 5 run, 0 skipped"), "%s", out);
    char *md = read_out("proto", "summary.md");
    CHECK(md, "no summary.md");
    const char *groups = strstr(md, "## Grouped over `seed`");
    CHECK(groups && strstr(groups, "selection seed, which chose the value, is listed apart and never averaged"), "%s", md);
    // each header says its split and, for the recall figures, its layer; the share is the window's
    CHECK(strstr(groups, "| best val acc | test acc |") && strstr(groups, "| S_recall (val, share-based recall layer) |") &&
              strstr(groups, "| effective tokens (val, same layer) | answer-window share (val, same layer) | chance |") &&
              strstr(groups, "| lift |") && strstr(groups, "| S_recall right | S_recall wrong |") &&
              strstr(groups, "| selection seed: best val acc, test acc |"),
          "%s", groups);
    // the chosen rate's row: 3 held-out seeds, mean ± sd and the three values; the selection seed apart
    const char *row = strstr(groups, " | softmax | 3/3 |");
    CHECK(row, "%s", groups);
    const char *end = strchr(row + 1, '\n');
    char line[4096];
    snprintf(line, sizeof line, "%.*s", (int)(end - row), row);
    CHECK(strstr(line, " ± ") && strstr(line, "(") && strstr(line, ",seed=0: "), "%s", line);
    // points: the test accuracy and the step it read, every layer, both steps, chance and the split
    const char *points = strstr(md, "## Points");
    CHECK(points && strstr(points, "| tokens per layer | answer-window share per layer |") &&
              strstr(points, "| share-based recall layer (val) at the last step | at the best step |") &&
              strstr(points, ", best)") && strstr(points, "x chance 0.") && strstr(points, "tokens, one-hot") &&
              strstr(points, "| right "),
          "%s", points);
    free(md);
    char *csv = read_out("proto", "summary.csv");
    CHECK(csv && strstr(csv, ",protocol,best_step,test_acc,test_step,test_selected,") &&
              strstr(csv, ",last_recall_chance,last_recall_lift,") && strstr(csv, ",eff_tokens_L1,ans_share_L1,chance_L1"),
          "%.600s", csv);
    free(csv);
    // one held-out run lost: two values, no ± (a spread of two is no spread)
    const char *chosen_line = strstr(out, "chosen: all: lr = ");
    CHECK(chosen_line, "%s", out);
    char lr[16];
    CHECK(sscanf(chosen_line, "chosen: all: lr = %15[^,]", lr) == 1);
    st = test_run(out, sizeof out, "rm -rf '%s/out_proto/lr=%s,seed=3' && ./sweep %s --collect 2>&1", test_tmpdir(), lr, f);
    CHECK(st == 0, "%s", out);
    md = read_out("proto", "summary.md");
    groups = strstr(md, "## Grouped over `seed`");
    row = groups ? strstr(groups, " | softmax | 2/3 |") : NULL;  // the lost one is missing
    CHECK(row, "%s", md);
    end = strchr(row + 1, '\n');
    snprintf(line, sizeof line, "%.*s", (int)(end - row), row);
    CHECK(!strstr(line, "±") && strstr(line, ", "), "%s", line);
    free(md);
}

// One intervention record of a run's best checkpoint (step 10) as ./evaluate writes it; strength
// < 0: a kind without; extra: options after rows=query (another data set), split "val" or "test".
static void fake_iv(FILE *f, const char *kind, double strength, int layer, double acc, double S, const char *split,
                    const char *extra) {
    char opt[128], st[48] = "";
    if (strength >= 0) snprintf(st, sizeof st, ":%g", strength);
    snprintf(opt, sizeof opt, "intervene=%s%s rows=query%s%s", kind, st, *extra ? " " : "", extra);
    fprintf(f,
            "{\"type\":\"intervention\",\"step\":10,\"layer\":%d,\"head\":-1,\"split\":\"%s\",\"options\":\"%s\","
            "\"kind\":\"%s\",",
            layer, split, opt, kind);
    if (strength >= 0) fprintf(f, "\"strength\":%g,", strength);
    fprintf(f,
            "\"rows\":\"query\",\"acc\":%g,\"S_recall\":%g,\"eff_tokens_recall\":2,\"ans_window_share\":0.5,"
            "\"ans_window_chance\":0.25}\n",
            acc, S);
}

// A seed's after_run records: as trained `trained`, layer `causal` the costlier to ablate, a
// flatten curve (eps 0, 0.5) and the oracle there, with a record to leave out of each kind.
static void fake_interventions(const char *dir, int causal, double trained, double half, double oracle) {
    char p[1100];
    snprintf(p, sizeof p, "%s/intervention.jsonl", dir);
    FILE *f = fopenCheck(p, "w");
    for (int l = 0; l < 2; l++) {
        fake_iv(f, "none", -1, l, trained, 0.6, "val", "");
        fake_iv(f, "ablate", -1, l, l == causal ? 0.1 : 0.8, 1, "val", "");
    }
    fake_iv(f, "flatten", 0.5, causal, 0.01, 0.7, "val", "");  // measured again below: replaced
    fake_iv(f, "flatten", 0, causal, trained, 0.6, "val", "");
    fake_iv(f, "flatten", 0.5, causal, half, 0.8, "val", "");
    fake_iv(f, "flatten", 0.5, causal, 0.02, 0.8, "test", "");                    // the test set: not the summary's
    fake_iv(f, "flatten", 0.5, causal, 0.03, 0.8, "val", "mqar_val_examples=8");  // another data set: neither
    fake_iv(f, "oracle", -1, causal, oracle, 0.24, "val", "");
    fake_iv(f, "oracle", -1, 1 - causal, 0.5, 0.24, "val", "");  // the other layer: in the CSV only
    fcloseCheck(f, p);
}

// --collect reads each held-out run's intervention.jsonl: per group, each seed's causal layer (the
// costlier ablation) beside its share-based one and each kind's accuracy on it, the curves' means
// over seeds, every record in summary_interventions.csv, a figure per kind; the selection seed
// and records of another split or data set stay out, and removed records take it all away.
TEST(sweep_collect_summarises_interventions_of_held_out_seeds) {
    const char *f = sweep_file("ivs", "mixer = softmax\nlr = 3e-3, 1e-2\nseed = 0, 1, 2\nselect = lr\n");
    char dir[900], out[8192];
    const char *names[] = {"lr=3e-3,seed=0", "lr=1e-2,seed=0", "lr=1e-2,seed=1", "lr=1e-2,seed=2"};
    const double acc[] = {0.5, 0.9, 0.8, 0.7};
    for (int i = 0; i < 4; i++) {
        snprintf(dir, sizeof dir, "%s/out_ivs/%s", test_tmpdir(), names[i]);
        fake_run(dir, acc[i]);
        if (i >= 1) fake_interventions(dir, i == 3 ? 0 : 1, i == 1 ? 0.333 : acc[i], i == 2 ? 0.6 : 0.4, 0.95);
    }
    int st = test_run(out, sizeof out, "./sweep %s --collect 2>&1", f);
    CHECK(st == 0 && strstr(out, "summary_interventions.csv") && strstr(out, "intervention_flatten_groups.svg"), "%s", out);
    char *md = read_out("ivs", "summary.md");
    const char *iv = md ? strstr(md, "## Interventions") : NULL;
    CHECK(iv && strstr(iv, "## Points") > iv, "%s", md ? md : "no summary.md");
    // the selection seed's 0.333 as trained is not there; the two held-out seeds are, in point order
    CHECK(strstr(iv,
                 "| 1e-2 | softmax | 2 | -, - | L1, L0 | -, - | 0.8000, 0.7000 | 0.8000, 0.1000 | 0.1000, 0.8000 | - | - | - | "
                 "0.9500, 0.9500 | - | - |"),
          "%s", iv);
    CHECK(!strstr(iv, "0.3330"), "%s", iv);
    // flatten's curve: eps 0 and 0.5 (the later record, neither the test set's nor the other data's)
    CHECK(strstr(iv, "| eps 0 | eps 0.5 |") && strstr(iv, "| 1e-2 | softmax | 0.750 (0.60) | 0.500 (0.80) |"), "%s", iv);
    CHECK(!strstr(iv, "**topk**"), "%s", iv);  // no records of the kind, no table
    free(md);
    char *csv = read_out("ivs", "summary_interventions.csv");
    CHECK(csv && strstr(csv, "point,lr,seed,mixer,in_tables,step,causal_layer,kind,layer,strength,acc,S_recall,"),
          "%.300s", csv ? csv : "no csv");
    CHECK(strstr(csv, "\"lr=1e-2,seed=0\",1e-2,0,softmax,0,10,1,none,0,,0.333,0.6,2,0.5,0.25,,,,,,,,,,\n") &&
              strstr(csv, "\"lr=1e-2,seed=2\",1e-2,2,softmax,1,10,0,oracle,1,,0.5,0.24,"),
          "%s", csv);
    CHECK(!strstr(csv, "0.02,") && !strstr(csv, "0.03,") && !strstr(csv, "0.01,"), "%s", csv);
    free(csv);
    char p[1024];
    snprintf(p, sizeof p, "%s/out_ivs/intervention_oracle_groups.svg", test_tmpdir());
    CHECK(path_exists(p), "%s", p);
    snprintf(p, sizeof p, "%s/out_ivs/intervention_topk_groups.svg", test_tmpdir());
    CHECK(!path_exists(p), "%s", p);
    // the records gone: so are the section, the CSV and the figures
    st = test_run(out, sizeof out, "rm %s/out_ivs/*/intervention.jsonl && ./sweep %s --collect 2>&1", test_tmpdir(), f);
    CHECK(st == 0, "%s", out);
    md = read_out("ivs", "summary.md");
    CHECK(md && !strstr(md, "## Interventions") && !strstr(md, "_groups.svg"), "%s", md ? md : "");
    free(md);
    snprintf(p, sizeof p, "%s/out_ivs/summary_interventions.csv", test_tmpdir());
    CHECK(!path_exists(p), "%s", p);
    snprintf(p, sizeof p, "%s/out_ivs/intervention_oracle_groups.svg", test_tmpdir());
    CHECK(!path_exists(p), "%s", p);
}

// Provenance (docs/sweeps.md#the-summary): summary.md lists each commit, compiler, CPU and GEMM
// kernel of the runs with its count, summary.csv has them per point, and a sweep whose runs
// differ in one of them is warned about, in the file and on the log; one provenance, no warning.
TEST(sweep_summary_lists_provenance_and_warns_when_runs_mix_it) {
    const char *f = sweep_file("prov", "mixer = softmax\nseed = 0, 1, 2\n");
    char dir[900], out[8192], log[1024];
    const char *cpu[3] = {"CPU A", "CPU A", "CPU B, rev 2"};
    for (int i = 0; i < 3; i++) {
        snprintf(dir, sizeof dir, "%s/out_prov/seed=%d", test_tmpdir(), i);
        snprintf(log, sizeof log,
                 "{\"type\":\"run\",\"step\":0,\"mixer\":\"softmax\",\"protocol\":2,\"commit\":\"c0ffee\","
                 "\"compiler\":\"12.2.0\",\"cpu\":\"%s\",\"gemm\":\"avx2\"}\n"
                 "{\"type\":\"eval\",\"step\":10,\"split\":\"val\",\"loss\":1,\"acc\":0.5}\n"
                 "{\"type\":\"done\",\"step\":10,\"reason\":\"steps\"}\n",
                 cpu[i]);
        fake_log(dir, log);
    }
    int st = test_run(out, sizeof out, "./sweep %s --collect 2>&1", f);
    CHECK(st == 0 && strstr(out, "summary: warning: the runs of sweep 'prov' differ in CPU (summary.md#provenance)\n"),
          "%s", out);
    char *md = read_out("prov", "summary.md");
    const char *p = md ? strstr(md, "## Provenance") : NULL;
    CHECK(p &&
              strstr(p,
                     "- commit: `c0ffee` (3)\n- compiler: `12.2.0` (3)\n- CPU: `CPU A` (2), `CPU B, rev 2` (1)\n"
                     "- GEMM kernel: `avx2` (3)\n") &&
              strstr(p, "**Warning: the runs of this sweep differ in CPU**"),
          "%s", md ? md : "no summary.md");
    free(md);
    char *csv = read_out("prov", "summary.csv");
    CHECK(csv && strstr(csv, ",test_selected,test_acc_lo,test_acc_hi,verdict,commit,compiler,cpu,gemm,") &&
              strstr(csv, ",c0ffee,12.2.0,\"CPU B, rev 2\",avx2,"),
          "%.2000s", csv ? csv : "no csv");
    free(csv);
    // one CPU: listed, no warning
    snprintf(dir, sizeof dir, "%s/out_prov/seed=2/metrics.jsonl", test_tmpdir());
    snprintf(log, sizeof log, "sed -i 's/CPU B, rev 2/CPU A/' '%s' && ./sweep %s --collect 2>&1", dir, f);
    st = test_run(out, sizeof out, "%s", log);
    CHECK(st == 0 && !strstr(out, "warning"), "%s", out);
    md = read_out("prov", "summary.md");
    CHECK(md && strstr(md, "- CPU: `CPU A` (3)\n") && !strstr(md, "Warning"), "%s", md ? md : "no summary.md");
    free(md);
}

// Verdicts (docs/mqar.md#verdicts): each seed's test accuracy with its 95% interval and verdict,
// solves (lower end >= 0.99), fails (upper end < 0.99) or undecided; the group counts each, and
// a seed of an older log (no interval) is counted apart.
TEST(sweep_summary_gives_each_seed_a_verdict_from_its_interval) {
    const char *f = sweep_file("verdict", "mixer = softmax\nseed = 0, 1, 2, 3\n");
    char dir[900], log[1024], out[4096];
    const double acc[4][3] = {{0.9925, 0.9910, 0.9940}, {0.9905, 0.9888, 0.9921}, {0.9880, 0.9860, 0.9895}, {0.995, 0, 0}};
    for (int i = 0; i < 4; i++) {
        char iv[96] = "";
        if (i < 3) snprintf(iv, sizeof iv, ",\"examples\":3000,\"acc_lo\":%.4f,\"acc_hi\":%.4f", acc[i][1], acc[i][2]);
        snprintf(dir, sizeof dir, "%s/out_verdict/seed=%d", test_tmpdir(), i);
        snprintf(log, sizeof log,
                 "{\"type\":\"run\",\"step\":0,\"mixer\":\"softmax\",\"protocol\":2}\n"
                 "{\"type\":\"eval\",\"step\":10,\"split\":\"val\",\"loss\":1,\"acc\":0.995}\n"
                 "{\"type\":\"eval\",\"step\":10,\"split\":\"test\",\"selected\":\"best\",\"loss\":1,\"acc\":%.4f%s}\n"
                 "{\"type\":\"done\",\"step\":10,\"reason\":\"stop_at_acc\"}\n",
                 acc[i][0], iv);
        fake_log(dir, log);
    }
    int st = test_run(out, sizeof out, "./sweep %s --collect 2>&1", f);
    CHECK(st == 0, "%s", out);
    char *md = read_out("verdict", "summary.md");
    CHECK(md && strstr(md, "| 0.9925 [0.9910, 0.9940] solves (10, best) |") &&
              strstr(md, "| 0.9905 [0.9888, 0.9921] undecided (10, best) |") &&
              strstr(md, "| 0.9880 [0.9860, 0.9895] fails (10, best) |") && strstr(md, "| 0.9950 (10, best) |"),
          "%s", md ? md : "no summary.md");
    CHECK(strstr(md, "| test verdicts: solve / undecided / fail |") &&
              strstr(md, "| 4/4 | 4/4 | 0/4 | 1 / 1 / 1 (1 without an interval) |"),
          "%s", md);
    free(md);
    char *csv = read_out("verdict", "summary.csv");
    CHECK(csv && strstr(csv, ",test_selected,test_acc_lo,test_acc_hi,verdict,commit,") &&
              strstr(csv, ",0.9888,0.9921,undecided,") && strstr(csv, ",0.986,0.9895,fails,"),
          "%.3000s", csv ? csv : "no csv");
    free(csv);
    char *groups = read_out("verdict", "summary_groups.csv");
    CHECK(groups && strstr(groups, ",solves,undecided,fails,no_interval\n") && strstr(groups, ",1,1,1,1\n"), "%s",
          groups ? groups : "no groups csv");
    free(groups);
}

// held_out (docs/sweeps.md#held-out-settings): the held-out points (a two-stage sweep's second
// stage) run with its values, the selection seed with the file's, and the folder names stay;
// a key the file does not set is added; an axis or a malformed setting is refused, naming the line.
TEST(sweep_held_out_settings_change_only_the_held_out_points) {
    SweepFile sw;
    char err[512];
    CHECK(parse("steps = 5\nstop_at_acc = 0.99\nlr = 1e-3, 1e-2\nseed = 0, 1\nselect = lr\n"
                "held_out = stop_at_acc=0.999 mqar_val_examples=4000\n",
                &sw, err, sizeof err) == 0,
          "%s", err);
    // points: lr * 2 + seed; seed 0 is the first stage
    for (int i = 0; i < 4; i++) {
        int held = i % 2 == 1;
        CHECK(sweep_point_held_out(&sw, i) == held, "point %d", i);
        char **argv = sweep_point_argv(&sw, i, "./train", 0);
        char line[1024] = "";
        for (char **a = argv; *a; a++) snprintf(line + strlen(line), sizeof line - strlen(line), " %s", *a);
        sweep_free_argv(argv);
        const char *want = held ? " ./train /dev/null steps=5 stop_at_acc=0.999 lr=1e-"
                                : " ./train /dev/null steps=5 stop_at_acc=0.99 lr=1e-";
        CHECK(!strncmp(line, want, strlen(want)) && (strstr(line, " mqar_val_examples=4000 out_dir=") != NULL) == held,
              "point %d:%s", i, line);
    }
    CHECK(!strcmp(sw.point_names[1], "lr=1e-3,seed=1"), "%s", sw.point_names[1]);
    sweep_free(&sw);
    // without select every point is held out
    CHECK(parse("seed = 0, 1\nheld_out = stop_at_acc=0.999\n", &sw, err, sizeof err) == 0, "%s", err);
    CHECK(sweep_point_held_out(&sw, 0) && sweep_point_held_out(&sw, 1));
    sweep_free(&sw);
    const BadInput bad[] = {
        {"lr = 1e-3, 1e-2\nseed = 0, 1\nheld_out = lr=1e-2\n",
         "x.sweep:3: held_out: lr is an axis of this sweep (expected keys that are fixed or not set)"},
        {"seed = 0, 1\nheld_out = stop_at_acc\n",
         "x.sweep:2: held_out: expected KEY=VALUE settings separated by spaces, got 'stop_at_acc'"},
        {"seed = 0, 1\nheld_out = steps=1 steps=2\n", "x.sweep:2: held_out: steps set twice"},
        {"seed = 0, 1\nheld_out = out_dir=x\n", "x.sweep:2: held_out: out_dir: the sweep sets each point's out_dir"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        CHECK(parse(bad[k].in, &sw, err, sizeof err) != 0 && !strcmp(err, bad[k].want), "%s\ngot: %s", bad[k].in, err);
    }
    // a value the config refuses: exit 2 before anything runs, naming the line
    const char *f = sweep_file("heldbad", "seed = 0, 1\nheld_out = stop_at_acc=abc\n");
    char out[2048];
    int st = test_run(out, sizeof out, "./sweep %s --print 2>&1 >/dev/null", f);
    CHECK(st == 2 && strstr(out, "heldbad.sweep:4: held_out: stop_at_acc: expected a non-negative number, got 'abc'\n"),
          "exit %d: %s", st, out);
}

// A finished run of sweep `name`'s point seed=<seed> (best accuracy 0.9) and its
// intervention.jsonl opened for the test to write records into (its path in p).
static FILE *fake_seed_log(const char *name, int seed, char *p, size_t n) {
    char dir[900];
    snprintf(dir, sizeof dir, "%s/out_%s/seed=%d", test_tmpdir(), name, seed);
    fake_run(dir, 0.9);
    snprintf(p, n, "%s/intervention.jsonl", dir);
    return fopenCheck(p, "w");
}

// The lag oracle in the summary (docs/interventions.md#the-lag-oracle): per seed the best lag at
// the causal layer beside its control, "not valid" where it does not beat the control by more
// than the control's interval is wide; the group counts the seeds it is valid for; the CSV
// carries each record's interval.
TEST(sweep_summary_reads_the_lag_oracle_with_its_control) {
    const char *f = sweep_file("lag", "mixer = mamba2\nseed = 0, 1\n");
    char p[1100], out[8192];
    for (int i = 0; i < 2; i++) {
        FILE *fp = fake_seed_log("lag", i, p, sizeof p);
        for (int l = 0; l < 2; l++) fake_iv(fp, "ablate", -1, l, l == 1 ? 0.1 : 0.8, 1, "val", "");
        // seed 0 reads at lag 1 (1.0 against 0.01); seed 1's best lag barely beats its control
        const double lag[2][2] = {{0.0003, 1.0}, {0.05, 0.06}}, ctrl[2][2] = {{0.01, 0.01}, {0.04, 0.05}};
        for (int k = 0; k < 2; k++) {
            fprintf(fp,
                    "{\"type\":\"intervention\",\"step\":10,\"layer\":1,\"head\":-1,\"split\":\"val\",\"options\":"
                    "\"intervene=oracle_lag:%d rows=query\",\"kind\":\"oracle_lag\",\"strength\":%d,\"rows\":\"query\","
                    "\"acc\":%g,\"acc_lo\":%g,\"acc_hi\":%g,\"S_recall\":0.25}\n",
                    k, k, lag[i][k], lag[i][k] - 0.005, lag[i][k] + 0.005);
            fprintf(fp,
                    "{\"type\":\"intervention\",\"step\":10,\"layer\":1,\"head\":-1,\"split\":\"val\",\"options\":"
                    "\"intervene=oracle_lag_control:%d rows=query\",\"kind\":\"oracle_lag_control\",\"strength\":%d,"
                    "\"rows\":\"query\",\"acc\":%g,\"acc_lo\":%g,\"acc_hi\":%g,\"S_recall\":0.25}\n",
                    k, k, ctrl[i][k], ctrl[i][k] - 0.006, ctrl[i][k] + 0.006);
        }
        fcloseCheck(fp, p);
    }
    int st = test_run(out, sizeof out, "./sweep %s --collect 2>&1", f);
    CHECK(st == 0, "%s", out);
    char *md = read_out("lag", "summary.md");
    const char *lag = md ? strstr(md, "**The lag oracle**") : NULL;
    CHECK(lag && strstr(lag, "| valid for | each seed |") &&
              strstr(lag, "| 1/2 | lag 1: 1.0000 (control 0.0100); not valid: lag 1: 0.0600 (control 0.0500) |"),
          "%s", md ? md : "no summary.md");
    free(md);
    char *csv = read_out("lag", "summary_interventions.csv");
    CHECK(csv &&
              strstr(csv,
                     ",ans_window_chance,acc_lo,acc_hi,acc_permuted,contrib_share,contrib_chance,contrib_window_share,"
                     "contrib_window_chance,ans_margin,ans_window_margin,patch_follows\n") &&
              strstr(csv, ",oracle_lag_control,1,1,0.01,0.25,,,,0.004,0.016,,,,,,,,\n"),
          "%s", csv ? csv : "no csv");
    free(csv);
}

// Contribution share in the summary (docs/interventions.md#contribution-share): the model as
// trained on each seed's causal layer, the window's weight and contribution shares beside their
// chance, and the margin over the next value; on a point map the answer's own.
TEST(sweep_summary_gives_the_contribution_share_with_its_chance) {
    const char *f = sweep_file("contrib", "mixer = mamba2\nseed = 0, 1\n");
    char p[1100], out[8192];
    for (int i = 0; i < 2; i++) {
        FILE *fp = fake_seed_log("contrib", i, p, sizeof p);
        for (int l = 0; l < 2; l++) fake_iv(fp, "ablate", -1, l, l == 1 ? 0.1 : 0.8, 1, "val", "");
        fprintf(fp,
                "{\"type\":\"intervention\",\"step\":10,\"layer\":1,\"head\":-1,\"split\":\"val\",\"options\":"
                "\"intervene=none rows=query\",\"kind\":\"none\",\"rows\":\"query\",\"acc\":0.9,\"S_recall\":0.3,"
                "\"ans_share\":0.1,\"ans_chance\":0.05,\"ans_window_share\":0.5%d,\"ans_window_chance\":0.2,"
                "\"contrib_share\":0.12,\"contrib_chance\":0.06,\"contrib_window_share\":0.6%d,"
                "\"contrib_window_chance\":0.25,\"ans_margin\":-0.1,\"ans_window_margin\":0.3%d}\n",
                i, i, i);
        fcloseCheck(fp, p);
    }
    int st = test_run(out, sizeof out, "./sweep %s --collect 2>&1", f);
    CHECK(st == 0, "%s", out);
    char *md = read_out("contrib", "summary.md");
    const char *c = md ? strstr(md, "**Contribution share**") : NULL;
    CHECK(c && strstr(c, "| weight share | chance | contribution share | chance | margin over the next value |") &&
              strstr(c, "| 0.500, 0.510 | 0.200, 0.200 | 0.600, 0.610 | 0.250, 0.250 | 0.300, 0.310 |"),
          "%s", md ? md : "no summary.md");
    free(md);
}

// Activation patching names the causal recall layer where the runs have patch records
// (docs/interventions.md#activation-patching): seed 0's patch of layer 0 moves 0.9 of the changed
// answers, layer 1's 0.2, while ablating layer 1 costs more: the figures are read on layer 0 and
// both rules are listed. Seed 1 has no patch that moved an answer: the ablation's layer.
TEST(sweep_summary_takes_the_causal_layer_from_patching) {
    const char *f = sweep_file("patch", "mixer = softmax\nseed = 0, 1\n");
    char p[1100], out[8192];
    for (int i = 0; i < 2; i++) {
        FILE *fp = fake_seed_log("patch", i, p, sizeof p);
        for (int l = 0; l < 2; l++) {
            fake_iv(fp, "ablate", -1, l, l == 1 ? 0.1 : 0.8, 1, "val", "");
            fake_iv(fp, "oracle", -1, l, l == 0 ? 0.97 : 0.55, 0.24, "val", "");
            fprintf(fp,
                    "{\"type\":\"intervention\",\"step\":10,\"layer\":%d,\"head\":-1,\"split\":\"val\",\"options\":"
                    "\"intervene=patch rows=query\",\"kind\":\"patch\",\"rows\":\"query\",\"acc\":0.5,\"patch_rows\":40,"
                    "\"patch_follows\":%g,\"patch_control\":0.01}\n",
                    l,
                    i == 1       ? 0.0
                        : l == 0 ? 0.9
                                 : 0.2);
        }
        fcloseCheck(fp, p);
    }
    int st = test_run(out, sizeof out, "./sweep %s --collect 2>&1", f);
    CHECK(st == 0, "%s", out);
    char *md = read_out("patch", "summary.md");
    const char *iv = md ? strstr(md, "## Interventions") : NULL;
    CHECK(iv && strstr(iv, "| runs | causal recall layer: by patching | by ablation | by share (val, best step) | as trained (val acc) |") &&
              strstr(iv, "| softmax | 2 | L0, - | L1, L1 | -, - |") && strstr(iv, "| 0.9700, 0.5500 | - | - |"),
          "%s", md ? md : "no summary.md");
    free(md);
    char *csv = read_out("patch", "summary_interventions.csv");
    CHECK(csv && strstr(csv, "seed=0,0,softmax,1,10,0,patch,0,,0.5,") && strstr(csv, ",0.9\n") &&
              strstr(csv, "seed=1,1,softmax,1,10,1,patch,0,"),
          "%s", csv ? csv : "no csv");
    free(csv);
}
