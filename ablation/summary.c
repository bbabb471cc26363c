#include "ablation/summary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ablation/summary_data.h"
#include "ablation/summary_figures.h"
#include "ablation/summary_interventions.h"
#include "core/io.h"
#include "eval/intervene.h"

// --- tables ----------------------------------------------------------------------------------------

static const char *status_text(const RunSummary *r, char *b, size_t n) {
    static const char *names[RUN_N_STATUS] = {"missing", "partial", "done", "failed", "not selected", "running"};
    if (r->status == RUN_FAILED) snprintf(b, n, "failed (exit %d)", r->exit_code);
    else if (r->status == RUN_RUNNING && r->running_pid > 0) snprintf(b, n, "running (process %ld)", r->running_pid);
    else
        snprintf(b, n, "%s%s%s", names[r->status], r->capped_improving ? " (step cap, still improving)" : "",
                 r->selected == SEL_CHOSEN           ? ", chosen"
                     : r->selected == SEL_NOT_CHOSEN ? ", not chosen"
                                                     : "");
    return b;
}

// Layer values "0.213 0.651".
static void fmt_layers(char *b, size_t n, const double *v, int L) {
    size_t k = 0;
    b[0] = 0;
    if (L == 0) snprintf(b, n, "-");
    for (int l = 0; l < L && k + 16 < n; l++) {
        char c[24];
        summary_fmt(c, sizeof c, "%.3f", v[l]);
        k += (size_t)snprintf(b + k, n - k, "%s%s", l ? " " : "", c);
    }
}

// A recall layer's figures: "L1 @392: S_recall 0.256 (1.4 tokens, one-hot 0.24) | share 0.812 =
// 13.3x chance 0.061 | hit 0.97 | right 0.25 (3890) wrong 0.41 (110)".
static void fmt_recall(char *b, size_t n, const RecallAt *f) {
    if (f->layer < 0 || !isfinite(f->share)) {
        snprintf(b, n, "-");
        return;
    }
    int k =
        snprintf(b, n, "L%d @%ld: S_recall %.3f (%.2f tokens, one-hot %.3f) | share %.3f = %.1fx chance %.3f | hit %.3f",
                 f->layer, f->step, f->S, f->eff_tokens, f->onehot, f->share, f->share / f->chance, f->chance, f->hit);
    if (k > 0 && (size_t)k < n && isfinite(f->rows_right))
        snprintf(b + k, n - (size_t)k, " | right %.3f (%.0f rows), wrong %.3f (%.0f rows)", f->S_right, f->rows_right,
                 f->S_wrong, f->rows_wrong);
}

static int key_in(const char *key, char **list, int n) {
    for (int i = 0; i < n; i++)
        if (!strcmp(list[i], key)) return 1;
    return 0;
}

static void summary_init(Summary *s, const SweepFile *sw, Config *configs, const RunSummary *runs) {
    memset(s, 0, sizeof *s);
    s->sw = sw, s->configs = configs, s->runs = runs;
    s->varied = mallocCheck(sizeof(int) * (size_t)(sw->n_entries + 1));
    s->mixer_col = s->mixer_md = 1;
    for (int e = 0; e < sw->n_entries; e++)
        if (sweep_entry_varies(sw, e)) {
            s->varied[s->n_varied++] = e;
            if (!strcmp(sw->entries[e].key, "mixer")) s->mixer_col = 0, s->mixer_md = !sw->entries[e].named;
        }
    s->grouped = callocCheck((size_t)sw->n_dims + 1, sizeof(int));
    int *keep = mallocCheck(sizeof(int) * (size_t)(sw->n_dims + 1));
    for (int d = 0; d < sw->n_dims; d++) {
        for (int k = 0; k < sw->dims[d].n_entries; k++)
            if (key_in(sw->entries[sw->dims[d].entries[k]].key, sw->group_over, sw->n_group_over)) s->grouped[d] = 1;
        keep[d] = !s->grouped[d];
    }
    s->group_of = mallocCheck(sizeof(int) * (size_t)sw->n_points);
    s->groups = mallocCheck(sizeof(int) * (size_t)sw->n_points);
    int *group_at = mallocCheck(sizeof(int) * (size_t)sw->n_points);  // representative -> group
    for (int i = 0; i < sw->n_points; i++) group_at[i] = -1;
    for (int i = 0; i < sw->n_points; i++) {
        int rep = project(sw, i, keep);
        if (group_at[rep] < 0) {
            group_at[rep] = s->n_groups;
            s->groups[s->n_groups++] = rep;
        }
        s->group_of[i] = group_at[rep];
        if (runs[i].n_layers > s->max_layers) s->max_layers = runs[i].n_layers;
        for (int c = 0; c < runs[i].n_cells; c++) {
            int known = 0;
            for (int k = 0; k < s->n_cells; k++) known |= !strcmp(s->cells[k], runs[i].cell[c]);
            if (!known && s->n_cells < SUMMARY_MAX_CELLS) memcpy(s->cells[s->n_cells++], runs[i].cell[c], 24);
        }
    }
    free(group_at);
    free(keep);
    s->series_of = summary_point_series(s);
}

static void summary_free(Summary *s) {
    free(s->varied);
    free(s->grouped);
    free(s->group_of);
    free(s->groups);
    for (int i = 0; i < s->sw->n_points; i++) free(s->series_of[i]);
    free(s->series_of);
}

// clang-format off
static const char *g_group_metric[G_N] = {
    "final_val_loss", "best_val_acc", "test_acc", "steps_to_0.99", "minutes_to_0.99", "S_min", "S_mean",
    "S_recall_min", "tok_per_s", "recall_S", "recall_eff_tokens", "recall_ans_share", "recall_chance",
    "recall_lift", "recall_ans_hit", "recall_S_right", "recall_S_wrong", "state_floats"};
static const char *g_group_title[G_N] = {
    "val loss", "best val acc", "test acc", "steps to 0.99", "min to 0.99", "S min", "S mean",
    "S_recall min", "tok/s", "S_recall (val, share-based recall layer)", "effective tokens (val, same layer)",
    "answer-window share (val, same layer)", "chance", "lift", "argmax hit in the window", "S_recall right",
    "S_recall wrong", "state"};
static const char *g_group_fmt[G_N] = {
    "%.4f", "%.4f", "%.4f", "%.0f", "%.2f", "%.3f", "%.3f",
    "%.3f", "%.0f", "%.3f", "%.2f", "%.3f", "%.3f",
    "%.1f", "%.3f", "%.3f", "%.3f", "%.0f"};
// clang-format on

// The runs' provenance (core/provenance.h): every distinct commit, compiler, CPU and GEMM kernel
// of the runs with a run record, with how many runs have each; a warning (in the file and on the
// log) when one of them takes more than one value, since the same config may then give other
// numbers (a CPU's other kernel, another commit's code). Runs of older logs (none recorded) count
// as "not recorded".
static void write_provenance_md(const Summary *s, FILE *f, FILE *log) {
    static const char *what[4] = {"commit", "compiler", "CPU", "GEMM kernel"};
    const SweepFile *sw = s->sw;
    int any = 0;
    for (int i = 0; i < sw->n_points; i++) any |= s->runs[i].has_metrics;
    if (!any) return;
    fputs("## Provenance\n\nWhat made the runs, from their run records (docs/outputs.md#the-run-log): each value "
          "with the number of runs that have it.\n\n",
          f);
    const char *mixed[4];
    int n_mixed = 0;
    for (int k = 0; k < 4; k++) {
        const char *seen[256];
        int count[256], n_seen = 0;
        for (int i = 0; i < sw->n_points; i++) {
            const RunSummary *r = &s->runs[i];
            if (!r->has_metrics) continue;
            const char *v[4] = {r->commit, r->compiler, r->cpu, r->gemm};
            const char *x = v[k][0] ? v[k] : "not recorded";
            int j = 0;
            while (j < n_seen && strcmp(seen[j], x)) j++;
            if (j == n_seen && n_seen < 256) seen[n_seen] = x, count[n_seen++] = 0;
            if (j < n_seen) count[j]++;
        }
        fprintf(f, "- %s:", what[k]);
        for (int j = 0; j < n_seen; j++) {
            const char *q = seen[j][0] == 'n' && !strcmp(seen[j], "not recorded") ? "" : "`";  // no value
            fprintf(f, "%s %s%s%s (%d)", j ? "," : "", q, seen[j], q, count[j]);
        }
        fputc('\n', f);
        if (n_seen > 1) mixed[n_mixed++] = what[k];
    }
    fputc('\n', f);
    if (n_mixed) {
        char b[128] = "";
        for (int k = 0; k < n_mixed; k++)
            snprintf(b + strlen(b), sizeof b - strlen(b), "%s%s", k ? (k == n_mixed - 1 ? " and " : ", ") : "", mixed[k]);
        fprintf(f,
                "**Warning: the runs of this sweep differ in %s**: their numbers may differ by more than the seeds "
                "do (compare runs of one provenance).\n\n",
                b);
        if (log)
            fprintf(log, "summary: warning: the runs of sweep '%s' differ in %s (summary.md#provenance)\n", sw->name, b);
    }
}

static int grouping_matters(const Summary *s) { return s->n_groups < s->sw->n_points; }

// The varied entries a group table shows (not those grouped over).
static int group_column(const Summary *s, int e) { return !s->grouped[s->sw->entries[e].dim]; }

// The markdown tables show the keys that name the points (a zip partner of mixer is left out).
static int md_column(const Summary *s, int e) { return s->sw->entries[e].named; }

// A group's verdicts: "2 / 1 / 0" (solve / undecided / fail), with the seeds that have no
// interval (older logs) after it; "-" when none has one.
static void fmt_verdicts(char *b, size_t n, const GroupStats *gs) {
    if (gs->no_interval == gs->finished) {
        snprintf(b, n, "-");
        return;
    }
    snprintf(b, n, "%d / %d / %d", gs->verdicts[VERDICT_SOLVES], gs->verdicts[VERDICT_UNDECIDED],
             gs->verdicts[VERDICT_FAILS]);
    if (gs->no_interval) snprintf(b + strlen(b), n - strlen(b), " (%d without an interval)", gs->no_interval);
}

// The first table, to read in a terminal of 100 columns: per group (or point) the keys that name
// it, how many finished, the mean best validation and test accuracies and the seeds' verdicts;
// every other figure is in the tables below it.
static void write_glance_md(const Summary *s, FILE *f) {
    const SweepFile *sw = s->sw;
    int grouped = grouping_matters(s);
    char b[256];
    fputs("## At a glance\n\n|", f);
    int cols = 0;
    for (int k = 0; k < s->n_varied; k++)
        if ((!grouped || group_column(s, s->varied[k])) && md_column(s, s->varied[k]))
            summary_md_cell(f, sw->entries[s->varied[k]].key), cols++;
    if (s->mixer_md) summary_md_cell(f, "mixer"), cols++;
    fputs(grouped ? " finished | best val acc | test acc | solve / undecided / fail |\n|"
                  : " status | best val acc | test acc |\n|",
          f);
    for (int k = 0; k < cols + (grouped ? 4 : 3); k++) fputs("---|", f);
    fputc('\n', f);
    for (int g = 0; g < (grouped ? s->n_groups : sw->n_points); g++) {
        int i = grouped ? s->groups[g] : g;
        GroupStats gs = {0};
        if (grouped) {
            gs = summary_group_stats(s, g);
            if (!gs.points && gs.selection < 0) continue;  // a value the selection did not choose
        }
        fputs("|", f);
        for (int k = 0; k < s->n_varied; k++)
            if ((!grouped || group_column(s, s->varied[k])) && md_column(s, s->varied[k])) {
                summary_entry_cell(sw, i, s->varied[k], b, sizeof b);
                summary_md_cell(f, b);
            }
        if (s->mixer_md) summary_md_cell(f, cfg_value(s, i, "mixer"));
        if (grouped) {
            snprintf(b, sizeof b, "%d/%d", gs.finished, gs.points);
            summary_md_cell(f, b);
            summary_fmt(b, sizeof b, "%.4f", stat_mean(&gs.st[G_ACC]));
            summary_md_cell(f, b);
            summary_fmt(b, sizeof b, "%.4f", stat_mean(&gs.st[G_TEST]));
            summary_md_cell(f, b);
            fmt_verdicts(b, sizeof b, &gs);
        } else {
            const RunSummary *r = &s->runs[i];
            summary_md_cell(f, status_text(r, b, sizeof b));
            summary_fmt(b, sizeof b, "%.4f", r->best_acc);
            summary_md_cell(f, b);
            summary_fmt(b, sizeof b, "%.4f", r->test_acc);
        }
        summary_md_cell(f, b);
        fputc('\n', f);
    }
    fputs(grouped ? "\nMeans over each group's finished held-out seeds; the per-seed values, their spread and the "
                    "other figures are in the tables below.\n\n"
                  : "\nThe other figures of each point are in the tables below.\n\n",
          f);
}

static void write_points_md(const Summary *s, FILE *f) {
    const SweepFile *sw = s->sw;
    char b[256], c[256];
    int cols = 0;
    fputs("|", f);
    for (int k = 0; k < s->n_varied; k++)
        if (md_column(s, s->varied[k])) summary_md_cell(f, sw->entries[s->varied[k]].key), cols++;
    if (s->mixer_md) summary_md_cell(f, "mixer");
    fputs(" status | steps | val loss | best val acc (step) | test acc (step read) | steps to 0.99 | min to 0.99 |"
          " S per layer | S min per layer | S_recall per layer | tokens per layer | answer-window share per layer |"
          " tok/s | state | share-based recall layer (val) at the last step | at the best step |\n|",
          f);
    for (int k = 0; k < cols + s->mixer_md + 16; k++) fputs("---|", f);
    fputc('\n', f);
    for (int i = 0; i < sw->n_points; i++) {
        const RunSummary *r = &s->runs[i];
        fputs("|", f);
        for (int k = 0; k < s->n_varied; k++)
            if (md_column(s, s->varied[k])) {
                summary_entry_cell(sw, i, s->varied[k], b, sizeof b);
                summary_md_cell(f, b);
            }
        if (s->mixer_md) summary_md_cell(f, cfg_value(s, i, "mixer"));
        summary_md_cell(f, status_text(r, b, sizeof b));
        snprintf(b, sizeof b, "%ld", r->step);
        summary_md_cell(f, r->has_metrics ? b : "-");
        summary_fmt(b, sizeof b, "%.4f", r->final_loss);
        summary_md_cell(f, b);
        summary_fmt(b, sizeof b, "%.4f", r->best_acc);
        if (r->best_step >= 0) snprintf(b + strlen(b), sizeof b - strlen(b), " (%ld)", r->best_step);
        if (r->has_metrics && r->protocol < RUNLOG_PROTOCOL)
            snprintf(b + strlen(b), sizeof b - strlen(b), ", older log: test set");
        summary_md_cell(f, b);
        summary_fmt(b, sizeof b, "%.4f", r->test_acc);
        if (isfinite(r->test_lo))
            snprintf(b + strlen(b), sizeof b - strlen(b), " [%.4f, %.4f] %s", r->test_lo, r->test_hi,
                     derived_verdict_name(derived_verdict(r->test_lo, r->test_hi)));
        if (r->test_step >= 0)
            snprintf(b + strlen(b), sizeof b - strlen(b), " (%ld, %s)", r->test_step, r->test_selected);
        summary_md_cell(f, b);
        if (r->steps_to_target >= 0) snprintf(b, sizeof b, "%ld", r->steps_to_target);
        else snprintf(b, sizeof b, "%s", r->status == RUN_DONE ? "never" : "-");
        summary_md_cell(f, b);
        summary_fmt(b, sizeof b, "%.2f", r->minutes_to_target);
        summary_md_cell(f, b);
        fmt_layers(c, sizeof c, r->S_mean, r->n_layers);
        summary_md_cell(f, c);
        fmt_layers(c, sizeof c, r->S_min, r->n_layers);
        summary_md_cell(f, c);
        fmt_layers(c, sizeof c, r->S_recall, r->n_layers);
        summary_md_cell(f, c);
        double eff[64], share[64];
        int nl = r->n_layers < 64 ? r->n_layers : 64;
        for (int l = 0; l < nl; l++) eff[l] = r->layer_last[l].eff_tokens, share[l] = r->layer_last[l].share;
        fmt_layers(c, sizeof c, eff, nl);
        summary_md_cell(f, c);
        fmt_layers(c, sizeof c, share, nl);
        summary_md_cell(f, c);
        summary_fmt(b, sizeof b, "%.0f", r->tok_per_s);
        summary_md_cell(f, b);
        summary_fmt(b, sizeof b, "%.0f", r->state_floats);
        summary_md_cell(f, b);
        fmt_recall(b, sizeof b, &r->last);
        summary_md_cell(f, b);
        fmt_recall(b, sizeof b, &r->best);
        summary_md_cell(f, b);
        fputc('\n', f);
    }
}

static void write_groups_md(const Summary *s, FILE *f) {
    const SweepFile *sw = s->sw;
    char b[512];
    int cols = 0, any_selection = 0;
    for (int g = 0; g < s->n_groups; g++) any_selection |= summary_group_stats(s, g).selection >= 0;
    fputs("|", f);
    for (int k = 0; k < s->n_varied; k++)
        if (group_column(s, s->varied[k]) && md_column(s, s->varied[k]))
            summary_md_cell(f, sw->entries[s->varied[k]].key), cols++;
    if (s->mixer_md) summary_md_cell(f, "mixer");
    fputs(" finished | reached 0.99 | capped, improving | test verdicts: solve / undecided / fail |", f);
    for (int m = 0; m < G_N; m++) summary_md_cell(f, g_group_title[m]);
    if (any_selection) summary_md_cell(f, "selection seed: best val acc, test acc");
    fputs("\n|", f);
    for (int k = 0; k < cols + s->mixer_md + 4 + G_N + any_selection; k++) fputs("---|", f);
    fputc('\n', f);
    for (int g = 0; g < s->n_groups; g++) {
        int rep = s->groups[g];
        GroupStats gs = summary_group_stats(s, g);
        if (!gs.points && gs.selection < 0) continue;  // a two-stage sweep's value that was not chosen
        fputs("|", f);
        for (int k = 0; k < s->n_varied; k++)
            if (group_column(s, s->varied[k]) && md_column(s, s->varied[k])) {
                summary_entry_cell(sw, rep, s->varied[k], b, sizeof b);
                summary_md_cell(f, b);
            }
        if (s->mixer_md) summary_md_cell(f, cfg_value(s, rep, "mixer"));
        snprintf(b, sizeof b, "%d/%d", gs.finished, gs.points);
        summary_md_cell(f, b);
        snprintf(b, sizeof b, "%d/%d", gs.reached, gs.finished);
        summary_md_cell(f, b);
        snprintf(b, sizeof b, "%d/%d", gs.capped, gs.finished);
        summary_md_cell(f, b);
        fmt_verdicts(b, sizeof b, &gs);
        summary_md_cell(f, b);
        for (int m = 0; m < G_N; m++) {
            if (m == G_STATE)
                summary_fmt(b, sizeof b, g_group_fmt[m], stat_mean(&gs.st[m]));  // the same for every seed
            else summary_fmt_stat(b, sizeof b, g_group_fmt[m], &gs.st[m]);
            summary_md_cell(f, b);
        }
        if (any_selection) {
            if (gs.selection >= 0) {
                char acc[32], test[32];
                summary_fmt(acc, sizeof acc, "%.4f", s->runs[gs.selection].best_acc);
                summary_fmt(test, sizeof test, "%.4f", s->runs[gs.selection].test_acc);
                snprintf(b, sizeof b, "%s: %s, %s", sw->point_names[gs.selection], acc, test);
            } else snprintf(b, sizeof b, "-");
            summary_md_cell(f, b);
        }
        fputc('\n', f);
    }
}

static void write_points_csv(const Summary *s, FILE *f) {
    const SweepFile *sw = s->sw;
    summary_csv_point_header(s, f);
    fputs(",status,exit_code,steps,final_val_loss,best_acc,reached_0.99,steps_to_0.99,minutes_to_0.99,minutes,"
          "tok_per_s,S_min,S_mean,S_recall_min,state_floats,recall_layer,recall_S,recall_ans_share,recall_ans_hit,"
          "capped_improving,selection,protocol,best_step,test_acc,test_step,test_selected,test_acc_lo,test_acc_hi,verdict,commit,compiler,cpu,gemm",
          f);
    static const char *at[2] = {"last", "best"};
    for (int k = 0; k < 2; k++)
        fprintf(f,
                ",%s_step,%s_recall_layer,%s_recall_S,%s_recall_eff_tokens,%s_recall_onehot,%s_recall_share,"
                "%s_recall_chance,%s_recall_lift,%s_recall_hit,%s_rows_right,%s_rows_wrong,%s_S_right,%s_S_wrong,"
                "%s_share_right,%s_share_wrong",
                at[k], at[k], at[k], at[k], at[k], at[k], at[k], at[k], at[k], at[k], at[k], at[k], at[k], at[k], at[k]);
    for (int l = 0; l < s->max_layers; l++)
        fprintf(f, ",S_mean_L%d,S_min_L%d,S_recall_L%d,eff_tokens_L%d,ans_share_L%d,chance_L%d", l, l, l, l, l, l);
    for (int c = 0; c < s->n_cells; c++) fprintf(f, ",acc_%s,S_recall_%s", s->cells[c], s->cells[c]);
    fputc('\n', f);
    static const char *names[RUN_N_STATUS] = {"missing", "partial", "done", "failed", "not_selected", "running"};
    static const char *sel[] = {"", "chosen", "not_chosen"};
    for (int i = 0; i < sw->n_points; i++) {
        const RunSummary *r = &s->runs[i];
        summary_csv_point_cells(s, i, f);
        fprintf(f, ",%s,", names[r->status]);
        if (r->status == RUN_FAILED) fprintf(f, "%d", r->exit_code);
        if (!r->has_metrics) fputc(',', f);
        else fprintf(f, ",%ld", r->step);
        summary_csv_num(f, r->final_loss);
        summary_csv_num(f, r->best_acc);
        fprintf(f, ",%d", r->steps_to_target >= 0);
        if (r->steps_to_target >= 0) fprintf(f, ",%ld", r->steps_to_target);
        else fputc(',', f);
        summary_csv_num(f, r->minutes_to_target);
        summary_csv_num(f, r->minutes);
        summary_csv_num(f, r->tok_per_s);
        summary_csv_num(f, r->S_min_all);
        summary_csv_num(f, r->S_mean_all);
        summary_csv_num(f, r->S_recall_min_all);
        summary_csv_num(f, r->state_floats);
        if (r->recall_layer >= 0) fprintf(f, ",%d", r->recall_layer);
        else fputc(',', f);
        summary_csv_num(f, r->recall_S);
        summary_csv_num(f, r->recall_ans_share);
        summary_csv_num(f, r->recall_ans_hit);
        fprintf(f, ",%d,%s,%d", r->capped_improving, sel[r->selected], r->protocol);
        if (r->best_step >= 0) fprintf(f, ",%ld", r->best_step);
        else fputc(',', f);
        summary_csv_num(f, r->test_acc);
        if (r->test_step >= 0) fprintf(f, ",%ld,%s", r->test_step, r->test_selected);
        else fputs(",,", f);
        summary_csv_num(f, r->test_lo);
        summary_csv_num(f, r->test_hi);
        summary_csv_cell(f, derived_verdict_name(derived_verdict(r->test_lo, r->test_hi)), 0);
        const char *prov[4] = {r->commit, r->compiler, r->cpu, r->gemm};
        for (int k = 0; k < 4; k++) summary_csv_cell(f, prov[k], 0);
        for (int k = 0; k < 2; k++) {
            const RecallAt *a = k ? &r->best : &r->last;
            if (a->layer >= 0) fprintf(f, ",%ld,%d", a->step, a->layer);
            else fputs(",,", f);
            double v[13] = {a->S,          a->eff_tokens, a->onehot,     a->share,   a->chance,  a->share / a->chance,
                            a->hit,        a->rows_right, a->rows_wrong, a->S_right, a->S_wrong, a->share_right,
                            a->share_wrong};
            for (int j = 0; j < 13; j++) summary_csv_num(f, a->layer >= 0 ? v[j] : NAN);
        }
        for (int l = 0; l < s->max_layers; l++) {
            int have = l < r->n_layers;
            summary_csv_num(f, have ? r->S_mean[l] : NAN);
            summary_csv_num(f, have ? r->S_min[l] : NAN);
            summary_csv_num(f, have ? r->S_recall[l] : NAN);
            summary_csv_num(f, have ? r->layer_last[l].eff_tokens : NAN);
            summary_csv_num(f, have ? r->layer_last[l].share : NAN);
            summary_csv_num(f, have ? r->layer_last[l].chance : NAN);
        }
        for (int c = 0; c < s->n_cells; c++) {
            int k = run_cell(r, s->cells[c]);
            summary_csv_num(f, k >= 0 ? r->cell_acc[k] : NAN);
            summary_csv_num(f, k >= 0 ? r->cell_S_recall[k] : NAN);
        }
        fputc('\n', f);
    }
}

static void write_groups_csv(const Summary *s, FILE *f) {
    const SweepFile *sw = s->sw;
    char b[256];
    int first = 1;
    for (int k = 0; k < s->n_varied; k++)
        if (group_column(s, s->varied[k])) summary_csv_cell(f, sw->entries[s->varied[k]].key, first), first = 0;
    if (s->mixer_col) summary_csv_cell(f, "mixer", first), first = 0;
    fprintf(f, "%spoints,finished,reached_0.99,capped_improving", first ? "" : ",");
    for (int m = 0; m < G_N; m++)
        fprintf(f, ",%s_n,%s_mean,%s_sd,%s_values", g_group_metric[m], g_group_metric[m], g_group_metric[m],
                g_group_metric[m]);
    fputs(",selection_point,selection_best_val_acc,selection_test_acc,solves,undecided,fails,no_interval\n", f);
    for (int g = 0; g < s->n_groups; g++) {
        int rep = s->groups[g];
        GroupStats gs = summary_group_stats(s, g);
        if (!gs.points && gs.selection < 0) continue;
        first = 1;
        for (int k = 0; k < s->n_varied; k++)
            if (group_column(s, s->varied[k])) {
                summary_entry_cell(sw, rep, s->varied[k], b, sizeof b);
                summary_csv_cell(f, b, first), first = 0;
            }
        if (s->mixer_col) summary_csv_cell(f, cfg_value(s, rep, "mixer"), first), first = 0;
        fprintf(f, "%s%d,%d,%d,%d", first ? "" : ",", gs.points, gs.finished, gs.reached, gs.capped);
        for (int m = 0; m < G_N; m++) {  // values: the held-out seeds', separated by ';'
            fprintf(f, ",%d", gs.st[m].n);
            summary_csv_num(f, stat_mean(&gs.st[m]));
            summary_csv_num(f, stat_sd(&gs.st[m]));
            fputc(',', f);
            for (int i = 0; i < gs.st[m].n && i < STAT_VALUES; i++) fprintf(f, "%s%.8g", i ? ";" : "", gs.st[m].v[i]);
        }
        if (gs.selection >= 0) {
            summary_csv_cell(f, sw->point_names[gs.selection], 0);
            summary_csv_num(f, s->runs[gs.selection].best_acc);
            summary_csv_num(f, s->runs[gs.selection].test_acc);
        } else fputs(",,,", f);
        fprintf(f, ",%d,%d,%d,%d\n", gs.verdicts[VERDICT_SOLVES], gs.verdicts[VERDICT_UNDECIDED],
                gs.verdicts[VERDICT_FAILS], gs.no_interval);
    }
}

// --- the summary -----------------------------------------------------------------------------------

// Each summary file goes through the atomic writer (core/io.h): a kill -9 while the summary is
// written leaves the earlier file or the whole new one, never an empty or a cut one.
static int open_out(const SweepFile *sw, const char *name, char *path, size_t n, AtomicFile *a) {
    snprintf(path, n, "%s/%s", sw->out, name);
    return atomic_open(a, path, NULL, 0);
}

int sweep_write_summary(const SweepFile *sw, Config *configs, const RunSummary *runs, const char *selection_md, FILE *log) {
    if (mkdir_p(sw->out) != 0) return -1;
    Summary s;
    summary_init(&s, sw, configs, runs);
    int count[RUN_N_STATUS] = {0};
    for (int i = 0; i < sw->n_points; i++) count[runs[i].status]++;
    char path[1200], acc_svg[300];
    snprintf(acc_svg, sizeof acc_svg, "acc_vs_%s.svg", sw->plot_x);
    int rc = 0;

    AtomicFile a;
    if (open_out(sw, "summary.csv", path, sizeof path, &a) != 0) return summary_free(&s), -1;
    write_points_csv(&s, a.f);
    if (atomic_commit(&a, NULL, 0) != 0) return summary_free(&s), -1;
    if (log) fprintf(log, "summary: %s\n", path);
    if (grouping_matters(&s)) {  // replaced, not removed first (a kill in between would lose it)
        if (open_out(sw, "summary_groups.csv", path, sizeof path, &a) != 0) return summary_free(&s), -1;
        write_groups_csv(&s, a.f);
        if (atomic_commit(&a, NULL, 0) != 0) return summary_free(&s), -1;
        if (log) fprintf(log, "summary: %s\n", path);
    } else {  // none is left from an earlier summary
        snprintf(path, sizeof path, "%s/summary_groups.csv", sw->out);
        remove(path);
    }
    // a figure with nothing to draw is removed, so none is left from an earlier summary
    snprintf(path, sizeof path, "%s/%s", sw->out, acc_svg);
    int has_acc = plot_accuracy(&s, path, log);
    if (has_acc == 0) remove(path);
    snprintf(path, sizeof path, "%s/S_steps.svg", sw->out);
    int has_S = plot_sparsity(&s, path, 0, log);
    if (has_S == 0) remove(path);
    snprintf(path, sizeof path, "%s/S_recall_steps.svg", sw->out);
    int has_recall = plot_sparsity(&s, path, 1, log);
    if (has_recall == 0) remove(path);
    snprintf(path, sizeof path, "%s/acc_vs_state.svg", sw->out);
    int has_state = plot_acc_vs_state(&s, path, log);
    if (has_state == 0) remove(path);
    snprintf(path, sizeof path, "%s/acc_by_cell.svg", sw->out);
    int has_cells = plot_cells(&s, path, 0, log);
    if (has_cells == 0) remove(path);
    snprintf(path, sizeof path, "%s/S_recall_by_cell.svg", sw->out);
    int has_cell_S = plot_cells(&s, path, 1, log);
    if (has_cell_S == 0) remove(path);
    rc |= has_acc < 0 || has_S < 0 || has_recall < 0 || has_state < 0 || has_cells < 0 || has_cell_S < 0;
    // after_run's interventions: their records and a figure per kind, none left from an earlier summary
    int has_iv = summary_has_interventions(&s), has_iv_kind[IV_N_KINDS] = {0}, any_iv_fig = 0;
    snprintf(path, sizeof path, "%s/summary_interventions.csv", sw->out);
    if (has_iv) {
        if (open_out(sw, "summary_interventions.csv", path, sizeof path, &a) != 0) return summary_free(&s), -1;
        write_interventions_csv(&s, a.f);
        if (atomic_commit(&a, NULL, 0) != 0) return summary_free(&s), -1;
        if (log) fprintf(log, "summary: %s\n", path);
    } else remove(path);
    for (int k = IV_FLATTEN; k < IV_N_KINDS; k++) {
        snprintf(path, sizeof path, "%s/intervention_%s_groups.svg", sw->out, intervention_name((InterventionKind)k));
        int drawn = has_iv && k != IV_PATCH ? plot_interventions(&s, k, path, log) : 0;  // patch: no map
        if (drawn == 0) remove(path);
        rc |= drawn < 0;
        any_iv_fig |= has_iv_kind[k] = drawn > 0;
    }
    has_acc = has_acc > 0, has_S = has_S > 0, has_recall = has_recall > 0, has_state = has_state > 0;
    has_cells = has_cells > 0, has_cell_S = has_cell_S > 0;

    if (open_out(sw, "summary.md", path, sizeof path, &a) != 0) return summary_free(&s), -1;
    FILE *f = a.f;
    fprintf(f, "# Sweep `%s`\n\n", sw->name);
    char unselected[64] = "";
    if (count[RUN_NOT_SELECTED]) snprintf(unselected, sizeof unselected, ", %d not selected", count[RUN_NOT_SELECTED]);
    char running[64] = "";
    if (count[RUN_RUNNING]) snprintf(running, sizeof running, ", %d running elsewhere", count[RUN_RUNNING]);
    fprintf(f, "`%s`: %d point%s (%d done, %d partial, %d failed, %d missing%s%s); run folders in `%s/`.\n\n", sw->file,
            sw->n_points, sw->n_points == 1 ? "" : "s", count[RUN_DONE], count[RUN_PARTIAL], count[RUN_FAILED],
            count[RUN_MISSING], unselected, running, sw->out);
    fprintf(f,
            "Accuracy is the validation accuracy of the eval records (logs older than the validation split: "
            "the test set's, marked); \"to 0.99\" is the first evaluation at or above %.2f (minutes: training "
            "time from the train records, evaluations excluded). The test accuracy was read once, at the end of "
            "the run, on the best validation step's weights. S is at the last sparsity step, per layer (mean and "
            "min over heads); S_recall per layer is the mean over heads; tokens are the effective tokens n S^2 "
            "of the query rows (1: one-hot). The recall layer is the layer whose query rows put the largest share "
            "of their weight on the answer window (docs/sparsity.md#where-the-weight-lands); its share is beside "
            "the share a uniform row puts there (chance) and their ratio (lift); right and wrong are the S_recall "
            "of the rows the model answered right and wrong.\n\n",
            SUMMARY_TARGET_ACC);
    write_glance_md(&s, f);
    if (grouping_matters(&s)) {
        fputs("## Grouped over", f);
        for (int k = 0; k < sw->n_group_over; k++) fprintf(f, "%s `%s`", k ? "," : "", sw->group_over[k]);
        fputs("\n\nOver the finished held-out points of each group (a two-stage sweep's selection seed, which "
              "chose the value, is listed apart and never averaged): each seed's value, and from 3 values on their "
              "mean ± sample standard deviation first. S min, S mean and S_recall min are over every (layer, "
              "head) of a run at its end; the recall figures are the recall layer's at the last sparsity step.\n\n",
              f);
        write_groups_md(&s, f);
        fputc('\n', f);
    }
    if (selection_md) fputs(selection_md, f);
    if (has_iv) write_interventions_md(&s, f);
    write_provenance_md(&s, f, log);
    fputs("## Points\n\n", f);
    write_points_md(&s, f);
    if (has_acc || has_S || has_recall || has_state || has_cells || has_cell_S || any_iv_fig)
        fputs("\n## Figures\n\n", f);
    if (has_acc) fprintf(f, "![best accuracy vs %s](%s)\n\n", sw->plot_x, acc_svg);
    if (has_state) fputs("![accuracy vs state size](acc_vs_state.svg)\n\n", f);
    if (has_cells) fputs("![accuracy per test cell](acc_by_cell.svg)\n\n", f);
    if (has_cell_S) fputs("![S_recall per test cell](S_recall_by_cell.svg)\n\n", f);
    for (int k = IV_FLATTEN; k < IV_N_KINDS; k++)
        if (has_iv_kind[k])
            fprintf(f, "![%s on the causal recall layer](intervention_%s_groups.svg)\n\n",
                    intervention_name((InterventionKind)k), intervention_name((InterventionKind)k));
    if (has_recall) fputs("![S_recall of the recall layer over steps](S_recall_steps.svg)\n\n", f);
    if (has_S) fputs("![S over steps](S_steps.svg)\n", f);
    if (atomic_commit(&a, NULL, 0) != 0) return summary_free(&s), -1;
    if (log) fprintf(log, "summary: %s\n", path);
    summary_free(&s);
    return rc ? -1 : 0;
}
