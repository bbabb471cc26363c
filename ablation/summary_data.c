// What a sweep's summary tables and figures share (summary_data.h).
#include "ablation/summary_data.h"

#include <math.h>
#include <string.h>

static void stat_add(Stat *s, double v) {
    if (!isfinite(v)) return;
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

GroupStats summary_group_stats(const Summary *s, int g) {
    GroupStats gs;
    memset(&gs, 0, sizeof gs);
    for (int i = 0; i < s->sw->n_points; i++) {
        if (s->group_of[i] != g) continue;
        const RunSummary *r = &s->runs[i];
        if (!counts(r)) continue;
        gs.points++;
        if (r->status != RUN_DONE) continue;
        gs.finished++;
        gs.reached += r->steps_to_target >= 0;
        gs.capped += r->capped_improving;
        stat_add(&gs.st[G_LOSS], r->final_loss);
        stat_add(&gs.st[G_ACC], r->best_acc);
        if (r->steps_to_target >= 0) stat_add(&gs.st[G_STEPS], (double)r->steps_to_target);
        stat_add(&gs.st[G_MIN], r->minutes_to_target);
        stat_add(&gs.st[G_SMIN], r->S_min_all);
        stat_add(&gs.st[G_SMEAN], r->S_mean_all);
        stat_add(&gs.st[G_SRECALL], r->S_recall_min_all);
        stat_add(&gs.st[G_TOKS], r->tok_per_s);
        stat_add(&gs.st[G_RS], r->recall_S);
        stat_add(&gs.st[G_ANS], r->recall_ans_share);
        stat_add(&gs.st[G_HIT], r->recall_ans_hit);
        stat_add(&gs.st[G_STATE], r->state_floats);
    }
    return gs;
}
