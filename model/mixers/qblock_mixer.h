// The qblock family: the q/k/v mixers whose head output is o_i = sum_{j<=i} a_ij v_j with a_ij a
// function of the scores q_i.k_j, run by model/mixers/qblock.c's blocks of query rows (softmax,
// cog, relu2, gpam). This file is the MixerKind glue they share, so a member writes only
//   - its weights and score-gradient hooks (QBlock.weights and QBlock.dscores, qblock.h),
//   - its maps (attention, and attention_qk for a theory), and
//   - its step() over the KV cache qmix_step_in fills, and the create that reads its options;
// the other slots are the qmix_* functions below. Per layer, with no norm (qkv_common.h):
//   qkv = x Wqkv^T + bqkv          [B,T,3C]  qkv_in_forward
//   att = blocks(qkv)              [B,T,C]   per head o_i = sum_j a_ij v_j, a = weights(q, k)
//   y   = att Wproj^T + bproj      [B,T,C]   qkv_out_forward
// relu2.c is the template: a member with its own tensors or buffers (gpam's q- projection and
// its lambda) calls the pieces (qmix_params, qmix_buffers, qmix_blocks_forward, ...) and adds
// its own after them.
#pragma once
#include <stddef.h>

#include "model/mixers/mixer.h"
#include "model/mixers/qblock.h"
#include "model/mixers/qkv_common.h"

// The first member of every family member's state, so the shared slots read it from `st` and the
// hooks get the member's state back as QBlock.mixer.
typedef struct {
    QkvShape s;    // d_model, heads, head width, the longest call, no norm
    int n_planes;  // block planes the hooks use besides dW (qblock.h)
    void (*weights)(const QBlock *qb, const QBlockHead *hd, int i0, int i1, real *W, int forward);
    void (*dscores)(const QBlock *qb, const QBlockHead *hd, int i0, int i1, real *W, real *dW);
} QMixer;

// Scratch: qkv_common's, then the per-thread blocks [n_planes + 1, 64, T]; a member's own
// scratch follows from QMIX_N_SCRATCH. Saved activations: qkv_common's; a member's own follow
// from QKV_N_SAVED.
enum { QMIX_S_BLOCK = QKV_N_SCRATCH, QMIX_N_SCRATCH };

// Fills q for layer d with the member's hooks (die_input when d_model does not divide by n_head).
void qmix_init(QMixer *q, const MixerDims *d, int n_planes,
               void (*weights)(const QBlock *, const QBlockHead *, int, int, real *, int),
               void (*dscores)(const QBlock *, const QBlockHead *, int, int, real *, real *));

// Slots a member fills with these directly (st points at a state that begins with a QMixer,
// allocated with one malloc).
void qmix_destroy(void *st);
int qmix_params(const void *st, ParamDecl *out);  // attn.qkv.*, attn.proj.*: returns 4
void qmix_buffers(const void *st, int B, int T, BufDecl *saved, int *n_saved, BufDecl *scratch, int *n_scratch);
void qmix_forward(const void *st, MixerIO *io);                // in, blocks, out
void qmix_backward(const void *st, MixerIO *io);               // out, blocks, in (each backward of the above)
int qmix_n_maps(const void *st);                               // one map per head
void qmix_finish(const void *st, MixerIO *io, const real *o);  // one map per head: qkv_finish
int qmix_attention_values(const void *st, const MixerIO *io, int b, int m, real *v, real *o);
size_t qmix_state_floats(const void *st);  // the KV cache at full length: 2 T C
// MixerKind.flops of a member whose mixing is q k^T and A v over the causal triangle
// (2 B C T (T + 1) per pass; the recomputed weights not counted).
void qmix_flops(const void *st, int B, int T, double *fwd, double *bwd);

// The pieces, for a member with steps of its own between them (gpam).
// att (QKV_A_ATT) from qkv (QKV_A_QKV), every (batch row, head) by query blocks.
void qmix_blocks_forward(const QMixer *q, MixerIO *io);
// Accumulates d(q, k, v) into dqkv (scratch QKV_S_DQKV) from datt (qkv_out_backward's result).
void qmix_blocks_backward(const QMixer *q, MixerIO *io, const real *datt);

// step()'s state: the KV cache k [T, C] and v [T, C] (the state_floats), then qkv [3C], then the
// member's own scratch (`extra` reals: qmix_state_size's argument).
size_t qmix_state_size(const QMixer *q, size_t extra);
typedef struct {
    const real *k, *v;  // [t + 1, C] each, row stride C: the keys and values of positions 0..t
    const real *qkv;    // [3C] this position's q, k, v
    real *scratch;      // the member's `extra` reals
} QMixStep;
// Position t: qkv from x[C], its k and v appended to the cache.
QMixStep qmix_step_in(const QMixer *q, real *const *p, real *state, int t, const real *x);
