// The trainer's TensorBoard event files (tensorboard = true; eval/tensorboard.h): a run resumed
// over orphaned steps leaves a folder whose event files read back (core/tfevents.h's reader, with
// TensorBoard's purge at a restart) as exactly the scalars of its metrics.jsonl and sparsity.jsonl,
// bit for bit in float32; overwrite = true removes them; a write error stops the run with one line.
// (.ci/run checks such a folder with TensorBoard's own reader: tests/tensorboard_check.py.)
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/io.h"
#include "core/runlog.h"
#include "core/tfevents.h"
#include "tests/test.h"

// What the run log says TensorBoard should show, written from docs/outputs.md#tensorboard (not
// from eval/tensorboard.c): the scalars of the run's own train, eval and sparsity records.
typedef struct {
    char tag[96];
    long step;
    float value;
    long order;  // position in its list: a tag's points keep their order
} Point;

typedef struct {
    Point *p;
    long n;
} Points;

static void point(Points *l, const char *tag, long step, double v) {
    if (!isfinite(v)) return;
    l->p = reallocCheck(l->p, sizeof *l->p * (size_t)(l->n + 1));
    Point *p = &l->p[l->n];
    snprintf(p->tag, sizeof p->tag, "%s", tag);
    p->step = step, p->value = (float)v, p->order = l->n++;
}

static int expect(const RunlogRecord *r, void *ctx) {
    Points *l = ctx;
    char tag[96];
    if (*r->options) return 0;
    if (r->type == RUNLOG_TRAIN) {
        const char *f[] = {
            "loss",     "acc",      "lr", "grad_norm", "tok_per_s", "focus_penalty", "answer_supervision",
            "S_recall", "answer_ce"};
        for (int i = 0; i < 9; i++) {
            snprintf(tag, sizeof tag, "train/%s", f[i]);
            point(l, tag, r->step, runlog_num(r, f[i]));
        }
    } else if (r->type == RUNLOG_EVAL) {  // the test set's record at the end: test/...
        const char *split = strcmp(r->split, "test") ? "val" : "test";
        snprintf(tag, sizeof tag, "%s/loss", split);
        point(l, tag, r->step, runlog_num(r, "loss"));
        snprintf(tag, sizeof tag, "%s/acc", split);
        point(l, tag, r->step, runlog_num(r, "acc"));
        for (int i = 0; i < r->obj->n; i++)
            if (!strncmp(r->obj->keys[i], "acc_kv", 6)) {
                snprintf(tag, sizeof tag, "%s/%s", split, r->obj->keys[i]);
                point(l, tag, r->step, runlog_num(r, r->obj->keys[i]));
            }
    } else if (r->type == RUNLOG_SPARSITY) {
        const char *group = strcmp(r->split, "test") ? "sparsity" : "sparsity_test";
        snprintf(tag, sizeof tag, "%s/L%d_H%d/S_recall", group, r->layer, r->head);
        point(l, tag, r->step, runlog_num(r, "S_recall"));
        double w = runlog_num(r, "ans_window_share");
        snprintf(tag, sizeof tag, "%s/L%d_H%d/answer_share", group, r->layer, r->head);
        point(l, tag, r->step, isfinite(w) ? w : runlog_num(r, "ans_share"));
        const char *f[] = {"S", "eff_tokens", "eff_tokens_recall"};
        for (int i = 0; i < 3; i++) {
            snprintf(tag, sizeof tag, "%s/L%d_H%d/%s", group, r->layer, r->head, f[i]);
            point(l, tag, r->step, runlog_num(r, f[i]));
        }
    }
    return 0;
}

// ./evaluate's interventions: intervention/<kind[:strength]>/L<l>/<field> (rows=query left out)
static int expect_intervention(const RunlogRecord *r, void *ctx) {
    Points *l = ctx;
    if (r->type != RUNLOG_INTERVENTION) return 0;
    char what[64], tag[96];
    snprintf(what, sizeof what, "%.*s", (int)strcspn(r->options + 10, " "), r->options + 10);
    const char *f[] = {"acc", "loss", "S_recall", "eff_tokens_recall"};
    for (int i = 0; i < 4; i++) {
        snprintf(tag, sizeof tag, "intervention/%s/L%d/%s", what, r->layer, f[i]);
        point(l, tag, r->step, runlog_num(r, f[i]));
    }
    return 0;
}

static int by_tag(const void *a, const void *b) {
    const Point *x = a, *y = b;
    int c = strcmp(x->tag, y->tag);
    return c ? c : (x->order > y->order) - (x->order < y->order);
}

static int has(const Points *l, const char *tag, long step) {
    for (long i = 0; i < l->n; i++)
        if (!strcmp(l->p[i].tag, tag) && l->p[i].step == step) return 1;
    return 0;
}

static int has_any_step(const Points *l, const char *tag) {
    for (long i = 0; i < l->n; i++)
        if (!strcmp(l->p[i].tag, tag)) return 1;
    return 0;
}

static int count_event_files(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, "tfevents") != NULL;
    if (d) closedir(d);
    return n;
}

// A mixture with a short convolution (answer windows), evaluated every 3 steps.
#define TB_RUN                                                                                                         \
    "./train %s vocab_size=64 seq_len=32 mqar_cells=4x32,2x16 mqar_train_examples=512 "                                \
    "mqar_test_examples=64 mqar_val_examples=64 d_model=16 n_head=2 batch_size=16 lr=3e-3 short_conv=2 log_every=1 "   \
    "eval_every=3 sparsity_every=3 save_every=5 steps=12 threads=1 tensorboard=true out_dir=%s"

TEST(tensorboard_trainer_folder_reads_back_as_its_run_log) {
    // with both training-time terms on, so the train records carry their four fields too
    const char *conf =
        test_write_file("tb.conf", "mixer = softmax\nmlp = false\nfocus_penalty = 0.5\nanswer_supervision = 0.5\n");
    char dir[512], out[8192], p[700];
    snprintf(dir, sizeof dir, "%s/tb", test_tmpdir());
    // stopped at step 8 (a checkpoint there), which is then lost: the resume from step 5 redoes
    // steps 6..8, whose first events TensorBoard must no longer show
    int st = test_run(out, sizeof out, TB_RUN " stop_at_step=8", conf, dir);
    CHECK(st == 0, "exit %d: %s", st, out);
    snprintf(p, sizeof p, "%s/ckpt_00000008.safetensors", dir);
    CHECK(unlink(p) == 0);
    snprintf(p, sizeof p, "%s/latest", dir);
    CHECK(unlink(p) == 0);
    st = test_run(out, sizeof out, TB_RUN, conf, dir);
    CHECK(st == 0 && strstr(out, "resuming from") && strstr(out, "(step 5)"), "exit %d: %s", st, out);
    CHECK(count_event_files(dir) == 2, "%d event files", count_event_files(dir));

    Points want = {0};
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    CHECK(runlog_each(p, expect, &want) == 0);
    snprintf(p, sizeof p, "%s/sparsity.jsonl", dir);
    CHECK(runlog_each(p, expect, &want) == 0);
    CHECK(has(&want, "train/loss", 1) && has(&want, "train/tok_per_s", 12) && has(&want, "val/acc_kv4_L32", 0) &&
              has(&want, "val/acc_kv2_L16", 12) && has(&want, "sparsity/L1_H1/S_recall", 9) &&
              has(&want, "sparsity/L0_H0/answer_share", 12) && has_any_step(&want, "test/acc_kv4_L32") &&
              has_any_step(&want, "sparsity_test/L1_H1/S_recall") && has(&want, "train/focus_penalty", 1) &&
              has(&want, "train/answer_ce", 12),
          "the run log lacks a scalar the test expects");

    char err[512] = "";
    TfScalar *got;
    long n = tfevents_read_dir(dir, &got, err, sizeof err);
    CHECK(n >= 0, "%s", err);
    Points seen = {0};
    for (long i = 0; i < n; i++) point(&seen, got[i].tag, got[i].step, got[i].value);
    tfevents_free_scalars(got, n);
    CHECK(seen.n == want.n, "%ld scalars in the event files, %ld in the run log", seen.n, want.n);
    qsort(want.p, (size_t)want.n, sizeof *want.p, by_tag);
    qsort(seen.p, (size_t)seen.n, sizeof *seen.p, by_tag);
    for (long i = 0; i < want.n; i++) {
        const Point *a = &seen.p[i], *b = &want.p[i];
        CHECK(!strcmp(a->tag, b->tag) && a->step == b->step && memcmp(&a->value, &b->value, sizeof(float)) == 0,
              "#%ld: events %s step %ld = %.9g, run log %s step %ld = %.9g", i, a->tag, a->step, a->value, b->tag,
              b->step, b->value);
    }
    free(want.p);
    free(seen.p);

    // ./evaluate mirrors its records into DIR/evaluate/: the intervention records, bit for bit
    st = test_run(out, sizeof out, "./evaluate %s intervene=flatten:0,1 layer=1 threads=1", dir);
    CHECK(st == 0 && strstr(out, "/evaluate/ (TensorBoard"), "exit %d: %s", st, out);
    st = test_run(out, sizeof out, "./evaluate %s intervene=topk:1 layer=0 threads=1", dir);
    CHECK(st == 0, "exit %d: %s", st, out);
    Points wantiv = {0}, seeniv = {0};
    snprintf(p, sizeof p, "%s/intervention.jsonl", dir);
    CHECK(runlog_each(p, expect_intervention, &wantiv) == 0 && wantiv.n == 4 * 5, "%ld", wantiv.n);
    snprintf(p, sizeof p, "%s/evaluate", dir);
    CHECK(count_event_files(p) == 1, "%d event files in %s", count_event_files(p), p);
    n = tfevents_read_dir(p, &got, err, sizeof err);
    CHECK(n >= 0, "%s", err);
    for (long i = 0; i < n; i++)
        if (!strncmp(got[i].tag, "intervention/", 13)) point(&seeniv, got[i].tag, got[i].step, got[i].value);
    tfevents_free_scalars(got, n);
    CHECK(seeniv.n == wantiv.n, "%ld intervention scalars in the event file, %ld in the log", seeniv.n, wantiv.n);
    qsort(wantiv.p, (size_t)wantiv.n, sizeof *wantiv.p, by_tag);
    qsort(seeniv.p, (size_t)seeniv.n, sizeof *seeniv.p, by_tag);
    for (long i = 0; i < wantiv.n; i++)
        CHECK(!strcmp(seeniv.p[i].tag, wantiv.p[i].tag) && seeniv.p[i].step == wantiv.p[i].step &&
                  memcmp(&seeniv.p[i].value, &wantiv.p[i].value, sizeof(float)) == 0,
              "#%ld: %s against %s", i, seeniv.p[i].tag, wantiv.p[i].tag);
    free(wantiv.p);
    free(seeniv.p);

    // resume = never with overwrite = true replaces the run: its event files too
    st = test_run(out, sizeof out, TB_RUN " steps=1 resume=never overwrite=true tensorboard=false", conf, dir);
    CHECK(st == 0, "exit %d: %s", st, out);
    CHECK(count_event_files(dir) == 0, "%d event files left", count_event_files(dir));
    snprintf(p, sizeof p, "%s/evaluate", dir);
    CHECK(!path_exists(p), "%s left", p);
}

// The name tfevents_open gives a file started at unix time t, step 0, on this host.
static void event_file_name(char *buf, size_t n, const char *dir, long long t) {
    char host[256] = "localhost";
    if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "localhost");
    for (char *h = host; *h; h++)
        if (!((*h >= 'a' && *h <= 'z') || (*h >= 'A' && *h <= 'Z') || (*h >= '0' && *h <= '9') || *h == '-')) *h = '_';
    snprintf(buf, n, "%s/events.out.tfevents.%010lld.%s.s00000000", dir, t, host);
}

TEST(tensorboard_write_error_stops_the_run_with_one_line) {
    if (access("/dev/full", W_OK) != 0) return;  // no /dev/full to write to here
    char dir[512], out[8192], p[1200];
    snprintf(dir, sizeof dir, "%s/full", test_tmpdir());
    CHECK(mkdir_p(dir) == 0);
    // the event file of whichever second the run starts in is /dev/full (every write fails)
    long long now = (long long)time(NULL);
    for (long long t = now; t < now + 60; t++) {
        event_file_name(p, sizeof p, dir, t);
        CHECK(symlink("/dev/full", p) == 0, "%s", p);
    }
    const char *conf = test_write_file("tbf.conf", "mixer = softmax\nmlp = false\n");
    int st = test_run(out, sizeof out, TB_RUN " steps=3 > /dev/null", conf, dir);
    CHECK(st == 1 && strstr(out, "/full/events.out.tfevents.") &&
              strstr(out, ": write error (No space left on device)\n") && strchr(out, '\n')[1] == 0,
          "exit %d: %s", st, out);
}
