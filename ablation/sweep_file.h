// Sweep files (docs/sweeps.md#the-sweep-file): a base config, keys fixed for every point and axes
// of values; the points are the grid product of the axes, with `zip` groups of axes that vary
// together.
//
//   name = mqar_mixers              # default: the file name without .sweep
//   base = ../mqar_base.conf        # config every point starts from (relative to this file)
//   jobs = 2                        # points run at once
//   steps = 300                     # one value: fixed for every point
//   mixer = softmax, linear, gla    # several values: an axis
//   seq_len = 64, 128
//   mqar_kv_pairs = 4, 8
//   zip = seq_len, mqar_kv_pairs    # these axes take their values in step
//   select = lr                     # two stages: lr chosen per group on the first seed, then the
//                                   # other seeds at the chosen lr (docs/sweeps.md#two-stage-sweeps)
//   after_run = intervene=ablate; intervene=flatten layer=causal
//                                   # ./evaluate argument lists run on a point's folder once its
//   after_run_on = held_out         # run has finished (docs/sweeps.md#evaluations-after-each-run)
//
// A point's folder name lists key=value for the keys that vary, in file order; a zip group is
// named by its first key alone when that key's values are all different.
//
// sweep_parse checks the syntax and the structure and expands the points; it never exits, so a
// fuzzer can drive it. The values themselves are checked against the config key table by
// sweep_point_config, which stops with `file:line: ...` and exit status 2 like a config file.
#pragma once
#include <stddef.h>
#include <stdio.h>

#include "core/config.h"

#define SWEEP_MAX_POINTS 10000
#define SWEEP_MAX_NAME 240  // longest point folder name

// One `key = values` line: a config key, or `base`.
typedef struct {
    char *key;
    char **values;  // [n_values] as written, quotes removed
    int n_values;
    int line;
    int dim;    // the dimension it varies along; -1 when fixed (one value, not zipped)
    int named;  // 1: its values are part of the point names
} SweepEntry;

// A dimension of the grid: one axis, or a zip group of axes with the same number of values.
typedef struct {
    int *entries;  // entry indices, in file order
    int n_entries;
    int n_values;
    long stride;  // point index = sum over dims of choice * stride (the first dim varies slowest)
} SweepDim;

typedef struct {
    char *file;           // the sweep file as named (base paths are relative to it)
    char *name;           // sweep name
    char *out;            // folder of the sweep's run folders and summary
    int jobs;             // points run at once
    SweepEntry *entries;  // in file order
    int n_entries;
    SweepDim *dims;  // in the order of their first line
    int n_dims;
    int base_entry;     // index of `base` in entries, -1 without one
    char **group_over;  // keys the summary's grouped table averages over (default: seed)
    int n_group_over;
    char *plot_x, *plot_series, *plot_best_over;  // accuracy figure (default d_model, mixer, lr)
    char *select;       // two-stage sweep: the axis chosen on the first value of group_over (NULL: none)
    char **after_run;   // ./evaluate argument lists (tokens joined by one space) run after a point's run
    int n_after_run;    // 0: none
    int after_run_all;  // after_run_on = all (default held_out: the second stage of a two-stage sweep)
    // held_out = KEY=VALUE ...: config values the held-out points run with instead of the file's
    // (sweep_point_held_out; docs/sweeps.md#held-out-settings): their stopping rule, their
    // validation set. Each "KEY=VALUE", split into keys and values. n_held_out 0: none.
    char **held_out_keys, **held_out_values;
    int n_held_out;
    int directive_line[16];  // line of each directive (0: not given), indexed by SweepDirective
    int n_points;
    char **point_names;  // [n_points] folder names, from the varied keys
} SweepFile;

typedef enum {
    // clang-format off
    SWEEP_DIR_NAME, SWEEP_DIR_OUT, SWEEP_DIR_JOBS, SWEEP_DIR_GROUP_OVER, SWEEP_DIR_PLOT_X,
    SWEEP_DIR_PLOT_SERIES, SWEEP_DIR_PLOT_BEST_OVER, SWEEP_DIR_SELECT, SWEEP_DIR_AFTER_RUN, SWEEP_DIR_AFTER_RUN_ON,
    SWEEP_DIR_HELD_OUT,
    SWEEP_N_DIRECTIVES
    // clang-format on
} SweepDirective;

// Parses text[0..len) (it may hold any bytes) named file_name in messages. 0 on success; -1 with
// one line "file:line: what is wrong" in err (sw is then empty: sweep_free is still safe).
int sweep_parse(const char *text, size_t len, const char *file_name, SweepFile *sw, char *err, size_t errlen);
// Reads and parses a file; -1 with the message in err.
int sweep_load(const char *path, SweepFile *sw, char *err, size_t errlen);
void sweep_free(SweepFile *sw);

// The value an entry takes at a point.
const char *sweep_value(const SweepFile *sw, int point, int entry);
// Index of the entry of a key, -1 when the file does not name it.
int sweep_entry_index(const SweepFile *sw, const char *key);
// 1 when the entry takes more than one value over the points.
int sweep_entry_varies(const SweepFile *sw, int entry);
// Path of a base value (relative to the sweep file), allocated.
char *sweep_base_path(const SweepFile *sw, const char *value);
// The point's run folder "<out>/<point name>", allocated.
char *sweep_point_dir(const SweepFile *sw, int point);

// 1 when the point is held out: in a two-stage sweep the second stage (a group_over key at another
// value than its first), in a sweep without `select` every point (none chose anything).
int sweep_point_held_out(const SweepFile *sw, int point);

// The point's effective config: its base, then every entry in file order, then out_dir. A bad
// key or value stops with "file:line: ..." and exit status 2 (config_set), so calling it for
// every point before running anything validates the whole sweep. A held-out point then takes the
// held_out values (they replace the file's; the point's folder name stays).
void sweep_point_config(const SweepFile *sw, int point, Config *c);
// The point's ./train command: train, the base (or /dev/null), key=value per entry (a held-out
// point: the held_out value where it sets the key, then the held_out keys the file does not), out_dir, and
// threads=N when threads > 0 and the sweep does not set threads itself. NULL-terminated,
// allocated; free with sweep_free_argv.
char **sweep_point_argv(const SweepFile *sw, int point, const char *train, int threads);
void sweep_free_argv(char **argv);
// Writes argv as one shell command line (arguments quoted where the shell needs it).
void sweep_print_command(char **argv, FILE *f);
// Writes one argument, in single quotes when the shell needs them.
void sweep_print_arg(const char *arg, FILE *f);
// The ./evaluate command of after_run entry k on a run folder: evaluate, the folder, the entry's
// arguments, and threads=N when threads > 0 and the entry does not set threads itself.
// NULL-terminated, allocated; free with sweep_free_argv.
char **sweep_after_run_argv(const SweepFile *sw, int k, const char *evaluate, const char *dir, int threads);
