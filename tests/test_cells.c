// MQAR mixtures and per-cell slices (docs/mqar.md#mixtures-of-cells): parsing mqar_cells, the
// mixture's generation (each cell Zoology's generator at its own seed, padded without labels),
// per-cell accuracy and its mean, and end to end: a mixture run's records, ./evaluate on other
// cells with its refusals, and bad lists (one line naming the key, exit 2).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/json.h"
#include "core/safetensors.h"
#include "data/dataset.h"
#include "data/mqar.h"
#include "eval/val_eval.h"
#include "tests/test.h"

TEST(cells_parse_lists_and_refuse_malformed_entries) {
    MqarCell c[MQAR_MAX_CELLS];
    char err[256];
    CHECK(mqar_cells_parse("4x64, 8x128,16X256", c, MQAR_MAX_CELLS, err, sizeof err) == 3, "%s", err);
    CHECK(c[0].kv_pairs == 4 && c[0].seq_len == 64 && c[1].kv_pairs == 8 && c[1].seq_len == 128);
    CHECK(c[2].kv_pairs == 16 && c[2].seq_len == 256);
    CHECK(mqar_cells_parse(" 2x16 ", c, MQAR_MAX_CELLS, err, sizeof err) == 1 && c[0].seq_len == 16);
    const char *bad[][2] = {
        {"4x64, 8y128", "entry '8y128': expected PAIRSxLENGTH such as 8x128"},
        {"4x64x2", "entry '4x64x2': expected PAIRSxLENGTH"},
        {"x64", "entry 'x64': expected PAIRSxLENGTH"},
        {"4x", "entry '4x': expected PAIRSxLENGTH"},
        {"-4x64", "entry '-4x64': expected PAIRSxLENGTH"},
        {"0x64", "entry '0x64': expected at least 1 pair"},
        {"4x64, 4x64", "entry '4x64' is listed twice"},
        {" , ", "an empty entry in ' , '"},
        {"  ", "expected one or more PAIRSxLENGTH entries"},
        {"4x16,,8x32", "an empty entry in '4x16,,8x32' (two commas in a row, or a comma first or last)"},
        {"4x16, ", "an empty entry in '4x16, '"},
        {",4x16", "an empty entry in ',4x16'"},
        {"99999999999x64", "entry '99999999999x64': the pair count is too large (at most 1000000)"},
        {"2x99999999999999999999999", "the length is too large (at most 1000000)"},
        {"1000001x2000004", "the pair count is too large"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(mqar_cells_parse(bad[i][0], c, MQAR_MAX_CELLS, err, sizeof err) == -1, "'%s' accepted", bad[i][0]);
        CHECK(strstr(err, bad[i][1]), "'%s': %s", bad[i][0], err);
    }
    CHECK(mqar_cells_parse("1x4 1x6 1x8", c, 2, err, sizeof err) == -1 && strstr(err, "more than 2 cells"), "%s", err);
    char name[32];
    mqar_cell_name((MqarCell){4, 64}, name, sizeof name);
    CHECK(!strcmp(name, "kv4_L64"), "%s", name);
}

// Each cell is the one-cell generator at seed + index and its own length, then padded with token
// 0 without labels to the rows' length; cells follow one another.
TEST(cells_mixture_is_each_cell_generated_alone_then_padded) {
    MqarSpec spec = {.vocab_size = 128, .seq_len = 0, .kv_pairs = 0, .power_a = 0.01, .seed = 7, .n_examples = 5};
    MqarCell cells[] = {{2, 16}, {4, 32}, {3, 24}};
    Dataset ds;
    dataset_mqar_cells(&ds, &spec, cells, 3, 32);
    CHECK(ds.n == 15 && ds.T == 32 && ds.n_cells == 3 && ds.mqar_kv_pairs == 4);
    for (int c = 0; c < 3; c++) {
        CHECK(ds.cell_first[c] == 5 * c && ds.cell_first[c + 1] == 5 * (c + 1));
        MqarSpec one = spec;
        one.kv_pairs = cells[c].kv_pairs, one.seq_len = cells[c].seq_len, one.seed = 7 + (uint32_t)c;
        int L = one.seq_len;
        int32_t *x = mallocCheck(sizeof(int32_t) * 5 * (size_t)L), *y = mallocCheck(sizeof(int32_t) * 5 * (size_t)L);
        mqar_generate(&one, x, y);
        Dataset view = dataset_cell(&ds, c);
        CHECK(view.n == 5 && view.mqar_kv_pairs == cells[c].kv_pairs && view.n_cells == 1);
        for (int i = 0; i < 5; i++) {
            int32_t in[32], tg[32];
            dataset_get(&view, i, in, tg);
            CHECK(!memcmp(in, x + (size_t)i * L, sizeof(int32_t) * (size_t)L), "cell %d row %d differs", c, i);
            CHECK(!memcmp(tg, y + (size_t)i * L, sizeof(int32_t) * (size_t)L), "cell %d row %d labels differ", c, i);
            int labels = 0;
            for (int t = 0; t < 32; t++) labels += tg[t] != MQAR_IGNORE;
            CHECK(labels == cells[c].kv_pairs, "cell %d row %d: %d labels", c, i, labels);
            for (int t = L; t < 32; t++) CHECK(in[t] == 0 && tg[t] == MQAR_IGNORE, "cell %d row %d pad at %d", c, i, t);
        }
        free(x), free(y);
    }
    dataset_free(&ds);
    // one cell at the rows' length: the plain generator, token for token (the exact-generator
    // tests of test_mqar.c hold for it)
    spec.kv_pairs = 4, spec.seq_len = 32;
    Dataset one;
    dataset_mqar(&one, &spec);
    int32_t *x = mallocCheck(sizeof(int32_t) * 5 * 32), *y = mallocCheck(sizeof(int32_t) * 5 * 32);
    mqar_generate(&spec, x, y);
    CHECK(one.n_cells == 1 && !memcmp(one.inputs, x, sizeof(int32_t) * 5 * 32) &&
          !memcmp(one.labels, y, sizeof(int32_t) * 5 * 32));
    free(x), free(y);
    dataset_free(&one);
}

// A mixture is read in whole batches of one cell at the cell's length: per epoch every cell gives
// floor(n / B) batches, each sequence at most once; shuffled batches depend on (seed, epoch) only,
// so a loader set to a later pos continues the same stream (resume).
TEST(cells_loader_batches_hold_one_cell_at_its_length) {
    MqarSpec spec = {.vocab_size = 128, .power_a = 0.01, .seed = 3, .n_examples = 7};
    MqarCell cells[] = {{2, 16}, {4, 32}};
    Dataset ds;
    dataset_mqar_cells(&ds, &spec, cells, 2, 32);
    for (int shuffle = 0; shuffle < 2; shuffle++) {
        Loader ld, again;
        loader_init(&ld, &ds, 3, shuffle, 11);
        CHECK(loader_epoch_size(&ld) == 12, "%ld", loader_epoch_size(&ld));  // 2 + 2 batches of 3
        int32_t x[96], y[96];
        for (int epoch = 0; epoch < 2; epoch++) {
            int seen[14] = {0}, per_len[33] = {0};
            for (int k = 0; k < 4; k++) {
                int L = loader_next(&ld, x, y);
                CHECK(L == 16 || L == 32, "batch length %d", L);
                per_len[L]++;
                if (!shuffle) CHECK(L == (k < 2 ? 16 : 32), "unshuffled: cell after cell (batch %d: %d)", k, L);
                for (int b = 0; b < 3; b++) {  // which sequence of the cell is this row?
                    int found = -1;
                    for (long i = ds.cell_first[L == 32]; i < ds.cell_first[(L == 32) + 1]; i++)
                        if (!memcmp(ds.inputs + i * 32, x + b * L, sizeof(int32_t) * (size_t)L) &&
                            !memcmp(ds.labels + i * 32, y + b * L, sizeof(int32_t) * (size_t)L))
                            found = (int)i;
                    CHECK(found >= 0, "row %d of a %d-token batch is no sequence of its cell", b, L);
                    seen[found]++;
                    CHECK(seen[found] == 1, "sequence %d twice in epoch %d", found, epoch);
                }
            }
            CHECK(per_len[16] == 2 && per_len[32] == 2, "%d batches of cell 2x16, %d of 4x32", per_len[16], per_len[32]);
        }
        // resuming at pos gives the same next batches
        loader_init(&again, &ds, 3, shuffle, 11);
        again.pos = 9;
        loader_free(&ld);
        loader_init(&ld, &ds, 3, shuffle, 11);
        int32_t x2[96], y2[96];
        for (int k = 0; k < 3; k++) loader_next(&ld, x, y);
        for (int k = 0; k < 6; k++) {
            int a = loader_next(&ld, x, y), b = loader_next(&again, x2, y2);
            CHECK(a == b && !memcmp(x, x2, sizeof(int32_t) * 3 * (size_t)a), "shuffle %d: batch %d differs on resume",
                  shuffle, k);
        }
        loader_free(&ld);
        loader_free(&again);
    }
    dataset_free(&ds);
}

// Zoology's accuracy on a mixture is the mean of the cells' accuracies, not the pooled fraction.
TEST(cells_accuracy_is_the_mean_over_cells) {
    ValStats v;
    memset(&v, 0, sizeof v);
    v.n_cells = 2;
    v.cells[0] = (MqarCell){4, 64}, v.cells[1] = (MqarCell){16, 256};
    HeadStats a = {.loss_sum = 1.0, .n_counted = 4, .n_correct = 3},
              b = {.loss_sum = 8.0, .n_counted = 16, .n_correct = 2};  // 3/4 and 2/16 correct
    val_stats_add(&v, 0, &a);
    val_stats_add(&v, 1, &b);
    CHECK_CLOSE(val_acc(&v), (0.75 + 0.125) / 2, 1e-15);
    CHECK_CLOSE(val_loss(&v), 9.0 / 20, 1e-15);
    CHECK(v.all.n_counted == 20 && v.all.n_correct == 5);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    RunlogEval rec = {.sequences = -1};
    val_write_record(f, 7, &v, &rec);
    fclose(f);
    CHECK(!strcmp(text,
                  "{\"type\":\"eval\",\"step\":7,\"split\":\"val\",\"loss\":0.45,\"acc\":0.4375,"
                  "\"acc_kv4_L64\":0.75,\"acc_kv16_L256\":0.125}\n"),
          "%s", text);
    free(text);
    char buf[128];
    val_format_cells(buf, sizeof buf, &v);
    CHECK(!strcmp(buf, "kv4_L64 0.750 | kv16_L256 0.125"), "%s", buf);
    v.n_cells = 1;  // one cell: its own accuracy, no per-cell fields
    v.all = a;
    CHECK(val_acc(&v) == 0.75);
}

#define TINY                                                                                                            \
    "vocab_size=64 seq_len=32 mqar_train_examples=128 mqar_test_examples=24 mqar_val_examples=24 d_model=16 n_layer=2 " \
    "n_head=2 batch_size=16 lr=3e-3 log_every=0 threads=1 mlp=false"

// The last line of path that starts with prefix (allocated), or NULL.
static char *last_line(const char *path, const char *prefix) {
    char *text = read_file_text(path, NULL), *found = NULL;
    CHECK(text, "no %s", path);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
        if (!strncmp(line, prefix, strlen(prefix))) {
            free(found);
            found = strdupCheck(line);
        }
    free(text);
    return found;
}

static double field(const char *line, const char *key) {
    char err[128];
    JsonValue *v = json_parse(line, strlen(line), err, sizeof err);
    CHECK(v, "%s: %s", err, line);
    const JsonValue *f = json_get(v, key);
    double x = f && f->type == JSON_NUMBER ? f->number : NAN;
    json_free(v);
    return x;
}

// The checkpoint of a 2-step one-cell run of the config text in tmp/name (allocated path).
static const char *two_step_checkpoint(const char *name, const char *conf_text) {
    char conf[64], out[4096];
    snprintf(conf, sizeof conf, "%s.conf", name);
    const char *c = test_write_file(conf, conf_text);
    const char *dir = test_path(name);
    int st = test_run(out, sizeof out, "./train %s " TINY " steps=2 eval_every=0 sparsity_every=0 out_dir=%s", c, dir);
    CHECK(st == 0, "%s", out);
    snprintf(conf, sizeof conf, "%s/ckpt_00000002.safetensors", name);
    return test_path(conf);
}

// A mixture run logs accuracy per test cell (mean = acc) and S_recall per cell; ./evaluate then
// tests the checkpoint on other cells, longer ones only where the model is the same function.
TEST(cells_mixture_run_reports_per_cell_and_evaluates_on_other_cells) {
    const char *conf = test_write_file("mix.conf", "mixer = softmax\npos_emb = none\n");
    const char *dir = test_path("mix");
    char out[8192];
    int st = test_run(out, sizeof out,
                      "./train %s " TINY " steps=4 eval_every=2 sparsity_every=4 save_every=4 out_dir=%s "
                      "mqar_cells='2x16, 4x32' mqar_test_cells='2x16,4x32,3x24'",
                      conf, dir);
    CHECK(st == 0, "%s", out);
    CHECK(strstr(out, "MQAR cells (pairs x length, padded to 32): train 2x16 4x32; test 2x16 4x32 3x24"), "%s", out);
    char p[512];
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    char *ev = last_line(p, "{\"type\":\"eval\",\"step\":4,");
    CHECK(ev, "no eval record at step 4");
    double a = field(ev, "acc_kv2_L16"), b = field(ev, "acc_kv4_L32"), c = field(ev, "acc_kv3_L24");
    CHECK(isfinite(a) && isfinite(b) && isfinite(c), "%s", ev);
    CHECK_CLOSE(field(ev, "acc"), (a + b + c) / 3, 1e-8);
    free(ev);
    char *run = last_line(p, "{\"type\":\"run\"");
    CHECK(run && strstr(run, "\"test_cells\":[\"kv2_L16\",\"kv4_L32\",\"kv3_L24\"]"), "%s", run ? run : "none");
    CHECK(field(run, "state_floats") == 2 * 32 * 16, "%s", run);  // K and V caches at seq_len 32
    free(run);
    snprintf(p, sizeof p, "%s/sparsity.jsonl", dir);
    char *sp = last_line(p, "{\"type\":\"sparsity\",\"step\":4,\"layer\":1,\"head\":1,");
    CHECK(sp && isfinite(field(sp, "S_recall_kv2_L16")) && isfinite(field(sp, "S_recall_kv3_L24")), "%s", sp ? sp : "none");
    // rows measured: each cell's own length only (24 sequences of 16 + 32 + 24 rows)
    CHECK(field(sp, "rows") == 24 * (16 + 32 + 24), "%s", sp);
    CHECK(field(sp, "rows_recall") == 24 * (2 + 4 + 3), "%s", sp);
    free(sp);

    // other cells, one longer than seq_len (no learned positions: allowed) and more pairs
    snprintf(p, sizeof p, "%s/ckpt_00000004.safetensors", dir);
    st = test_run(out, sizeof out, "./evaluate %s mqar_cells=8x48,2x16 threads=1", p);
    CHECK(st == 0, "%s", out);
    CHECK(strstr(out, "kv8_L48      acc ") && strstr(out, "kv2_L16      acc "), "%s", out);
    snprintf(p, sizeof p, "%s/eval.jsonl", dir);
    char *e2 = last_line(p, "{\"type\":\"eval\"");
    CHECK(e2 && isfinite(field(e2, "acc_kv8_L48")) && isfinite(field(e2, "acc_kv2_L16")), "%s", e2 ? e2 : "none");
    free(e2);
    // --maps draws a mixture's sequence at its own cell's length: sequence 0 is in kv2_L16 and
    // the last one in kv3_L24 (the checkpoint's test cells), not the padded 32
    for (int k = 0; k < 2; k++) {
        snprintf(p, sizeof p, "%s/ckpt_00000004.safetensors", dir);
        st = test_run(out, sizeof out, "./evaluate %s --maps map_seq=%d threads=1", p, k ? 71 : 0);
        CHECK(st == 0, "%s", out);
        snprintf(p, sizeof p, "%s/maps.safetensors", dir);
        SafeTensors sf;
        char err[256];
        CHECK(st_read(p, &sf, err, sizeof err) == 0, "%s", err);
        const StTensor *m = st_find(&sf, "L1.H0"), *in = st_find(&sf, "inputs");
        int want = k ? 24 : 16;
        CHECK(m && m->shape[0] == want && m->shape[1] == want && in && in->shape[0] == want, "map of sequence %d",
              k ? 71 : 0);
        st_free(&sf);
    }
    // a map_start past the cell's length is refused like one past seq_len
    snprintf(p, sizeof p, "%s/ckpt_00000004.safetensors", dir);
    st = test_run(out, sizeof out, "./evaluate %s --maps map_seq=0 map_start=20 threads=1 2>&1", p);
    CHECK(st == 2 && strstr(out, "map_start: 20 is out of range (sequence 0 of ") &&
              strstr(out, "is in an MQAR cell of 16 positions)\n"),
          "%d %s", st, out);

    // learned positions end at seq_len: a longer cell is refused, a shorter one is fine
    const char *learned = two_step_checkpoint("mixl", "mixer = softmax\n");
    st = test_run(out, sizeof out, "./evaluate %s mqar_cells=4x48 threads=1", learned);
    CHECK(st == 2 && strstr(out, "\nmqar_test_cells: cell 4x48 is longer than") && strstr(out, "pos_emb = learned"),
          "%d %s", st, out);
    st = test_run(out, sizeof out, "./evaluate %s mqar_cells=2x16,8x32 threads=1", learned);
    CHECK(st == 0, "%d %s", st, out);
    // relu2 divides by the configured length: longer cells refused
    const char *relu2 = two_step_checkpoint("mixr", "mixer = relu2\npos_emb = none\n");
    st = test_run(out, sizeof out, "./evaluate %s mqar_cells=4x48 threads=1", relu2);
    CHECK(st == 2 && strstr(out, "relu2 normalises by the configured length"), "%d %s", st, out);
}

// Bad lists: one line naming the key and what was expected, exit 2, before any training.
TEST(cells_bad_lists_exit_2_naming_the_key) {
    const char *conf = test_write_file("bad.conf", "mixer = softmax\nmqar_cells = 4x64\n");
    char out[4096];
    BadInput cases[] = {
        {"", "bad.conf:2: mqar_cells: cell 4x64 is 64 tokens long, above seq_len = 32"},
        {"mqar_cells=12x32", "command line: mqar_cells: cell 12x32: 12 pairs do not fit in 32 tokens"},
        {"mqar_cells=4x16,8y32", "command line: mqar_cells: entry '8y32': expected PAIRSxLENGTH such as 8x128"},
        {"mqar_cells=2x15", "command line: mqar_cells: cell 2x15: expected an even length"},
        {"mqar_cells=2x16 mqar_test_cells=2x16,2x16", "command line: mqar_test_cells: entry '2x16' is listed twice"},
        {"mqar_cells=2x16,4x32 mqar_train_examples=8", "batch_size: 16 is above the 8 training examples of MQAR cell 2x16"},
        // one cell is held to the same rule as a mixture
        {"mqar_cells=2x16 mqar_train_examples=8", "batch_size: 16 is above the 8 training examples of MQAR cell 2x16"},
        {"mqar_cells=2x16,,4x32", "command line: mqar_cells: an empty entry in '2x16,,4x32'"},
        {"seq_len=99999999999", "command line: seq_len: 99999999999 is too large (at most 2147483647)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int st = test_run(out, sizeof out, "./train %s " TINY " steps=1 out_dir=%s/x %s", conf, test_tmpdir(), cases[i].in);
        CHECK(st == 2, "%s: exit %d: %s", cases[i].in, st, out);
        CHECK(strstr(out, cases[i].want) && !strchr(strchr(out, '\n') + 1, '\n'), "%s: %s", cases[i].in, out);
    }
}

// A sweep over mixers on a mixture: its summary carries the state size and the per-cell columns
// and draws accuracy against state size and per cell.
TEST(cells_sweep_summary_draws_state_and_cells) {
    char text[1024];
    snprintf(text, sizeof text,
             "out = %s/sw\njobs = 1\nvocab_size = 64\nseq_len = 32\nmqar_cells = \"2x16, 4x32\"\n"
             "mqar_test_cells = \"2x16, 4x16, 4x32, 8x32\"\nmqar_train_examples = 64\nmqar_test_examples = 16\nmqar_val_examples = 16\n"
             "d_model = 16\nn_head = 2\nbatch_size = 16\nsteps = 4\neval_every = 2\nsparsity_every = 4\n"
             "save_every = 0\nlog_every = 0\nmlp = false\nmixer = softmax, gla\n",
             test_tmpdir());
    const char *sw = test_write_file("cells.sweep", text);
    char out[8192];
    int st = test_run(out, sizeof out, "./sweep %s --threads 1", sw);
    CHECK(st == 0, "%s", out);
    char p[512];
    snprintf(p, sizeof p, "%s/sw/summary.csv", test_tmpdir());
    char *csv = read_file_text(p, NULL);
    CHECK(csv && strstr(csv, ",state_floats,") && strstr(csv, ",acc_kv2_L16,S_recall_kv2_L16,acc_kv4_L16,"), "%s",
          csv ? csv : "none");
    CHECK(strstr(csv, ",1024,") && strstr(csv, ",64,"), "%s", csv);  // softmax 2 x 32 x 16; gla H dk dv = 2 x 4 x 8
    free(csv);
    const char *figs[] = {"acc_vs_state.svg", "acc_by_cell.svg", "S_recall_by_cell.svg"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/sw/%s", test_tmpdir(), figs[i]);
        char *svg = read_file_text(p, NULL);
        CHECK(svg && strstr(svg, "</svg>") && strstr(svg, "softmax") && strstr(svg, "gla"), "%s", figs[i]);
        free(svg);
    }
}
