#include "model/focus.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#include "core/io.h"
#include "data/mqar.h"

// The mixers whose backward takes MixerIO.dmap.
static int takes_dmap(const MixerKind *k) { return !strcmp(k->name, "softmax") || !strcmp(k->name, "linear"); }

void focus_config(FocusTerms *f, const Config *cfg, int n_layer, const MixerKind *const *mixer) {
    memset(f, 0, sizeof *f);
    f->layer = n_layer - 1;
    f->S_recall = f->answer_ce = NAN;
    if (!cfg || !config_find(cfg, "focus_penalty")) return;
    f->lambda = cfg_float(cfg, "focus_penalty");
    f->mu = cfg_float(cfg, "answer_supervision");
    int l = (int)cfg_int(cfg, "focus_layer");
    if (l < -1 || l >= n_layer)
        die_input("focus_layer: expected -1 (the last layer) or a layer 0 to n_layer - 1 = %d, got %d", n_layer - 1, l);
    f->layer = l < 0 ? n_layer - 1 : l;
    f->on = f->lambda != 0 || f->mu != 0;
    if (!f->on || takes_dmap(mixer[f->layer])) return;
    const char *key = f->lambda != 0 ? "focus_penalty" : "answer_supervision";
    die_input("%s: expected mixer softmax or linear at focus_layer %d (the terms act on their maps), got '%s' (set %s = 0 "
              "or choose another focus_layer)",
              key, f->layer, mixer[f->layer]->name, key);
}

double focus_loss(const FocusTerms *f) { return f->penalty_term + f->answer_term; }

// l1 = sum |a_j|, l2 = sum a_j^2 of a row of n weights, in double, in order.
static void row_norms(const real *a, int n, double *l1, double *l2) {
    double s1 = 0, s2 = 0;
    for (int j = 0; j < n; j++) {
        double x = fabs((double)a[j]);
        s1 += x;
        s2 += x * x;
    }
    *l1 = s1, *l2 = s2;
}

static double sign(double x) { return x > 0 ? 1 : x < 0 ? -1 : 0; }

double focus_compute(FocusTerms *f, const MixerKind *k, const void *st, const MixerIO *io, const int *inputs,
                     const int *targets, const int *rows, int n_rows, FocusWork *w, int want_grad) {
    int B = io->B, T = io->T, nm = k->n_maps(st);
    size_t TT = (size_t)T * T;
    for (int b = 0, r = 0; b <= B; b++) {
        while (r < n_rows && rows[r] < b * T) r++;
        w->seq_start[b] = r;
    }
    for (int r = 0; r < n_rows; r++) {
        int b = rows[r] / T, i = rows[r] % T;
        w->vpos[r] = mqar_value_pos(inputs + (size_t)b * T, i, targets[rows[r]]);
    }
    // 1. per (sequence, map): the map, each query row's S and cross-entropy; with want_grad the
    // query rows copied into dmap (the rest zero), where pass 2 turns them into gradients
#pragma omp parallel for schedule(dynamic, 1)
    for (int p = 0; p < B * nm; p++) {
        int b = p / nm, h = p % nm, r0 = w->seq_start[b], r1 = w->seq_start[b + 1];
        real *G = want_grad ? w->dmap + (size_t)p * TT : NULL;
        if (G) memset(G, 0, sizeof(real) * TT);
        if (r0 == r1) continue;
        real *a = w->maps + (size_t)omp_get_thread_num() * TT;
        k->attention(st, io, b, h, a);
        for (int r = r0; r < r1; r++) {
            int i = rows[r] - b * T, n = i + 1, v = w->vpos[r];
            const real *row = a + (size_t)i * T;
            double l1, l2;
            row_norms(row, n, &l1, &l2);
            size_t q = (size_t)r * nm + h;
            w->row_S[q] = l1 > 0 ? (real)(l1 / sqrt(n * l2)) : (real)NAN;
            w->row_ce[q] = v >= 0 && l1 > 0 ? (real)-log(fmax(fabs((double)row[v]) / l1, FOCUS_W_MIN)) : (real)NAN;
            if (G) memcpy(G + (size_t)i * T, row, sizeof(real) * (size_t)n);
        }
    }
    double sum_S = 0, sum_ce = 0;
    long n_S = 0, n_ce = 0;
    for (size_t q = 0; q < (size_t)n_rows * nm; q++) {  // fixed order
        if (!isnan(w->row_S[q])) sum_S += w->row_S[q], n_S++;
        if (!isnan(w->row_ce[q])) sum_ce += w->row_ce[q], n_ce++;
    }
    f->rows_S = n_S, f->rows_answer = n_ce;
    f->S_recall = n_S ? sum_S / (double)n_S : NAN;
    f->answer_ce = n_ce ? sum_ce / (double)n_ce : NAN;
    f->penalty_term = n_S ? f->lambda * (1 - f->S_recall) : 0;
    f->answer_term = n_ce ? f->mu * f->answer_ce : 0;
    if (!want_grad) return focus_loss(f);
    // 2. per (query row, map): dmap's row a -> -lambda / n_S dS/da + mu / n_ce dCE/da, with
    //    dS/da_j = S (sign a_j / l1 - a_j / l2),  dCE/da_j = sign a_j / l1 - [j = v] sign a_v / |a_v|
    double cS = n_S ? -f->lambda / (double)n_S : 0, cA = n_ce ? f->mu / (double)n_ce : 0;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < n_rows; r++) {
        int b = rows[r] / T, i = rows[r] % T, n = i + 1;
        for (int h = 0; h < nm; h++) {
            size_t q = (size_t)r * nm + h;
            real *row = w->dmap + ((size_t)b * nm + h) * TT + (size_t)i * T;
            if (isnan(w->row_S[q])) continue;  // an all-zero row: no S, no cross-entropy, gradient 0
            double l1, l2;
            row_norms(row, n, &l1, &l2);
            double S = l1 / sqrt(n * l2);
            int v = isnan(w->row_ce[q]) ? -1 : w->vpos[r];
            double dv = 0;  // the answer's own part, -sign a_v / |a_v| (the weight floored at FOCUS_W_MIN)
            if (v >= 0) dv = -sign(row[v]) / (fmax(fabs((double)row[v]) / l1, FOCUS_W_MIN) * l1);
            for (int j = 0; j < n; j++) {
                double x = row[j], sg = sign(x);
                row[j] = (real)(cS * S * (sg / l1 - x / l2) + (v >= 0 ? cA * sg / l1 : 0));
            }
            if (v >= 0) row[v] += (real)(cA * dv);
        }
    }
    return focus_loss(f);
}
