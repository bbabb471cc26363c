// What a sweep's summary tables (summary.c) and figures (summary_figures.c) share: the points'
// configs and runs with their groups, and the statistics over a group's seeds.
#pragma once
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ablation/run_summary.h"
#include "ablation/sweep_file.h"
#include "core/config.h"

#define STAT_VALUES 32  // values kept to list beside a mean (one per seed)

typedef struct {
    double sum, sum2;
    int n;
    double v[STAT_VALUES];  // the first STAT_VALUES values, in point order
} Stat;

static inline double stat_mean(const Stat *s) { return s->n ? s->sum / s->n : NAN; }
void stat_add(Stat *s, double v);  // a non-finite value is left out
double stat_sd(const Stat *s);     // the sample standard deviation (NAN below two values)

// What the summary works with, beside the sweep and the runs.
typedef struct {
    const SweepFile *sw;
    Config *configs;
    const RunSummary *runs;
    int *varied;  // entries that vary, in file order
    int n_varied;
    int mixer_col;  // 1: the CSV files add a mixer column (mixer is not a varied key of the file)
    int mixer_md;   // 1: the markdown tables add one (mixer does not name the points)
    int *grouped;   // [n_dims] 1: the dim is averaged over (its keys are in group_over)
    int *group_of;  // [n_points] index into groups
    int *groups;    // representative point of each group (the point with grouped dims at 0)
    int n_groups;
    int max_layers;
    char cells[SUMMARY_MAX_CELLS][24];  // the MQAR test cells of the runs (first seen order)
    int n_cells;
    char **series_of;  // [n_points] the figures' name of each point's plot_series value
} Summary;

// Index of the cell named `name` in the run's cells, -1 when it has none.
static inline int run_cell(const RunSummary *r, const char *name) {
    for (int c = 0; c < r->n_cells; c++)
        if (!strcmp(r->cell[c], name)) return c;
    return -1;
}

static inline const char *cfg_value(const Summary *s, int point, const char *key) {
    int i = config_index(&s->configs[point], key);
    return i < 0 ? "" : s->configs[point].value[i];
}

// The point with the choices of the dims where keep[d] == 0 set to the first value.
static inline int project(const SweepFile *sw, int point, const int *keep) {
    int p = point;
    for (int d = 0; d < sw->n_dims; d++)
        if (!keep[d]) p -= (int)((point / sw->dims[d].stride) % sw->dims[d].n_values * sw->dims[d].stride);
    return p;
}

// The metrics grouped over seeds: over the finished points of a group. The recall figures
// (G_RS .. G_SWRONG) are the recall layer's at the last sparsity step (RunSummary.last).
enum {
    G_LOSS,
    G_ACC,
    G_TEST,
    G_STEPS,
    G_MIN,
    G_SMIN,
    G_SMEAN,
    G_SRECALL,
    G_TOKS,
    G_RS,
    G_EFF,
    G_ANS,
    G_CHANCE,
    G_LIFT,
    G_HIT,
    G_SRIGHT,
    G_SWRONG,
    G_STATE,
    G_N
};

// 1 when a point counts in the grouped table and figures: not a first-stage candidate the
// selection passed over, not a second-stage point it never ran.
static inline int counts(const RunSummary *r) { return r->status != RUN_NOT_SELECTED && r->selected != SEL_NOT_CHOSEN; }

typedef struct {
    int points, finished, reached, capped;  // held-out points (capped: at the step cap, still improving)
    int verdicts[VERDICT_N];                // finished held-out seeds per verdict (eval/derived.h)
    int no_interval;                        // finished held-out seeds without an interval (older logs)
    Stat st[G_N];
    int selection;  // a two-stage sweep: the point whose seed chose the value (-1: none); its
                    // figures are listed apart, never in st (held-out seeds only)
} GroupStats;

// One point's metric m (G_*), NAN when it has none.
double summary_point_metric(const RunSummary *r, int m);
// The statistics of group g over its points that count, less the selection seed's.
GroupStats summary_group_stats(const Summary *s, int g);

// A value of an entry as a table shows it: a base by its file name without .conf.
void summary_entry_cell(const SweepFile *sw, int point, int e, char *b, size_t n);

// Table cells. summary_fmt: v in printf format f, "-" when not finite. summary_fmt_stat: a
// group's values, one per held-out seed: "0.991, 0.985" below 3 values (a spread of two is no
// spread), "mean ± sd (v1, v2, v3)" from 3 on, "-" for none. summary_md_cell: " s |" with '|'
// escaped. summary_csv_cell: s, quoted where it must be (a ',' before it unless first).
// summary_csv_num: ",v" (9 significant digits) or "," when not finite.
void summary_fmt(char *b, size_t n, const char *f, double v);
void summary_fmt_stat(char *b, size_t n, const char *f, const Stat *s);
void summary_md_cell(FILE *f, const char *s);
void summary_csv_cell(FILE *f, const char *s, int first);
void summary_csv_num(FILE *f, double v);
// A CSV row's first columns, naming the point: `point`, the varied keys, and `mixer` when it is
// not one of them (the header, then a point's cells).
void summary_csv_point_header(const Summary *s, FILE *f);
void summary_csv_point_cells(const Summary *s, int point, FILE *f);
