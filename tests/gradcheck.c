#include "tests/gradcheck.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/keys.h"
#include "tests/test.h"

void fill_normal(real *x, size_t n, Rng *rng, double scale) {
    for (size_t i = 0; i < n; i++) x[i] = (real)(scale * rng_normal(rng));
}

double numeric_grad(loss_fn f, void *ctx, real *x, size_t i, double h) {
    real saved = x[i];
    x[i] = (real)(saved + h);
    double up = f(ctx);
    x[i] = (real)(saved - h);
    double down = f(ctx);
    x[i] = saved;
    return (up - down) / (2 * h);
}

// Five-point stencil (-f(x+2h) + 8f(x+h) - 8f(x-h) + f(x-2h)) / 12h, restoring x[i]: truncation
// error O(h^4), so a step 100 times larger is as exact as the central difference while the
// loss's rounding noise, divided by the step, shrinks 30-fold.
static double numeric_grad4(loss_fn f, void *ctx, real *x, size_t i, double h) {
    real saved = x[i];
    double v[4], step[4] = {2 * h, h, -h, -2 * h};
    for (int k = 0; k < 4; k++) {
        x[i] = (real)(saved + step[k]);
        v[k] = f(ctx);
    }
    x[i] = saved;
    return (-v[0] + 8 * v[1] - 8 * v[2] + v[3]) / (12 * h);
}

static double excess_over(double a, double num, double rtol, double atol) {
    return fabs(a - num) - (atol + rtol * fmax(fabs(a), fabs(num)));
}

void check_grad(const char *what, loss_fn f, void *ctx, real *x, const real *g, size_t n, double h, double rtol, double atol) {
    double worst = 0;
    size_t worst_i = 0;
    double worst_a = 0, worst_n = 0, worst_n4 = 0;
    for (size_t i = 0; i < n; i++) {
        double num = numeric_grad(f, ctx, x, i, h);
        double a = (double)g[i];
        if (!isfinite(a) || !isfinite(num))  // NaN compares false with any tolerance: say it
            test_fail(__FILE__, __LINE__, "%s[%zu]: analytic %.12g vs numeric %.12g", what, i, a, num);
        double excess = excess_over(a, num, rtol, atol);
        if (excess <= 0) continue;
        // A miss can be the central difference's own rounding noise (about 1e-8 at h = 1e-6 for a
        // loss of 20 summed over a thousand outputs; without FMA it is larger): the element
        // passes if the five-point estimate agrees. A wrong gradient misses both.
        double num4 = numeric_grad4(f, ctx, x, i, fmin(100 * h, 1e-4));
        double excess4 = isfinite(num4) ? excess_over(a, num4, rtol, atol) : INFINITY;
        if (excess4 > 0 && excess > worst) worst = excess, worst_i = i, worst_a = a, worst_n = num, worst_n4 = num4;
    }
    if (worst > 0)
        test_fail(__FILE__, __LINE__, "%s[%zu]: analytic %.12g vs numeric %.12g (five-point %.12g)", what, worst_i,
                  worst_a, worst_n, worst_n4);
}

void test_config(Config *c, const char *overrides) {
    config_init_all(c);
    // mamba2's heads of fla's 64 channels need d_inner >= 64: the tests' models of d_model 8 get
    // heads of 4 (d_inner 16, 4 heads); a test that wants another width says so in overrides
    char base[] = "mamba2_head_dim=4", *argv0[1] = {base};
    config_apply_args(c, 1, argv0);
    if (!overrides) return;
    char *copy = strdupCheck(overrides);
    char *argv[64];
    int argc = 0;
    for (char *tok = strtok(copy, " "); tok && argc < 64; tok = strtok(NULL, " ")) argv[argc++] = tok;
    config_apply_args(c, argc, argv);
    free(copy);
}

void rig_init(MixerRig *r, const char *mixer, const Config *cfg, int C, int H, int B, int T, int layer, int n_layer,
              uint64_t seed) {
    memset(r, 0, sizeof *r);
    r->kind = mixer_find(mixer);
    if (!r->kind) test_fail(__FILE__, __LINE__, "no mixer '%s'", mixer);
    r->dims = (MixerDims){C, H, T, B, layer, n_layer, cfg, PRECISION_FP32};
    r->B = B;
    r->T = T;
    r->st = r->kind->create(&r->dims);
    r->n_params = r->kind->params(r->st, r->decl);
    Rng rng;
    rng_seed(&rng, seed);
    for (int i = 0; i < r->n_params; i++) {
        const ParamDecl *d = &r->decl[i];
        size_t n = 1;
        for (int k = 0; k < d->ndim; k++) n *= (size_t)d->shape[k];
        r->count[i] = n;
        r->p[i] = callocCheck(n, sizeof(real));
        r->g[i] = callocCheck(n, sizeof(real));
        double fan_in = d->ndim >= 2 ? d->shape[d->ndim - 1] : 1;
        switch (d->init) {
        case INIT_CUSTOM: r->kind->init_custom(r->st, i, r->p[i], &rng); break;
        case INIT_ONE:
            fill_normal(r->p[i], n, &rng, 0.3);
            for (size_t k = 0; k < n; k++) r->p[i][k] += 1;
            break;
        case INIT_ZERO: fill_normal(r->p[i], n, &rng, 0.3); break;
        default: fill_normal(r->p[i], n, &rng, 1 / sqrt(fan_in)); break;
        }
    }
    BufDecl saved[MIXER_MAX_BUFFERS], scratch[MIXER_MAX_BUFFERS];
    int ns = 0, nt = 0;
    r->kind->buffers(r->st, B, T, saved, &ns, scratch, &nt);
    // NaN-filled, so a mixer that reads a buffer before writing it fails loudly
    for (int i = 0; i < ns; i++) {
        r->act[i] = mallocCheck(sizeof(real) * (saved[i].count + 1));
        for (size_t k = 0; k < saved[i].count; k++) r->act[i][k] = NAN;
    }
    for (int i = 0; i < nt; i++) {
        r->tmp[i] = mallocCheck(sizeof(real) * (scratch[i].count + 1));
        for (size_t k = 0; k < scratch[i].count; k++) r->tmp[i][k] = NAN;
    }
    size_t n = (size_t)B * T * C;
    r->x = mallocCheck(sizeof(real) * n);
    r->y = mallocCheck(sizeof(real) * n);
    r->R = mallocCheck(sizeof(real) * n);
    r->dx = mallocCheck(sizeof(real) * n);
    fill_normal(r->x, n, &rng, 1);
    fill_normal(r->R, n, &rng, 1);
}

void rig_free(MixerRig *r) {
    for (int i = 0; i < r->n_params; i++) free(r->p[i]), free(r->g[i]);
    for (int i = 0; i < MIXER_MAX_BUFFERS; i++) free(r->act[i]), free(r->tmp[i]);
    free(r->x), free(r->y), free(r->R), free(r->dx);
    r->kind->destroy(r->st);
    if (r->own_cfg) config_free(r->own_cfg), free(r->own_cfg);
}

void rig_setup(MixerRig *r, const char *mixer, const char *opts, int C, int H, int B, int T, int layer, int n_layer,
               uint64_t seed) {
    Config *cfg = mallocCheck(sizeof *cfg);
    test_config(cfg, opts);
    rig_init(r, mixer, cfg, C, H, B, T, layer, n_layer, seed);
    r->own_cfg = cfg;
}

void rig_check_all(const char *mixer, const char *opts, int C, int H, int B, int T, int layer, int n_layer, uint64_t seed) {
    MixerRig r;
    rig_setup(&r, mixer, opts, C, H, B, T, layer, n_layer, seed);
    rig_check_grads(&r, 1e-6, 1e-8);
    rig_check_attention(&r, 1e-9);
    rig_check_step(&r, 1e-10);
    rig_free(&r);
}

void rig_qkv(MixerRig *r, int b, int t, int h, double *q, double *k, double *v) {
    int C = r->dims.C, D = C / r->dims.H;
    const real *w = rig_param(r, "attn.qkv.weight"), *bias = rig_param(r, "attn.qkv.bias");
    const real *x = r->x + ((size_t)b * r->T + t) * C;
    for (int d = 0; d < D; d++) {
        double s[3];
        for (int p = 0; p < 3; p++) {
            int row = p * C + h * D + d;
            s[p] = bias[row];
            for (int c = 0; c < C; c++) s[p] += (double)w[(size_t)row * C + c] * x[c];
        }
        q[d] = s[0], k[d] = s[1], v[d] = s[2];
    }
}

real *rig_act(MixerRig *r, const char *name) {
    BufDecl saved[MIXER_MAX_BUFFERS], scratch[MIXER_MAX_BUFFERS];
    int ns = 0, nt = 0;
    r->kind->buffers(r->st, r->B, r->T, saved, &ns, scratch, &nt);
    for (int i = 0; i < ns; i++)
        if (!strcmp(saved[i].name, name)) return r->act[i];
    test_fail(__FILE__, __LINE__, "mixer %s has no saved buffer '%s'", r->kind->name, name);
}

typedef struct {
    const char *mixer, *opts;
    int C, H, T;
} CreateArgs;

static void create_mixer(void *arg) {
    const CreateArgs *a = arg;
    Config cfg;
    test_config(&cfg, a->opts);
    MixerDims d = {a->C, a->H, a->T, 1, 0, 1, &cfg, PRECISION_FP32};
    mixer_find(a->mixer)->create(&d);
}

int rig_create_status(const char *mixer, const char *opts, int C, int H, int T, char *err, size_t errlen) {
    CreateArgs a = {mixer, opts, C, H, T};
    return test_fork(create_mixer, &a, err, errlen);
}

MixerIO rig_io(MixerRig *r) {
    MixerIO io = {.B = r->B, .T = r->T, .p = r->p, .g = r->g, .act = r->act, .tmp = r->tmp, .x = r->x, .y = r->y};
    return io;
}

double rig_loss(void *ctx) {
    MixerRig *r = ctx;
    MixerIO io = rig_io(r);
    r->kind->forward(r->st, &io);
    double s = 0;
    size_t n = (size_t)r->B * r->T * r->dims.C;
    for (size_t i = 0; i < n; i++) s += (double)r->y[i] * (double)r->R[i];
    return s;
}

real *rig_param(MixerRig *r, const char *name) {
    for (int i = 0; i < r->n_params; i++)
        if (!strcmp(r->decl[i].name, name)) return r->p[i];
    test_fail(__FILE__, __LINE__, "mixer %s has no tensor '%s'", r->kind->name, name);
}

// Scratch back to NaN between a forward and its backward: in a model the layers share their
// scratch, so a backward must not read what its forward left there.
static void poison_scratch(MixerRig *r) {
    BufDecl saved[MIXER_MAX_BUFFERS], scratch[MIXER_MAX_BUFFERS];
    int ns = 0, nt = 0;
    r->kind->buffers(r->st, r->B, r->T, saved, &ns, scratch, &nt);
    for (int i = 0; i < nt; i++)
        for (size_t k = 0; k < scratch[i].count; k++) r->tmp[i][k] = NAN;
}

void rig_check_grads(MixerRig *r, double rtol, double atol) { rig_check_grads_h(r, 1e-6, rtol, atol); }

void rig_check_grads_h(MixerRig *r, double h, double rtol, double atol) {
    size_t n = (size_t)r->B * r->T * r->dims.C;
    rig_loss(r);
    poison_scratch(r);
    MixerIO io = rig_io(r);
    io.dy = r->R;
    io.dx = r->dx;
    // backward accumulates: start from a known non-zero value and subtract it afterwards
    for (size_t i = 0; i < n; i++) r->dx[i] = 0.5;
    for (int k = 0; k < r->n_params; k++)
        for (size_t i = 0; i < r->count[k]; i++) r->g[k][i] = 0.25;
    r->kind->backward(r->st, &io);
    for (size_t i = 0; i < n; i++) r->dx[i] -= 0.5;
    for (int k = 0; k < r->n_params; k++)
        for (size_t i = 0; i < r->count[k]; i++) r->g[k][i] -= 0.25;
    char what[96];
    snprintf(what, sizeof what, "%s d(input)", r->kind->name);
    check_grad(what, rig_loss, r, r->x, r->dx, n, h, rtol, atol);
    for (int k = 0; k < r->n_params; k++) {
        snprintf(what, sizeof what, "%s d(%s)", r->kind->name, r->decl[k].name);
        check_grad(what, rig_loss, r, r->p[k], r->g[k], r->count[k], h, rtol, atol);
    }
}

void rig_check_attention(MixerRig *r, double tol) {
    if (!r->kind->attention) return;  // the maps group is optional (mixer.h): nothing to check
    rig_loss(r);
    MixerIO io = rig_io(r);
    int T = r->T, C = r->dims.C, n_maps = r->kind->n_maps(r->st);
    CHECK(n_maps % r->dims.H == 0, "%s: %d maps for %d heads", r->kind->name, n_maps, r->dims.H);
    real *a = mallocCheck(sizeof(real) * T * T);
    real *v = mallocCheck(sizeof(real) * T * 4 * C), *o = mallocCheck(sizeof(real) * T * 4 * C);
    for (int b = 0; b < r->B; b++)
        for (int m = 0; m < n_maps; m++) {
            for (int i = 0; i < T * T; i++) a[i] = NAN;
            r->kind->attention(r->st, &io, b, m, a);
            int W = r->kind->attention_values(r->st, &io, b, m, v, o);
            for (int i = 0; i < T; i++) {
                for (int j = i + 1; j < T; j++)
                    CHECK(a[i * T + j] == 0, "%s map %d: a[%d][%d] = %g above the diagonal", r->kind->name, m, i, j,
                          (double)a[i * T + j]);
                for (int w = 0; w < W; w++) {
                    double s = 0, mag = 0;
                    for (int j = 0; j <= i; j++) {
                        s += (double)a[i * T + j] * (double)v[j * W + w];
                        mag += fabs((double)a[i * T + j] * (double)v[j * W + w]);
                    }
                    CHECK(fabs(s - (double)o[i * W + w]) <= tol * (1 + mag),
                          "%s b %d map %d row %d col %d: sum_j a_ij v_j = %.15g, output %.15g", r->kind->name, b, m, i,
                          w, s, (double)o[i * W + w]);
                }
            }
        }
    free(a), free(v), free(o);
}

void rig_check_finish(MixerRig *r, double tol) {
    if (!r->kind->attention) return;
    rig_loss(r);
    MixerIO io = rig_io(r);
    int B = r->B, T = r->T, C = r->dims.C, n_maps = r->kind->n_maps(r->st);
    size_t n = (size_t)B * T * C;
    real *y0 = mallocCheck(sizeof(real) * n), *a = mallocCheck(sizeof(real) * T * T);
    real *v = mallocCheck(sizeof(real) * T * 4 * C), *oa = mallocCheck(sizeof(real) * T * 4 * C);
    real *o = mallocCheck(sizeof(real) * (size_t)B * n_maps * T * 4 * C);
    memcpy(y0, r->y, sizeof(real) * n);
    int W = 0;
    for (int b = 0; b < B; b++)
        for (int m = 0; m < n_maps; m++) {
            r->kind->attention(r->st, &io, b, m, a);
            W = r->kind->attention_values(r->st, &io, b, m, v, oa);
            real *om = o + ((size_t)b * n_maps + m) * T * W;
            for (int i = 0; i < T; i++)
                for (int w = 0; w < W; w++) {
                    double s = 0;
                    for (int j = 0; j <= i; j++) s += (double)a[i * T + j] * (double)v[j * W + w];
                    om[i * W + w] = (real)s;
                }
        }
    poison_scratch(r);
    r->kind->finish(r->st, &io, o);
    for (size_t i = 0; i < n; i++)
        CHECK(fabs((double)r->y[i] - (double)y0[i]) <= tol * (1 + fabs((double)y0[i])),
              "%s: finish(a v) y[%zu] = %.15g, forward %.15g", r->kind->name, i, (double)r->y[i], (double)y0[i]);
    for (size_t i = 0; i < (size_t)B * n_maps * T * W; i++) o[i] += 1;
    r->kind->finish(r->st, &io, o);
    double moved = 0;
    for (size_t i = 0; i < n; i++) moved = fmax(moved, fabs((double)r->y[i] - (double)y0[i]));
    CHECK(moved > 1e-3, "%s: finish(o + 1) left y where it was (largest change %g)", r->kind->name, moved);
    free(y0), free(a), free(v), free(oa), free(o);
}

void rig_check_step(MixerRig *r, double tol) {
    if (!r->kind->step || !r->kind->state_size) return;  // the generation group is optional (mixer.h)
    rig_loss(r);
    int C = r->dims.C, T = r->T;
    size_t size = r->kind->state_size(r->st), carried = r->kind->state_floats ? r->kind->state_floats(r->st) : size;
    CHECK(carried <= size, "%s: state_floats %zu above state_size %zu", r->kind->name, carried, size);
    real *state = mallocCheck(sizeof(real) * size);
    real *y = mallocCheck(sizeof(real) * C);
    for (int b = 0; b < r->B; b++) {
        memset(state, 0, sizeof(real) * size);
        for (int t = 0; t < T; t++) {
            const real *x = r->x + ((size_t)b * T + t) * C;
            // only the first state_floats numbers carry over: the rest is scratch, written before read
            for (size_t i = carried; t > 0 && i < size; i++) state[i] = NAN;
            r->kind->step(r->st, r->p, state, t, x, y);
            for (int c = 0; c < C; c++) {
                double want = r->y[((size_t)b * T + t) * C + c];
                CHECK(fabs(y[c] - want) <= tol * (1 + fabs(want)), "%s step b %d t %d c %d: %.15g vs forward %.15g",
                      r->kind->name, b, t, c, (double)y[c], want);
            }
        }
    }
    free(state), free(y);
}

void rig_check_qk(MixerRig *r, double tol) {
    if (!r->kind->attention_qk || !r->kind->attention) return;  // optional groups (mixer.h)
    rig_loss(r);
    MixerIO io = rig_io(r);
    int T = r->T, C = r->dims.C;
    real *a = mallocCheck(sizeof(real) * T * T);
    int W = mixer_qk_width(r->kind, r->st, C);
    real *q = mallocCheck(sizeof(real) * T * W), *k = mallocCheck(sizeof(real) * T * W);
    for (int b = 0; b < r->B; b++)
        for (int m = 0; m < r->kind->n_maps(r->st); m++) {
            r->kind->attention(r->st, &io, b, m, a);
            int K = r->kind->attention_qk(r->st, &io, b, m, q, k);
            CHECK(K <= W, "%s: attention_qk returned %d, past its width %d", r->kind->name, K, W);
            for (int i = 0; i < T; i++) {
                double w[1024], sum = 0, mx = -1e300;
                for (int j = 0; j <= i; j++) {
                    double d = 0;
                    for (int c = 0; c < K; c++) d += (double)q[i * K + c] * (double)k[j * K + c];
                    w[j] = d;
                    if (d > mx) mx = d;
                }
                if (r->kind->theory == THEORY_RELU2) {  // unnormalised: a_ij = relu(q'_i.k'_j)^2 itself
                    for (int j = 0; j <= i; j++) {
                        double x = w[j] > 0 ? w[j] * w[j] : 0;
                        CHECK(fabs(x - (double)a[i * T + j]) <= tol * (1 + fabs(x)),
                              "%s qk row %d col %d: %.15g vs map %.15g", r->kind->name, i, j, x, (double)a[i * T + j]);
                    }
                    continue;
                }
                for (int j = 0; j <= i; j++) {
                    if (r->kind->theory == THEORY_EXP) w[j] = exp(w[j] - mx);
                    sum += w[j];
                }
                // The theory sees the row's shape: compare both rows normalised to sum 1 (linear
                // attention's map carries a 1e-6 in its normaliser that the q.k products do not).
                double asum = 0;
                for (int j = 0; j <= i; j++) asum += (double)a[i * T + j];
                for (int j = 0; j <= i; j++)
                    CHECK(fabs(w[j] / sum - (double)a[i * T + j] / asum) <= tol, "%s qk row %d col %d: %.15g vs map %.15g",
                          r->kind->name, i, j, w[j] / sum, (double)a[i * T + j] / asum);
            }
        }
    free(a), free(q), free(k);
}

void rig_check_thread_invariance(MixerRig *r) {
    size_t n = (size_t)r->B * r->T * r->dims.C, total = 2 * n;
    for (int i = 0; i < r->n_params; i++) total += r->count[i];
    real *out[2];
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        MixerIO io = rig_io(r);
        r->kind->forward(r->st, &io);
        poison_scratch(r);
        io.dy = r->R;
        io.dx = r->dx;
        memset(r->dx, 0, sizeof(real) * n);
        for (int i = 0; i < r->n_params; i++) memset(r->g[i], 0, sizeof(real) * r->count[i]);
        r->kind->backward(r->st, &io);
        real *o = out[threads - 1] = mallocCheck(sizeof(real) * total);
        memcpy(o, r->y, sizeof(real) * n), o += n;
        memcpy(o, r->dx, sizeof(real) * n), o += n;
        for (int i = 0; i < r->n_params; i++) memcpy(o, r->g[i], sizeof(real) * r->count[i]), o += r->count[i];
    }
    CHECK(!memcmp(out[0], out[1], sizeof(real) * total), "%s: 1 and 2 threads differ", r->kind->name);
    free(out[0]), free(out[1]);
}

double model_rig_loss(void *rig) {
    ModelRig *r = rig;
    HeadStats s = model_forward(r->m, r->inputs, r->targets, r->B, r->T, 0);
    return s.loss_sum / (double)s.n_counted + model_focus_terms(r->m);  // the terms on the maps, when on
}

void model_rig_tokens(ModelRig *r, Rng *rng, int V) {
    for (int i = 0; i < r->B * r->T; i++) {
        r->inputs[i] = (int)rng_below(rng, (uint64_t)V);
        r->targets[i] = i % 3 == 1 ? -100 : (int)rng_below(rng, (uint64_t)V);
    }
}

void model_rig_check_grads(ModelRig *r, const char *label, int (*keep)(const char *name)) {
    model_zero_grad(r->m);
    model_forward(r->m, r->inputs, r->targets, r->B, r->T, 1);
    model_backward(r->m);
    for (int i = 0; i < r->m->n_tensors; i++) {
        const TensorInfo *t = &r->m->tensors[i];
        if (keep && !keep(t->name)) continue;
        char what[256];
        snprintf(what, sizeof what, "%s%s%s", label ? label : "", label && *label ? " " : "", t->name);
        check_grad(what, model_rig_loss, r, r->m->params + t->offset, r->m->grads + t->offset, t->count, 1e-6, 1e-6, 1e-9);
    }
}
