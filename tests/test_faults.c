// Faults, the quick versions (tests/faults/*.sh do more, with `make faults`): a training killed
// with SIGKILL resumes to the same result as an uninterrupted one; a full disk while saving stops
// with one line and keeps the previous checkpoint; an out_dir that cannot be written is refused
// before any training.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/config.h"
#include "core/io.h"
#include "core/keys.h"
#include "core/safetensors.h"
#include "tests/test.h"

// 1 thread (bit-identical resume), a checkpoint after every step.
#define RUN "./train /dev/null vocab_size=64 seq_len=32 mqar_kv_pairs=4 mqar_train_examples=512 " \
            "mqar_test_examples=64 d_model=32 n_head=2 batch_size=16 lr=3e-3 eval_every=20 "      \
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
    snprintf(p, sizeof p, "%s/run/ckpt_00000003.safetensors.tmp", d);
    CHECK(!path_exists(p), "the temporary file was left behind");
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
          !strstr(out, "step"), "exit %d: %s", st, out);
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
    // config.conf (6 KB) fits in 12 KiB (POSIX sh counts ulimit -f in 512-byte blocks), metrics.jsonl
    // outgrows it
    int st = test_run(out, sizeof out, "trap '' XFSZ; ulimit -f 24; " RUN " save_every=0 steps=300 out_dir=%s/log > /dev/null",
                      test_tmpdir());
    CHECK(st == 1 && strstr(out, "/log/metrics.jsonl: write error (File too large)\n") && strchr(out, '\n')[1] == 0,
          "exit %d: %s", st, out);
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
    CHECK(strlen(cfg_str(&b, "sample_prompt")) == strlen(value), "%zu characters back", strlen(cfg_str(&b, "sample_prompt")));
    free(text);
    config_free(&a);
    config_free(&b);
}

TEST(faults_garbage_token_in_a_shard_is_bad_input_naming_the_file) {
    // vocab_size = 0 took the vocabulary from the largest token: 2312681882 sized the embedding
    // table; now refused naming the file (the README's table runs the command line too)
    char out[4096];
    int st = test_run(out, sizeof out, RUN " task=shards vocab_size=0 train_data=tests/fuzz/regress/shards/token_beyond_any_vocabulary.bin "
                      "val_data=tests/fuzz/regress/shards/token_beyond_any_vocabulary.bin out_dir=%s/g", test_tmpdir());
    CHECK(st == 2 && strstr(out, "token_beyond_any_vocabulary.bin: token 2312681882 is larger than any vocabulary"), "exit %d: %s", st, out);
}

// --- README "Bad input": every row with exit 2 whose command cell is a plain command -------------

// Replaces every 8-digit hex word of a line about a CRC32 by "########".
static void mask_crc(char *s) {
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

TEST(faults_readme_bad_input_table_is_what_the_programs_print) {
    char *readme = read_file_text("README.md", NULL);
    CHECK(readme, "cannot read README.md");
    char *sec = strstr(readme, "\n## Bad input\n");
    CHECK(sec, "README.md has no 'Bad input' section");
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
        CHECK(st == 2 && !strcmp(out, want), "%s:\n  README: %s (exit 2)\n  prints: %s (exit %d)", cmd, want, out, st);
        rows++;
    }
    CHECK(rows >= 40, "only %d rows checked", rows);
}
