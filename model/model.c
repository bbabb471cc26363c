#include "model/model.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/rng.h"
#include "model/kernels/gemm.h"
#include "model/layers.h"
#include "model/kernels/vmath.h"

#define ALIGN_REALS (64 / sizeof(real))

static size_t align_up(size_t n) { return (n + ALIGN_REALS - 1) / ALIGN_REALS * ALIGN_REALS; }

// ---------------------------------------------------------------------------------------------
// Parameter table

static void add_tensor(Model *m, int cap, const char *name, int ndim, const int *shape, InitKind init, double arg,
                       int decay, int layer, int slot) {
    if (m->n_tensors == cap) die("internal error: tensor table full");
    TensorInfo *t = &m->tensors[m->n_tensors++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%.*s", (int)sizeof t->name - 1, name);
    t->ndim = ndim;
    t->count = 1;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i], t->count *= (size_t)shape[i];
    t->offset = m->n_params;
    m->n_params += align_up(t->count);
    t->init = init;
    t->arg = arg;
    t->decay = decay;
    t->layer = layer;
    t->mixer_slot = slot;
}

#define SHAPE(...) ((const int[]){__VA_ARGS__})

static void build_param_table(Model *m) {
    const ModelShape *s = &m->s;
    int C = s->C, cap = 8 + s->L * (10 + MIXER_MAX_TENSORS);
    m->tensors = callocCheck((size_t)cap, sizeof(TensorInfo));
    add_tensor(m, cap, "wte", 2, SHAPE(s->V, C), INIT_NORMAL, 0.02, 1, -1, -1);
    if (s->pos_emb) add_tensor(m, cap, "wpe", 2, SHAPE(s->T, C), INIT_NORMAL, 0.02, 1, -1, -1);
    char name[96];
#define LNAME(suffix) (snprintf(name, sizeof name, "h.%d.%.48s", l, suffix), name)
    for (int l = 0; l < s->L; l++) {
        add_tensor(m, cap, LNAME("ln_1.weight"), 1, SHAPE(C), INIT_ONE, 0, 0, l, -1);
        add_tensor(m, cap, LNAME("ln_1.bias"), 1, SHAPE(C), INIT_ZERO, 0, 0, l, -1);
        if (s->short_conv) {  // PyTorch's Conv1d init: U(+-1/sqrt(fan_in)), fan_in = K (depthwise)
            int K = s->short_conv;
            add_tensor(m, cap, LNAME("short_conv.weight"), 2, SHAPE(C, K), INIT_UNIFORM, 1 / sqrt((double)K), 1, l, -1);
            add_tensor(m, cap, LNAME("short_conv.bias"), 1, SHAPE(C), INIT_UNIFORM, 1 / sqrt((double)K), 0, l, -1);
        }
        ParamDecl decl[MIXER_MAX_TENSORS];
        int n = m->mixer[l]->params(m->mixer_state[l], decl);
        for (int i = 0; i < n; i++) {
            const ParamDecl *d = &decl[i];
            if (d->init == INIT_CUSTOM && !m->mixer[l]->init_custom)  // the one slot mixer_validate cannot see
                die("internal error: mixer '%s' declares %s INIT_CUSTOM and has no init_custom", m->mixer[l]->name, d->name);
            int decay = d->ndim == 2 && !d->no_decay;
            add_tensor(m, cap, LNAME(d->name), d->ndim, d->shape, d->init, d->arg, decay, l, i);
        }
        if (s->mlp) {
            add_tensor(m, cap, LNAME("ln_2.weight"), 1, SHAPE(C), INIT_ONE, 0, 0, l, -1);
            add_tensor(m, cap, LNAME("ln_2.bias"), 1, SHAPE(C), INIT_ZERO, 0, 0, l, -1);
            add_tensor(m, cap, LNAME("mlp.fc.weight"), 2, SHAPE(4 * C, C), INIT_NORMAL, 0.02, 1, l, -1);
            add_tensor(m, cap, LNAME("mlp.fc.bias"), 1, SHAPE(4 * C), INIT_ZERO, 0, 0, l, -1);
            add_tensor(m, cap, LNAME("mlp.proj.weight"), 2, SHAPE(C, 4 * C), INIT_NORMAL_OUT, 0, 1, l, -1);
            add_tensor(m, cap, LNAME("mlp.proj.bias"), 1, SHAPE(C), INIT_ZERO, 0, 0, l, -1);
        }
    }
#undef LNAME
    add_tensor(m, cap, "ln_f.weight", 1, SHAPE(C), INIT_ONE, 0, 0, -1, -1);
    add_tensor(m, cap, "ln_f.bias", 1, SHAPE(C), INIT_ZERO, 0, 0, -1, -1);
}

// Points the named fields of `lp` (parameters or gradients) into `arena`.
static void point_params(Model *m, real *arena, real **wte, real **wpe, real **lnf_w, real **lnf_b, LayerParams *lp) {
    *wpe = NULL;
    for (int i = 0; i < m->n_tensors; i++) {
        const TensorInfo *t = &m->tensors[i];
        real *p = arena + t->offset;
        if (t->layer < 0) {
            if (!strcmp(t->name, "wte")) *wte = p;
            else if (!strcmp(t->name, "wpe")) *wpe = p;
            else if (!strcmp(t->name, "ln_f.weight")) *lnf_w = p;
            else if (!strcmp(t->name, "ln_f.bias")) *lnf_b = p;
            continue;
        }
        LayerParams *L = &lp[t->layer];
        if (t->mixer_slot >= 0) {
            L->mix[t->mixer_slot] = p;
            continue;
        }
        const char *suffix = strchr(strchr(t->name, '.') + 1, '.') + 1;  // after "h.<l>."
        struct {
            const char *name;
            real **field;
        } fields[] = {
            {"ln_1.weight", &L->ln1_w},      {"ln_1.bias", &L->ln1_b},      {"ln_2.weight", &L->ln2_w},
            {"ln_2.bias", &L->ln2_b},        {"mlp.fc.weight", &L->fc_w},   {"mlp.fc.bias", &L->fc_b},
            {"mlp.proj.weight", &L->proj_w}, {"mlp.proj.bias", &L->proj_b}, {"short_conv.weight", &L->sc_w},
            {"short_conv.bias", &L->sc_b},
        };
        for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++)
            if (!strcmp(suffix, fields[k].name)) *fields[k].field = p;
    }
}

// ---------------------------------------------------------------------------------------------
// Activation arena: a list of (pointer to set, size), carved in one allocation.

typedef struct {
    real **dst;
    size_t count;
} Carve;

typedef struct {
    Carve *items;
    int n, cap;
} CarveList;

static void carve(CarveList *cl, real **dst, size_t count) {
    if (cl->n == cl->cap) cl->items = reallocCheck(cl->items, sizeof(Carve) * (cl->cap = cl->cap * 2 + 16));
    cl->items[cl->n++] = (Carve){dst, count};
}

// Carves the activation arena; with allocate = 0 only counts it (m->n_acts), for model_plan_bytes.
static void build_activations(Model *m, int allocate) {
    const ModelShape *s = &m->s;
    size_t BT = (size_t)m->B_max * s->T, C = (size_t)s->C;
    CarveList cl = {0};
    BufDecl saved[MIXER_MAX_BUFFERS], scratch[MIXER_MAX_BUFFERS];
    int n_saved = 0, n_scratch = 0;
    // Scratch is shared by the layers: slot i gets the largest size any layer asks of it (the
    // layers of a hybrid stack declare different scratch).
    size_t scratch_count[MIXER_MAX_BUFFERS] = {0};
    int n_scratch_max = 0;
    for (int l = 0; l < s->L; l++) {
        LayerActs *a = &m->la[l];
        if (l == 0) carve(&cl, &a->res_in, BT * C);
        carve(&cl, &a->ln1, BT * C);
        carve(&cl, &a->ln1_mean, BT);
        carve(&cl, &a->ln1_rstd, BT);
        if (s->short_conv) carve(&cl, &a->conv, BT * C);
        carve(&cl, &a->mix_out, BT * C);
        carve(&cl, &a->res_mid, BT * C);
        if (s->mlp) {
            carve(&cl, &a->ln2, BT * C);
            carve(&cl, &a->ln2_mean, BT);
            carve(&cl, &a->ln2_rstd, BT);
            carve(&cl, &a->fch, BT * 4 * C);
            carve(&cl, &a->fch_gelu, BT * 4 * C);
            // the next layer's input (or the model output) is a fresh residual buffer
            carve(&cl, l + 1 < s->L ? &m->la[l + 1].res_in : &m->res_out, BT * C);
        }
        m->mixer[l]->buffers(m->mixer_state[l], m->B_max, s->T, saved, &n_saved, scratch, &n_scratch);
        if (n_saved > MIXER_MAX_BUFFERS || n_scratch > MIXER_MAX_BUFFERS) die("internal error: too many mixer buffers");
        for (int i = 0; i < n_saved; i++) carve(&cl, &a->mixer_act[i], saved[i].count);
        for (int i = 0; i < n_scratch; i++)
            if (scratch[i].count > scratch_count[i]) scratch_count[i] = scratch[i].count;
        if (n_scratch > n_scratch_max) n_scratch_max = n_scratch;
    }
    for (int i = 0; i < n_scratch_max; i++) carve(&cl, &m->mixer_tmp[i], scratch_count[i]);
    carve(&cl, &m->lnf, BT * C);
    carve(&cl, &m->lnf_mean, BT);
    carve(&cl, &m->lnf_rstd, BT);
    carve(&cl, &m->h_rows, (size_t)m->rows_max * C);
    carve(&cl, &m->dh_rows, (size_t)m->rows_max * C);
    carve(&cl, &m->logits, (size_t)m->head_chunk * s->V);
    carve(&cl, &m->row_loss, (size_t)m->rows_max);
    carve(&cl, &m->row_hit, (size_t)m->rows_max);
    carve(&cl, &m->branch, BT * C);
    carve(&cl, &m->dres, BT * C);
    carve(&cl, &m->dln, BT * C);
    if (s->short_conv) carve(&cl, &m->dconv, BT * C);
    if (s->mlp) {
        carve(&cl, &m->dfch_a, BT * 4 * C);
        carve(&cl, &m->dfch_b, BT * 4 * C);
    }
    if (m->focus.on) {  // the training terms on one layer's maps (model/focus.h)
        const MixerKind *k = m->mixer[m->focus.layer];
        size_t TT = (size_t)s->T * s->T, nm = (size_t)k->n_maps(m->mixer_state[m->focus.layer]);
        carve(&cl, &m->focus_work.dmap, (size_t)m->B_max * nm * TT);
        carve(&cl, &m->focus_work.maps, (size_t)m->threads_max * TT);
        carve(&cl, &m->focus_work.row_S, (size_t)m->rows_max * nm);
        carve(&cl, &m->focus_work.row_ce, (size_t)m->rows_max * nm);
    }
    size_t total = 0;
    for (int i = 0; i < cl.n; i++) total += align_up(cl.items[i].count);
    m->n_acts = total;
    if (!allocate) {
        free(cl.items);
        return;
    }
    m->acts = callocArena(total, sizeof(real));
    size_t off = 0;
    for (int i = 0; i < cl.n; i++) {
        *cl.items[i].dst = m->acts + off;
        off += align_up(cl.items[i].count);
    }
    free(cl.items);
    // Without an MLP the residual after the mixer is the next layer's input: alias, no copy.
    if (!s->mlp)
        for (int l = 0; l < s->L; l++) {
            if (l + 1 < s->L) m->la[l + 1].res_in = m->la[l].res_mid;
            else m->res_out = m->la[l].res_mid;
        }
}

// ---------------------------------------------------------------------------------------------

int model_parse_mixers(const char *value, int L, const MixerKind **out) {
    int n = 0;
    for (const char *p = value;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        while (len && (*p == ' ' || *p == '\t')) p++, len--;
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t')) len--;
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name - 1 ? len : sizeof name - 1), p);
        const MixerKind *mk = mixer_find(name);
        if (!mk) die_input("mixer: unknown mixer '%s' (expected one of %s)", name, mixer_choices());
        if (n < L) out[n] = mk;
        n++;
        if (!comma) break;
        p = comma + 1;
    }
    if (n == 1)
        for (int l = 1; l < L; l++) out[l] = out[0];
    else if (n != L)
        die_input("mixer: expected one name or a list of n_layer = %d names, got %d names in '%s'", L, n, value);
    return n;
}

// A key's value equals its declared default (numbers compared as numbers: "64" and "64.0").
static int is_default_value(const KeyDef *d, const char *v) {
    if (d->type == KEY_INT || d->type == KEY_FLOAT) return strtod(v, NULL) == strtod(d->def, NULL);
    return strcmp(v, d->def) == 0;
}

void model_check_mixer_options(const Config *c) {
    int L = (int)cfg_int(c, "n_layer");
    if (L < 1 || L > MAX_LAYERS) return;  // model_create names it
    const MixerKind *used[MAX_LAYERS];
    model_parse_mixers(cfg_str(c, "mixer"), L, used);
    for (int i = 0; i < mixer_count(); i++) {
        const MixerKind *k = mixer_at(i);
        int present = 0;
        for (int l = 0; l < L; l++) present |= used[l] == k;
        if (present || !k->options) continue;
        for (const KeyDef *d = k->options; d->name; d++)
            if (!is_default_value(d, cfg_str(c, d->name)))
                die_input("%s: %s is an option of mixer '%s', and no layer of this run is one (mixer = %s); "
                          "remove it or choose that mixer",
                          cfg_origin(c, d->name), d->name, k->name, cfg_str(c, "mixer"));
    }
}

// 1 for an option of a mixer that no layer of the run uses (ctx: the used kinds, NULL-ended).
static int unused_mixer_option(const KeyDef *d, void *ctx) {
    const MixerKind *const *used = ctx;
    for (int i = 0; i < mixer_count(); i++) {
        const MixerKind *k = mixer_at(i);
        if (!k->options) continue;
        for (const KeyDef *o = k->options; o->name; o++) {
            if (strcmp(o->name, d->name)) continue;
            for (int l = 0; used[l]; l++)
                if (used[l] == k) return 0;
            return 1;
        }
    }
    return 0;
}

const char *model_resume_difference(const Config *now, const Config *saved) {
    int L = (int)cfg_int(now, "n_layer");
    if (L < 1 || L > MAX_LAYERS || strcmp(cfg_str(now, "mixer"), cfg_str(saved, "mixer")) || cfg_int(saved, "n_layer") != L)
        return config_first_difference(now, saved);  // the shape differs: named by the full comparison
    const MixerKind *used[MAX_LAYERS + 1] = {0};
    model_parse_mixers(cfg_str(now, "mixer"), L, used);
    return config_first_difference_skip(now, saved, unused_mixer_option, used);
}

int model_is_hybrid(const Model *m) {
    for (int l = 1; l < m->s.L; l++)
        if (m->mixer[l] != m->mixer[0]) return 1;
    return 0;
}

// The model without its arenas: shape checks, mixers, the parameter table and the head's chunk.
static Model *model_layout(const ModelShape *s, const MixerKind *mixer, const Config *cfg, int B, int rows_max) {
    if (s->L < 1 || s->L > MAX_LAYERS) die_input("n_layer: expected 1..%d, got %d", MAX_LAYERS, s->L);
    if (s->C % s->H) die_input("n_head: d_model %d is not divisible by n_head %d", s->C, s->H);
    Model *m = callocCheck(1, sizeof *m);
    m->s = *s;
    if (cfg && config_find(cfg, "short_conv")) m->s.short_conv = (int)cfg_int(cfg, "short_conv");
    if (m->s.short_conv < 0 || m->s.short_conv > s->T)
        die_input("short_conv: expected 0 (off) to seq_len = %d, got %d", s->T, m->s.short_conv);
    m->precision = cfg && config_find(cfg, "precision") ? precision_parse(cfg_str(cfg, "precision")) : PRECISION_FP32;
    if (mixer) {
        for (int l = 0; l < s->L; l++) m->mixer[l] = mixer;
    } else {
        if (!cfg) die("internal error: model_create without a mixer or a config");
        model_parse_mixers(cfg_str(cfg, "mixer"), s->L, m->mixer);
    }
    m->B_max = B;
    m->threads_max = omp_get_max_threads();
    m->rows_max = rows_max;
    // Head rows per chunk: a fixed function of V (never of the thread count), ~4M logits.
    m->head_chunk = (1 << 22) / s->V;
    if (m->head_chunk < 16) m->head_chunk = 16;
    if (m->head_chunk > rows_max) m->head_chunk = rows_max;
    for (int l = 0; l < s->L; l++) {
        MixerDims d = {s->C, s->H, s->T, B, l, s->L, cfg, m->precision};
        m->mixer_state[l] = m->mixer[l]->create(&d);
    }
    build_param_table(m);
    focus_config(&m->focus, cfg, s->L, m->mixer);
    return m;
}

ModelShape model_shape_from_config(const Config *cfg, int V) {
    return (ModelShape){
        .V = V,
        .C = (int)cfg_int(cfg, "d_model"),
        .L = (int)cfg_int(cfg, "n_layer"),
        .H = (int)cfg_int(cfg, "n_head"),
        .T = (int)cfg_int(cfg, "seq_len"),
        .mlp = cfg_bool(cfg, "mlp"),
        .pos_emb = !strcmp(cfg_str(cfg, "pos_emb"), "learned"),
    };
}

Model *model_create(const ModelShape *s, const MixerKind *mixer, const Config *cfg, int B, int rows_max) {
    Model *m = model_layout(s, mixer, cfg, B, rows_max);
    m->params = callocCheck(m->n_params, sizeof(real));
    m->grads = callocCheck(m->n_params, sizeof(real));
    point_params(m, m->params, &m->wte, &m->wpe, &m->lnf_w, &m->lnf_b, m->lp);
    point_params(m, m->grads, &m->g_wte, &m->g_wpe, &m->g_lnf_w, &m->g_lnf_b, m->lg);
    build_activations(m, 1);
    m->inputs = callocCheck((size_t)B * s->T, sizeof(int));
    m->targets = callocCheck((size_t)B * s->T, sizeof(int));
    m->rows = callocCheck((size_t)rows_max, sizeof(int));
    if (m->focus.on) {
        m->focus_work.vpos = callocCheck((size_t)rows_max, sizeof(int));
        m->focus_work.seq_start = callocCheck((size_t)B + 1, sizeof(int));
    }
    return m;
}

size_t model_plan_bytes(const ModelShape *s, const Config *cfg, int B, int rows_max, size_t *n_params) {
    Model *m = model_layout(s, NULL, cfg, B, rows_max);
    build_activations(m, 0);
    size_t ints = (size_t)2 * B * s->T + (size_t)rows_max + (m->focus.on ? (size_t)rows_max + (size_t)B + 1 : 0);
    size_t bytes = (2 * m->n_params + m->n_acts) * sizeof(real) + ints * sizeof(int);
    if (n_params) *n_params = m->n_params;
    model_free(m);
    return bytes;
}

void model_free(Model *m) {
    if (!m) return;
    for (int l = 0; l < m->s.L; l++) m->mixer[l]->destroy(m->mixer_state[l]);
    free(m->tensors);
    free(m->params);
    free(m->grads);
    free(m->acts);
    free(m->inputs);
    free(m->targets);
    free(m->rows);
    free(m->focus_work.vpos);
    free(m->focus_work.seq_start);
    free(m);
}

const TensorInfo *model_find_tensor(const Model *m, const char *name) {
    for (int i = 0; i < m->n_tensors; i++)
        if (!strcmp(m->tensors[i].name, name)) return &m->tensors[i];
    return NULL;
}

void model_init_weights(Model *m, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    double out_std = 0.02 / sqrt(2.0 * m->s.L);
    for (int i = 0; i < m->n_tensors; i++) {
        const TensorInfo *t = &m->tensors[i];
        real *w = m->params + t->offset;
        double std = t->arg > 0 ? t->arg : 0.02;
        switch (t->init) {
        // clang-format off
        case INIT_ZERO: for (size_t k = 0; k < t->count; k++) w[k] = 0; break;
        case INIT_ONE: for (size_t k = 0; k < t->count; k++) w[k] = 1; break;
        case INIT_NORMAL: for (size_t k = 0; k < t->count; k++) w[k] = (real)(std * rng_normal(&rng)); break;
        // clang-format on
        case INIT_NORMAL_OUT:
            for (size_t k = 0; k < t->count; k++) w[k] = (real)(out_std * rng_normal(&rng));
            break;
        case INIT_UNIFORM:
            for (size_t k = 0; k < t->count; k++) w[k] = (real)(t->arg * (2 * rng_uniform(&rng) - 1));
            break;
        case INIT_CUSTOM: m->mixer[t->layer]->init_custom(m->mixer_state[t->layer], t->mixer_slot, w, &rng); break;
        }
    }
}

void model_zero_grad(Model *m) { memset(m->grads, 0, sizeof(real) * m->n_params); }

MixerIO model_mixer_io(Model *m, int l) {
    LayerActs *a = &m->la[l];
    // clang-format off
    MixerIO io = {.B = m->cur_B, .T = m->cur_T, .p = m->lp[l].mix, .g = m->lg[l].mix,
                  .act = a->mixer_act, .tmp = m->mixer_tmp, .x = a->conv ? a->conv : a->ln1,
                  .y = a->mix_out};
    // clang-format on
    return io;
}

// The first v with z[v] == mx (V - 1 if none, as for a NaN row): blocks of 16 compared at once,
// then the one block that holds it element by element.
static int first_index_of(const real *z, int V, real mx) {
    int v0 = 0;
    for (; v0 + 16 <= V; v0 += 16) {
        int hit = 0;
#pragma omp simd reduction(| : hit)
        for (int j = 0; j < 16; j++) hit |= z[v0 + j] == mx;
        if (hit) break;
    }
    while (v0 < V - 1 && !(z[v0] == mx)) v0++;
    return v0;
}

// LM head at the counted rows, chunk by chunk: cross-entropy, accuracy and (want_grad) the
// gradients dh_rows = dlogits wte and dwte += dlogits^T h_rows, so the [rows, V] logits never
// exist all at once. Only positions with a loss pay for the V-wide head (exact).
static HeadStats head_forward(Model *m, int want_grad) {
    int C = m->s.C, V = m->s.V, M = m->n_rows;
    double t0 = now_seconds();
    HeadStats st = {0, M, 0, 0};
    for (int r = 0; r < M; r++) memcpy(m->h_rows + (size_t)r * C, m->lnf + (size_t)m->rows[r] * C, sizeof(real) * C);
    real inv_M = M ? (real)1 / (real)M : 0;
    for (int r0 = 0; r0 < M; r0 += m->head_chunk) {
        int n = M - r0 < m->head_chunk ? M - r0 : m->head_chunk;
        const real *h = m->h_rows + (size_t)r0 * C;
        matmul_gemm(0, 1, n, V, C, h, C, m->wte, C, 0, m->logits, V, m->precision);
        double loss = 0;
        long correct = 0;
#pragma omp parallel for schedule(static) reduction(+ : correct)
        for (int r = 0; r < n; r++) {
            real *z = m->logits + (size_t)r * V;
            int target = m->targets[m->rows[r0 + r]];
            // vectorized passes: the max, the first index of the max, the exps with their sum (kept
            // in place when a gradient is wanted), the gradient softmax / M - onehot / M. (vexpr, not
            // vexpr_nonpos: a NaN logit must stay NaN, so that the loss says so.)
            real mx = z[0];
#pragma omp simd reduction(max : mx)
            for (int v = 1; v < V; v++) mx = z[v] > mx ? z[v] : mx;
            int arg = first_index_of(z, V, mx);
            correct += arg == target;
            m->row_hit[r0 + r] = arg == target;
            real z_target = z[target], sum = 0;
            if (want_grad) {
#pragma omp simd reduction(+ : sum)
                for (int v = 0; v < V; v++) {
                    real e = vexpr(z[v] - mx);
                    z[v] = e;
                    sum += e;
                }
            } else {
#pragma omp simd reduction(+ : sum)
                for (int v = 0; v < V; v++) sum += vexpr(z[v] - mx);
            }
            m->row_loss[r0 + r] = mx + logr(sum) - z_target;
            if (want_grad) {
                real scale = inv_M / sum;
#pragma omp simd
                for (int v = 0; v < V; v++) z[v] *= scale;
                z[target] -= inv_M;
            }
        }
        for (int r = 0; r < n; r++) loss += m->row_loss[r0 + r];  // fixed order
        st.loss_sum += loss;
        st.n_correct += correct;
        if (want_grad) {
            matmul_gemm(0, 0, n, C, V, m->logits, V, m->wte, C, 0, m->dh_rows + (size_t)r0 * C, C, m->precision);
            matmul_gemm(1, 0, V, C, n, m->logits, V, h, C, 1, m->g_wte, C, m->precision);
        }
    }
    st.head_s = now_seconds() - t0;
    return st;
}

HeadStats model_forward(Model *m, const int *inputs, const int *targets, int B, int T, int want_grad) {
    const ModelShape *s = &m->s;
    if (B > m->B_max || T > s->T) die("internal error: batch %dx%d exceeds %dx%d", B, T, m->B_max, s->T);
    if (omp_get_max_threads() > m->threads_max)  // set the thread count before model_create
        die("internal error: %d threads, but the model's scratch was sized for %d", omp_get_max_threads(), m->threads_max);
    int C = s->C, BT = B * T;
    m->cur_B = B;
    m->cur_T = T;
    memcpy(m->inputs, inputs, sizeof(int) * BT);
    m->n_rows = 0;
    for (int i = 0; i < BT; i++) {
        m->targets[i] = targets ? targets[i] : -1;
        if (m->targets[i] >= 0) {
            if (m->n_rows == m->rows_max) die("internal error: more than %d target positions", m->rows_max);
            m->rows[m->n_rows++] = i;
        }
    }
    embedding_forward(m->la[0].res_in, inputs, m->wte, m->wpe, B, T, C);
    for (int l = 0; l < s->L; l++) {
        LayerParams *p = &m->lp[l];
        LayerActs *a = &m->la[l];
        real *next = l + 1 < s->L ? m->la[l + 1].res_in : m->res_out;
        layernorm_forward(a->ln1, a->ln1_mean, a->ln1_rstd, a->res_in, p->ln1_w, p->ln1_b, BT, C);
        if (s->short_conv) short_conv_forward(a->conv, a->ln1, p->sc_w, p->sc_b, B, T, C, s->short_conv);
        MixerIO io = model_mixer_io(m, l);
        m->mixer[l]->forward(m->mixer_state[l], &io);
        if (m->after_mixer) m->after_mixer(m, l, &io, m->after_mixer_ctx);
        residual_forward(a->res_mid, a->res_in, a->mix_out, (size_t)BT * C);
        if (s->mlp) {
            layernorm_forward(a->ln2, a->ln2_mean, a->ln2_rstd, a->res_mid, p->ln2_w, p->ln2_b, BT, C);
            matmul_forward(a->fch, a->ln2, p->fc_w, p->fc_b, BT, C, 4 * C, m->precision);
            gelu_forward(a->fch_gelu, a->fch, (size_t)BT * 4 * C);
            matmul_forward(m->branch, a->fch_gelu, p->proj_w, p->proj_b, BT, 4 * C, C, m->precision);
            residual_forward(next, a->res_mid, m->branch, (size_t)BT * C);
        }
    }
    layernorm_forward(m->lnf, m->lnf_mean, m->lnf_rstd, m->res_out, m->lnf_w, m->lnf_b, BT, C);
    m->have_grad = want_grad;
    HeadStats st = head_forward(m, want_grad);
    m->focus_dmap_ready = 0;
    if (m->focus.on && want_grad) {
        int l = m->focus.layer;
        MixerIO io = model_mixer_io(m, l);
        focus_compute(&m->focus, m->mixer[l], m->mixer_state[l], &io, m->inputs, m->targets, m->rows, m->n_rows,
                      &m->focus_work, 1);
        m->focus_dmap_ready = 1;
    }
    return st;
}

double model_focus_terms(Model *m) {
    if (!m->focus.on) return 0;
    int l = m->focus.layer;
    MixerIO io = model_mixer_io(m, l);
    return focus_compute(&m->focus, m->mixer[l], m->mixer_state[l], &io, m->inputs, m->targets, m->rows, m->n_rows,
                         &m->focus_work, 0);
}

void model_backward(Model *m) {
    if (!m->have_grad) die("internal error: model_backward without forward(want_grad)");
    const ModelShape *s = &m->s;
    int B = m->cur_B, T = m->cur_T, C = s->C, BT = B * T;
    size_t nBTC = (size_t)BT * C;
    // scatter the head's gradient back to its rows
    memset(m->dln, 0, sizeof(real) * nBTC);
    for (int r = 0; r < m->n_rows; r++)
        memcpy(m->dln + (size_t)m->rows[r] * C, m->dh_rows + (size_t)r * C, sizeof(real) * C);
    memset(m->dres, 0, sizeof(real) * nBTC);
    layernorm_backward(m->dres, m->g_lnf_w, m->g_lnf_b, m->dln, m->res_out, m->lnf_w, m->lnf_mean, m->lnf_rstd, BT, C);
    for (int l = s->L - 1; l >= 0; l--) {
        LayerParams *p = &m->lp[l], *g = &m->lg[l];
        LayerActs *a = &m->la[l];
        if (s->mlp) {
            // dres is the gradient of the block output = of the MLP branch and of res_mid
            memset(m->dfch_a, 0, sizeof(real) * nBTC * 4);
            matmul_backward(m->dfch_a, g->proj_w, g->proj_b, m->dres, a->fch_gelu, p->proj_w, BT, 4 * C, C, m->precision);
            memset(m->dfch_b, 0, sizeof(real) * nBTC * 4);
            gelu_backward(m->dfch_b, a->fch, m->dfch_a, nBTC * 4);
            memset(m->dln, 0, sizeof(real) * nBTC);
            matmul_backward(m->dln, g->fc_w, g->fc_b, m->dfch_b, a->ln2, p->fc_w, BT, C, 4 * C, m->precision);
            layernorm_backward(m->dres, g->ln2_w, g->ln2_b, m->dln, a->res_mid, p->ln2_w, a->ln2_mean, a->ln2_rstd, BT, C);
        }
        memset(m->dln, 0, sizeof(real) * nBTC);
        MixerIO io = model_mixer_io(m, l);
        io.dy = m->dres;
        io.dx = s->short_conv ? m->dconv : m->dln;
        if (m->focus_dmap_ready && l == m->focus.layer) io.dmap = m->focus_work.dmap;
        if (s->short_conv) memset(m->dconv, 0, sizeof(real) * nBTC);
        m->mixer[l]->backward(m->mixer_state[l], &io);
        if (s->short_conv)
            short_conv_backward(m->dln, g->sc_w, g->sc_b, m->dconv, a->ln1, p->sc_w, B, T, C, s->short_conv);
        layernorm_backward(m->dres, g->ln1_w, g->ln1_b, m->dln, a->res_in, p->ln1_w, a->ln1_mean, a->ln1_rstd, BT, C);
    }
    embedding_backward(m->g_wte, m->g_wpe, m->dres, m->inputs, B, T, C);
}

void model_logits_at(const Model *m, int b, int t, real *logits) {
    const real *h = m->lnf + ((size_t)b * m->cur_T + t) * m->s.C;
    matmul_gemm(0, 1, 1, m->s.V, m->s.C, h, m->s.C, m->wte, m->s.C, 0, logits, m->s.V, m->precision);
}

size_t model_activation_bytes(const Model *m) { return m->n_acts * sizeof(real); }

size_t model_layer_state_floats(const Model *m, int l) {
    const MixerKind *mk = m->mixer[l];
    if (!mk->state_floats) return 0;
    size_t conv = m->s.short_conv > 1 ? (size_t)(m->s.short_conv - 1) * m->s.C : 0;
    return mk->state_floats(m->mixer_state[l]) + conv;
}
