#include "eval/derived.h"

#include <math.h>

Verdict derived_verdict(double acc_lo, double acc_hi) {
    if (!isfinite(acc_lo) || !isfinite(acc_hi)) return VERDICT_NONE;
    if (acc_lo >= DERIVED_TARGET_ACC) return VERDICT_SOLVES;
    if (acc_hi < DERIVED_TARGET_ACC) return VERDICT_FAILS;
    return VERDICT_UNDECIDED;
}

const char *derived_verdict_name(Verdict v) {
    static const char *names[VERDICT_N] = {"solves", "undecided", "fails"};
    return v >= 0 && v < VERDICT_N ? names[v] : "";
}

LagReading derived_lag_oracle(const double *acc, const double *ctrl, const double *ctrl_lo, const double *ctrl_hi, int n) {
    LagReading r = {-1, NAN, NAN, 0};
    for (int k = 0; k < n; k++)
        if (isfinite(acc[k]) && (r.best < 0 || acc[k] > r.acc)) r.best = k, r.acc = acc[k];
    if (r.best < 0) return r;
    r.control = ctrl[r.best];
    double width = ctrl_hi[r.best] - ctrl_lo[r.best];
    r.valid = isfinite(r.control) && isfinite(width) && r.acc - r.control > width;
    return r;
}

double derived_window_share(const RunlogRecord *r) {
    double w = runlog_num(r, "ans_window_share");
    return isfinite(w) ? w : runlog_num(r, "ans_share");
}

int derived_recall_layer(const double *share, int L, int H) {
    int best = -1;
    double best_mean = -1;
    for (int l = 0; l < L; l++) {
        double s = 0;
        int n = 0;
        for (int h = 0; h < H; h++)
            if (isfinite(share[l * H + h])) s += share[l * H + h], n++;
        if (n && s / n > best_mean) best_mean = s / n, best = l;
    }
    return best;
}

int derived_recorded_recall_layer(const RunlogRecord *r) { return (int)runlog_int(r, "recall_layer", -1); }

void derived_curve(const double *step, const double *acc, long n, double target, DerivedCurve *out) {
    out->best_step = -1;
    out->best_acc = NAN;
    out->steps_to_target = -1;
    out->still_improving = 0;
    for (long i = 0; i < n; i++) {
        if (!isfinite(acc[i])) continue;
        if (!(acc[i] <= out->best_acc)) out->best_acc = acc[i], out->best_step = (long)step[i];
        if (acc[i] >= target && out->steps_to_target < 0) out->steps_to_target = (long)step[i];
    }
    if (n < 2 || !(out->best_acc < target)) return;
    double cut = step[n - 1] * 0.75, before = -1, after = -1;
    for (long i = 0; i < n; i++) {
        if (!isfinite(acc[i])) continue;
        if (step[i] <= cut) before = acc[i] > before ? acc[i] : before;
        else after = acc[i] > after ? acc[i] : after;
    }
    out->still_improving = before >= 0 && after > before + 0.01;
}
