#include "trainer/optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"

void optim_init(Optimizer *o, OptimizerKind kind, size_t n_params, double beta1, double beta2, double eps,
                double weight_decay) {
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->beta1 = beta1;
    o->beta2 = beta2;
    o->eps = eps;
    o->weight_decay = weight_decay;
    o->n = n_params;
    if (kind == OPT_ADAMW) {
        o->m = callocCheck(n_params, sizeof(real));
        o->v = callocCheck(n_params, sizeof(real));
    }
}

OptimizerKind optim_kind_from_config(const Config *cfg) {
    return !strcmp(cfg_str(cfg, "optimizer"), "sgd") ? OPT_SGD : OPT_ADAMW;
}

void optim_from_config(Optimizer *o, const Config *cfg, size_t n_params) {
    optim_init(o, optim_kind_from_config(cfg), n_params, cfg_float(cfg, "beta1"), cfg_float(cfg, "beta2"),
               cfg_float(cfg, "eps"), cfg_float(cfg, "weight_decay"));
}

void optim_free(Optimizer *o) {
    free(o->m);
    free(o->v);
    o->m = o->v = NULL;
}

void optim_step(Optimizer *o, Model *mdl, double lr) {
    o->t++;
    real bc1 = (real)(1 - pow(o->beta1, (double)o->t));
    real bc2_sqrt = (real)sqrt(1 - pow(o->beta2, (double)o->t));
    real b1 = (real)o->beta1, b2 = (real)o->beta2, eps = (real)o->eps;
    real step_size = (real)lr / bc1;
    for (int ti = 0; ti < mdl->n_tensors; ti++) {
        const TensorInfo *t = &mdl->tensors[ti];
        real *p = mdl->params + t->offset, *g = mdl->grads + t->offset;
        real decay = t->decay ? (real)(lr * o->weight_decay) : 0;
        long n = (long)t->count;
        if (o->kind == OPT_SGD) {
#pragma omp parallel for schedule(static)
            for (long i = 0; i < n; i++) p[i] -= (real)lr * g[i] + decay * p[i];
            continue;
        }
        real *m = o->m + t->offset, *v = o->v + t->offset;
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++) {
            m[i] = b1 * m[i] + (1 - b1) * g[i];
            v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
            real denom = sqrtr(v[i]) / bc2_sqrt + eps;
            p[i] = p[i] * (1 - decay) - step_size * m[i] / denom;
        }
    }
}

#define NORM_CHUNK 4096

double grad_global_norm(const real *g, size_t n) {
    size_t n_chunks = (n + NORM_CHUNK - 1) / NORM_CHUNK;
    double *partial = callocCheck(n_chunks, sizeof(double));
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < n_chunks; c++) {
        size_t end = (c + 1) * NORM_CHUNK < n ? (c + 1) * NORM_CHUNK : n;
        double s = 0;
        for (size_t i = c * NORM_CHUNK; i < end; i++) s += (double)g[i] * (double)g[i];
        partial[c] = s;
    }
    double total = 0;
    for (size_t c = 0; c < n_chunks; c++) total += partial[c];
    free(partial);
    return sqrt(total);
}

void grad_clip(real *g, size_t n, double norm, double max_norm) {
    double coef = max_norm / (norm + 1e-6);
    if (coef >= 1) return;
    real c = (real)coef;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) g[i] *= c;
}

double lr_at(LrSchedule sched, long step, long total, long warmup, double lr, double min_lr) {
    if (step < warmup) return lr * (double)(step + 1) / (double)warmup;
    if (sched == LR_CONSTANT || total <= warmup) return lr;
    double progress = (double)(step - warmup) / (double)(total - warmup);
    if (progress > 1) progress = 1;
    if (sched == LR_LINEAR) return lr - (lr - min_lr) * progress;
    return min_lr + 0.5 * (1 + cos(M_PI * progress)) * (lr - min_lr);
}
