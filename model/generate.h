// Generation one token at a time: the logits of the next token given every token fed so far.
// With `recurrent`, each layer's mixer runs its step() on a per-sequence state (softmax: a KV
// cache, O(t) per token; linear, GLA, Mamba: a fixed-size state, O(1) per token: the RNN view),
// and the rest of the block (embedding + position, ln_1, residual, ln_2 + MLP, final LayerNorm,
// tied head) runs on that one token; each layer of a hybrid stack steps its own mixer's state, and
// the short convolution (short_conv = K) keeps its last K-1 inputs per layer. Without it (or for a mixer that has no step), every token
// re-runs the whole prefix through model_forward. Both give the logits of model_forward to
// rounding (tests/test_generate.c). The context is the model's seq_len: once it is full the window
// slides, keeping the newest seq_len/2 tokens, which are fed again from a fresh state.
#pragma once
#include "model/model.h"

typedef struct {
    Model *m;
    int recurrent;                     // 1: mixer step(); 0: prefix re-run with model_forward
    size_t state_off[MAX_LAYERS + 1];  // layer l's state is state[state_off[l] .. state_off[l+1])
    real *state;                       // every layer's state, one after the other (sizes differ in a hybrid)
    real *conv_state;                  // [L, K-1, C] the short convolution's last K-1 inputs (short_conv = K > 1)
    int *ctx;                          // [T] the tokens of the current window
    int n;                             // tokens in the window = the position of the next token
    real *x, *ln, *mix, *branch;       // [C] residual stream, normed input, mixer out, MLP out
    real *conv;                        // [C] short convolution output: the mixer's input (short_conv)
    real *fch, *fch_gelu;              // [4C]
    real *logits;                      // [V]
} Generator;

// recurrent: 1 uses step() (refused with exit 2 when a layer's mixer has none), 0 the prefix
// re-run, -1 step() when every layer's mixer has it.
Generator *generator_create(Model *m, int recurrent);
void generator_free(Generator *g);
// Forgets every token (a new sequence).
void generator_reset(Generator *g);
// Feeds token at the next position; returns the logits [V] of the token after it (valid until
// the next call).
const real *generator_feed(Generator *g, int token);
