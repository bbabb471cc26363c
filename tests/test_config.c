// Config files: includes, overrides, strict errors with file:line and exit status 2.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/io.h"
#include "core/json.h"
#include "model/keys.h"
#include "core/rng.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

static void load_file(void *path) {
    Config c;
    config_init_all(&c);
    config_load_file(&c, path);
}

static void expect_error(const char *path, const char *want) {
    char err[1024];
    int st = test_fork(load_file, (void *)path, err, sizeof err);
    CHECK(st == 2, "exit %d, stderr: %s", st, err);
    CHECK(strstr(err, want), "stderr '%s' lacks '%s'", err, want);
    CHECK(strchr(err, '\n') == err + strlen(err) - 1, "not one line: '%s'", err);
}

TEST(config_include_override_and_command_line) {
    test_write_file("base.conf", "# base\nlr = 1e-3   # trailing comment\nd_model = 32\nn_head = 2\n");
    const char *top = test_write_file("top.conf", "include = base.conf\n\n  d_model=48  \nmixer = softmax\n");
    Config c;
    config_init_all(&c);
    config_load_file(&c, top);
    CHECK(cfg_int(&c, "d_model") == 48);
    CHECK(cfg_int(&c, "n_head") == 2);
    CHECK_CLOSE(cfg_float(&c, "lr"), 1e-3, 0);
    char *args[] = {"d_model=96", "lr = 0.5"};
    config_apply_args(&c, 2, args);
    CHECK(cfg_int(&c, "d_model") == 96);
    CHECK_CLOSE(cfg_float(&c, "lr"), 0.5, 0);
    CHECK(!strcmp(cfg_str(&c, "optimizer"), "adamw"));  // default
}

TEST(config_effective_text_reloads_identically) {
    const char *p = test_write_file("a.conf", "lr = 3e-3\nmlp = false\nout_dir = runs/x\n");
    Config a, b;
    config_init_all(&a);
    config_load_file(&a, p);
    char *text = config_to_text(&a);
    config_init_all(&b);
    config_load_text(&b, text, "effective");
    char *again = config_to_text(&b);
    CHECK(!strcmp(text, again));
    CHECK(config_first_difference(&a, &b) == NULL);
    CHECK(strstr(text, "lr = 0.003"), "%s", text);
    config_set(&b, "d_model", "128", "test");
    CHECK(!strcmp(config_first_difference(&a, &b), "d_model"));
    config_set(&b, "d_model", "64", "test");
    config_set(&b, "steps", "99", "test");  // run length may change on resume
    CHECK(config_first_difference(&a, &b) == NULL);
}

TEST(config_unknown_key_suggests_nearest) {
    const char *p = test_write_file("x.conf", "lr = 1e-3\n\nn_heads = 4\n");
    expect_error(p, "x.conf:3: unknown key 'n_heads' (did you mean 'n_head'?)");
}

TEST(config_bad_values_name_line_and_expectation) {
    expect_error(test_write_file("a.conf", "mixer = softmax\nlr = abc\n"),
                 "a.conf:2: lr: expected a positive number, got 'abc'");
    expect_error(test_write_file("b.conf", "d_model = -3\n"), "b.conf:1: d_model: expected a positive integer, got '-3'");
    expect_error(test_write_file("c.conf", "mlp = yes\n"), "c.conf:1: mlp: expected true or false, got 'yes'");
    expect_error(test_write_file("d.conf", "mixer = nope\n"), "d.conf:1: mixer: expected one of softmax");
    expect_error(test_write_file("e.conf", "beta2 = 1\n"), "e.conf:1: beta2: expected a number in [0, 1), got '1'");
    expect_error(test_write_file("f.conf", "lr 1e-3\n"), "f.conf:1: expected 'key = value', got 'lr 1e-3'");
    expect_error(test_write_file("g.conf", "steps = 12x\n"), "g.conf:1: steps: expected a non-negative integer, got '12x'");
    expect_error(test_write_file("h.conf", "lr = nan\n"), "h.conf:1: lr: expected a positive number, got 'nan'");
}

TEST(config_missing_include_and_cycle) {
    expect_error(test_write_file("m.conf", "include = nope.conf\n"), "m.conf:1: include: cannot open");
    test_write_file("p.conf", "include = q.conf\n");
    expect_error(test_write_file("q.conf", "include = p.conf\n"), "include: nested more than 16 deep");
    expect_error(test_path("absent.conf"), "absent.conf: cannot open config");
    // an endless file is refused, not read until memory runs out
    expect_error("/dev/zero", "/dev/zero: larger than 16 MiB: not a config file");
    expect_error(test_write_file("z.conf", "include = /dev/zero\n"), "z.conf:1: include: '/dev/zero' is larger than 16 MiB");
}

static void apply_bad_arg(void *arg) {
    Config c;
    config_init_all(&c);
    char *argv[] = {arg};
    config_apply_args(&c, 1, argv);
}

TEST(config_command_line_errors) {
    char err[512];
    CHECK(test_fork(apply_bad_arg, "n_layers=3", err, sizeof err) == 2);
    CHECK(strstr(err, "command line: unknown key 'n_layers' (did you mean 'n_layer'?)"), "%s", err);
    CHECK(test_fork(apply_bad_arg, "n_layer", err, sizeof err) == 2);
    CHECK(strstr(err, "command line: expected key=value, got 'n_layer'"), "%s", err);
}

// The non-exiting loader (checkpoints' configs, fuzzing) reports the same one-line messages,
// and leaves the exiting loader as it was.
TEST(config_try_load_text_returns_the_error) {
    Config c;
    config_init_all(&c);
    char err[256] = "";
    CHECK(config_try_load_text(&c, "lr = 2e-3\nn_layer = 3\n", "meta", err, sizeof err) == 0, "%s", err);
    CHECK(cfg_int(&c, "n_layer") == 3, "n_layer %ld", cfg_int(&c, "n_layer"));
    CHECK(config_try_load_text(&c, "lr = 1e-3\nlr = abc\n", "meta", err, sizeof err) == -1, "accepted");
    CHECK(!strcmp(err, "meta:2: lr: expected a positive number, got 'abc'"), "%s", err);
    CHECK(config_try_load_text(&c, "include = x.conf\n", "meta", err, sizeof err) == -1, "accepted");
    CHECK(strstr(err, "meta:1: include is not allowed here"), "%s", err);
    config_free(&c);
    const char *p = test_write_file("y.conf", "d_model = -1\n");
    expect_error(p, "y.conf:1: d_model: expected");
}

// Writes a's effective config and reads it back: every key must come back byte for byte.
static void check_round_trip(const Config *a, const char *what) {
    char *text = config_to_text(a);
    Config b;
    config_init_all(&b);
    char err[512] = "";
    CHECK(config_try_load_text(&b, text, "effective config", err, sizeof err) == 0, "%s: %s", what, err);
    for (int i = 0; i < a->n_keys; i++)
        CHECK(!strcmp(a->value[i], b.value[i]), "%s: key %s is '%s' but '%s' after writing and reading", what,
              a->keys[i]->name, a->value[i], b.value[i]);
    config_free(&b);
    free(text);
}

// The fuzz target's round-trip property in short (tests/fuzz/fuzz_config.c runs it for long): a
// value with an unmatched '"', a '#', a backslash, a line break or edge spaces made a run whose
// config.conf and checkpoints could not be read back (resume, ./evaluate, ./sample refused them).
TEST(config_any_accepted_value_reads_back_from_the_written_config) {
    static const char *cases[] = {"1 2\"3",  "a\"b", "\"hi\" there",  "say \"#1\"",   "x\ny",
                                  "\"",      "\\",   "\\\"",          "a # b",        " lead",
                                  "trail\t", "\r",   "\"a\" # \"b\"", "\\x41",        "\x01\x1f\x7f",
                                  "#",       "=",    "a = b",         "\xEF\xBB\xBF", "\xc3\xa9\xe2\x82\xac"};
    Config a;
    config_init_all(&a);
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        config_set(&a, "sample_prompt", cases[k], "test");
        config_set(&a, "out_dir", cases[(k + 1) % (sizeof cases / sizeof *cases)], "test");
        check_round_trip(&a, cases[k]);
    }
    // random strings over an alphabet heavy in what quoting must handle, and every byte 1-255
    const char alphabet[] = "\"\\#= \t\n\rxn\x01\x7f\xc3\xa9";
    Rng rng;
    rng_seed(&rng, 12345);
    char v[48];
    for (int n = 0; n < 3000; n++) {
        int len = (int)rng_below(&rng, 40);
        for (int i = 0; i < len; i++) {
            uint64_t r = rng_u64(&rng);
            v[i] = r % 4 ? alphabet[(r >> 8) % (sizeof alphabet - 1)] : (char)(1 + (r >> 8) % 255);
        }
        v[len] = 0;
        if (json_utf8_invalid_at(v) != (size_t)-1) continue;  // refused (UTF-8 only: a test in test_writers.c)
        config_set(&a, "sample_prompt", v, "test");
        check_round_trip(&a, "random value");
    }
    config_free(&a);
}

// A quoted value reads its escapes; a bad escape, a missing closing quote or text after it is one
// line naming the file, line and key.
TEST(config_quoted_values_read_escapes_and_refuse_bad_ones) {
    Config c;
    config_init_all(&c);
    config_load_text(&c, "sample_prompt = \"a\\\"b\\\\c\\nd\\te\\x01 # f\"   # comment\nout_dir = x\"y  # z\n", "q.conf");
    CHECK(!strcmp(cfg_str(&c, "sample_prompt"), "a\"b\\c\nd\te\x01 # f"), "'%s'", cfg_str(&c, "sample_prompt"));
    CHECK(!strcmp(cfg_str(&c, "out_dir"), "x\"y"), "'%s'", cfg_str(&c, "out_dir"));  // bare: literal
    config_free(&c);
    expect_error(test_write_file("e1.conf", "sample_prompt = \"a\\qb\"\n"),
                 "e1.conf:1: sample_prompt: a quoted value's escapes are");
    expect_error(test_write_file("e2.conf", "\nsample_prompt = \"a\\x0\"\n"),
                 "e2.conf:2: sample_prompt: \\x in a quoted value needs two hex digits");
    expect_error(test_write_file("e3.conf", "sample_prompt = \"a\\x00\"\n"),
                 "e3.conf:1: sample_prompt: \\x in a quoted value needs two hex digits (not 00)");
    expect_error(test_write_file("e4.conf", "sample_prompt = \"a\" b\n"),
                 "e4.conf:1: sample_prompt: text after the closing '\"'");
    expect_error(test_write_file("e5.conf", "sample_prompt = \"ab\\\"\n"),
                 "e5.conf:1: sample_prompt: a value that starts with '\"' must end");
    // a value with a line break in a message stays one line
    char err[512];
    CHECK(test_fork(apply_bad_arg, "lr=1\n2", err, sizeof err) == 2);
    CHECK(strstr(err, "command line: lr: expected a positive number, got '1 2'\n") &&
              strchr(err, '\n') == err + strlen(err) - 1,
          "%s", err);
}

// The issue's repro end to end: the run trains, and its config.conf and checkpoints read back.
TEST(config_quoted_prompt_run_evaluates_samples_and_resumes) {
    char out[8192];
    const char *run = test_path("q\"p\nx");
    int st = test_run(out, sizeof out,
                      "./train /dev/null vocab_size=64 seq_len=32 mqar_kv_pairs=4 mqar_train_examples=64 "
                      "mqar_test_examples=16 mqar_val_examples=16 batch_size=8 d_model=16 steps=2 sample_every=0 threads=1 "
                      "'out_dir=%s' 'sample_prompt=1 2\"3' 2>&1",
                      run);
    CHECK(st == 0, "train exit %d: %s", st, out);
    st = test_run(out, sizeof out, "./evaluate '%s' 2>&1", run);
    CHECK(st == 0, "evaluate exit %d: %s", st, out);
    st = test_run(out, sizeof out, "./sample '%s' n=2 2>&1", run);
    CHECK(st == 0, "sample exit %d: %s", st, out);
    st = test_run(out, sizeof out, "./train '%s/config.conf' steps=3 2>&1", run);
    CHECK(st == 0 && strstr(out, "resum"), "resume exit %d: %s", st, out);
}

// Command-line values are taken literally, as docs/config.md#quoting says (the shell has quoted
// them): spaces around a value stay. They were trimmed, so 'sample_prompt= a ' became "a".
TEST(config_command_line_values_are_taken_literally) {
    Config c;
    config_init_all(&c);
    char *argv[] = {"sample_prompt= a ", "out_dir=x y "};
    config_apply_args(&c, 2, argv);
    CHECK(!strcmp(cfg_str(&c, "sample_prompt"), " a "), "'%s'", cfg_str(&c, "sample_prompt"));
    CHECK(!strcmp(cfg_str(&c, "out_dir"), "x y "), "'%s'", cfg_str(&c, "out_dir"));
    config_free(&c);
}
