// Plumbing shared by every q/k/v mixer: softmax, cog, relu2 and gpam (through the qblock family,
// model/mixers/qblock_mixer.h), linear, cosformer, decay and identity (decay.c), and h3: the
// tensors of docs/design.md#tensor-names, the input projection, an optional per-head RMSNorm
// between the mixing and the output projection, and the output projection. Each mixer only writes
// its per-head mixing o = mix(q, k, v) and its backward:
//   qkv = x Wqkv^T + bqkv                  [B,T,3C]: q, k, v; head h owns columns h*D..h*D+D-1
//   att = mix(q, k, v)                     [B,T,C]   the mixer's output before any norm
//   nrm = att * rstd * w  per head         [B,T,C]   only with the norm (eps 1e-5, w [D] shared)
//   y   = (nrm or att) Wproj^T + bproj     [B,T,C]
#pragma once
#include <stddef.h>

#include "model/mixers/mixer.h"

#define QKV_NORM_EPS 1e-5

typedef struct {
    int C, H, D;  // d_model, heads, head width D = C / H
    int T, B;     // the longest call (seq_len) and the largest batch
    int layer, n_layer;
    int norm;        // 1: per-head RMSNorm with the learnable attn.norm.weight [D]
    Precision prec;  // of the projections
} QkvShape;

// Parameter slots (attn.norm.weight only with the norm).
enum { QKV_W, QKV_B, QKV_PROJ_W, QKV_PROJ_B, QKV_NORM_W };
// Saved activations every q/k/v mixer declares first: qkv [B,T,3C], att [B,T,C], and with the
// norm nrm [B,T,C] and rstd [B,T,H] (zero-sized without); the mixer's own follow from QKV_N_SAVED.
enum { QKV_A_QKV, QKV_A_ATT, QKV_A_NRM, QKV_A_RSTD, QKV_N_SAVED };
// Scratch: dnrm [B,T,C] (zero-sized without the norm), datt [B,T,C], dqkv [B,T,3C]; the mixer's
// own follow from QKV_N_SCRATCH.
enum { QKV_S_DNRM, QKV_S_DATT, QKV_S_DQKV, QKV_N_SCRATCH };

// Fills s from the model's dimensions (die_input when d_model does not divide by n_head).
void qkv_shape(QkvShape *s, const MixerDims *d, int norm);
// Declares the tensors into out[]; returns 4, or 5 with the norm.
int qkv_params(const QkvShape *s, ParamDecl *out);
// Declares the common saved buffers and scratch for calls of up to B x T (sets *n_saved and
// *n_scratch to QKV_N_SAVED and QKV_N_SCRATCH; the mixer appends its own after them).
void qkv_buffers(const QkvShape *s, int B, int T, BufDecl *saved, int *n_saved, BufDecl *scratch, int *n_scratch);

// Forward, first half: qkv from x.
void qkv_in_forward(const QkvShape *s, MixerIO *io);
// Forward, second half: y from att (norm, projection).
void qkv_out_forward(const QkvShape *s, MixerIO *io);
// Backward of qkv_out_forward: overwrites datt (scratch QKV_S_DATT) with d(att) and zeroes dqkv
// (QKV_S_DQKV) for the mixing backward to accumulate into; accumulates the projection's and the
// norm's gradients. Returns datt.
real *qkv_out_backward(const QkvShape *s, MixerIO *io);
// Backward of qkv_in_forward from dqkv: accumulates into dx and the qkv gradients.
void qkv_in_backward(const QkvShape *s, MixerIO *io);

// MixerKind.finish of a q/k/v mixer whose n_maps maps split att's C columns evenly (one per head,
// or H3's heads of P): o into att, then qkv_out_forward.
void qkv_finish(const QkvShape *s, MixerIO *io, int n_maps, const real *o);

// attention_values for head m of batch row b: v of the head and its att (o_i = sum_j a_ij v_j).
int qkv_attention_values(const QkvShape *s, const MixerIO *io, int b, int m, real *v, real *o);

// MixerKind.flops for B x T: the qkv and output projections (and the norm) plus `mix`, the FLOPs
// of the mixing's forward; the backward counts twice both (recomputation not counted).
void qkv_flops(const QkvShape *s, int B, int T, double mix, double *fwd, double *bwd);

// One token for step(): qkv[3C] from x[C].
void qkv_step_in(const QkvShape *s, real *const *p, const real *x, real *qkv);
// One token for step(): y[C] from the mixing output o[C] (normalised in place with the norm).
void qkv_step_out(const QkvShape *s, real *const *p, real *o, real *y);

// The backward of a per-head RMSNorm (o_h / rms(o_h) * w, w shared by the heads) over N rows of H
// heads of D: datt [N, H*D] (overwritten) from dnrm, and dw [D] += the rows' contributions, summed
// per block of QKV_NORM_ROWS rows into partial [ceil(N / QKV_NORM_ROWS) * D] (scratch), then the
// blocks in order, so the result does not depend on the thread count. The q/k/v mixers' output
// norm and DeltaNet's.
#define QKV_NORM_ROWS 256
void qkv_head_rmsnorm_backward(real *datt, real *dw, real *partial, const real *dnrm, const real *att, const real *rstd,
                               const real *w, int N, int H, int D);
