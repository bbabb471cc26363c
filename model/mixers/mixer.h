// The mixer interface: the swappable attention block of every layer. A mixer is one file that
// fills one MixerKind and is listed once in model/mixers/registry.c. The model owns all memory: a mixer
// declares its parameter tensors and activation buffers, and the model carves them out of its
// parameter arena (one per tensor, same order for gradients and optimizer state) and activation
// arena. Conventions (as in llm.c): forward overwrites its outputs; backward ACCUMULATES (+=) into
// parameter gradients and into dx.
#pragma once
#include <stddef.h>

#include "core/config.h"
#include "core/real.h"
#include "core/rng.h"
#include "model/precision.h"

#define MIXER_MAX_TENSORS 16
#define MIXER_MAX_BUFFERS 20

typedef enum {
    INIT_ZERO,        // 0
    INIT_ONE,         // 1
    INIT_NORMAL,      // N(0, arg), arg = 0 means 0.02
    INIT_NORMAL_OUT,  // N(0, 0.02 / sqrt(2 * n_layer)): output projections into the residual stream
    INIT_UNIFORM,     // U(-arg, arg)
    INIT_CUSTOM,      // the mixer's init_custom() fills it
} InitKind;

typedef struct {
    char name[48];  // relative to the layer: "attn.qkv.weight" becomes "h.<l>.attn.qkv.weight"
    int ndim;
    int shape[4];
    InitKind init;
    double arg;
    int no_decay;  // 1: no weight decay even when 2-D (e.g. Mamba's A_log)
} ParamDecl;

typedef struct {
    char name[32];  // for messages and memory reports
    size_t count;   // number of reals
} BufDecl;

// What the model knows when it builds a layer's mixer.
typedef struct {
    int C;  // d_model
    int H;  // n_head
    int T;  // seq_len: the longest sequence any call will pass
    int B;  // batch_size: the largest batch any call will pass
    int layer, n_layer;
    const Config *cfg;  // the mixer reads its own option keys here
    Precision prec;     // of the mixer's matmuls (the model's, from the `precision` key)
} MixerDims;

// One call's tensors. Pointers to parameters, gradients and buffers follow declaration order.
typedef struct {
    int B, T;        // this call's batch and length (B <= dims.B, T <= dims.T)
    real **p;        // parameters
    real **g;        // gradients (backward only)
    real **act;      // this layer's saved activations (written by forward, read by backward)
    real **tmp;      // scratch shared by all layers (valid during one forward or backward call)
    const real *x;   // [B, T, C] input (ln_1 output)
    real *y;         // [B, T, C] forward output
    const real *dy;  // [B, T, C] backward: gradient w.r.t. y
    real *dx;        // [B, T, C] backward: gradient w.r.t. x, accumulated
    // Backward, OPTIONAL (NULL normally): [B, n_maps, T, T] (this call's B and T, row-major, map
    // m of batch row b at (b * n_maps + m) * T * T) an extra gradient of the loss w.r.t. the maps
    // that attention() extracts, which the backward adds through the map into its q/k gradient.
    // Only softmax and linear read it (the training terms on the maps, model/focus.h).
    const real *dmap;
} MixerIO;

// Closed forms (docs/sparsity.md#closed-forms) that the evaluator can put beside a measured S(a).
typedef enum {
    THEORY_NONE,
    THEORY_EXP,       // softmax: S = exp(-sigma^2 |q|^2 / 2) for Gaussian keys (q already scaled)
    THEORY_LINEAR,    // non-negative linear attention: S = 1/sqrt(1 + q'Sigma q / (q'mu)^2) of phi(k)
    THEORY_DECAY,     // fixed decay lambda: S = sqrt((1-l^n)/(n(1-l)) (1+l)/(1+l^n)) when q.k is constant
    THEORY_RELU2,     // relu^2: a_ij = relu(q_i.k_j)^2 with Gaussian scores (eval/theory.h)
    THEORY_IDENTITY,  // no feature map: a_ij = the score itself, Gaussian (eval/theory.h)
} Theory;

// One mixer. Each slot is marked REQUIRED (mixer_validate names it when NULL) or OPTIONAL, with
// what NULL means. The optional slots come in groups that are filled together or not at all:
// the maps (n_maps, attention, attention_values, finish), the theory (attention_qk or decay_rate, as
// `theory` asks), generation (state_size, step). docs/mixers.md#adding-a-mixer walks through it.
typedef struct MixerKind {
    const char *name;     // REQUIRED: the value of the `mixer` config key
    const char *summary;  // REQUIRED: one line: what it is and where it comes from
    // OPTIONAL (NULL: the mixer has no keys): config keys this mixer adds, terminated by
    // name == NULL; docs/config.md lists each (tests/test_docs.c checks).
    const KeyDef *options;
    // OPTIONAL (NULL: any length): the name of a constant of the mixer's function that is fixed
    // to the configured seq_len, as relu2's n and cosformer's M. Such a mixer computes another
    // function at another length, so ./evaluate refuses test cells longer than seq_len for it.
    const char *length_bound;

    // REQUIRED. Per layer: read options from d->cfg, check shapes (die_input naming the key),
    // return state.
    void *(*create)(const MixerDims *d);
    void (*destroy)(void *st);  // REQUIRED
    // REQUIRED: declares parameter tensors into out[] (at most MIXER_MAX_TENSORS); returns how
    // many.
    int (*params)(const void *st, ParamDecl *out);
    // OPTIONAL, but REQUIRED when params declares an INIT_CUSTOM tensor (model_create dies
    // otherwise; NULL: no tensor is INIT_CUSTOM): fills tensor `index`, drawing from rng.
    void (*init_custom)(const void *st, int index, real *w, Rng *rng);
    // REQUIRED: declares the saved activations of one layer and the scratch shared by all
    // layers (at most MIXER_MAX_BUFFERS each), for calls with up to B sequences of T tokens.
    void (*buffers)(const void *st, int B, int T, BufDecl *saved, int *n_saved, BufDecl *scratch, int *n_scratch);
    void (*forward)(const void *st, MixerIO *io);   // REQUIRED
    void (*backward)(const void *st, MixerIO *io);  // REQUIRED

    // The maps group, OPTIONAL as a whole (NULL: the mixer has no attention maps; ./evaluate
    // measures no S(a) for its layers, draws no --maps, and the map tests skip it).
    // Attention maps for the evaluator (docs/mixers.md#attention-maps-at-a-glance): n_maps per
    // sequence (n_head, or every channel for Mamba; maps m*H/n_maps.. belong to head m /
    // (n_maps/H)).
    int (*n_maps)(const void *st);
    // After forward(io): a[T*T] row-major, a[i*T + j] = a_ij for j <= i and 0 for j > i, for
    // batch row b and map m. The evaluator calls attention and attention_qk from several
    // threads at once for different (b, m) after one forward: they may only read io and st.
    void (*attention)(const void *st, const MixerIO *io, int b, int m, real *a);
    // What map m of batch row b acts on, so tests can check the extractor: v[T * W] and
    // o[T * W] with o_i = sum_j a_ij v_j exactly (before any output norm, gate, skip or
    // projection). Returns W (<= 4 * C; callers size the buffers for that).
    int (*attention_values)(const void *st, const MixerIO *io, int b, int m, real *v, real *o);
    // OPTIONAL (NULL: 1), with the maps: positions a token stays readable in the values the maps
    // act on, counting its own. Mamba's values have passed its causal d_conv-wide convolution,
    // so the token at p is in them at p .. p + d_conv - 1: the evaluator's answer window
    // (docs/sparsity.md).
    int (*value_window)(const void *st);
    // REQUIRED with the maps (every registered mixer has them): finishes the layer from given
    // mixing outputs, for the evaluator's interventions (docs/interventions.md). o[B * n_maps * T * W]
    // holds map m of batch row b at o + ((size_t)b * n_maps + m) * T * W, in attention_values'
    // layout (W its return value); finish writes io->y from them exactly as forward() does from
    // its own outputs (output norm, gate, D skip, projection), so finish(o of attention_values)
    // reproduces forward's y to rounding. Call it after forward(io); it overwrites the saved
    // mixing outputs and whatever forward derived from them, so the layer's backward is not valid
    // afterwards (evaluation only). mixer_put_outputs below is the scatter most mixers need.
    void (*finish)(const void *st, MixerIO *io, const real *o);

    // The theory group, OPTIONAL (THEORY_NONE, both NULL: no closed-form prediction beside the
    // measured S(a)); any other theory needs the maps. attention_qk, REQUIRED for THEORY_EXP,
    // THEORY_LINEAR and THEORY_RELU2, gives map m's queries and keys as the theory uses them,
    // q[T*K] and k[T*K] (THEORY_EXP: scaled q and k, a_ij ~ exp(q_i.k_j); THEORY_LINEAR: phi(q),
    // phi(k); THEORY_RELU2: the score's q and k, a_ij = relu(q_i.k_j)^2); returns K. decay_rate,
    // REQUIRED for THEORY_DECAY, gives its lambda. THEORY_IDENTITY reads the map itself.
    Theory theory;
    int (*attention_qk)(const void *st, const MixerIO *io, int b, int m, real *q, real *k);
    // OPTIONAL, with attention_qk (NULL: at most 4 C): the most K that attention_qk returns. The
    // evaluator and the tests size q and k by it (mixer_qk_width): Based's phi(q), phi(k) are
    // 1 + d + d^2 wide, 273 at d = 16, past 4 C = 256 on the cell.
    int (*qk_width)(const void *st);
    double (*decay_rate)(const void *st, int m);

    // The generation group, OPTIONAL (state_size and step both NULL: the sampler reruns the
    // prefix for every token): one token at a time. state_size: reals of one sequence's state
    // (a KV cache for softmax, K x V matrices for the linear mixers, conv and scan state for
    // Mamba), zeroed before position 0. step consumes the input x[C] (ln_1 output) of position
    // t, updates the state and writes y[C]; it must agree with forward() to rounding.
    size_t (*state_size)(const void *st);
    // OPTIONAL (NULL: the run record counts 0 for the layer; tests/test_mixers.c asks it of
    // every registered mixer): the numbers a sequence's state carries from one token to the
    // next at length seq_len, the leading part of step()'s state (the rest is step's scratch):
    // the state size of Zoology's and Based's capacity plots. A KV cache is 2 T C; the
    // recurrent mixers' states do not grow with T.
    size_t (*state_floats)(const void *st);
    void (*step)(const void *st, real *const *p, real *state, int t, const real *x, real *y);

    // OPTIONAL (NULL: the bench counts only the model's own matmuls and says so): work of one
    // forward and one backward call on B sequences of T tokens, in FLOPs (a multiply-add counts
    // 2): every matmul and mixing product the algorithm needs (recomputation not counted), for
    // `make bench`'s GFLOP/s.
    void (*flops)(const void *st, int B, int T, double *fwd, double *bwd);
} MixerKind;

// The width to size attention_qk's q and k by, per token, for a mixer built with d_model C.
static inline int mixer_qk_width(const MixerKind *k, const void *st, int C) {
    return k->qk_width ? k->qk_width(st) : 4 * C;
}

// finish's scatter (model/mixers/registry.c): writes o[B * n_maps * T * W] (finish's layout) into
// the buffer out[(b * T + t) * ld + m * W + w] ([B*T, ld] rows with map m's W columns at m * W),
// where every mixer keeps its mixing outputs.
void mixer_put_outputs(real *out, size_t ld, int B, int T, int n_maps, int W, const real *o);

// The registry (model/mixers/registry.c).
const MixerKind *mixer_find(const char *name);
int mixer_count(void);
const MixerKind *mixer_at(int i);
// "softmax|linear|..." for the `mixer` key's choices.
const char *mixer_choices(void);
// 0 when k fills every REQUIRED slot and each optional group it starts; else -1 with err naming
// the first slot missing ("required slot 'backward' is NULL"). The registry checks every
// registered mixer on its first use and dies naming the mixer and the slot.
int mixer_validate(const MixerKind *k, char *err, size_t errlen);
