// Config files: includes, overrides, strict errors with file:line and exit status 2.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/io.h"
#include "core/keys.h"
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
    expect_error(test_write_file("a.conf", "mixer = softmax\nlr = abc\n"), "a.conf:2: lr: expected a positive number, got 'abc'");
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
