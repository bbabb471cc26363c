// A run's intervention records for the sweep's summary (run_interventions.h).
#include "ablation/run_interventions.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/runlog.h"
#include "eval/intervene.h"

static int same_strength(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

// The summary's records: the validation split, every head, the query rows, and options that
// are the intervention's own ("intervene=KIND[:S] rows=query", nothing after).
static int wanted(const RunlogRecord *r) {
    const char *rows = runlog_str(r, "rows");
    if (r->head != -1 || strcmp(r->split, "val") || !rows || strcmp(rows, "query")) return 0;
    const char *sp = strchr(r->options, ' ');
    return sp && !strcmp(sp + 1, "rows=query");
}

static int collect(const RunlogRecord *r, void *ctx) {
    RunInterventions *iv = ctx;
    if (r->type != RUNLOG_INTERVENTION || !wanted(r)) return 0;
    const char *kind = runlog_str(r, "kind");
    int k = -1;
    for (int i = 0; kind && i < IV_N_KINDS; i++)
        if (!strcmp(kind, intervention_name((InterventionKind)i))) k = i;
    if (k < 0) return 0;
    IvRecord rec = {.kind = k,
                    .layer = r->layer,
                    .strength = intervention_has_strength((InterventionKind)k) ? runlog_num(r, "strength") : NAN,
                    .acc = runlog_num(r, "acc"),
                    .acc_lo = runlog_num(r, "acc_lo"),
                    .acc_hi = runlog_num(r, "acc_hi"),
                    .acc_permuted = runlog_num(r, "acc_permuted"),
                    .share = runlog_num(r, "ans_share"),
                    .patch_follows = runlog_num(r, "patch_follows"),
                    .contrib = runlog_num(r, "contrib_share"),
                    .contrib_chance = runlog_num(r, "contrib_chance"),
                    .contrib_window = runlog_num(r, "contrib_window_share"),
                    .contrib_window_chance = runlog_num(r, "contrib_window_chance"),
                    .margin = runlog_num(r, "ans_margin"),
                    .window_margin = runlog_num(r, "ans_window_margin"),
                    .S_recall = runlog_num(r, "S_recall"),
                    .eff_tokens = runlog_num(r, "eff_tokens_recall"),
                    .window = runlog_num(r, "ans_window_share"),
                    .chance = runlog_num(r, "ans_window_chance")};
    if (iv->step >= 0 && r->step != iv->step) {  // another checkpoint's: the latest one's are kept
        if (r->step < iv->step) return 0;
        iv->n = 0;
    }
    iv->step = r->step;
    for (int i = 0; i < iv->n; i++)
        if (iv->v[i].kind == k && iv->v[i].layer == rec.layer && same_strength(iv->v[i].strength, rec.strength)) {
            iv->v[i] = rec;
            return 0;
        }
    iv->v = reallocCheck(iv->v, sizeof(IvRecord) * (size_t)(iv->n + 1));
    iv->v[iv->n++] = rec;
    return 0;
}

void run_interventions_read(const char *dir, RunInterventions *iv) {
    memset(iv, 0, sizeof *iv);
    iv->step = -1, iv->causal_layer = iv->ablation_layer = iv->patch_layer = -1, iv->acc_trained = NAN;
    char path[1200];
    snprintf(path, sizeof path, "%s/intervention.jsonl", dir);
    if (!path_exists(path)) return;
    runlog_each(path, collect, iv);
    double worst = INFINITY, moved = 0;
    for (int i = 0; i < iv->n; i++) {
        const IvRecord *r = &iv->v[i];
        if (r->kind == IV_ABLATE && r->layer >= 0 && r->acc < worst) worst = r->acc, iv->ablation_layer = r->layer;
        if (r->kind == IV_PATCH && r->layer >= 0 && isfinite(r->patch_follows) && r->patch_follows > moved)
            moved = r->patch_follows, iv->patch_layer = r->layer;
        if (r->kind == IV_NONE && isnan(iv->acc_trained)) iv->acc_trained = r->acc;
    }
    iv->causal_layer = iv->patch_layer >= 0 ? iv->patch_layer : iv->ablation_layer;
}

void run_interventions_free(RunInterventions *iv) {
    free(iv->v);
    memset(iv, 0, sizeof *iv);
    iv->step = -1, iv->causal_layer = iv->ablation_layer = iv->patch_layer = -1, iv->acc_trained = NAN;
}

const IvRecord *run_intervention(const RunInterventions *iv, int kind, int layer, double strength) {
    for (int i = 0; i < iv->n; i++)
        if (iv->v[i].kind == kind && iv->v[i].layer == layer && same_strength(iv->v[i].strength, strength))
            return &iv->v[i];
    return NULL;
}
