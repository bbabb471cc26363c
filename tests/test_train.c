// The train program end to end (it is the float build; these cases run it as a subprocess).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/io.h"
#include "core/provenance.h"
#include "core/run_dir.h"
#include "core/runlog.h"
#include "tests/test.h"
#include "trainer/checkpoint.h"

// A tiny MQAR run: 2 layers, d_model 16, about a second.
#define TINY                                                                                                           \
    "vocab_size=64 seq_len=32 mqar_kv_pairs=4 mqar_train_examples=512 "                                                \
    "mqar_test_examples=64 mqar_val_examples=64 d_model=16 n_head=2 batch_size=16 lr=3e-3 log_every=1 eval_every=10"

static const char *tiny_conf(void) { return test_write_file("tiny.conf", "mixer = softmax\nmlp = false\n"); }

// Loss values of train records, in order, as text (so bit-identity is string equality).
static char *train_losses(const char *metrics_path) {
    char *text = read_file_text(metrics_path, NULL);
    CHECK(text, "cannot read %s", metrics_path);
    char *out = callocCheck(strlen(text) + 1, 1);
    for (char *p = text; (p = strstr(p, "\"type\":\"train\"")); p++) {
        char *l = strstr(p, "\"loss\":");
        char *e = strchr(l, ',');
        strncat(out, l, (size_t)(e - l + 1));
    }
    free(text);
    return out;
}

TEST(train_same_seed_gives_bit_identical_losses) {
    const char *conf = tiny_conf();
    char out[4096];
    for (int run = 0; run < 2; run++) {
        int st = test_run(out, sizeof out, "./train %s " TINY " steps=30 out_dir=%s/run%d", conf, test_tmpdir(), run);
        CHECK(st == 0, "exit %d: %s", st, out);
    }
    char p0[512], p1[512];
    snprintf(p0, sizeof p0, "%s/run0/metrics.jsonl", test_tmpdir());
    snprintf(p1, sizeof p1, "%s/run1/metrics.jsonl", test_tmpdir());
    char *a = train_losses(p0), *b = train_losses(p1);
    CHECK(strlen(a) > 100, "%s", a);
    CHECK(!strcmp(a, b), "runs differ:\n%s\n%s", a, b);
    // the loss falls
    double first = atof(strstr(a, ":") + 1), last = atof(strrchr(a, ':') + 1);
    CHECK(last < first - 0.1, "loss %g -> %g", first, last);
}

TEST(train_writes_effective_config_that_runs_again) {
    const char *conf = tiny_conf();
    char out[4096];
    int st = test_run(out, sizeof out, "./train %s " TINY " steps=3 out_dir=%s/a", conf, test_tmpdir());
    CHECK(st == 0, "%s", out);
    st = test_run(out, sizeof out, "./train %s/a/config.conf out_dir=%s/b", test_tmpdir(), test_tmpdir());
    CHECK(st == 0, "%s", out);
    char pa[512], pb[512];
    snprintf(pa, sizeof pa, "%s/a/metrics.jsonl", test_tmpdir());
    snprintf(pb, sizeof pb, "%s/b/metrics.jsonl", test_tmpdir());
    char *a = train_losses(pa), *b = train_losses(pb);
    CHECK(!strcmp(a, b), "rerun of config.conf differs:\n%s\n%s", a, b);
    snprintf(pa, sizeof pa, "%s/a/config.conf", test_tmpdir());
    char *text = read_file_text(pa, NULL);
    CHECK(strstr(text, "vocab_size = 64") && strstr(text, "mixer = softmax") && strstr(text, "seq_len = 32"), "%s", text);
}

// The test record's per-example counts (docs/mqar.md#verdicts), read back: their accuracy and
// the record's interval around it.
typedef struct {
    long examples, n_queries, n_correct, n_items;
    double acc, lo, hi;
} TestRecord;
static int read_test_record(const RunlogRecord *r, void *ctx) {
    TestRecord *t = ctx;
    if (r->type != RUNLOG_EVAL || strcmp(r->split, "test")) return 0;
    t->examples = runlog_int(r, "examples", -1);
    t->acc = runlog_num(r, "acc"), t->lo = runlog_num(r, "acc_lo"), t->hi = runlog_num(r, "acc_hi");
    const JsonValue *q = runlog_get(r, "example_queries"), *c = runlog_get(r, "example_correct");
    if (!q || !c || q->type != JSON_ARRAY || c->type != JSON_ARRAY || q->n != c->n) return 0;
    t->n_items = q->n;
    for (int i = 0; i < q->n; i++) t->n_queries += q->items[i].integer, t->n_correct += c->items[i].integer;
    return 0;
}

TEST(train_metrics_records_follow_design) {
    const char *conf = tiny_conf();
    char out[4096];
    int st = test_run(out, sizeof out, "./train %s " TINY " steps=10 out_dir=%s/m", conf, test_tmpdir());
    CHECK(st == 0, "%s", out);
    char p[512];
    snprintf(p, sizeof p, "%s/m/metrics.jsonl", test_tmpdir());
    char *text = read_file_text(p, NULL);
    CHECK(strstr(text, "{\"type\":\"train\",\"step\":1,\"loss\":"), "%s", text);
    CHECK(strstr(text, "\"grad_norm\":") && strstr(text, "\"tok_per_s\":") && strstr(text, "\"ms_per_step\":"));
    CHECK(strstr(text, "{\"type\":\"eval\",\"step\":0,\"split\":\"val\",\"loss\":"), "%s", text);
    CHECK(strstr(text, "{\"type\":\"eval\",\"step\":10,\"split\":\"val\",\"loss\":"), "%s", text);
    int lines = 0;
    for (char *q = text; *q; q++) lines += *q == '\n';
    CHECK(lines == 15, "%d lines", lines);  // run + 10 train + eval at 0 and 10 + test + done
    // the test set, read once at the end on the best validation step's weights, before done
    const char *test = strstr(text, "\"split\":\"test\",\"selected\":\"best\"");
    CHECK(test && strstr(test, "{\"type\":\"done\""), "%s", text);
    // with each of the 64 test examples' counts (4 queries each) and the interval of acc over them
    TestRecord t = {0};
    runlog_each_text(text, strlen(text), read_test_record, &t);
    CHECK(t.examples == 64 && t.n_items == 64 && t.n_queries == 64 * 4, "%ld examples, %ld items, %ld queries",
          t.examples, t.n_items, t.n_queries);
    CHECK(fabs((double)t.n_correct / t.n_queries - t.acc) < 1e-8 && t.lo <= t.acc && t.acc <= t.hi && t.lo < t.hi,
          "acc %.6f from counts %.6f, interval [%.6f, %.6f]", t.acc, (double)t.n_correct / t.n_queries, t.lo, t.hi);
    // the run record first: the state each layer carries (softmax: K and V caches, 2 x 32 x 16)
    CHECK(!strncmp(text, "{\"type\":\"run\",\"step\":0,\"mixer\":\"softmax\",\"protocol\":2,\"params\":", 59), "%s", text);
    CHECK(strstr(text, "\"state_floats\":1024,\"state_floats_by_layer\":[1024,1024],"), "%s", text);
    // then its provenance: the build's commit and compiler, the CPU, and the float GEMM kernel it
    // runs (avx512..., avx2..., neon..., portable; this double-precision runner's own is another)
    char prov[1024];
    snprintf(prov, sizeof prov, "[1024,1024],\"commit\":\"%s\",\"compiler\":\"%s\",\"cpu\":\"%s\",\"gemm\":\"",
             provenance_commit(), provenance_compiler(), provenance_cpu());
    const char *gemm = strstr(text, prov);
    CHECK(gemm && strchr("apn", gemm[strlen(prov)]) && gemm[strlen(prov) + 1] != '"', "%s\nwanted %s", text, prov);
    CHECK(strstr(text, "{\"type\":\"done\",\"step\":10,\"reason\":\"steps\"}\n"), "%s", text);
}

TEST(train_bad_input_exits_2_with_one_line) {
    char out[4096];
    const char *bad = test_write_file("bad.conf", "d_model = 64\nn_heads = 2\n");
    int st = test_run(out, sizeof out, "./train %s", bad);
    CHECK(st == 2, "exit %d", st);
    CHECK(strstr(out, "bad.conf:2: unknown key 'n_heads' (did you mean 'n_head'?)\n") && !strchr(strchr(out, '\n') + 1, '\n'),
          "%s", out);
    st = test_run(out, sizeof out, "./train %s/none.conf", test_tmpdir());
    CHECK(st == 2 && strstr(out, "none.conf: cannot open config"), "%d %s", st, out);
    st = test_run(out, sizeof out, "./train %s " TINY " d_model=30 n_head=4 out_dir=%s/x", tiny_conf(), test_tmpdir());
    CHECK(st == 2 && strstr(out, "n_head: d_model 30 is not divisible by n_head 4"), "%d %s", st, out);
    st = test_run(out, sizeof out, "./train %s " TINY " seq_len=63 out_dir=%s/x", tiny_conf(), test_tmpdir());
    CHECK(st == 2 && strstr(out, "mqar:"), "%d %s", st, out);
    // a missing tokenizer is refused before any training (nothing printed but the error)
    st = test_run(out, sizeof out, "./train %s " TINY " sample_every=5 tokenizer=%s/no.bpe out_dir=%s/x", tiny_conf(),
                  test_tmpdir(), test_tmpdir());
    CHECK(st == 2 && strstr(out, "tokenizer: ") && strstr(out, "no.bpe") && !strchr(strchr(out, '\n') + 1, '\n'),
          "%d %s", st, out);
}

TEST(train_export_data_writes_task_sets) {
    char out[4096];
    int st = test_run(out, sizeof out, "./train %s " TINY " export_data=%s/ex", tiny_conf(), test_tmpdir());
    CHECK(st == 0, "%s", out);
    char p[512];
    snprintf(p, sizeof p, "%s/ex/train.bin", test_tmpdir());
    FILE *f = fopenCheck(p, "rb");
    int hdr[256];
    freadCheck(hdr, sizeof(int), 256, f, p);
    CHECK(hdr[0] == 20241122 && hdr[1] == 1 && hdr[2] == 512 && hdr[3] == 32, "%d %d %d %d", hdr[0], hdr[1], hdr[2], hdr[3]);
    fclose(f);
}

TEST(train_non_finite_loss_stops_or_skips) {
    char out[8192];
    // lr 1e30 makes the weights about 1e30 after the first step, so step 2's products overflow
    // float in any build (at 1e12 the loss of step 2 was 1e21, finite, without FMA)
    const char *args = TINY " optimizer=sgd lr=1e30 steps=6 eval_every=0 save_every=3";
    int st = test_run(out, sizeof out, "./train %s %s out_dir=%s/stop", tiny_conf(), args, test_tmpdir());
    CHECK(st == 1 && strstr(out, "step 2: non-finite value, first in the loss") &&
              strstr(out, "the last good checkpoint is") && strstr(out, "ckpt_00000000"),
          "%d %s", st, out);
    char p[512];
    snprintf(p, sizeof p, "%s/stop/ckpt_00000003.safetensors", test_tmpdir());
    CHECK(!path_exists(p), "saved a checkpoint after the non-finite step");
    st = test_run(out, sizeof out, "./train %s %s nan_policy=skip out_dir=%s/skip", tiny_conf(), args, test_tmpdir());
    CHECK(st == 0 && strstr(out, "update skipped"), "%d %s", st, out);
    snprintf(p, sizeof p, "%s/skip/metrics.jsonl", test_tmpdir());
    char *text = read_file_text(p, NULL);
    CHECK(strstr(text, "{\"type\":\"nan\",\"step\":2,\"where\":\"the loss\",\"action\":\"skip\",\"skipped\":1}"), "%s", text);
}

TEST(train_bit_identical_for_one_and_two_threads) {
    char out[4096];
    const char *conf = tiny_conf();
    for (int t = 1; t <= 2; t++) {
        int st = test_run(out, sizeof out,
                          "./train %s " TINY
                          " mlp=true seq_len=64 vocab_size=512 d_model=64 batch_size=48 steps=6 threads=%d out_dir=%s/t%d",
                          conf, t, test_tmpdir(), t);
        CHECK(st == 0, "%s", out);
    }
    char p1[512], p2[512];
    snprintf(p1, sizeof p1, "%s/t1/metrics.jsonl", test_tmpdir());
    snprintf(p2, sizeof p2, "%s/t2/metrics.jsonl", test_tmpdir());
    char *a = train_losses(p1), *b = train_losses(p2);
    CHECK(strlen(a) > 50 && !strcmp(a, b), "1 thread:\n%s\n2 threads:\n%s", a, b);
}

// stop_at_acc ends the run at the evaluation that reaches it, with a done record, a checkpoint
// and the attention sparsity of that final step (even off the sparsity_every grid).
TEST(train_stop_at_acc_ends_with_done_checkpoint_and_sparsity) {
    const char *conf = tiny_conf();
    char out[4096];
    int st = test_run(out, sizeof out,
                      "./train %s " TINY " steps=200 eval_every=3 sparsity_every=1000 stop_at_acc=0.02 out_dir=%s/s",
                      conf, test_tmpdir());
    CHECK(st == 0 && strstr(out, ">= stop_at_acc 0.02: stopping at step "), "%s", out);
    long step = atol(strstr(out, "stopping at step ") + 17);
    CHECK(step > 0 && step < 200 && step % 3 == 0, "step %ld", step);
    char p[512], want[128];
    snprintf(p, sizeof p, "%s/s/metrics.jsonl", test_tmpdir());
    char *text = read_file_text(p, NULL);
    snprintf(want, sizeof want, "{\"type\":\"done\",\"step\":%ld,\"reason\":\"stop_at_acc\"}\n", step);
    CHECK(text && strstr(text, want), "%s", text);
    snprintf(p, sizeof p, "%s/s/sparsity.jsonl", test_tmpdir());
    char *sp = read_file_text(p, NULL);
    snprintf(want, sizeof want, "{\"type\":\"sparsity\",\"step\":%ld,\"layer\":1,\"head\":1,", step);
    CHECK(sp && strstr(sp, "{\"type\":\"sparsity\",\"step\":0,") && strstr(sp, want),
          "no final sparsity record for step %ld:\n%s", step, sp);
    snprintf(p, sizeof p, "%s/s/ckpt_%08ld.safetensors", test_tmpdir(), step);
    CHECK(path_exists(p), "%s missing", p);
    // the same command again finds the run complete and leaves it as it is
    char again[4096];
    st = test_run(again, sizeof again,
                  "./train %s " TINY " steps=200 eval_every=3 sparsity_every=1000 stop_at_acc=0.02 out_dir=%s/s", conf,
                  test_tmpdir());
    CHECK(st == 0 && strstr(again, "the run is complete") && strstr(again, "nothing to do"), "%s", again);
    snprintf(p, sizeof p, "%s/s/metrics.jsonl", test_tmpdir());
    char *text2 = read_file_text(p, NULL);
    CHECK(text2 && !strcmp(text, text2), "metrics.jsonl changed");
    // an explicit checkpoint trains on
    snprintf(p, sizeof p, "%s/s/ckpt_%08ld.safetensors", test_tmpdir(), step);
    st = test_run(again, sizeof again,
                  "./train %s " TINY
                  " steps=200 eval_every=3 sparsity_every=1000 stop_at_acc=0.9 resume=%s stop_at_step=%ld out_dir=%s/s",
                  conf, p, step + 2, test_tmpdir());
    CHECK(st == 0 && strstr(again, "resuming from") && strstr(again, "stop_at_step"), "%s", again);
    free(text), free(text2), free(sp);
}

// vocab_size 16777216, d_model 100000, batch_size 1e9, mqar_train_examples 1e9 allocated or
// generated for minutes, then exited 1 "out of memory". Refused at the start, naming the key.
TEST(train_refuses_a_run_that_cannot_fit_in_memory_naming_the_key) {
    static const BadInput cases[] = {
        {"mqar_train_examples=1000000000", "command line: mqar_train_examples = 1000000000: the run needs"},
        {"batch_size=1000000000", "command line: batch_size = 1000000000: the run needs at least"},
        {"d_model=100000", "command line: d_model = 100000: the run needs"},
        {"vocab_size=16777216 max_memory=4", "command line: vocab_size = 16777216: the run needs"},
        {"n_layer=64 d_model=1024 max_memory=2", "command line: n_layer = 64: the run needs"},
        {"mqar_test_examples=200000 max_memory=0.01", "mqar_test_examples = 200000: the run needs"},
    };
    char out[4096];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int st = test_run(out, sizeof out, "./train /dev/null seq_len=64 %s out_dir=%s/big%zu 2>&1 >/dev/null",
                          cases[i].in, test_tmpdir(), i);
        CHECK(st == 2 && strstr(out, cases[i].want) && strchr(out, '\n') == out + strlen(out) - 1, "%s: exit %d: %s",
              cases[i].in, st, out);
        CHECK(strstr(out, "; lower "), "%s", out);
    }
    // what fits passes: the default run under a bound of 1 GB
    int st =
        test_run(out, sizeof out, "./train /dev/null " TINY " steps=1 max_memory=1 out_dir=%s/fits 2>&1", test_tmpdir());
    CHECK(st == 0, "exit %d: %s", st, out);
}

typedef struct {
    double best_acc;
    long best_step, test_step, n_test;
    char selected[8];
} BestLog;

static int best_log(const RunlogRecord *r, void *ctx) {
    BestLog *b = ctx;
    if (r->type != RUNLOG_EVAL) return 0;
    if (!strcmp(r->split, "test")) {
        b->n_test++, b->test_step = r->step;
        snprintf(b->selected, sizeof b->selected, "%s", runlog_str(r, "selected") ? runlog_str(r, "selected") : "");
    } else if (runlog_num(r, "acc") > b->best_acc) b->best_acc = runlog_num(r, "acc"), b->best_step = r->step;
    return 0;
}

// The validation split chooses, the test set is read once (docs/mqar.md#splits): stop_at_acc
// and the best step read validation; the test set is read at the end, on the best step's
// weights, whatever happened after it; best.safetensors holds them and survives keep_last; a run
// interrupted and resumed reads the test set once, at its real end, on the same best step;
// ./evaluate reads the test set only when asked (split=test), as a series of its own.
TEST(train_reads_the_test_set_once_on_the_best_validation_step) {
    const char *conf = tiny_conf();
    char out[8192], p[512];
    const char *args = TINY " steps=24 eval_every=4 sparsity_every=4 save_every=4 keep_last=1 lr=2e-2";
    int st = test_run(out, sizeof out, "./train %s %s stop_at_step=10 out_dir=%s/b", conf, args, test_tmpdir());
    CHECK(st == 0 && !strstr(out, "test (read once"), "an interrupted run read the test set: %s", out);
    st = test_run(out, sizeof out, "./train %s %s out_dir=%s/b", conf, args, test_tmpdir());
    CHECK(st == 0 && strstr(out, "resuming from") && strstr(out, "test (read once, on the best validation step "), "%s", out);
    BestLog b = {-1, -1, -1, 0, ""};
    snprintf(p, sizeof p, "%s/b/metrics.jsonl", test_tmpdir());
    CHECK(runlog_each(p, best_log, &b) == 0);
    CHECK(b.n_test == 1 && b.test_step == b.best_step && !strcmp(b.selected, "best"), "test %ld at %ld (%s), best %ld",
          b.n_test, b.test_step, b.selected, b.best_step);
    // best.safetensors holds the best step, beside the one newest checkpoint keep_last leaves
    Config c;
    long step = -1;
    char err[256];
    snprintf(p, sizeof p, "%s/b/%s", test_tmpdir(), RUN_DIR_BEST);
    CHECK(ckpt_read_config(p, &c, &step, err, sizeof err) == 0 && step == b.best_step, "%s: step %ld", err, step);
    config_free(&c);
    // the best step's and the test set's maps are in sparsity.jsonl
    snprintf(p, sizeof p, "%s/b/sparsity.jsonl", test_tmpdir());
    char *sp = read_file_text(p, NULL), want[160];
    snprintf(want, sizeof want,
             "{\"type\":\"sparsity\",\"step\":%ld,\"layer\":1,\"head\":1,\"mixer\":\"softmax\",\"split\":\"test\"",
             b.best_step);
    CHECK(sp && strstr(sp, want) && strstr(sp, "\"eff_tokens_recall\":") && strstr(sp, "\"ans_chance\":"), "%s", want);
    free(sp);
    // ./evaluate: the validation set by default, the test set on request, apart from the run's own
    snprintf(p, sizeof p, "%s/b/%s", test_tmpdir(), RUN_DIR_BEST);
    st = test_run(out, sizeof out, "./evaluate %s split=test threads=1", p);
    CHECK(st == 0 && strstr(out, "| test loss "), "%s", out);
    snprintf(p, sizeof p, "%s/b/eval.jsonl", test_tmpdir());
    char *ev = read_file_text(p, NULL);
    CHECK(ev && strstr(ev, "\"split\":\"test\"") && strstr(ev, "\"options\":\"split=test\""), "%s", ev);
    free(ev);
    st = test_run(out, sizeof out, "./evaluate %s/b split=train 2>&1", test_tmpdir());
    CHECK(st == 2 && !strcmp(out, "split: expected val or test, got 'train'\n"), "%d %s", st, out);
}

// A complete run is found complete before its data is opened (an MQAR training set takes seconds
// to generate): with its training shard gone, the same command still says "nothing to do".
TEST(train_complete_run_is_found_before_its_data) {
    const char *shard;
    const char *dir = test_text_run("run", 2000, 1, 3, &shard);
    CHECK(remove(shard) == 0);
    char out[8192];  // the same command as test_text_run's
    int st = test_run(out, sizeof out,
                      "./train %s/run.conf task=shards train_data=%s val_data=%s vocab_size=64 seq_len=16 d_model=16 "
                      "n_layer=1 n_head=1 batch_size=4 steps=3 save_every=3 eval_every=0 log_every=0 threads=1 out_dir=%s",
                      test_tmpdir(), shard, shard, dir);
    CHECK(st == 0 && strstr(out, "the run is complete (step 3 of 3); nothing to do"), "exit %d: %s", st, out);
}
