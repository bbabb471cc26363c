// Faults, the quick versions (tests/faults/*.sh do more, with `make faults`): a training killed
// with SIGKILL resumes to the same result as an uninterrupted one; a full disk while saving stops
// with one line and keeps the previous checkpoint; an out_dir that cannot be written is refused
// before any training; the atomic writer returns each failure with its reason and leaves no
// PATH.tmp. Then what a careless user broke: threads beyond 1024, two trainers on one
// folder, an edited checkpoint header, a run cut before its done record, a huge MQAR vocabulary,
// ./tokenize writing over its input, the wrong tokenizer, and the small ones (config syntax, key
// combinations, failed saves, sweep duplicates).
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/config.h"
#include "core/io.h"
#include "model/keys.h"
#include "core/safetensors.h"
#include "data/shards.h"
#include "eval/intervene.h"
#include "model/model.h"
#include "trainer/checkpoint.h"
#include "trainer/optim.h"
#include "tests/test.h"

// 1 thread (bit-identical resume), a checkpoint after every step.
#define RUN                                                                                                            \
    "./train /dev/null vocab_size=64 seq_len=32 mqar_kv_pairs=4 mqar_train_examples=512 "                              \
    "mqar_test_examples=64 mqar_val_examples=64 d_model=32 n_head=2 batch_size=16 lr=3e-3 eval_every=20 "              \
    "sparsity_every=0 log_every=1 save_every=1 threads=1"

// The data section of a safetensors file (the tensors; headers differ by out_dir).
static char *data_section(const char *path, size_t *n) {
    size_t len;
    char *buf = read_file_text(path, &len);
    CHECK(buf && len >= 8, "cannot read %s", path);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | (unsigned char)buf[i];
    CHECK(8 + hlen <= len, "%s: bad header length", path);
    *n = len - 8 - hlen;
    return buf + 8 + hlen;
}

// "step loss" of every train record, as text.
static char *losses(const char *dir) {
    char p[512];
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    char *text = read_file_text(p, NULL);
    CHECK(text, "cannot read %s", p);
    char *out = callocCheck(strlen(text) + 1, 1);
    for (char *s = text; (s = strstr(s, "{\"type\":\"train\",\"step\":")); s++) {
        char *e = strstr(s, ",\"acc\"");
        strncat(out, s, (size_t)(e - s));
        strcat(out, "\n");
    }
    return out;
}

static void check_same_run(const char *ref, const char *run, int step) {
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/ckpt_%08d.safetensors", ref, step);
    snprintf(b, sizeof b, "%s/ckpt_%08d.safetensors", run, step);
    size_t na, nb;
    const char *da = data_section(a, &na), *db = data_section(b, &nb);
    CHECK(na == nb && na > 1000 && !memcmp(da, db, na), "the tensors of %s differ from %s", b, a);
    char *la = losses(ref), *lb = losses(run);
    CHECK(strlen(la) > 100 && !strcmp(la, lb), "losses differ:\n%s\nvs\n%s", la, lb);
}

TEST(faults_kill9_then_resume_equals_uninterrupted) {
    char out[8192];
    const char *d = test_tmpdir();
    int st = test_run(out, sizeof out, RUN " steps=200 out_dir=%s/ref", d);
    CHECK(st == 0, "%s", out);
    // Kill when the run's log reaches a given step (not after a fixed time, which a fast or a
    // busy machine would miss); each run resumes from the previous one's latest checkpoint.
    int killed = 0;
    const int at[] = {20, 80, 140};
    for (int i = 0; i < 3; i++) {
        st = test_run(out, sizeof out,
                      RUN " steps=200 out_dir=%s/run > /dev/null 2>&1 & p=$!; "
                          "for i in $(seq 4000); do grep -qs '\"step\":%d,' %s/run/metrics.jsonl && break; sleep 0.005; done; "
                          "kill -9 $p; wait $p",
                      d, at[i], d);
        CHECK(st == 0 || st == 128 + 9, "exit %d: %s", st, out);
        killed += st == 128 + 9;
    }
    CHECK(killed >= 2, "only %d of 3 runs were killed before they finished", killed);
    st = test_run(out, sizeof out, RUN " steps=200 out_dir=%s/run", d);
    CHECK(st == 0, "%s", out);
    char ref[512], run[512];
    snprintf(ref, sizeof ref, "%s/ref", d);
    snprintf(run, sizeof run, "%s/run", d);
    check_same_run(ref, run, 200);
}

TEST(faults_disk_full_while_saving_keeps_the_previous_checkpoint) {
    char out[8192];
    const char *d = test_tmpdir();
    int st = test_run(out, sizeof out, RUN " steps=6 out_dir=%s/ref", d);
    CHECK(st == 0, "%s", out);
    st = test_run(out, sizeof out, RUN " steps=6 stop_at_step=2 out_dir=%s/run", d);
    CHECK(st == 0, "%s", out);
    // files may not grow past 64 KiB (a checkpoint is 350 KB); write() fails with EFBIG
    st = test_run(out, sizeof out, "trap '' XFSZ; ulimit -f 64; " RUN " steps=6 out_dir=%s/run > /dev/null", d);
    CHECK(st == 1, "exit %d: %s", st, out);
    CHECK(strstr(out, "ckpt_00000003.safetensors: checkpoint not saved: cannot write ") &&
              strstr(out, "(File too large) (the previous checkpoint is intact)\n") && strchr(out, '\n')[1] == 0,
          "%s", out);
    char p[512];
    snprintf(p, sizeof p, "%s/run/latest", d);
    char *latest = read_file_text(p, NULL);
    CHECK(latest && !strcmp(latest, "ckpt_00000002.safetensors\n"), "latest: %s", latest);
    snprintf(p, sizeof p, "%s/run/ckpt_00000003.safetensors", d);
    CHECK(!test_temp_left(p), "the temporary file was left behind");
    // room again: the run resumes from step 2 and ends as if nothing happened
    st = test_run(out, sizeof out, RUN " steps=6 out_dir=%s/run", d);
    CHECK(st == 0 && strstr(out, "resuming from") && strstr(out, "(step 2)"), "%s", out);
    char ref[512], run[512];
    snprintf(ref, sizeof ref, "%s/ref", d);
    snprintf(run, sizeof run, "%s/run", d);
    check_same_run(ref, run, 6);
}

TEST(faults_unwritable_out_dir_is_refused_before_training) {
    char out[4096];
    const char *file = test_write_file("plain_file", "x\n");
    int st = test_run(out, sizeof out, RUN " steps=2 out_dir=%s/sub", file);
    CHECK(st == 2 && strstr(out, "out_dir: cannot create '") && strstr(out, "plain_file/sub' (Not a directory)\n") &&
              !strstr(out, "step"),
          "exit %d: %s", st, out);
    CHECK(strchr(out, '\n')[1] == 0, "more than one line: %s", out);
    st = test_run(out, sizeof out, RUN " steps=2 out_dir=%s", file);
    CHECK(st == 2 && strstr(out, "plain_file' is a file, expected a folder\n"), "exit %d: %s", st, out);
    if (getuid() != 0) {  // permissions do not stop root
        char dir[512];
        snprintf(dir, sizeof dir, "%s/ro", test_tmpdir());
        CHECK(mkdir(dir, 0555) == 0);
        st = test_run(out, sizeof out, RUN " steps=2 out_dir=%s", dir);
        CHECK(st == 2 && strstr(out, "out_dir: cannot write in '") && !strstr(out, "step"), "exit %d: %s", st, out);
    }
}

TEST(faults_disk_full_while_logging_stops_with_one_line) {
    char out[4096];
    // config.conf (about 6 KB) fits in 12 KiB, metrics.jsonl outgrows it (sh is dash here, whose
    // ulimit -f counts 512-byte blocks: 24 of them; bash's 1 KiB blocks give 24 KiB, also enough)
    int st = test_run(out, sizeof out, "trap '' XFSZ; ulimit -f 24; " RUN " save_every=0 steps=300 out_dir=%s/log > /dev/null",
                      test_tmpdir());
    CHECK(st == 1 && strstr(out, "/log/metrics.jsonl: write error (File too large)\n") && strchr(out, '\n')[1] == 0,
          "exit %d: %s", st, out);
}

// The atomic writer (core/io.h) returns each failure with its reason, leaving nothing behind:
// PATH as it was, no PATH.<pid>.tmp.
TEST(faults_atomic_writer_returns_the_reason_and_leaves_nothing_behind) {
    char path[600], tmp[640], err[1400];
    snprintf(path, sizeof path, "%s/a.txt", test_tmpdir());
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    AtomicFile a;
    CHECK(atomic_open(&a, path, err, sizeof err) == 0, "%s", err);
    fputs("one\n", a.f);
    CHECK(atomic_commit(&a, err, sizeof err) == 0, "%s", err);
    char *text = read_file_text(path, NULL);
    CHECK(text && !strcmp(text, "one\n") && !path_exists(tmp) && !a.tmp && !a.f);
    free(text);
    // given up: the earlier file stays; the temporary file a killed writer left (its process
    // ended: pid 99999999 is above any pid_max) is removed by the next writer
    char stale[640];
    snprintf(stale, sizeof stale, "%s.99999999.tmp", path);
    FILE *sf = fopenCheck(stale, "wb");
    fclose(sf);
    CHECK(atomic_open(&a, path, NULL, 0) == 0);
    CHECK(!path_exists(stale), "a dead writer's temporary file stayed");
    fputs("two\n", a.f);
    atomic_abort(&a);
    text = read_file_text(path, NULL);
    CHECK(text && !strcmp(text, "one\n") && !path_exists(tmp));
    free(text);
    // PATH a folder: refused at the open, naming it
    char dir[600];
    snprintf(dir, sizeof dir, "%s/d", test_tmpdir());
    CHECK(mkdir_p(dir) == 0);
    CHECK(atomic_open(&a, dir, err, sizeof err) == -1 && errno == EISDIR);
    CHECK(strstr(err, "/d: is a folder, expected a file name") && !a.tmp, "%s", err);
    // PATH.tmp cannot be created (its folder is gone)
    char lost[600];
    snprintf(lost, sizeof lost, "%s/gone/x", test_tmpdir());
    CHECK(atomic_open(&a, lost, err, sizeof err) == -1 && errno == ENOENT);
    snprintf(tmp, sizeof tmp, "/gone/x.%ld.tmp: cannot write (No such file or directory)", (long)getpid());
    CHECK(strstr(err, tmp), "%s", err);
    // the rename fails (a folder with a file in it took PATH's place meanwhile): the reason, no PATH.tmp
    snprintf(path, sizeof path, "%s/b", test_tmpdir());
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    CHECK(atomic_open(&a, path, NULL, 0) == 0);
    fputs("three\n", a.f);
    char inside[620];
    snprintf(inside, sizeof inside, "%s/f", path);
    CHECK(mkdir_p(path) == 0);
    FILE *f = fopenCheck(inside, "w");
    fclose(f);
    CHECK(atomic_commit(&a, err, sizeof err) == -1 && strstr(err, "/b: cannot rename ") && strstr(err, ".tmp ("), "%s", err);
    CHECK(!path_exists(tmp) && is_directory(path) && path_exists(inside) && !a.tmp);
}

// Found by the fuzz targets (tests/fuzz/regress/ keeps their inputs for `make fuzz`).

TEST(faults_safetensors_overlap_message_names_the_tensor) {
    // the message was formatted from an array already freed (caught under make asan)
    const char *hdr = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                      "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}";
    const char *path = test_path("overlap.safetensors");
    FILE *f = fopenCheck(path, "wb");
    uint64_t hlen = strlen(hdr);
    unsigned char len8[8], data[12] = {0};
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)(hlen >> (8 * i));
    fwriteCheck(len8, 1, 8, f, path);
    fwriteCheck(hdr, 1, hlen, f, path);
    fwriteCheck(data, 1, sizeof data, f, path);
    fcloseCheck(f, path);
    SafeTensors st;
    char err[256];
    CHECK(st_read(path, &st, err, sizeof err) == -1);
    CHECK(!strcmp(err, "tensor 'b': data_offsets overlap or leave a hole"), "%s", err);
}

TEST(faults_long_value_survives_the_effective_config) {
    // config_write formatted each line in a 512-byte buffer: config.conf (and a checkpoint's
    // config) cut a longer value, so the run did not run again as it was
    char value[700];
    memset(value, 'x', sizeof value - 1);
    value[sizeof value - 1] = 0;
    Config a, b;
    config_init_all(&a);
    config_set(&a, "sample_prompt", value, "test");
    char *text = config_to_text(&a);
    config_init_all(&b);
    config_load_text(&b, text, "effective config");
    CHECK(strlen(cfg_str(&b, "sample_prompt")) == strlen(value), "%zu characters back",
          strlen(cfg_str(&b, "sample_prompt")));
    free(text);
    config_free(&a);
    config_free(&b);
}

TEST(faults_garbage_token_in_a_shard_is_bad_input_naming_the_file) {
    // vocab_size = 0 took the vocabulary from the largest token: 2312681882 sized the embedding
    // table; now refused naming the file (docs/reliability.md's table runs the command line too)
    char out[4096];
    int st = test_run(out, sizeof out,
                      RUN " task=shards vocab_size=0 train_data=tests/fuzz/regress/shards/token_beyond_any_vocabulary.bin "
                          "val_data=tests/fuzz/regress/shards/token_beyond_any_vocabulary.bin out_dir=%s/g",
                      test_tmpdir());
    CHECK(st == 2 && strstr(out, "token_beyond_any_vocabulary.bin: token 2312681882 is larger than any vocabulary"),
          "exit %d: %s", st, out);
}

// --- docs/reliability.md#bad-input: every row with exit 2 whose command cell is a plain command ---

// Replaces every 8-digit hex word of a line about a CRC32 by "########", and the number in
// "header length N" by "#" (a checkpoint's header holds the config text, which grows with every key).
static void mask_crc(char *s) {
    char *hl = strstr(s, "header length ");
    if (hl) {
        char *d = hl + strlen("header length "), *e = d;
        while (*e >= '0' && *e <= '9') e++;
        if (e > d) *d = '#', memmove(d + 1, e, strlen(e) + 1);
    }
    if (!strstr(s, "CRC32")) return;
    for (char *p = s; *p; p++) {
        int n = 0;
        while (n < 9 && p[n] && strchr("0123456789abcdef", p[n])) n++;
        int word = n == 8 && (p == s || !strchr("0123456789abcdefx", p[-1]));
        if (word) memset(p, '#', 8);
        p += n ? n - 1 : 0;
    }
}

// The text of a cell that is exactly `...` (with \| unescaped), or NULL.
static char *code_cell(const char *cell) {
    while (*cell == ' ') cell++;
    size_t n = strlen(cell);
    while (n && cell[n - 1] == ' ') n--;
    if (n < 2 || cell[0] != '`' || cell[n - 1] != '`' || memchr(cell + 1, '`', n - 2)) return NULL;
    char *out = callocCheck(n, 1), *o = out;
    for (size_t i = 1; i + 1 < n; i++) {
        if (cell[i] == '\\' && cell[i + 1] == '|') i++;
        *o++ = cell[i];
    }
    return out;
}

TEST(faults_docs_bad_input_table_is_what_the_programs_print) {
    char *doc = read_file_text("docs/reliability.md", NULL);
    CHECK(doc, "cannot read docs/reliability.md");
    char *sec = strstr(doc, "\n## Bad input\n");
    CHECK(sec, "docs/reliability.md has no 'Bad input' section");
    char *end = strstr(sec + 5, "\n## ");
    if (end) *end = 0;
    char cwd[1024], out[8192];
    CHECK(getcwd(cwd, sizeof cwd));
    int st = test_run(out, sizeof out, "cd %s && bash %s/tests/faults/bad_input_fixtures.sh %s", test_tmpdir(), cwd, cwd);
    CHECK(st == 0, "fixtures: %s", out);
    int rows = 0;
    for (char *line = sec; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, "| ", 2)) continue;
        char row[2048];
        size_t len = strcspn(line, "\n");
        CHECK(len < sizeof row);
        memcpy(row, line, len);
        row[len] = 0;
        char *cells[8];
        int nc = 0;
        for (char *p = row + 1; *p && nc < 8;) {  // split at | but not at \|
            cells[nc++] = p;
            while (*p && !(*p == '|' && p[-1] != '\\')) p++;
            if (*p) *p++ = 0;
        }
        if (nc < 4 || atoi(cells[3]) != 2) continue;
        char *cmd = code_cell(cells[1]), *want = code_cell(cells[2]);
        if (!cmd || !want || strncmp(cmd, "./", 2)) continue;
        st = test_run(out, sizeof out, "cd %s && %s/%s 2>&1 > /dev/null", test_tmpdir(), cwd, cmd + 2);
        size_t n = strlen(out);
        CHECK(n && out[n - 1] == '\n' && !strchr(out, '\n')[1], "%s: not one line on stderr: '%s'", cmd, out);
        out[n - 1] = 0;
        mask_crc(out);
        mask_crc(want);
        CHECK(st == 2 && !strcmp(out, want), "%s:\n  docs/reliability.md: %s (exit 2)\n  prints: %s (exit %d)", cmd,
              want, out, st);
        rows++;
    }
    CHECK(rows >= 40, "only %d rows checked", rows);
    free(doc);
}

// --- What a careless user broke: headers, threads, two trainers, tokenizers, sweeps ------------

// A small model (softmax, d_model 8, 1 layer, vocabulary 16) and its AdamW state.
static Model *small_model(Config *cfg, Optimizer *opt) {
    config_init_all(cfg);
    char *args[] = {"d_model=8", "n_head=2", "n_layer=1", "vocab_size=16", "seq_len=8"};
    config_apply_args(cfg, 5, args);
    ModelShape s = {.V = 16, .C = 8, .L = 1, .H = 2, .T = 8, .mlp = 1, .pos_emb = 1};
    Model *m = model_create(&s, mixer_find("softmax"), cfg, 1, 8);
    model_init_weights(m, 1);
    optim_init(opt, OPT_ADAMW, m->n_params, 0.9, 0.999, 1e-8, 0.1);
    for (size_t i = 0; i < m->n_params; i++) opt->m[i] = 0.001f * (float)i, opt->v[i] = 1e-6f;
    return m;
}

// That model's checkpoint (step 2, data_pos 32, seed 7) at path; returns the model.
static Model *small_checkpoint(const char *path, Config *cfg, Optimizer *opt) {
    Model *m = small_model(cfg, opt);
    TrainState ts = {2, 32, 7, 2, 0, 0};
    char err[256];
    CHECK(ckpt_save(path, m, opt, cfg, &ts, err, sizeof err) == 0, "%s", err);
    return m;
}

// The file with `from` (once, in the header) replaced by `to`, the header length adjusted.
static void write_edited(const char *src, const char *dst, const char *from, const char *to) {
    size_t len;
    char *buf = read_file_text(src, &len);
    CHECK(buf);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | (unsigned char)buf[i];
    char *hdr = strndup(buf + 8, hlen);
    char *at = strstr(hdr, from);
    CHECK(at, "'%s' is not in the header", from);
    CHECK(!strstr(at + 1, from), "'%s' is in the header twice", from);
    size_t nlen = hlen - strlen(from) + strlen(to);
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)nlen >> (8 * i));
    FILE *f = fopenCheck(dst, "wb");
    fwriteCheck(len8, 1, 8, f, dst);
    fwriteCheck(hdr, 1, (size_t)(at - hdr), f, dst);
    fwriteCheck(to, 1, strlen(to), f, dst);
    fwriteCheck(at + strlen(from), 1, strlen(at + strlen(from)), f, dst);
    fwriteCheck(buf + 8 + hlen, 1, len - 8 - hlen, f, dst);
    fcloseCheck(f, dst);
    free(hdr);
    free(buf);
}

// ckpt_load and ckpt_read_config both refuse path with a message containing want, model unchanged.
static void expect_refused(const char *path, Model *m, Optimizer *opt, const char *want) {
    char err[512];
    real *before = mallocCheck(sizeof(real) * m->n_params);
    memcpy(before, m->params, sizeof(real) * m->n_params);
    TrainState ts;
    CHECK(ckpt_load(path, m, opt, &ts, err, sizeof err) == -1, "%s loaded", path);
    CHECK(strstr(err, want), "%s: '%s', expected '%s'", path, err, want);
    CHECK(!memcmp(before, m->params, sizeof(real) * m->n_params), "a refused load changed the model");
    Config c;
    long step;
    CHECK(ckpt_read_config(path, &c, &step, err, sizeof err) == -1, "%s: config read", path);
    free(before);
}

// The "step":"2" edit and a swap of two tensors' data_offsets loaded silently while the CRC
// covered the data only; each metadata field edited is refused too.
TEST(faults_checkpoint_header_edits_are_refused) {
    Config cfg;
    Optimizer opt;
    const char *good = strdupCheck(test_path("good.safetensors"));
    Model *m = small_checkpoint(good, &cfg, &opt);
    char err[512];
    TrainState ts;
    CHECK(ckpt_load(good, m, &opt, &ts, err, sizeof err) == 0 && ts.step == 2, "%s", err);
    const char *bad = test_path("edited.safetensors");
    static const char *edits[][2] = {
        {"\"step\":\"2\"", "\"step\":\"3\""},
        {"\"data_pos\":\"32\"", "\"data_pos\":\"33\""},
        {"\"data_seed\":\"7\"", "\"data_seed\":\"8\""},
        {"\"optimizer_steps\":\"2\"", "\"optimizer_steps\":\"1\""},
        {"\"optimizer\":\"adamw\"", "\"optimizer\":\"sgd\""},
        {"\"rng\":\"xoshiro", "\"rng\":\"Xoshiro"},
        {"d_model = 8", "d_model = 8 "},
        {"lr = 0.001", "lr = 0.002"},
        {"\"wte\":{\"dtype\":\"F32\",\"shape\":[16,8]", "\"wte\":{\"dtype\":\"F32\",\"shape\":[8,16]"},  // [V, C] as [C, V]
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        write_edited(good, bad, edits[i][0], edits[i][1]);
        expect_refused(bad, m, &opt, "CRC32 of the file is ");
    }
    // a changed format is not this trainer's checkpoint (format 1 with this file's CRC: refused too)
    write_edited(good, bad, "attnscope-checkpoint-2", "attnscope-checkpoint-3");
    expect_refused(bad, m, &opt, "not a checkpoint of this trainer");
    write_edited(good, bad, "attnscope-checkpoint-2", "attnscope-checkpoint-1");
    expect_refused(bad, m, &opt, "CRC32 of the data section is ");
    // the two AdamW moments of wte swap places: same sizes, a valid container
    SafeTensors st;
    CHECK(st_read(good, &st, err, sizeof err) == 0, "%s", err);
    const StTensor *a = st_find(&st, "optim.m.wte"), *b = st_find(&st, "optim.v.wte");
    char oa[128], ob[128], tmp_path[600];
    snprintf(oa, sizeof oa, "\"optim.m.wte\":{\"dtype\":\"F32\",\"shape\":[16,8],\"data_offsets\":[%zu,%zu]}", a->begin,
             a->end);
    snprintf(ob, sizeof ob, "\"optim.v.wte\":{\"dtype\":\"F32\",\"shape\":[16,8],\"data_offsets\":[%zu,%zu]}", b->begin,
             b->end);
    char na[128], nb[128];
    snprintf(na, sizeof na, "\"optim.m.wte\":{\"dtype\":\"F32\",\"shape\":[16,8],\"data_offsets\":[%zu,%zu]}", b->begin,
             b->end);
    snprintf(nb, sizeof nb, "\"optim.v.wte\":{\"dtype\":\"F32\",\"shape\":[16,8],\"data_offsets\":[%zu,%zu]}", a->begin,
             a->end);
    st_free(&st);
    snprintf(tmp_path, sizeof tmp_path, "%s", test_path("half.safetensors"));
    write_edited(good, tmp_path, oa, na);
    write_edited(tmp_path, bad, ob, nb);
    CHECK(st_read(bad, &st, err, sizeof err) == 0, "the swap is a valid container: %s", err);
    st_free(&st);
    expect_refused(bad, m, &opt, "CRC32 of the file is ");
    // one bit of every 5th byte of the first 4 KiB of the header, one at a time: none loads (105
    // of 300 random flips did)
    size_t len;
    char *buf = read_file_text(good, &len);
    int accepted = 0, tried = 0;
    for (size_t byte = 8; byte < 8 + 4096 && byte < len; byte += 5) {
        char bit = (char)(1 << (byte % 8));
        buf[byte] ^= bit;
        FILE *f = fopenCheck(bad, "wb");
        fwriteCheck(buf, 1, len, f, bad);
        fcloseCheck(f, bad);
        buf[byte] ^= bit;
        accepted += ckpt_load(bad, m, &opt, &ts, err, sizeof err) == 0;
        tried++;
    }
    CHECK(accepted == 0 && tried > 800, "%d of %d header bit flips loaded", accepted, tried);
    free(buf);
}

// A checkpoint of format 1 (CRC of the data only) as the trainer wrote them before.
static void write_format1(const char *src, const char *dst) {
    SafeTensors st;
    char err[256];
    CHECK(st_read(src, &st, err, sizeof err) == 0, "%s", err);
    char from[32], to[32];
    snprintf(from, sizeof from, "\"crc32\":\"%s\"", st_meta(&st, "crc32"));
    snprintf(to, sizeof to, "\"crc32\":\"%08lx\"", crc32(0L, st.data, (uInt)st.data_len));
    st_free(&st);
    const char *mid = test_path("v1_mid.safetensors");
    write_edited(src, mid, "attnscope-checkpoint-2", "attnscope-checkpoint-1");
    write_edited(mid, dst, from, to);
}

static void load_twice(void *path) {
    Config cfg;
    Optimizer opt;
    Model *m = small_model(&cfg, &opt);
    char err[512];
    TrainState ts;
    for (int i = 0; i < 2; i++)
        if (ckpt_load(path, m, &opt, &ts, err, sizeof err) != 0 || ts.step != 2) die("%s", err);
    model_free(m);
    optim_free(&opt);
    config_free(&cfg);
    _exit(0);  // the forked child also holds the case's allocations: no leak check here
}

TEST(faults_checkpoint_of_format_1_loads_with_one_warning) {
    Config cfg;
    Optimizer opt;
    const char *good = strdupCheck(test_path("good.safetensors"));
    Model *m = small_checkpoint(good, &cfg, &opt);
    const char *v1 = strdupCheck(test_path("v1.safetensors"));
    write_format1(good, v1);
    char err[1024];
    int st = test_fork(load_twice, (void *)v1, err, sizeof err);
    CHECK(st == 0, "exit %d: %s", st, err);
    CHECK(strstr(err, "warning: ") &&
              strstr(err,
                     "v1.safetensors: a checkpoint of format attnscope-checkpoint-1, "
                     "whose CRC does not cover its header") &&
              strchr(err, '\n')[1] == 0,
          "not one warning line: '%s'", err);
    // its data is still checked
    size_t len;
    char *buf = read_file_text(v1, &len);
    buf[len - 5] ^= 4;
    FILE *f = fopenCheck(v1, "wb");
    fwriteCheck(buf, 1, len, f, v1);
    fcloseCheck(f, v1);
    free(buf);
    expect_refused(v1, m, &opt, "CRC32 of the data section is ");
}

// One line and exit 2 where libgomp crashed (threads=100000: exit 139) or printed its own error.
TEST(faults_threads_beyond_1024_are_refused_by_every_program) {
    char out[4096];
    const char *progs[] = {"./train /dev/null", "./sample nothing.safetensors", "./evaluate nothing"};
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 2; k++) {
            const char *v = k ? "100000" : "1025";
            int st = test_run(out, sizeof out, "%s threads=%s 2>&1 > /dev/null", progs[i], v);
            char want[200];
            snprintf(want, sizeof want, "command line: threads: expected 0 (all cores) or 1 to 1024, got '%s'\n", v);
            CHECK(st == 2 && !strcmp(out, want), "%s threads=%s: exit %d: %s", progs[i], v, st, out);
        }
    const char *conf = test_write_file("t.conf", "threads = 50000\n");
    int st = test_run(out, sizeof out, "./train %s 2>&1 > /dev/null", conf);
    CHECK(st == 2 && strstr(out, "t.conf:1: threads: expected 0 (all cores) or 1 to 1024, got '50000'\n"),
          "exit %d: %s", st, out);
}

// Two ./train in one run folder interleaved their logs and checkpoints, each exiting 0: the
// second is now refused naming the first's pid; the lock dies with its holder (kill -9 included).
TEST(faults_second_trainer_on_a_run_folder_is_refused) {
    char out[4096];
    const char *d = test_tmpdir();
    int st = test_run(out, sizeof out,
                      RUN " save_every=50 steps=100000 out_dir=%s/run > /dev/null 2>&1 & p=$!; "
                          "for i in $(seq 2000); do [ -s %s/run/latest ] && break; sleep 0.01; done; "
                          "echo pid $p; " RUN " steps=10 out_dir=%s/run 2>&1 >/dev/null; echo exit $?; " RUN
                          " steps=10 out_dir=%s/run resume=never overwrite=true 2>&1 >/dev/null; echo exit $?; "
                          "./evaluate %s/run eval_batches=1 > /dev/null 2>&1; echo evaluate $?; "
                          "kill -9 $p; wait $p 2>/dev/null; " RUN " steps=3 out_dir=%s/run > /dev/null; echo exit $?",
                      d, d, d, d, d, d);
    CHECK(st == 0, "%s", out);
    long pid = 0;
    CHECK(sscanf(out, "pid %ld", &pid) == 1, "%s", out);
    char want[600];
    snprintf(want, sizeof want,
             "out_dir: '%s/run' is in use by process %ld (another ./train writing this run); wait "
             "for it to end or choose another out_dir\nexit 2\n",
             d, pid);
    const char *first = strstr(out, want);
    CHECK(first && strstr(first + 1, want), "not refused twice with the holder's pid:\n%s", out);
    // ./evaluate reads the live run without the lock; after kill -9 the lock is gone with its
    // process: the folder is usable at once
    CHECK(strstr(out, "exit 2\nevaluate 0\nexit 0\n"), "%s", out);
}

// The process died after the last checkpoint but before the done record: every later resume
// printed "done: 0 steps" and never wrote it, so ./sweep reran the point forever.
TEST(faults_missing_done_record_is_written_on_resume) {
    char out[4096];
    const char *d = test_tmpdir();
    for (int acc = 0; acc < 2; acc++) {
        // steps: the last step; stop_at_acc: validation accuracy reaches 0.02 at step 5
        const char *extra = acc ? "steps=200 eval_every=5 stop_at_acc=0.02" : "steps=12 save_every=4";
        int st = test_run(out, sizeof out, RUN " %s out_dir=%s/r%d > /dev/null", extra, d, acc);
        CHECK(st == 0, "%s", out);
        char p[600];
        snprintf(p, sizeof p, "%s/r%d/metrics.jsonl", d, acc);
        char *full = read_file_text(p, NULL);
        CHECK(full && strstr(full, "{\"type\":\"done\""), "%s", full);
        char *last = strstr(full, "{\"type\":\"done\"");
        FILE *f = fopenCheck(p, "w");  // the record torn off
        fwriteCheck(full, 1, (size_t)(last - full), f, p);
        fcloseCheck(f, p);
        st = test_run(out, sizeof out, RUN " %s out_dir=%s/r%d", extra, d, acc);
        CHECK(st == 0 && strstr(out, "but its log had no done record: written\n"), "exit %d: %s", st, out);
        char *again = read_file_text(p, NULL);
        CHECK(!strcmp(again, full), "the log after the resume differs from the uninterrupted run's:\n%s\nvs\n%s", again, full);
        st = test_run(out, sizeof out, RUN " %s out_dir=%s/r%d", extra, d, acc);
        CHECK(st == 0 && strstr(out, "the run is complete") && strstr(out, "nothing to do"), "exit %d: %s", st, out);
        char *third = read_file_text(p, NULL);
        CHECK(!strcmp(third, full), "a complete run's log changed:\n%s", third);
        // died while reading the test set (its record torn off with the done record): the
        // resume reads it, on the best step's weights from best.safetensors, the same numbers
        char *test = strstr(full, "\"split\":\"test\"");
        while (test && test > full && test[-1] != '\n') test--;
        const char *test_end = test ? strchr(test, '\n') : NULL;
        CHECK(test && test_end && test_end + 1 == last, "the test record is not the one before done:\n%s", full);
        f = fopenCheck(p, "w");
        fwriteCheck(full, 1, (size_t)(test - full), f, p);
        fcloseCheck(f, p);
        st = test_run(out, sizeof out, RUN " %s out_dir=%s/r%d", extra, d, acc);
        CHECK(st == 0 && strstr(out, "test (read once, on the best validation step ") &&
                  strstr(out, "but its log had no done record: written\n"),
              "exit %d: %s", st, out);
        char *fourth = read_file_text(p, NULL);
        CHECK(!strcmp(fourth, full), "the log after the resume differs:\n%s\nvs\n%s", fourth, full);
        free(full), free(again), free(third), free(fourth);
    }
}

// The lines of text that contain what.
static int count_lines_with(const char *text, const char *what) {
    int n = 0;
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *hit = strstr(line, what);
        n += hit && hit < line + len;
        line = end ? end + 1 : NULL;
    }
    return n;
}

// Starts ./sweep on two points (seeds 1, 2) of a tiny model that trains until it is stopped, in the
// scratch folder (out/, sweep.log), waits until both write their logs, then runs the shell
// command `then` there ($s: the sweep's pid). Returns the status of the whole.
static int long_sweep_then(char *out, size_t n, const char *then) {
    const char *d = test_tmpdir();
    char cwd[1024];
    if (!getcwd(cwd, sizeof cwd)) test_fail(__FILE__, __LINE__, "getcwd failed");
    test_write_file("b.conf",
                    "vocab_size = 64\nseq_len = 32\nmqar_train_examples = 512\nmqar_test_examples = 64\nmqar_val_examples = 64\n"
                    "d_model = 16\nn_head = 2\nbatch_size = 16\nthreads = 1\neval_every = 0\nsparsity_every = 0\n"
                    "save_every = 100000\nsteps = 1000000\n");
    test_write_file("two.sweep", "base = b.conf\nseed = 1, 2\n");
    return test_run(out, n,
                    "cd %s && { %s/sweep two.sweep --jobs 2 --out out > sweep.log 2>&1 & s=$!; }; "
                    "for i in $(seq 3000); do [ -s %s/out/seed=1/metrics.jsonl ] && [ -s %s/out/seed=2/metrics.jsonl ] && break; sleep 0.01; done; "
                    "%s",
                    d, cwd, d, d, then);
}

// kill -9 of ./sweep left its ./train children training as orphans.
TEST(faults_sweep_killed_ends_its_trainers) {
    char out[8192];
    const char *d = test_tmpdir();
    int st = long_sweep_then(out, sizeof out,
                             "kill -9 $s; "
                             "for i in $(seq 1000); do pgrep -f 'out_dir=ou[t]/seed=' > /dev/null || break; sleep 0.01; done; "
                             "pgrep -af 'out_dir=ou[t]/seed=' || echo none left");
    CHECK(st == 0 && strstr(out, "none left"), "trainers still running 10 s after the sweep was killed:\n%s", out);
    // each saved its step on the way out (./train's SIGTERM path) and resumes from it
    for (int s = 1; s <= 2; s++) {
        char log[600];
        snprintf(log, sizeof log, "%s/out/seed=%d/train.log", d, s);
        char *text = read_file_text(log, NULL);
        CHECK(text && strstr(text, "interrupted: saving step"), "%s: %s", log, text ? text : "missing");
        free(text);
    }
}

// Ctrl-C on a sweep of two running points: each point's line says "interrupted", whether its
// trainer exited on the signal or saved and exited 0 (it had said "stopped ... before the end").
TEST(faults_sweep_ctrl_c_reports_every_running_point_interrupted) {
    char out[8192];
    int st = long_sweep_then(out, sizeof out, "kill -INT $s; wait $s; cat sweep.log");
    CHECK(st == 0 && count_lines_with(out, ": interrupted ") == 2 && strstr(out, ", interrupted, in "), "exit %d: %s",
          st, out);
}

// Where PR_SET_PDEATHSIG does not exist, ./train compares getppid() with the pid ./sweep gave it.
TEST(faults_trainer_stops_when_its_sweep_is_gone_without_pdeathsig) {
    char out[4096];
    int st = test_run(out, sizeof out, "ATTNSCOPE_PARENT_PID=1 " RUN " steps=1000 out_dir=%s/o", test_tmpdir());
    CHECK(st == 128 + 15 &&
              strstr(out, "the ./sweep that started this run has ended\ninterrupted: saving step 1 and stopping"),
          "exit %d: %s", st, out);
}

TEST(faults_key_combinations_refused_or_noted) {
    char out[4096];
    const char *d = test_tmpdir();
    int st = test_run(out, sizeof out, RUN " lr=1e-3 min_lr=0.01 steps=2 out_dir=%s/a 2>&1 >/dev/null", d);
    CHECK(st == 2 &&
              !strcmp(out, "command line: min_lr: 0.01 is above lr = 0.001 (expected min_lr <= lr: the schedule decays to it)\n"),
          "exit %d: %s", st, out);
    st = test_run(out, sizeof out, RUN " stop_at_acc=1.5 steps=2 out_dir=%s/a 2>&1 >/dev/null", d);
    CHECK(st == 2 && !strcmp(out, "command line: stop_at_acc: expected an accuracy in [0, 1] (0 = off), got '1.5'\n"),
          "exit %d: %s", st, out);
    // a config error after the run folder was made leaves no empty folder behind
    CHECK(!path_exists(test_path("a")), "an empty out_dir was left behind");
    st = test_run(out, sizeof out, RUN " task=shards train_data=%s/none*.bin steps=2 out_dir=%s/b 2>&1 >/dev/null", d, d);
    CHECK(st == 2 && !path_exists(test_path("b")), "exit %d: %s", st, out);
    st = test_run(out, sizeof out, RUN " overwrite=true steps=1 out_dir=%s/c 2>&1 >/dev/null", d);
    CHECK(st == 0 &&
              !strcmp(out, "note: command line: overwrite = true does nothing unless resume = never (resume is 'auto')\n"),
          "exit %d: %s", st, out);
}

TEST(faults_failed_saves_say_what_is_left) {
    char out[4096];
    const char *d = test_tmpdir();
    // the first save fails: there is no earlier checkpoint to speak of
    int st = test_run(out, sizeof out, "trap '' XFSZ; ulimit -f 64; " RUN " steps=6 out_dir=%s/run > /dev/null", d);
    CHECK(st == 1 && strstr(out, "ckpt_00000000.safetensors: checkpoint not saved: cannot write ") &&
              strstr(out, "(File too large) (there is no earlier checkpoint)\n"),
          "exit %d: %s", st, out);
    // `latest` cannot be replaced (a folder in its place): the reason is given
    char p[600];
    snprintf(p, sizeof p, "%s/l/latest", d);
    CHECK(mkdir_p(p) == 0);
    st = test_run(out, sizeof out, RUN " steps=2 out_dir=%s/l > /dev/null", d);
    CHECK(st == 1 &&
              strstr(out, "/l/latest: cannot point it at ckpt_00000000.safetensors (Is a directory); the checkpoint itself is saved\n"),
          "exit %d: %s", st, out);
}

// MQAR with vocab_size = 2147483647 printed nothing and shuffled 4 GB for minutes.
TEST(faults_vocab_size_beyond_the_shard_bound_is_refused) {
    char out[4096];
    int st =
        test_run(out, sizeof out, "./train /dev/null vocab_size=2147483647 out_dir=%s/v/w 2>&1 >/dev/null", test_tmpdir());
    CHECK(st == 2 &&
              !strcmp(out,
                      "command line: vocab_size: expected at most 16777216 (the largest vocabulary of shards "
                      "and tokenizers), got 2147483647\n"),
          "exit %d: %s", st, out);
    CHECK(!path_exists(test_path("v")), "an empty out_dir (or its parent) was left behind");
}

// A text of 60 short documents and two different tokenizers, in the scratch folder.
static const char *text_fixture(void) {
    const char *d = test_tmpdir();
    char out[4096], cwd[1024];
    CHECK(getcwd(cwd, sizeof cwd));
    int st = test_run(out, sizeof out,
                      "cd %s && for i in $(seq 60); do echo \"the cat sat on the mat number $i, and the dog ate the rat\"; echo; done > text.txt && "
                      "sed 's/cat/cow/g' text.txt | head -c 2000 > other.txt && "
                      "%s/tokenize train text.txt vocab_size=300 out=a.bpe > /dev/null && "
                      "%s/tokenize train other.txt vocab_size=280 out=b.bpe > /dev/null",
                      d, cwd, cwd);
    CHECK(st == 0, "%s", out);
    return d;
}

// `out=` one of the inputs replaced the user's text with exit 0; `out=` a folder.
TEST(faults_tokenize_never_writes_over_its_inputs) {
    const char *d = text_fixture();
    char out[4096], *cwd = getcwd(NULL, 0);
    char *before = read_file_text(test_path("text.txt"), NULL);
    const char *cmds[][2] = {
        {"encode text.txt tokenizer=a.bpe out=text.txt",
         "command line: out: 'text.txt' is the input 'text.txt': writing it would replace it\n"},
        {"encode text.txt tokenizer=a.bpe out=./text.txt",
         "command line: out: './text.txt' is the input 'text.txt': writing it would replace it\n"},
        {"encode text.txt tokenizer=a.bpe out=link.txt",
         "command line: out: 'link.txt' is the input 'text.txt': writing it would replace it\n"},
        {"encode text.txt tokenizer=a.bpe out=a.bpe",
         "command line: out: 'a.bpe' is the tokenizer 'a.bpe': writing it would replace it\n"},
        {"train text.txt vocab_size=270 out=text.txt",
         "command line: out: 'text.txt' is the input 'text.txt': writing it would replace it\n"},
        {"encode text.txt tokenizer=a.bpe out=sub", "command line: out: 'sub' is a folder, expected a file name\n"},
        {"train text.txt vocab_size=270 out=sub", "command line: out: 'sub' is a folder, expected a file name\n"},
    };
    int st = test_run(out, sizeof out, "cd %s && ln text.txt link.txt && mkdir sub", d);
    CHECK(st == 0, "%s", out);
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        st = test_run(out, sizeof out, "cd %s && %s/tokenize %s 2>&1 >/dev/null", d, cwd, cmds[i][0]);
        CHECK(st == 2 && !strcmp(out, cmds[i][1]), "%s: exit %d: %s", cmds[i][0], st, out);
    }
    char *after = read_file_text(test_path("text.txt"), NULL);
    CHECK(after && !strcmp(before, after), "text.txt changed");
    CHECK(!test_temp_left(test_path("sub")) && !test_temp_left(test_path("text.txt")), "a .tmp file was left");
    // an empty input: exit 2, and earlier shards under the prefix stay
    st = test_run(out, sizeof out,
                  "cd %s && %s/tokenize prepare text.txt tokenizer=a.bpe out=d/x > /dev/null && : > empty.txt && "
                  "%s/tokenize prepare empty.txt tokenizer=a.bpe out=d/x 2>&1 >/dev/null",
                  d, cwd, cwd);
    CHECK(st == 2 && !strcmp(out, "empty.txt: no text to prepare (0 documents): no shard written\n"), "exit %d: %s", st, out);
    CHECK(path_exists(test_path("d/x_train_000.bin")), "the earlier shards were removed");
    free(cwd);
}

// ./sample with another tokenizer wrote binary garbage with exit 0: shards and checkpoints now
// record the tokenizer (vocabulary and identity) and a different one is refused.
TEST(faults_wrong_tokenizer_is_refused_by_sample_and_sample_every) {
    const char *d = text_fixture();
    char out[8192], *cwd = getcwd(NULL, 0);
#define SHARDS_RUN                                                                                                     \
    "%s/train /dev/null task=shards train_data='d/x_train_*.bin' seq_len=16 d_model=16 n_head=2 "                      \
    "batch_size=4 steps=3 threads=1 sparsity_every=0 eval_every=0"
    int st = test_run(out, sizeof out,
                      "cd %s && %s/tokenize prepare text.txt tokenizer=a.bpe out=d/x val_fraction=0 > /dev/null && " SHARDS_RUN
                      " tokenizer=a.bpe out_dir=run > /dev/null",
                      d, cwd, cwd);
    CHECK(st == 0, "%s", out);
    Shard s;
    shard_open(&s, test_path("d/x_train_000.bin"));
    CHECK(s.tok_vocab > 256, "the shard records no tokenizer");
    shard_close(&s);
    st = test_run(out, sizeof out, "cd %s && %s/sample run n=4 > /dev/null", d, cwd);
    CHECK(st == 0, "the right tokenizer: %s", out);
    st = test_run(out, sizeof out, "cd %s && %s/sample run n=4 tokenizer=b.bpe 2>&1 >/dev/null", d, cwd);
    CHECK(st == 2 && strstr(out, "tokenizer: b.bpe (vocabulary 280, identity ") &&
              strstr(out, ") is not the tokenizer the model was trained with (vocabulary 29") &&
              strstr(out, "recorded in run/ckpt_00000003.safetensors)\n") && strchr(out, '\n')[1] == 0,
          "exit %d: %s", st, out);
    st = test_run(out, sizeof out,
                  "cd %s && " SHARDS_RUN " sample_every=1 tokenizer=b.bpe out_dir=run2 2>&1 >/dev/null", d, cwd);
    CHECK(st == 2 && strstr(out, "is not the tokenizer the model was trained with") &&
              strstr(out, "recorded in the training shards)\n"),
          "exit %d: %s", st, out);
    // shards without the record (llm.c's own) are accepted as before, with no check
    uint32_t toks[64];
    for (int i = 0; i < 64; i++) toks[i] = (uint32_t)(i * 7 % 250);
    CHECK(mkdir_p(test_path("u")) == 0);
    shard_write(test_path("u/y_000.bin"), toks, 64, 0);
    st = test_run(out, sizeof out,
                  "cd %s && %s/train /dev/null task=shards train_data=u/y_000.bin vocab_size=300 seq_len=16 "
                  "d_model=16 n_head=2 batch_size=2 steps=2 threads=1 sparsity_every=0 eval_every=0 out_dir=run3 > /dev/null && "
                  "%s/sample run3 n=4 tokenizer=b.bpe > /dev/null",
                  d, cwd, cwd);
    CHECK(st == 0, "%s", out);
    free(cwd);
}

// A UTF-8 BOM (Windows editors) gave "unknown key 'mixer'"; `include = DIR` "Input/output error";
// '#' could not be in a value.
TEST(faults_config_bom_include_folder_and_quoted_hash) {
    Config c;
    config_init_all(&c);
    config_load_text(&c, "\xEF\xBB\xBFmixer = linear\nsample_prompt = \"a # b\"   # a comment\n", "bom.conf");
    CHECK(!strcmp(cfg_str(&c, "mixer"), "linear") && !strcmp(cfg_str(&c, "sample_prompt"), "a # b"), "%s / %s",
          cfg_str(&c, "mixer"), cfg_str(&c, "sample_prompt"));
    // the effective config (config.conf, a checkpoint's) quotes it, so it reads back the same
    char *text = config_to_text(&c);
    Config back;
    config_init_all(&back);
    config_load_text(&back, text, "effective config");
    CHECK(!strcmp(cfg_str(&back, "sample_prompt"), "a # b") && !config_first_difference(&c, &back), "%s",
          cfg_str(&back, "sample_prompt"));
    free(text);
    config_free(&back);
    config_free(&c);
    char out[4096];
    CHECK(mkdir_p(test_path("incdir")) == 0);
    const char *conf = test_write_file("inc.conf", "include = incdir\n");
    int st = test_run(out, sizeof out, "./train %s 2>&1 >/dev/null", conf);
    CHECK(st == 2 && strstr(out, "inc.conf:1: include: '") && strstr(out, "/incdir' is a folder, expected a config file\n"),
          "exit %d: %s", st, out);
    conf = test_write_file("q.conf", "sample_prompt = \"abc\n");
    st = test_run(out, sizeof out, "./train %s 2>&1 >/dev/null", conf);
    CHECK(st == 2 && strstr(out, "q.conf:1: sample_prompt: a value that starts with '\"' must end with its closing '\"'\n"),
          "exit %d: %s", st, out);
    // a sweep file with a BOM
    const char *sweep = test_write_file("bom.sweep", "\xEF\xBB\xBFsteps = 1\nseed = 1, 2\n");
    st = test_run(out, sizeof out, "./sweep %s --print", sweep);
    CHECK(st == 0 && strstr(out, "seed=2"), "exit %d: %s", st, out);
}

// `lr = 1e-3, 0.001` made two points, two folders, one run twice.
TEST(faults_sweep_values_equal_as_numbers_are_one_point) {
    char out[4096];
    test_write_file("b.conf", "d_model = 16\n");
    const char *cases[][2] = {
        {"base = b.conf\nlr = 1e-3, 0.001\n",
         "d1.sweep:2: lr: '1e-3' and '0.001' are the same value: points 'lr=1e-3' and 'lr=0.001' would be one run\n"},
        {"base = b.conf\nd_model = 16, 016\nseed = 1, 2\n",
         "d1.sweep:2: d_model: '16' and '016' are the same value: points 'd_model=16,seed=1' and 'd_model=016,seed=1' would be one run\n"},
    };
    for (int i = 0; i < 2; i++) {
        const char *sweep = test_write_file("d1.sweep", cases[i][0]);
        int st = test_run(out, sizeof out, "cd %s && %s/sweep d1.sweep --print 2>&1 >/dev/null", test_tmpdir(),
                          getcwd((char[1024]){0}, 1024));
        (void)sweep;
        CHECK(st == 2 && !strcmp(out, cases[i][1]), "exit %d: %s", st, out);
    }
}

// Reliability III, item 7: the gaps a careless user still found, each now one line and exit 2
// (or, for the tokenizer, one note).
TEST(faults_evaluate_text_run_cells_read_only_and_failed_llmc_file) {
    const char *d = text_fixture();
    char out[8192], cwd[1024];
    CHECK(getcwd(cwd, sizeof cwd));
    // a text run: MQAR keys on ./evaluate's command line were silently ignored
    int st = test_run(out, sizeof out,
                      "cd %s && %s/tokenize encode text.txt tokenizer=a.bpe out=t.bin 2>/dev/null && "
                      "%s/train /dev/null task=shards train_data=t.bin val_data=t.bin vocab_size=0 seq_len=16 d_model=16 "
                      "n_head=2 batch_size=2 steps=2 save_every=2 eval_every=0 sparsity_every=0 threads=1 out_dir=tr > /dev/null",
                      d, cwd, cwd);
    CHECK(st == 0, "%s", out);
    st = test_run(out, sizeof out, "cd %s && %s/evaluate tr mqar_cells=4x16 2>&1 >/dev/null", d, cwd);
    CHECK(st == 2 && strstr(out, "mqar_cells: tr/ckpt_00000000.safetensors is a run of task = shards: it has no MQAR test set"),
          "exit %d: %s", st, out);
    st = test_run(out, sizeof out, "cd %s && %s/evaluate tr mqar_test_examples=10 2>&1 >/dev/null", d, cwd);
    CHECK(st == 2 && strstr(out, "mqar_test_examples: tr/"), "exit %d: %s", st, out);
    // oracle and derange need answer positions: on a text run they changed nothing and recorded it
    const char *kinds[] = {"oracle", "oracle_window", "oracle_wrong", "derange"};
    for (int k = 0; k < 4; k++) {
        st = test_run(out, sizeof out, "cd %s && %s/evaluate tr intervene=%s 2>&1 >/dev/null", d, cwd, kinds[k]);
        char want[200];
        snprintf(want, sizeof want, "intervene: %s moves weight between MQAR key-value positions, and this run's", kinds[k]);
        CHECK(st == 2 && strstr(out, want) && !path_exists(test_path("tr/intervention.jsonl")), "exit %d: %s", st, out);
    }
    // eval.jsonl cannot be written (its lock file cannot be made; a folder there): the reason
    st = test_run(out, sizeof out, "cd %s && mkdir tr/eval.jsonl.lock && %s/evaluate tr 2>&1 >/dev/null", d, cwd);
    CHECK(st == 2 && strstr(out, "tr/eval.jsonl.lock: cannot open the lock file (Is a directory)\n"), "exit %d: %s", st, out);
    // an llm.c file that fails to load leaves no empty FILE.eval/ behind
    int32_t hd[256] = {20240326, 3, 16, 64, 1, 2, 16, 64};
    FILE *f = fopen(test_path("cut.bin"), "wb");
    CHECK(f && fwrite(hd, sizeof hd, 1, f) == 1 && fclose(f) == 0);
    st = test_run(out, sizeof out, "cd %s && %s/evaluate cut.bin 2>&1 >/dev/null; test ! -e cut.eval", d, cwd);
    CHECK(st == 0, "cut.eval/ was left behind: %s", out);
}

// h3_d_state on a softmax run did nothing, silently: a mixer's option (other than its default) on a
// run with no layer of that mixer is refused, by ./train and by ./sweep before any point runs.
TEST(faults_mixer_option_without_its_mixer_is_refused) {
    char out[4096];
    int st = test_run(out, sizeof out, RUN " mixer=softmax h3_d_state=4 out_dir=%s/x 2>&1 >/dev/null", test_tmpdir());
    CHECK(st == 2 &&
              !strcmp(out,
                      "command line: h3_d_state is an option of mixer 'h3', and no layer of this run is one "
                      "(mixer = softmax); remove it or choose that mixer\n"),
          "exit %d: %s", st, out);
    st = test_run(out, sizeof out, RUN " mixer=h3,softmax n_layer=2 h3_d_state=4 steps=1 out_dir=%s/y 2>&1", test_tmpdir());
    CHECK(st == 0, "a hybrid with an h3 layer: exit %d: %s", st, out);
    // a sweep that zips an option across mixers at its default is fine; another value is refused
    const char *sw = test_write_file("m.sweep",
                                     "steps = 1\nmixer = softmax, cog\ncog_softmax_ends = true, false\n"
                                     "zip = mixer, cog_softmax_ends\n");
    st = test_run(out, sizeof out, "./sweep %s --print", sw);
    CHECK(st == 0, "exit %d: %s", st, out);
    sw = test_write_file("n.sweep", "steps = 1\nmixer = softmax, cog\ncog_softmax_ends = false\n");
    st = test_run(out, sizeof out, "./sweep %s --print 2>&1 >/dev/null", sw);
    CHECK(st == 2 && strstr(out, "n.sweep:3: cog_softmax_ends is an option of mixer 'cog'"), "exit %d: %s", st, out);
}

// A tokenizer smaller than the model's vocabulary limited sampling silently: said once.
TEST(faults_sampling_with_a_smaller_tokenizer_says_so_once) {
    const char *d = text_fixture();
    char out[8192], cwd[1024];
    CHECK(getcwd(cwd, sizeof cwd));
    int st = test_run(out, sizeof out,
                      "cd %s && %s/tokenize encode text.txt tokenizer=a.bpe out=t.bin 2>/dev/null && "
                      "%s/train /dev/null task=shards train_data=t.bin val_data=t.bin vocab_size=400 tokenizer=a.bpe "
                      "seq_len=16 d_model=16 n_head=2 batch_size=2 steps=4 sample_every=1 sample_tokens=4 save_every=4 "
                      "eval_every=0 sparsity_every=0 threads=1 out_dir=big 2>&1 >/dev/null",
                      d, cwd, cwd);
    CHECK(st == 0, "%s", out);
    const char *note = "note: tokenizer a.bpe has 291 tokens, the model's vocabulary 400: samples draw from the first 291";
    CHECK(strstr(out, note) && !strstr(strstr(out, note) + 1, "note: tokenizer"), "not said exactly once: %s", out);
    st = test_run(out, sizeof out, "cd %s && %s/sample big n=4 2>&1 >/dev/null", d, cwd);
    CHECK(st == 0 && strstr(out, note), "exit %d: %s", st, out);
}

// The summary was written in place: a kill -9 while ./sweep wrote it left summary.md or a CSV
// empty (tests/faults/summary_kill9.sh kills it 40 times). Here the file-size limit stops the
// writing half way, every time: the earlier summary must stay whole, with no temporary file left.
TEST(faults_summary_cut_while_writing_keeps_the_earlier_one) {
    char out[4096];
    const char *d = test_tmpdir();
    test_write_file("b.conf", "d_model = 16\n");
    char text[512];
    snprintf(text, sizeof text, "base = b.conf\nout = %s/out\nmixer = softmax, linear\nseed = 0, 1, 2, 3, 4, 5, 6, 7\n", d);
    const char *sweep = test_write_file("s.sweep", text);
    const char *mixers[] = {"softmax", "linear"};
    for (int m = 0; m < 2; m++)
        for (int s = 0; s < 8; s++) {
            char dir[600], p[700];
            snprintf(dir, sizeof dir, "%s/out/mixer=%s,seed=%d", d, mixers[m], s);
            CHECK(mkdir_p(dir) == 0);
            snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
            FILE *f = fopenCheck(p, "w");
            fprintf(f,
                    "{\"type\":\"eval\",\"step\":10,\"split\":\"val\",\"loss\":1,\"acc\":0.%d5}\n"
                    "{\"type\":\"done\",\"step\":10,\"reason\":\"steps\"}\n",
                    s);
            fcloseCheck(f, p);
        }
    int st = test_run(out, sizeof out, "./sweep %s --collect > /dev/null", sweep);
    CHECK(st == 0, "exit %d: %s", st, out);
    static const char *files[] = {"summary.md", "summary.csv", "summary_groups.csv"};
    char *before[3];
    for (int i = 0; i < 3; i++) {
        char p[600];
        snprintf(p, sizeof p, "%s/out/%s", d, files[i]);
        before[i] = read_file_text(p, NULL);
        CHECK(before[i] && strlen(before[i]) > 0, "%s", p);
    }
    CHECK(strlen(before[0]) > 2048 && strlen(before[1]) > 1024, "the summary is too small to be cut: %zu, %zu bytes",
          strlen(before[0]), strlen(before[1]));
    // files may not grow past 1 KiB: write() fails with EFBIG
    st = test_run(out, sizeof out, "trap '' XFSZ; ulimit -f 1; ./sweep %s --collect 2>&1 > /dev/null", sweep);
    CHECK(st == 1 && strstr(out, "sweep: cannot write the summary into ") && strstr(out, "(File too large)\n") &&
              strchr(out, '\n')[1] == 0,
          "exit %d: %s", st, out);
    for (int i = 0; i < 3; i++) {
        char p[600];
        snprintf(p, sizeof p, "%s/out/%s", d, files[i]);
        char *after = read_file_text(p, NULL);
        CHECK(after && !strcmp(after, before[i]), "%s: cut to %zu of %zu bytes", p, after ? strlen(after) : 0,
              strlen(before[i]));
        snprintf(p, sizeof p, "%s/out/%s", d, files[i]);
        CHECK(!test_temp_left(p), "a temporary file of %s was left behind", p);
        free(after), free(before[i]);
    }
}

// A cell repeated in an mqar_cells value, or two points whose cell lists differ only in spelling,
// passed the sweep's up-front check: every such point failed at run time (or one run was trained
// twice). Refused before anything runs, naming the sweep file's line and key.
TEST(faults_sweep_duplicate_cells_are_refused_up_front) {
    char out[4096];
    test_write_file("b.conf", "d_model = 16\nseq_len = 64\n");
    const char *cases[][2] = {
        {"base = b.conf\nmqar_cells = \"4x16, 4x16\", 4x32\n", "c.sweep:2: mqar_cells: entry '4x16' is listed twice\n"},
        {"base = b.conf\nseed = 1, 2\nmqar_test_cells = \"4x16 8x32 4x16\"\n",
         "c.sweep:3: mqar_test_cells: entry '4x16' is listed twice\n"},
        {"base = b.conf\nmqar_cells = \"4x16, 8x32\", \"04x16,8x32\"\n",
         "c.sweep:2: mqar_cells: '4x16, 8x32' and '04x16,8x32' are the same value: points 'mqar_cells=4x16__8x32' and "
         "'mqar_cells=04x16_8x32' would be one run\n"},
        {"base = b.conf\nmqar_cells = 4x16, 4x128\n",
         "c.sweep:2: mqar_cells: cell 4x128 is 128 tokens long, above seq_len = 64"},
    };
    char cwd[1024];
    CHECK(getcwd(cwd, sizeof cwd));
    for (int i = 0; i < 4; i++) {
        test_write_file("c.sweep", cases[i][0]);
        int st = test_run(out, sizeof out, "cd %s && %s/sweep c.sweep --print 2>&1 >/dev/null", test_tmpdir(), cwd);
        CHECK(st == 2 && !strncmp(out, cases[i][1], strlen(cases[i][1])) && strchr(out, '\n')[1] == 0,
              "case %d: exit %d: %s", i, st, out);
    }
}

// The sampler: sample_tokens beyond SAMPLE_MAX_TOKENS is refused up front (2147483647 ran 12 min
// 40 s under `timeout 120`, ignoring its SIGTERM), and a SIGTERM during a long sample stops it
// within a moment: the sample is left out, the step saved, exit 128 + 15.
TEST(faults_sampler_refuses_a_huge_sample_and_obeys_sigterm) {
    char out[8192];
    const char *d = test_tmpdir();
    int st = test_run(out, sizeof out, RUN " steps=2 sample_every=1 sample_tokens=2147483647 out_dir=%s/a 2>&1", d);
    CHECK(st == 2 &&
              !strcmp(out,
                      "command line: sample_tokens: expected at most 1000000 tokens per sample, got "
                      "2147483647\n"),
          "exit %d: %s", st, out);
    st = test_run(out, sizeof out,
                  RUN " steps=4 sample_every=1 sample_tokens=1000000 out_dir=%s/b > %s/b.log 2>&1 & p=$!; sleep 1.5; "
                      "t0=$(date +%%s%%N); kill -TERM $p; wait $p; rc=$?; t1=$(date +%%s%%N); "
                      "echo \"rc=$rc ms=$(( (t1 - t0) / 1000000 ))\"; cat %s/b.log",
                  d, d, d);
    int rc = -1, ms = -1;
    CHECK(sscanf(out, "rc=%d ms=%d", &rc, &ms) == 2 && rc == 143 && ms < 1000 &&
              strstr(out, "| sample: interrupted after ") && strstr(out, "interrupted: saving step"),
          "%s", out);
}

// A long MQAR generation says so after 3 s: at vocab_size = 16777216 an example takes about half a
// second, and the note, asked every 64th example, came after 37 s.
TEST(faults_huge_vocabulary_generation_note_comes_within_seconds) {
    char out[8192];
    int st = test_run(out, sizeof out, "timeout 4.5 " RUN " vocab_size=16777216 d_model=8 n_head=1 out_dir=%s/v 2>&1",
                      test_tmpdir());
    CHECK(st == 124 && strstr(out, "generating MQAR data: 512 examples of 4 pairs in 32 tokens over a vocabulary of 16777216"),
          "exit %d: %s", st, out);
}

static void parse_strengths(void *arg) {
    InterventionKind k;
    double s[INTERVENTION_MAX_STRENGTHS];
    intervention_parse(arg, &k, s);
}

// A strength given twice wrote two records with one key (flatten:1,1,1); strengths were keyed with
// %g, so 0.1234567 and 0.1234568 shared one and the second replaced the first.
TEST(faults_intervention_strengths_distinct_and_keyed_exactly) {
    char err[512];
    CHECK(test_fork(parse_strengths, "flatten:1,1,1", err, sizeof err) == 2 &&
              !strcmp(err, "intervene: flatten: the strength '1' appears twice\n"),
          "%s", err);
    CHECK(test_fork(parse_strengths, "sharpen:2,2.0", err, sizeof err) == 2 &&
              !strcmp(err, "intervene: sharpen: the strength '2.0' appears twice\n"),
          "%s", err);
    char a[256], b[256], c[256];
    Intervention iv = {IV_SHARPEN, 0.1234567, -1, -1, 0};
    intervention_options(a, sizeof a, &iv, NULL);
    iv.strength = 0.1234568;
    intervention_options(b, sizeof b, &iv, NULL);
    iv.kind = IV_FLATTEN, iv.strength = 0.1;
    intervention_options(c, sizeof c, &iv, NULL);
    CHECK(!strcmp(a, "intervene=sharpen:0.1234567 rows=query") &&
              !strcmp(b, "intervene=sharpen:0.1234568 rows=query") && !strcmp(c, "intervene=flatten:0.1 rows=query"),
          "%s | %s | %s", a, b, c);
}

// ./export into a folder it cannot write exited 1 with a message that did not name `out`; now the
// file is tried before any work: one line naming out, exit 2. (A read-only folder; as root, which
// writes anywhere, /sys, where no file can be made.)
TEST(faults_export_into_a_read_only_folder_names_out) {
    char out[8192];
    const char *d = test_tmpdir();
    int st = test_run(out, sizeof out, RUN " steps=1 out_dir=%s/run > /dev/null 2>&1", d);
    CHECK(st == 0, "%s", out);
    const char *ro = geteuid() == 0 ? "/sys" : test_path("ro");
    if (geteuid() != 0) CHECK(mkdir_p(ro) == 0 && chmod(ro, 0555) == 0);
    if (geteuid() == 0 && !is_directory(ro)) return;  // no such folder here: nothing to try
    const char *formats[] = {"llmc", "safetensors", "hf"};
    for (int i = 0; i < 3; i++) {
        st = test_run(out, sizeof out, "./export %s/run format=%s out=%s/%s 2>&1 >/dev/null", d, formats[i], ro,
                      i == 2 ? "kernel" : "x.bin");
        CHECK(st == 2 && !strncmp(out, "command line: out: ", 19) && strstr(out, "(Permission denied)\n") &&
                  strchr(out, '\n')[1] == 0,
              "format=%s: exit %d: %s", formats[i], st, out);
    }
}

// A tiny max_memory blamed the default mqar_val_examples ("lower mqar_val_examples"): when no key
// that sizes the run is above its default, the limit is what is small, and it is named.
TEST(faults_tiny_max_memory_names_max_memory) {
    char out[8192];
    int st = test_run(out, sizeof out, RUN " max_memory=0.0001 out_dir=%s/mm 2>&1", test_tmpdir());
    CHECK(st == 2 && out == strstr(out, "command line: max_memory = 0.0001: the run needs ") &&
              strstr(out, "no key that sizes it is above its default; raise max_memory\n") && strchr(out, '\n')[1] == 0,
          "exit %d: %s", st, out);
    st = test_run(out, sizeof out, RUN " max_memory=0.0001 batch_size=100000 out_dir=%s/mm 2>&1", test_tmpdir());
    CHECK(st == 2 && strstr(out, "command line: batch_size = 100000: ") && strstr(out, "; lower batch_size\n"),
          "exit %d: %s", st, out);
}

// ./evaluate mqar_val_examples=2147483647 died "out of memory allocating ..." naming no key; the
// set is sized up front, as ./train sizes its run.
TEST(faults_evaluate_huge_validation_set_names_the_key) {
    char out[8192];
    const char *d = test_tmpdir();
    int st = test_run(out, sizeof out, RUN " steps=1 out_dir=%s/run > /dev/null 2>&1", d);
    CHECK(st == 0, "%s", out);
    st = test_run(out, sizeof out, "./evaluate %s/run mqar_val_examples=2147483647 2>&1 >/dev/null", d);
    CHECK(st == 2 && out == strstr(out, "command line: mqar_val_examples = 2147483647: the validation set needs at least ") &&
              strstr(out, "; lower mqar_val_examples\n") && strchr(out, '\n')[1] == 0,
          "exit %d: %s", st, out);
}

// tensorboard = true: the event file appeared empty and got its first events only at the first
// flush, so a start-up killed in between (a long first validation) left an empty event file. Now it
// appears with them: killed the moment it exists, it holds its two events.
TEST(faults_killed_start_up_leaves_no_empty_event_file) {
    char out[8192];
    const char *d = test_tmpdir();
    int st = test_run(out, sizeof out,
                      RUN " tensorboard=true mqar_val_examples=100000 d_model=64 eval_every=1 steps=2 out_dir=%s/k "
                          "> /dev/null 2>&1 & p=$!; for i in $(seq 2000); do "
                          "ls %s/k/events.out.tfevents.* > /dev/null 2>&1 && break; sleep 0.005; done; kill -9 $p; "
                          "wait $p; cat %s/k/events.out.tfevents.* | wc -c",
                      d, d, d);
    long bytes = -1;
    const char *n = strchr(out, '\n');  // after wait's "Killed" line
    CHECK(st == 0 && n && sscanf(n + 1, "%ld", &bytes) == 1 && bytes == 69, "%s", out);
}

// A SIGTERM during a long validation pass (200000 sequences, about 40 s on one thread) waited for
// the pass to end; now the pass is dropped within a batch (no record of half a pass) and the run
// saves and stops.
TEST(faults_sigterm_during_a_long_validation_stops_within_a_second) {
    char out[8192];
    const char *d = test_tmpdir();
    int st = test_run(out, sizeof out,
                      RUN " mqar_val_examples=200000 eval_every=1 steps=3 out_dir=%s/e > %s/e.log 2>&1 & p=$!; "
                          "for i in $(seq 1000); do grep -q '\"type\":\"run\"' %s/e/metrics.jsonl 2>/dev/null && break; "
                          "sleep 0.01; done; sleep 0.5; t0=$(date +%%s%%N); kill -TERM $p; wait $p; rc=$?; "
                          "t1=$(date +%%s%%N); echo \"rc=$rc ms=$(( (t1 - t0) / 1000000 ))\"; cat %s/e.log; "
                          "grep -c '\"type\":\"eval\"' %s/e/metrics.jsonl",
                      d, d, d, d, d);
    int rc = -1, ms = -1;
    CHECK(st == 1 && sscanf(out, "rc=%d ms=%d", &rc, &ms) == 2 && rc == 143 && ms < 1000 &&
              strstr(out, "interrupted: saving step") && strstr(out, "\n0\n"),
          "exit %d: %s", st, out);
}
