// Fuzz target: sweep files (ablation/sweep_file.c). The input is a sweep file, parsed from memory
// by sweep_parse under the name of a file holding the same bytes (so `base = in.sweep` reads it).
// Properties: sweep_parse returns the points or one line "FILE:LINE: ..." (or "FILE: ..."), never
// exits or crashes; a parsed sweep has 1 to SWEEP_MAX_POINTS points whose folder names are
// distinct, at most SWEEP_MAX_NAME characters and free of '/'; every point has a value for every
// entry and a ./train command; the first and the last point's config loads or exits 2 with one line.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ablation/sweep_file.h"
#include "model/keys.h"
#include "tests/fuzz/fuzz.h"

typedef struct {
    const char *path;
    const char *text;
    size_t size;
    int parsed;  // sweep_parse accepted it
    int point;   // for point_config: 0 = the first point, 1 = the last
} Input;

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void check_point(const SweepFile *sw, int i) {
    for (int e = 0; e < sw->n_entries; e++)
        if (!sweep_value(sw, i, e)) fuzz_fail("point %d has no value for %s", i, sw->entries[e].key);
    char *dir = sweep_point_dir(sw, i);
    free(dir);
    char **argv = sweep_point_argv(sw, i, "./train", 1);
    if (!argv || !argv[0]) fuzz_fail("point %d has no command", i);
    FILE *null = fopen("/dev/null", "w");
    sweep_print_command(argv, null);
    fclose(null);
    sweep_free_argv(argv);
}

static void parse(void *arg) {
    Input *in = arg;
    char err[1024];
    SweepFile s;
    if (sweep_parse(in->text, in->size, in->path, &s, err, sizeof err) != 0) {
        size_t n = strlen(in->path);
        if (!err[0] || strchr(err, '\n') || strncmp(err, in->path, n) || err[n] != ':')
            fuzz_fail("bad message: '%s'", err);
        sweep_free(&s);  // safe on a failed parse
        return;
    }
    const SweepFile *sw = &s;
    if (sw->n_points < 1 || sw->n_points > SWEEP_MAX_POINTS) fuzz_fail("%d points", sw->n_points);
    char **names = malloc(sizeof(char *) * (size_t)sw->n_points);
    for (int i = 0; i < sw->n_points; i++) {
        names[i] = sw->point_names[i];
        if (strlen(names[i]) > SWEEP_MAX_NAME || strchr(names[i], '/') || !names[i][0])
            fuzz_fail("bad point folder name '%s'", names[i]);
    }
    qsort(names, (size_t)sw->n_points, sizeof(char *), cmp_str);
    for (int i = 1; i < sw->n_points; i++)
        if (!strcmp(names[i - 1], names[i])) fuzz_fail("two points share the folder '%s'", names[i]);
    free(names);
    for (int i = 0; i < sw->n_points && i < 4; i++) check_point(sw, i);
    check_point(sw, sw->n_points - 1);
    sweep_free(&s);
    in->parsed = 1;
}

static void point_config(void *arg) {
    const Input *in = arg;
    char err[1024];
    SweepFile sw;
    if (sweep_parse(in->text, in->size, in->path, &sw, err, sizeof err) != 0) fuzz_fail("parses once only");
    Config c;
    sweep_point_config(&sw, in->point ? sw.n_points - 1 : 0, &c);
    config_free(&c);
    sweep_free(&sw);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    Input in = {fuzz_file("in.sweep", data, size), (const char *)data, size, 0, 0};
    fuzz_call(parse, &in);
    if (in.parsed)
        for (in.point = 0; in.point < 2; in.point++) fuzz_call(point_config, &in);
    return 0;
}
