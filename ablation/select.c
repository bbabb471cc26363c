#include "ablation/select.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"

static int choice_of(const SweepFile *sw, int point, int dim) {
    return (int)((point / sw->dims[dim].stride) % sw->dims[dim].n_values);
}

// 1 when the dim holds a group_over key.
static int is_group_dim(const SweepFile *sw, int d) {
    for (int k = 0; k < sw->dims[d].n_entries; k++)
        for (int g = 0; g < sw->n_group_over; g++)
            if (!strcmp(sw->entries[sw->dims[d].entries[k]].key, sw->group_over[g])) return 1;
    return 0;
}

// a beats b on the validation set: a run that reached the target beats one that did not; between
// two that did, fewer steps to it; then the higher best accuracy; then the smaller value (numbers
// compared as numbers).
static int better(const SweepFile *sw, const Selection *s, int entry, int a, int b) {
    double x = isfinite(s->acc[a]) ? s->acc[a] : -1, y = isfinite(s->acc[b]) ? s->acc[b] : -1;
    int ra = s->steps[a] >= 0, rb = s->steps[b] >= 0;
    if (ra != rb) return ra;
    if (ra && s->steps[a] != s->steps[b]) return s->steps[a] < s->steps[b];
    if (x != y) return x > y;
    char *ea, *eb;
    const char *va = sweep_value(sw, a, entry), *vb = sweep_value(sw, b, entry);
    double na = strtod(va, &ea), nb = strtod(vb, &eb);
    if (!*ea && !*eb && na != nb) return na < nb;
    return a < b;
}

void selection_make(const SweepFile *sw, char *const *dirs, Selection *s) {
    memset(s, 0, sizeof *s);
    if (!sw->select) return;
    int n = sw->n_points, e = sweep_entry_index(sw, sw->select), ds = sw->entries[e].dim;
    s->on = 1, s->n = n;
    s->stage = mallocCheck(sizeof(int) * (size_t)n);
    s->value = mallocCheck(sizeof(int) * (size_t)n);
    s->rep = mallocCheck(sizeof(int) * (size_t)n);
    s->choice = mallocCheck(sizeof(int) * (size_t)n);
    s->acc = mallocCheck(sizeof(double) * (size_t)n);
    s->steps = mallocCheck(sizeof(long) * (size_t)n);
    s->unread = callocCheck((size_t)n, 1);
    s->on_test = callocCheck((size_t)n, 1);
    for (int i = 0; i < n; i++) {
        int rep = i, first = 1;
        for (int d = 0; d < sw->n_dims; d++) {
            if (!is_group_dim(sw, d)) continue;
            first &= choice_of(sw, i, d) == 0;
            rep -= choice_of(sw, i, d) * (int)sw->dims[d].stride;
        }
        s->value[i] = choice_of(sw, i, ds);
        s->rep[i] = rep - s->value[i] * (int)sw->dims[ds].stride;
        s->stage[i] = first ? 1 : 2;
        s->acc[i] = NAN;
        s->steps[i] = -1;
        if (first && run_finished(dirs[i])) {
            RunSummary r;
            run_summary_read(dirs[i], &r);
            s->acc[i] = r.best_acc;
            s->steps[i] = r.steps_to_target;
            s->on_test[i] = r.protocol < RUNLOG_PROTOCOL;  // an older log: its "val" was the test set
            s->unread[i] = !isfinite(r.best_acc);
            run_summary_free(&r);
        }
    }
    // per group: the best of its first-stage points, once they have all finished
    for (int i = 0; i < n; i++) {
        int rep = s->rep[i], best = -1, ready = 1;
        for (int v = 0; v < sw->dims[ds].n_values; v++) {
            int c = rep + v * (int)sw->dims[ds].stride;
            if (!run_finished(dirs[c]) || s->unread[c]) ready = 0;
            else if (best < 0 || better(sw, s, e, c, best)) best = c;
        }
        s->choice[i] = ready && best >= 0 ? s->value[best] : -1;
    }
}

void selection_free(Selection *s) {
    free(s->stage), free(s->value), free(s->rep), free(s->choice), free(s->acc), free(s->unread);
    free(s->steps), free(s->on_test);
    memset(s, 0, sizeof *s);
}

int selection_unread(const Selection *s) {
    for (int i = 0; s->on && i < s->n; i++)
        if (s->unread[i]) return i;
    return -1;
}

int selection_runs(const Selection *s, int point) {
    if (!s->on || s->stage[point] == 1) return 1;
    return s->choice[point] >= 0 && s->value[point] == s->choice[point];
}

int selection_pending(const Selection *s) {
    int n = 0;
    for (int i = 0; s->on && i < s->n; i++) n += s->stage[i] == 2 && s->choice[i] < 0;
    return n;
}

void selection_mark(const Selection *s, RunSummary *runs) {
    for (int i = 0; s->on && i < s->n; i++) {
        if (s->choice[i] < 0) continue;  // undecided: the runs as they are
        if (s->stage[i] == 1) runs[i].selected = s->value[i] == s->choice[i] ? SEL_CHOSEN : SEL_NOT_CHOSEN;
        else if (s->value[i] != s->choice[i]) runs[i].status = RUN_NOT_SELECTED;
    }
}

// The group of point rep: its varied keys other than select and group_over ("all" when none).
static void put_group(FILE *f, const SweepFile *sw, int rep) {
    int ds = sw->entries[sweep_entry_index(sw, sw->select)].dim, named = 0;
    for (int k = 0; k < sw->n_entries; k++) {
        int d = sw->entries[k].dim;
        if (d < 0 || d == ds || is_group_dim(sw, d) || !sweep_entry_varies(sw, k)) continue;
        fprintf(f, "%s%s=%s", named++ ? ", " : "", sw->entries[k].key, sweep_value(sw, rep, k));
    }
    if (!named) fputs("all", f);
}

// The first-stage point of rep's group at the chosen value; -1 while undecided.
static int chosen_point(const SweepFile *sw, const Selection *s, int rep) {
    int ds = sw->entries[sweep_entry_index(sw, sw->select)].dim;
    for (int v = 0; v < sw->dims[ds].n_values; v++) {
        int c = rep + v * (int)sw->dims[ds].stride;
        if (s->choice[rep] >= 0 && s->value[c] == s->choice[rep]) return c;
    }
    return -1;
}

// Why rep's group got its (made) choice, against the runner-up (the best of the others by the
// same order): reached the target and it did not, fewer steps, higher accuracy, a tie, or the
// only value. Logs older than the validation split chose on the test set: said so.
static void put_why(FILE *f, const SweepFile *sw, const Selection *s, int rep) {
    int e = sweep_entry_index(sw, sw->select), ds = sw->entries[e].dim;
    int best = chosen_point(sw, s, rep), second = -1;
    for (int v = 0; v < sw->dims[ds].n_values; v++) {
        int c = rep + v * (int)sw->dims[ds].stride;
        if (c != best && (second < 0 || better(sw, s, e, c, second))) second = c;
    }
    if (second < 0) fputs("the only value", f);
    else if (s->steps[best] >= 0 && s->steps[second] < 0)
        fprintf(f, "reached %.2f (%s: best %.4f)", DERIVED_TARGET_ACC, sweep_value(sw, second, e), s->acc[second]);
    else if (s->steps[best] >= 0 && s->steps[best] != s->steps[second])
        fprintf(f, "fewer steps to %.2f (%ld against %ld)", DERIVED_TARGET_ACC, s->steps[best], s->steps[second]);
    else if (s->acc[best] == s->acc[second] || (!isfinite(s->acc[best]) && !isfinite(s->acc[second])))
        fprintf(f, "a tie with %s: the smaller", sweep_value(sw, second, e));
    else fprintf(f, "best accuracy (%.4f against %.4f)", s->acc[best], s->acc[second]);
    if (s->on_test[best]) fputs("; chosen on the TEST set (a log older than the validation split)", f);
}

void selection_put_choice(const SweepFile *sw, const Selection *s, int rep, FILE *f) {
    int best = chosen_point(sw, s, rep);
    put_group(f, sw, rep);
    if (best < 0) {
        fprintf(f, ": %s waits for the first stage", sw->select);
        return;
    }
    fprintf(f, ": %s = %s, ", sw->select, sweep_value(sw, best, sweep_entry_index(sw, sw->select)));
    put_why(f, sw, s, rep);
}

char *selection_markdown(const SweepFile *sw, const Selection *s) {
    if (!s->on) return NULL;
    int e = sweep_entry_index(sw, sw->select), ds = sw->entries[e].dim;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) die("out of memory");
    fprintf(f, "## Selection of `%s`\n\nThe first stage ran every `%s` at", sw->select, sw->select);
    for (int g = 0; g < sw->n_group_over; g++) {
        int k = sweep_entry_index(sw, sw->group_over[g]);
        if (k >= 0) fprintf(f, "%s `%s = %s`", g ? "," : "", sw->group_over[g], sweep_value(sw, 0, k));
    }
    fprintf(f,
            "; each group took the value that did best on the validation set there (reached 0.99, then "
            "fewest steps to it, then the higher best accuracy, then the smaller value), and the second "
            "stage ran the other values of `%s` at that value only. Its statistics are those of the second "
            "stage's seeds: the selection seed is listed apart.\n\n| group | best validation accuracy per `%s` | "
            "chosen | why |\n"
            "|---|---|---|---|\n",
            sw->n_group_over ? sw->group_over[0] : "", sw->select);
    for (int i = 0; i < s->n; i++) {
        if (s->rep[i] != i) continue;  // once per group
        fputs("| ", f);
        put_group(f, sw, i);
        fputs(" | ", f);
        for (int v = 0; v < sw->dims[ds].n_values; v++) {
            int c = i + v * (int)sw->dims[ds].stride;
            if (isfinite(s->acc[c])) fprintf(f, "%s%s: %.4f", v ? ", " : "", sweep_value(sw, c, e), s->acc[c]);
            else fprintf(f, "%s%s: -", v ? ", " : "", sweep_value(sw, c, e));
        }
        int best = chosen_point(sw, s, i);
        if (best < 0) {
            fputs(" | - | waiting for the first stage |\n", f);
            continue;
        }
        fprintf(f, " | %s | ", sweep_value(sw, best, e));
        put_why(f, sw, s, i);
        fputs(" |\n", f);
    }
    fputc('\n', f);
    fclose(f);
    return text;
}
