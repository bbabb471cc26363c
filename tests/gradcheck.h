// Finite-difference helpers for the double-precision test build, and a harness that checks any
// registered mixer through the MixerKind interface alone.
#pragma once
#include <stddef.h>

#include "core/config.h"
#include "core/real.h"
#include "core/rng.h"
#include "model/mixers/mixer.h"
#include "model/model.h"

void fill_normal(real *x, size_t n, Rng *rng, double scale);
// Central difference of f with respect to x[i] (step h), restoring x[i].
typedef double (*loss_fn)(void *ctx);
double numeric_grad(loss_fn f, void *ctx, real *x, size_t i, double h);
// Compares analytic gradient g[n] of parameter `what` with central differences of f over every
// element of x; fails the test when |g - num| > atol + rtol * max(|g|, |num|) both for the
// central difference at step h and for the five-point estimate at step min(100 h, 1e-4).
void check_grad(const char *what, loss_fn f, void *ctx, real *x, const real *g, size_t n, double h, double rtol, double atol);

// A mixer built for tests: its parameters, gradients and buffers, for one layer.
typedef struct {
    const MixerKind *kind;
    void *st;
    MixerDims dims;
    int B, T, n_params;
    ParamDecl decl[MIXER_MAX_TENSORS];
    real *p[MIXER_MAX_TENSORS], *g[MIXER_MAX_TENSORS];
    size_t count[MIXER_MAX_TENSORS];
    real *act[MIXER_MAX_BUFFERS], *tmp[MIXER_MAX_BUFFERS];
    real *x, *y, *R, *dx;  // [B,T,C]
    Config *own_cfg;       // the config rig_setup made (freed by rig_free), or NULL
} MixerRig;

// Config with every key at its default (but mamba2_head_dim = 4, so that the tests' d_model 8
// has mamba2 heads) plus `overrides` ("key=value key=value", may be NULL).
void test_config(Config *c, const char *overrides);
// Builds a mixer with random parameters: weights N(0, 1/sqrt(fan_in)), norms 1 + N(0, 0.3), biases
// N(0, 0.3), custom tensors from the mixer's init; x ~ N(0, 1), R ~ N(0, 1).
void rig_init(MixerRig *r, const char *mixer, const Config *cfg, int C, int H, int B, int T, int layer, int n_layer,
              uint64_t seed);
void rig_free(MixerRig *r);
// rig_init with its own config: every key at its default plus `opts` (may be NULL).
void rig_setup(MixerRig *r, const char *mixer, const char *opts, int C, int H, int B, int T, int layer, int n_layer,
               uint64_t seed);
// The checks a mixer's own tests run at lengths past one block or chunk: finite differences
// (rtol 1e-6, atol 1e-8), maps (1e-9) and step (1e-10) of a rig_setup rig, then frees it.
void rig_check_all(const char *mixer, const char *opts, int C, int H, int B, int T, int layer, int n_layer, uint64_t seed);
// q, k, v [D] of token t of batch row b for head h, in fp64 from the attn.qkv tensors and the
// input (the q/k/v mixers' projection), so tests can rebuild weights from their definitions.
void rig_qkv(MixerRig *r, int b, int t, int h, double *q, double *k, double *v);
// Saved activation `name` as the mixer declares it.
real *rig_act(MixerRig *r, const char *name);
// Exit status of creating `mixer` (d_model C, n_head H, seq_len T) with `opts` in a child
// process, its stderr in err: 2 and a message naming the key for a refused option.
int rig_create_status(const char *mixer, const char *opts, int C, int H, int T, char *err, size_t errlen);
MixerIO rig_io(MixerRig *r);
// sum(y * R) after a forward pass.
double rig_loss(void *rig);
// Every parameter and the input checked against finite differences.
void rig_check_grads(MixerRig *r, double rtol, double atol);
// The same with finite-difference step h (rig_check_grads: 1e-6). A larger step keeps the
// roundoff of long sums (~eps |loss| / h) below the tolerance where the loss is large.
void rig_check_grads_h(MixerRig *r, double h, double rtol, double atol);
// Every map's a_ij is causal and reproduces the mixer's values-to-outputs map to tol (nothing
// for a mixer without the optional maps group).
void rig_check_attention(MixerRig *r, double tol);
real *rig_param(MixerRig *r, const char *name);
// finish() from o_i = sum_j a_ij v_j (the maps times their values, in fp64, as the interventions
// compute it) reproduces forward()'s y to tol, with the scratch poisoned in between; and finish
// from other outputs (o + 1) moves y: a finish that ignores o fails (mixers with maps).
void rig_check_finish(MixerRig *r, double tol);
// step() fed the inputs one position at a time reproduces forward() to tol (mixers with step).
void rig_check_step(MixerRig *r, double tol);
// attention_qk reproduces the maps: THEORY_EXP rows are softmax(q_i.k_j), THEORY_LINEAR rows are
// q_i.k_j normalised by their sum (nothing for a mixer without attention_qk and maps).
void rig_check_qk(MixerRig *r, double tol);
// forward and backward (output, input gradient, every parameter gradient) give the same bits
// with 1 and 2 OpenMP threads. Build the rig with 2 threads set: buffers are sized for them.
void rig_check_thread_invariance(MixerRig *r);

// A whole model for finite-difference checks of the loss: B sequences of T tokens (B * T <= 64).
typedef struct {
    Model *m;
    int B, T;
    int inputs[64], targets[64];
} ModelRig;
// The mean cross-entropy over the counted targets plus the terms on the maps when they are on
// (model_focus_terms; a forward pass only): a loss_fn of a ModelRig.
double model_rig_loss(void *rig);
// Draws each position's input and target below V from rng, in that order; every third target
// from the second is ignored (-100).
void model_rig_tokens(ModelRig *r, Rng *rng, int V);
// One forward and backward, then every tensor for which keep(name) is nonzero (keep NULL: all)
// against central differences (h 1e-6, rtol 1e-6, atol 1e-9); failures name "label tensor".
void model_rig_check_grads(ModelRig *r, const char *label, int (*keep)(const char *name));
