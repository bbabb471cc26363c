#include "model/generate.h"

#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/kernels/gemm.h"
#include "model/layers.h"

Generator *generator_create(Model *m, int recurrent) {
    const MixerKind *no_step = NULL;  // a layer's mixer without step()
    for (int l = 0; l < m->s.L && !no_step; l++)
        if (!m->mixer[l]->step || !m->mixer[l]->state_size) no_step = m->mixer[l];
    int has_step = !no_step;
    if (recurrent == 1 && !has_step)
        die_input("mixer '%s' has no step(): generation needs the prefix re-run (cache = false)", no_step->name);
    Generator *g = callocCheck(1, sizeof *g);
    g->m = m;
    g->recurrent = recurrent < 0 ? has_step : recurrent;
    int C = m->s.C;
    if (g->recurrent) {
        for (int l = 0; l < m->s.L; l++)
            g->state_off[l + 1] = g->state_off[l] + m->mixer[l]->state_size(m->mixer_state[l]);
        g->state = callocCheck(g->state_off[m->s.L], sizeof(real));
        if (m->s.short_conv > 1) g->conv_state = callocCheck((size_t)m->s.L * (m->s.short_conv - 1) * C, sizeof(real));
    }
    g->ctx = callocCheck((size_t)m->s.T, sizeof(int));
    g->x = callocCheck((size_t)C, sizeof(real));
    g->ln = callocCheck((size_t)C, sizeof(real));
    g->mix = callocCheck((size_t)C, sizeof(real));
    g->conv = callocCheck((size_t)C, sizeof(real));
    g->branch = callocCheck((size_t)C, sizeof(real));
    g->fch = callocCheck((size_t)4 * C, sizeof(real));
    g->fch_gelu = callocCheck((size_t)4 * C, sizeof(real));
    g->logits = callocCheck((size_t)m->s.V, sizeof(real));
    return g;
}

void generator_free(Generator *g) {
    if (!g) return;
    free(g->state);
    free(g->conv_state);
    free(g->conv);
    free(g->ctx);
    free(g->x);
    free(g->ln);
    free(g->mix);
    free(g->branch);
    free(g->fch);
    free(g->fch_gelu);
    free(g->logits);
    free(g);
}

void generator_reset(Generator *g) {
    g->n = 0;
    if (g->recurrent) memset(g->state, 0, sizeof(real) * g->state_off[g->m->s.L]);
    if (g->conv_state)
        memset(g->conv_state, 0, sizeof(real) * (size_t)g->m->s.L * (g->m->s.short_conv - 1) * g->m->s.C);
}

// One token at position t through every block, each mixer stepping its state; logits at the end.
static void step_token(Generator *g, int token, int t) {
    Model *m = g->m;
    const ModelShape *s = &m->s;
    int C = s->C, K = s->short_conv;
    real mean, rstd;
    embedding_forward(g->x, &token, m->wte, m->wpe ? m->wpe + (size_t)t * C : NULL, 1, 1, C);
    for (int l = 0; l < s->L; l++) {
        const LayerParams *p = &m->lp[l];
        layernorm_forward(g->ln, &mean, &rstd, g->x, p->ln1_w, p->ln1_b, 1, C);
        const real *in = g->ln;  // the mixer's input
        if (K) {
            short_conv_step(g->conv, g->conv_state ? g->conv_state + (size_t)l * (K - 1) * C : NULL, g->ln, p->sc_w,
                            p->sc_b, C, K);
            in = g->conv;
        }
        m->mixer[l]->step(m->mixer_state[l], p->mix, g->state + g->state_off[l], t, in, g->mix);
        for (int c = 0; c < C; c++) g->x[c] += g->mix[c];
        if (s->mlp) {
            layernorm_forward(g->ln, &mean, &rstd, g->x, p->ln2_w, p->ln2_b, 1, C);
            matmul_forward(g->fch, g->ln, p->fc_w, p->fc_b, 1, C, 4 * C, m->precision);
            gelu_forward(g->fch_gelu, g->fch, (size_t)4 * C);
            matmul_forward(g->branch, g->fch_gelu, p->proj_w, p->proj_b, 1, 4 * C, C, m->precision);
            for (int c = 0; c < C; c++) g->x[c] += g->branch[c];
        }
    }
    layernorm_forward(g->ln, &mean, &rstd, g->x, m->lnf_w, m->lnf_b, 1, C);
    gemm(0, 1, 1, s->V, C, g->ln, C, m->wte, C, 0, g->logits, s->V);  // as model_logits_at
}

const real *generator_feed(Generator *g, int token) {
    Model *m = g->m;
    int T = m->s.T;
    if (token < 0 || token >= m->s.V) die("internal error: token %d outside the vocabulary of %d", token, m->s.V);
    if (g->n == T) {  // slide the window: keep the newest T/2 tokens and feed them again
        int keep = T / 2;
        memmove(g->ctx, g->ctx + (T - keep), sizeof(int) * (size_t)keep);
        generator_reset(g);
        if (g->recurrent)
            for (int i = 0; i < keep; i++) step_token(g, g->ctx[i], i);
        g->n = keep;
    }
    int t = g->n;
    g->ctx[g->n++] = token;
    if (g->recurrent) {
        step_token(g, token, t);
    } else {
        model_forward(m, g->ctx, NULL, 1, g->n, 0);
        model_logits_at(m, 0, t, g->logits);
    }
    return g->logits;
}
