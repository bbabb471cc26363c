// The run log (core/runlog.h): one owner for the records' format, one reader, keyed merging, and
// the docs held to the table.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/provenance.h"
#include "core/runlog.h"
#include "tests/test.h"

// Records are written through core/runlog only: no other source spells a record's type field.
TEST(runlog_no_type_field_written_outside_core_runlog) {
    char out[4096];
    int st = test_run(out, sizeof out,
                      "grep -rlF '\\\"type\\\"' --include=*.c --include=*.h core model data eval tokenizer trainer "
                      "ablation bench train.c | grep -v '^core/runlog\\.[ch]$'");
    CHECK(st != 0 && !*out, "these write records by hand: %s", out);
}

// Every type and every field of the table is named in the docs: the types and the fields of
// metrics.jsonl's records in docs/outputs.md, the sparsity record's fields in docs/sparsity.md,
// the intervention record's in docs/interventions.md.
TEST(runlog_docs_name_every_type_and_field) {
    char *outputs = read_file_text("docs/outputs.md", NULL), *sparsity = read_file_text("docs/sparsity.md", NULL);
    char *interventions = read_file_text("docs/interventions.md", NULL);
    CHECK(outputs && sparsity && interventions);
    char want[96];
    for (int t = 0; t < RUNLOG_N_TYPES; t++) {
        snprintf(want, sizeof want, "| `%s` |", runlog_type_name((RunlogType)t));
        CHECK(strstr(outputs, want), "docs/outputs.md#the-run-log has no row %s", want);
    }
    int n;
    const RunlogField *f = runlog_fields(&n);
    CHECK(n > 60, "only %d fields", n);
    for (int i = 0; i < n; i++) {
        snprintf(want, sizeof want, "`%s`", f[i].name);
        int sp = f[i].type == RUNLOG_SPARSITY && strcmp(f[i].name, "options"), iv = f[i].type == RUNLOG_INTERVENTION;
        const char *doc = sp ? sparsity : iv ? interventions : outputs;
        CHECK(strstr(doc, want), "%s: field %s of the %s record is not named",
              sp       ? "docs/sparsity.md"
                  : iv ? "docs/interventions.md"
                       : "docs/outputs.md",
              want, runlog_type_name(f[i].type));
    }
    free(outputs);
    free(sparsity);
    free(interventions);
}

static void bogus_field(void *arg) {
    (void)arg;
    RunlogLine w;
    FILE *f = fopen("/dev/null", "w");
    runlog_begin(&w, f, RUNLOG_EVAL, 3);
    runlog_put_num(&w, "accuracy", 0.5);
}

TEST(runlog_writer_refuses_a_field_the_table_does_not_declare) {
    char err[512];
    int st = test_fork(bogus_field, NULL, err, sizeof err);
    CHECK(st == 1 && strstr(err, "a eval record has no field 'accuracy'"), "exit %d: %s", st, err);
    CHECK(runlog_field(RUNLOG_EVAL, "acc_kv4_L64") && runlog_field(RUNLOG_SPARSITY, "ans_window_share_kv16_L256"));
    CHECK(!runlog_field(RUNLOG_EVAL, "acc_kv4_L") && !runlog_field(RUNLOG_EVAL, "acc_kvx_L64") &&
          !runlog_field(RUNLOG_TRAIN, "acc_kv4_L64"));
}

typedef struct {
    int n;
    RunlogType type[16];
    long step[16];
    double num[16];
    char options[16][64];
} Seen;

static int see(const RunlogRecord *r, void *ctx) {
    Seen *s = ctx;
    if (s->n == 16) return 1;
    s->type[s->n] = r->type;
    s->step[s->n] = r->step;
    s->num[s->n] = r->type == RUNLOG_TRAIN ? runlog_num(r, "lr")
        : r->type == RUNLOG_EVAL           ? runlog_num(r, "acc_kv2_L16")
                                           : runlog_num(r, "S");
    snprintf(s->options[s->n], sizeof s->options[0], "%s", r->options);
    s->n++;
    return 0;
}

// What the writers write, the reader reads: types, steps, fields, options; a torn last line and
// a line that is not JSON are skipped; a sparsity record without a type (older sparsity.jsonl)
// is one.
TEST(runlog_writers_and_reader_agree) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    size_t by_layer[2] = {128, 256};
    RunlogRun run = {"gla,softmax", 1234, 192, by_layer, 2, NULL, 0, NULL, NULL, NULL, NULL};
    runlog_write_run(f, &run);
    RunlogTrain tr = {5, 2.5, 0.25, 1e-3, 0.5, 12345, 6.5, 0, 0, 0, 0, 0};
    runlog_write_train(f, &tr);
    const char *names[] = {"kv2_L16", "kv4_L32"};
    double acc[] = {0.5, 0.75};
    RunlogEval ev = {
        6,  1.5, 0.625, 2, names, acc,  NULL, NULL, "ckpt_00000006.safetensors", "softmax", "mqar_test_seed=9",
        40, 0,   0,     0, NULL,  NULL, NULL};
    runlog_write_eval(f, &ev);
    runlog_write_done(f, 6, "steps");
    fputs("not json\n{\"step\":6,\"layer\":0,\"head\":1,\"S\":0.5}\n{\"type\":\"train\",\"step\":7,", f);
    fclose(f);
    CHECK(strstr(text,
                 "{\"type\":\"train\",\"step\":5,\"loss\":2.5,\"acc\":0.25,\"lr\":0.001,\"grad_norm\":0.5,"
                 "\"tok_per_s\":12345,\"ms_per_step\":6.500}\n"),
          "%s", text);
    Seen s = {0};
    runlog_each_text(text, len, see, &s);
    CHECK(s.n == 5, "%d records", s.n);
    CHECK(s.type[0] == RUNLOG_RUN && s.type[1] == RUNLOG_TRAIN && s.type[2] == RUNLOG_EVAL &&
          s.type[3] == RUNLOG_DONE && s.type[4] == RUNLOG_SPARSITY);
    CHECK(s.step[1] == 5 && s.num[1] == 1e-3 && s.step[2] == 6 && s.num[2] == 0.5 && s.num[4] == 0.5);
    CHECK(!strcmp(s.options[2], "mqar_test_seed=9") && !strcmp(s.options[4], ""));
    free(text);
}

// With the training terms on the maps (model/focus.h) the train record adds them, null where the
// batch had no such row; without them it has none of the four.
TEST(runlog_train_record_carries_the_focus_terms) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    RunlogTrain tr = {5, 2.5, 0.25, 1e-3, 0.5, 12345, 6.5, 1, 0.125, 0, 0.75, NAN};
    runlog_write_train(f, &tr);
    fclose(f);
    CHECK(strstr(text,
                 "\"ms_per_step\":6.500,\"focus_penalty\":0.125,\"answer_supervision\":0,\"S_recall\":0.75,"
                 "\"answer_ce\":null}\n"),
          "%s", text);
    free(text);
}

// ./evaluate's merge: a fresh record replaces only the old one with its key; records of other
// options stay byte for byte; a whole series replaced drops that series' steps alone.
TEST(runlog_merge_replaces_only_the_same_key) {
    const char *own = "{\"type\":\"eval\",\"step\":0,\"split\":\"val\",\"loss\":3,\"acc\":0.1}\n"
                      "{\"type\":\"sparsity\",\"step\":0,\"layer\":0,\"head\":0,\"S\":0.9}\n"
                      "{\"type\":\"eval\",\"step\":4,\"split\":\"val\",\"loss\":1,\"acc\":0.98}\n"
                      "{\"type\":\"sparsity\",\"step\":4,\"layer\":0,\"head\":0,\"S\":0.3}\n";
    const char *path = test_write_file("eval.jsonl", own);
    const char *other =
        "{\"type\":\"eval\",\"step\":4,\"split\":\"val\",\"loss\":2,\"acc\":0.34,\"options\":\"mqar_test_cells=8x64\"}\n";
    CHECK(runlog_merge(path, other, strlen(other), RUNLOG_SAME_KEY, NULL, 0) == 0);
    char *got = read_file_text(path, NULL);
    char want[2048];
    snprintf(want, sizeof want, "%s%s", own, other);
    CHECK(got && !strcmp(got, want), "%s", got);
    free(got);
    // the same measurement again: replaced in place of the old, at its step
    const char *again = "{\"type\":\"eval\",\"step\":4,\"split\":\"val\",\"loss\":1,\"acc\":0.99}\n";
    CHECK(runlog_merge(path, again, strlen(again), RUNLOG_SAME_KEY, NULL, 0) == 0);
    got = read_file_text(path, NULL);
    CHECK(got && !strstr(got, "\"acc\":0.98}") && strstr(got, again) && strstr(got, other) && strstr(got, "\"S\":0.3}"),
          "%s", got);
    free(got);
    // the run's own series again (a run folder evaluated anew): its old steps go, other options stay
    const char *series = "{\"type\":\"eval\",\"step\":8,\"split\":\"val\",\"loss\":0.5,\"acc\":1}\n";
    CHECK(runlog_merge(path, series, strlen(series), RUNLOG_SAME_SERIES, NULL, 0) == 0);
    got = read_file_text(path, NULL);
    snprintf(want, sizeof want, "%s%s", other, series);
    CHECK(got && !strcmp(got, want), "%s", got);
    free(got);
}

// Provenance (core/provenance.h): the run record carries the commit, compiler, CPU and GEMM
// kernel it is given, and the reader gets them back; the build's own values are real ones: the
// compiler's __VERSION__, a CPU name, and the commit core/commit.sh wrote (HEAD here in git,
// "unknown" in a copy outside git, and never a surrounding repository's commit).
TEST(runlog_run_record_carries_its_provenance) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    size_t by_layer[1] = {64};
    RunlogRun run = {"softmax", 10, 64, by_layer, 1, NULL, 0, "abc123+dirty", "12.2.0", "Some CPU @ 2GHz", "avx2"};
    runlog_write_run(f, &run);
    fclose(f);
    CHECK(strstr(text, ",\"commit\":\"abc123+dirty\",\"compiler\":\"12.2.0\",\"cpu\":\"Some CPU @ 2GHz\",\"gemm\":\"avx2\"}"),
          "%s", text);
    free(text);
#ifdef __VERSION__
    CHECK(!strcmp(provenance_compiler(), __VERSION__), "%s", provenance_compiler());
#endif
    CHECK(provenance_cpu()[0] && provenance_commit()[0]);
    char out[4096], head[128] = "";
    // in git, the build's commit is HEAD (with +dirty while tracked files differ)
    if (test_run(head, sizeof head, "git rev-parse HEAD 2>/dev/null") == 0 && strlen(head) >= 40) {
        head[40] = 0;
        CHECK(!strncmp(provenance_commit(), head, 40), "built from %s, HEAD %s", provenance_commit(), head);
    }
    // core/commit.sh outside git, and in a folder inside a repository that is not its top: unknown
    int rc = test_run(out, sizeof out,
                      "d=%s/tarball && mkdir -p $d/inner && cp core/commit.sh $d/inner/ && cd $d/inner && "
                      "GIT_CEILING_DIRECTORIES=%s sh commit.sh b/commit.h && cat b/commit.h && cd .. && git init -q . && "
                      "git -c user.name=t -c user.email=t@t commit -q --allow-empty -m outer && "
                      "cd inner && rm -rf b && sh commit.sh b/commit.h && cat b/commit.h",
                      test_tmpdir(), test_tmpdir());
    CHECK(rc == 0 && !strcmp(out, "#define ATTNSCOPE_COMMIT \"unknown\"\n#define ATTNSCOPE_COMMIT \"unknown\"\n"),
          "%d: %s", rc, out);
}
