// The decoder-only transformer (docs/design.md#the-model): token (+ learned position) embedding,
// n_layer pre-LN blocks x += mixer(ln_1(x)); x += mlp(ln_2(x)) (when mlp), final LayerNorm, and
// the LM head tied to wte. Each layer has its own mixer (a hybrid stack when they differ); with
// short_conv = K the mixer reads short_conv(ln_1(x)), a depthwise causal convolution of width K.
// One parameter arena and one activation arena, carved by tables.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/real.h"
#include "model/focus.h"
#include "model/mixers/mixer.h"

#define MAX_LAYERS 64

typedef struct {
    int V, C, L, H, T;  // vocab_size, d_model, n_layer, n_head, seq_len
    int mlp;            // 1: GELU MLP (4x) after the mixer
    int pos_emb;        // 1: learned position embedding wpe [T, C]
    int short_conv;     // K > 0: a short convolution of width K on every mixer's input (0: none);
                        // model_create takes it from the config's `short_conv` key when given one
} ModelShape;

typedef struct {
    char name[64];  // docs/design.md#tensor-names, e.g. "h.0.attn.qkv.weight"
    int ndim, shape[4];
    size_t offset, count;  // in reals, into the parameter arena (offsets 64-byte aligned)
    InitKind init;
    double arg;
    int decay;       // AdamW weight decay applies (2-D weights unless the mixer says no)
    int layer;       // -1 outside the blocks
    int mixer_slot;  // index among the layer's mixer declarations, or -1
} TensorInfo;

typedef struct {
    real *ln1_w, *ln1_b, *ln2_w, *ln2_b;  // [C]
    real *sc_w, *sc_b;                    // [C, K], [C] short convolution (short_conv = K > 0)
    real *fc_w, *fc_b;                    // [4C, C], [4C]
    real *proj_w, *proj_b;                // [C, 4C], [C]
    real *mix[MIXER_MAX_TENSORS];         // the mixer's tensors in declaration order
} LayerParams;

typedef struct {
    real *res_in;                     // [B,T,C] residual stream entering the layer
    real *ln1, *ln1_mean, *ln1_rstd;  // [B,T,C], [B,T], [B,T]
    real *conv;                       // [B,T,C] short convolution of ln1: the mixer's input (short_conv)
    real *mix_out;                    // [B,T,C] mixer output
    real *res_mid;                    // [B,T,C] after the mixer's residual add
    real *ln2, *ln2_mean, *ln2_rstd;  // [B,T,C], [B,T], [B,T]       (mlp)
    real *fch, *fch_gelu;             // [B,T,4C], [B,T,4C]          (mlp)
    real *mixer_act[MIXER_MAX_BUFFERS];
} LayerActs;

// What one forward pass measured at the positions with a target >= 0.
typedef struct {
    double loss_sum;  // sum of cross-entropies
    long n_counted;   // positions with a target
    long n_correct;   // argmax == target
    double head_s;    // wall-clock seconds in the LM head, its gradient included when one is wanted
} HeadStats;

typedef struct Model {
    ModelShape s;
    int B_max, rows_max;                 // largest batch; most positions with a target in one batch
    int threads_max;                     // OpenMP threads at creation: the mixers' per-thread scratch is sized for them
    Precision precision;                 // of every matmul (config key `precision`; fp32 without a config)
    const MixerKind *mixer[MAX_LAYERS];  // layer l's mixer (a hybrid stack mixes kinds)
    void *mixer_state[MAX_LAYERS];       // its state (options and shapes)

    TensorInfo *tensors;  // the parameter table
    int n_tensors;
    size_t n_params;
    real *params, *grads;                        // arenas [n_params]
    real *wte, *wpe, *lnf_w, *lnf_b;             // wte [V,C], wpe [T,C] or NULL, lnf [C]
    real *g_wte, *g_wpe, *g_lnf_w, *g_lnf_b;     // their gradients
    LayerParams lp[MAX_LAYERS], lg[MAX_LAYERS];  // parameter and gradient pointers

    real *acts;  // activation arena
    size_t n_acts;
    LayerActs la[MAX_LAYERS];
    real *res_out;                    // [B,T,C] residual stream after the last block
    real *lnf, *lnf_mean, *lnf_rstd;  // [B,T,C], [B,T], [B,T]
    real *h_rows, *dh_rows;           // [rows_max, C] final features at counted positions, and grads
    real *logits;                     // [head_chunk, V] one chunk of head rows
    real *row_loss;                   // [rows_max] cross-entropy of each counted row
    real *row_hit;                    // [rows_max] 1 where its argmax was the target, else 0
    int head_chunk;
    // scratch shared by layers
    real *branch, *dres, *dln;  // [B,T,C]
    real *dconv;                // [B,T,C] gradient of the mixer's input (short_conv)
    real *dfch_a, *dfch_b;      // [B,T,4C] (mlp)
    real *mixer_tmp[MIXER_MAX_BUFFERS];
    int *inputs, *targets;  // [B,T] copies of the last forward's batch
    int *rows;              // [rows_max] flat indices b*T+t with target >= 0
    int n_rows;
    int cur_B, cur_T;
    int have_grad;  // the last forward computed the head gradient
    // An evaluation's hook (NULL: none), called by model_forward right after layer l's mixer has
    // written io->y and before the residual add: it may rewrite io->y, e.g. through the mixer's
    // finish slot (the interventions, eval/intervene.h). Set, used and cleared by the one caller.
    void (*after_mixer)(struct Model *m, int l, MixerIO *io, void *ctx);
    void *after_mixer_ctx;
    // The training terms on one layer's maps (model/focus.h; keys focus_penalty,
    // answer_supervision, focus_layer): their settings and last values, their buffers (carved
    // only when a term is on) and whether the last forward left their gradient for the backward.
    FocusTerms focus;
    FocusWork focus_work;
    int focus_dmap_ready;
} Model;

// The shape the config's model keys give (d_model, n_layer, n_head, seq_len, mlp, pos_emb) with
// vocab_size V, which the caller knows best: the task's (a run), the checkpoint's config (a
// trained model), a bench's own. short_conv is left 0: model_create reads it from the config.
ModelShape model_shape_from_config(const Config *cfg, int V);
// Builds the model and its arenas for batches of up to B sequences with up to rows_max target
// positions. `mixer` is every layer's mixer, or NULL to take them from cfg's `mixer` key (one
// name for every layer, or a comma list of n_layer names: a hybrid stack). Dies with exit 2
// naming the key when the shape or the list is invalid.
Model *model_create(const ModelShape *s, const MixerKind *mixer, const Config *cfg, int B, int rows_max);
// What model_create(s, NULL, cfg, B, rows_max) would allocate, in bytes (parameters, gradients,
// activations, batch copies), counted without allocating the arenas; *n_params (if not NULL) gets
// the parameter count. Exits 2 on the shapes model_create refuses.
size_t model_plan_bytes(const ModelShape *s, const Config *cfg, int B, int rows_max, size_t *n_params);
// Fills out[L] from a `mixer` value: one name (every layer) or a comma list of L names (spaces
// around the names are ignored); returns how many names the value holds. Dies with exit 2 naming
// the key on an unknown name or a list whose length is neither 1 nor L.
int model_parse_mixers(const char *value, int L, const MixerKind **out);
// Refuses (one line naming the key, exit 2) a mixer's option set to other than its default when no
// layer of cfg's stack is that mixer (h3_d_state on a softmax run did nothing). The default is
// accepted, so a sweep can zip an option across mixers that lack it.
void model_check_mixer_options(const Config *cfg);
// The first key that shapes the run and differs between the config now and the one a checkpoint
// saved (NULL: none): every key but the resumable ones (KEY_RESUMABLE) and the options of mixers no
// layer of the run uses (`now`'s mixer key; the key itself is compared). So a changed default of
// an unused mixer's option (h3_head_dim 1 -> 2 at d1754ad) never stops an older run's resume.
const char *model_resume_difference(const Config *now, const Config *saved);
// 1 when the layers do not all have the same mixer.
int model_is_hybrid(const Model *m);
void model_free(Model *m);
// Draws every parameter from `seed` in table order.
void model_init_weights(Model *m, uint64_t seed);
const TensorInfo *model_find_tensor(const Model *m, const char *name);

void model_zero_grad(Model *m);
// Forward over inputs/targets [B,T] (targets < 0 are ignored; targets may be NULL). With
// want_grad, also computes the head's gradient (grads must have been zeroed) so that
// model_backward can follow. The loss is the mean over counted positions.
HeadStats model_forward(Model *m, const int *inputs, const int *targets, int B, int T, int want_grad);
// With focus_penalty or answer_supervision on, forward(want_grad = 1) also computes the terms on
// the focus layer's maps (m->focus: S_recall, answer_ce) and their gradient, which
// model_backward adds; the returned stats (the cross-entropy) leave them out.
// Backpropagates the last forward(want_grad = 1) into m->grads (accumulating).
void model_backward(Model *m);
// The terms of the last forward (any want_grad), computed now: lambda * (1 - S_recall) + mu *
// answer_ce (0 when both are off); m->focus holds the parts. The training objective is the mean
// cross-entropy plus this.
double model_focus_terms(Model *m);
// The mixer call of layer l with the current batch's pointers (for the evaluator's extractor).
MixerIO model_mixer_io(Model *m, int l);
// logits[V] at batch row b, position t of the last forward.
void model_logits_at(const Model *m, int b, int t, real *logits);
// Bytes of parameters, gradients and activations (for reports).
size_t model_activation_bytes(const Model *m);
// The numbers layer l carries from one token to the next when generating at length seq_len: its
// mixer's state_floats plus the short convolution's window ((short_conv - 1) x d_model). 0 when
// the mixer does not declare it.
size_t model_layer_state_floats(const Model *m, int l);
