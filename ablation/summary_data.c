// What a sweep's summary tables and figures share (summary_data.h).
#include "ablation/summary_data.h"

#include <math.h>
#include <string.h>

static void stat_add(Stat *s, double v) {
    if (!isfinite(v)) return;
    if (s->n < STAT_VALUES) s->v[s->n] = v;
    s->sum += v, s->sum2 += v * v, s->n++;
}

void summary_entry_cell(const SweepFile *sw, int point, int e, char *b, size_t n) {
    const char *v = sweep_value(sw, point, e);
    if (e == sw->base_entry) {
        const char *slash = strrchr(v, '/');
        if (slash) v = slash + 1;
        size_t len = strlen(v);
        if (len > 5 && !strcmp(v + len - 5, ".conf")) len -= 5;
        snprintf(b, n, "%.*s", (int)len, v);
    } else snprintf(b, n, "%s", v);
}

double summary_point_metric(const RunSummary *r, int m) {
    const RecallAt *f = &r->last;
    switch (m) {
    case G_LOSS: return r->final_loss;
    case G_ACC: return r->best_acc;
    case G_TEST: return r->test_acc;
    case G_STEPS: return r->steps_to_target >= 0 ? (double)r->steps_to_target : NAN;
    case G_MIN: return r->minutes_to_target;
    case G_SMIN: return r->S_min_all;
    case G_SMEAN: return r->S_mean_all;
    case G_SRECALL: return r->S_recall_min_all;
    case G_TOKS: return r->tok_per_s;
    case G_RS: return f->S;
    case G_EFF: return f->eff_tokens;
    case G_ANS: return f->share;
    case G_CHANCE: return f->chance;
    case G_LIFT: return f->share / f->chance;
    case G_HIT: return f->hit;
    case G_SRIGHT: return f->S_right;
    case G_SWRONG: return f->S_wrong;
    case G_STATE: return r->state_floats;
    default: return NAN;
    }
}

GroupStats summary_group_stats(const Summary *s, int g) {
    GroupStats gs;
    memset(&gs, 0, sizeof gs);
    gs.selection = -1;
    for (int i = 0; i < s->sw->n_points; i++) {
        if (s->group_of[i] != g) continue;
        const RunSummary *r = &s->runs[i];
        if (!counts(r)) continue;
        if (r->selected == SEL_CHOSEN) {  // chose the value on its own validation: not held out
            gs.selection = i;
            continue;
        }
        gs.points++;
        if (r->status != RUN_DONE) continue;
        gs.finished++;
        gs.reached += r->steps_to_target >= 0;
        gs.capped += r->capped_improving;
        for (int m = 0; m < G_N; m++) stat_add(&gs.st[m], summary_point_metric(r, m));
    }
    return gs;
}
