// A Hugging Face GPT-2 model folder (hf_export.h).
//
// Why the two models agree exactly (checked against transformers' modeling_gpt2.py): both are
// pre-LN blocks x += attn(ln_1(x)); x += mlp(ln_2(x)) with LayerNorm eps 1e-5 (model/layers.h,
// layer_norm_epsilon), the tanh GELU (model/layers.c; HF's "gelu_new"), attention scores scaled
// by 1/sqrt(head_dim) (scale_attn_weights) under a causal mask, q, k and v stacked in that order
// along c_attn's output with head h at columns h*D.. of each (HF's split(n_embd) then view by
// heads), biases on every linear layer, a final ln_f and logits = ln_f(x) wte^T (lm_head tied).
// No dropout here: the config sets every *_pdrop to 0 so train() in HF adds none either.
#include "trainer/hf_export.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/safetensors.h"

// One per-layer tensor of HF's GPT-2: its name after "transformer.h.<l>.", this project's after
// "h.<l>.", its HF shape in units of C (cols 0: a vector of rows*C), whether HF's weight is the
// transpose of ours (Conv1D's (in, out) against our (out, in)), whether it belongs to the MLP
// (absent from a model with mlp = false), and the value that stands in for it then.
typedef struct {
    const char *hf, *ours;
    int rows, cols, transpose, mlp;
    float fill;
} HfLayerTensor;

static const HfLayerTensor k_layer[] = {
    {"ln_1.weight", "ln_1.weight", 1, 0, 0, 0, 0},
    {"ln_1.bias", "ln_1.bias", 1, 0, 0, 0, 0},
    {"attn.c_attn.weight", "attn.qkv.weight", 1, 3, 1, 0, 0},
    {"attn.c_attn.bias", "attn.qkv.bias", 3, 0, 0, 0, 0},
    {"attn.c_proj.weight", "attn.proj.weight", 1, 1, 1, 0, 0},
    {"attn.c_proj.bias", "attn.proj.bias", 1, 0, 0, 0, 0},
    // ln_2 only feeds the MLP: with a zero MLP its value does not matter; ones and zeros are
    // LayerNorm's identity init, so the folder still looks like a freshly built GPT-2 there.
    {"ln_2.weight", "ln_2.weight", 1, 0, 0, 1, 1},
    {"ln_2.bias", "ln_2.bias", 1, 0, 0, 1, 0},
    {"mlp.c_fc.weight", "mlp.fc.weight", 1, 4, 1, 1, 0},
    {"mlp.c_fc.bias", "mlp.fc.bias", 4, 0, 0, 1, 0},
    {"mlp.c_proj.weight", "mlp.proj.weight", 4, 1, 1, 1, 0},
    {"mlp.c_proj.bias", "mlp.proj.bias", 1, 0, 0, 1, 0},
};
#define N_LAYER_TENSORS (sizeof k_layer / sizeof k_layer[0])

// The model-wide tensors: HF name and ours (shapes are the model's own; none is transposed).
static const struct {
    const char *hf, *ours;
} k_global[] = {
    {"transformer.wte.weight", "wte"},
    {"transformer.wpe.weight", "wpe"},
    {"transformer.ln_f.weight", "ln_f.weight"},
    {"transformer.ln_f.bias", "ln_f.bias"},
};
#define N_GLOBAL_TENSORS (sizeof k_global / sizeof k_global[0])

static const char *k_hf_name = "Hugging Face's GPT-2";

// Our tensor for entry e of layer l: NULL when the model has none (and err says why, unless it is
// an MLP tensor of a model without MLP, which is filled instead); -1 in *bad for a wrong size.
static const TensorInfo *layer_source(const Model *m, const HfLayerTensor *e, int l, int *bad, char *err, size_t errlen) {
    char name[96];
    snprintf(name, sizeof name, "h.%d.%s", l, e->ours);
    const TensorInfo *t = model_find_tensor(m, name);
    size_t C = (size_t)m->s.C, want = (size_t)e->rows * C * (e->cols ? (size_t)e->cols * C : 1);
    *bad = 0;
    if (!t) {
        if (!(e->mlp && !m->s.mlp)) {
            snprintf(err, errlen, "the model has no tensor '%s' for %s's %s", name, k_hf_name, e->hf);
            *bad = 1;
        }
        return NULL;
    }
    if (t->count != want) {
        snprintf(err, errlen, "tensor '%s' holds %zu values, %s's %s %zu", name, t->count, k_hf_name, e->hf, want);
        *bad = 1;
        return NULL;
    }
    return t;
}

// 1 when `name` (a tensor of the model) is the source of some entry of the mapping.
static int mapped(const char *name) {
    for (size_t g = 0; g < N_GLOBAL_TENSORS; g++)
        if (!strcmp(name, k_global[g].ours)) return 1;
    if (strncmp(name, "h.", 2)) return 0;
    const char *dot = strchr(name + 2, '.');
    if (!dot) return 0;
    for (size_t k = 0; k < N_LAYER_TENSORS; k++)
        if (!strcmp(dot + 1, k_layer[k].ours)) return 1;
    return 0;
}

int hf_exportable(const Model *m, char *err, size_t errlen) {
    const ModelShape *s = &m->s;
    // Another mixer may share softmax's tensor names (elu+1 linear does) but not its function.
    for (int l = 0; l < s->L; l++)
        if (strcmp(m->mixer[l]->name, "softmax")) {
            snprintf(err, errlen, "mixer: %s is softmax attention in every layer, not the model's '%s' (layer %d%s)",
                     k_hf_name, m->mixer[l]->name, l, model_is_hybrid(m) ? " of a hybrid stack" : "");
            return -1;
        }
    if (!s->pos_emb) {
        snprintf(err, errlen, "pos_emb: %s adds learned positions (wpe); the model has pos_emb = none", k_hf_name);
        return -1;
    }
    if (s->short_conv) {
        snprintf(err, errlen, "short_conv: %s has no short convolution; the model has short_conv = %d", k_hf_name,
                 s->short_conv);
        return -1;
    }
    for (size_t g = 0; g < N_GLOBAL_TENSORS; g++)
        if (!model_find_tensor(m, k_global[g].ours)) {
            snprintf(err, errlen, "the model has no tensor '%s' for %s's %s", k_global[g].ours, k_hf_name, k_global[g].hf);
            return -1;
        }
    for (int l = 0; l < s->L; l++)
        for (size_t k = 0; k < N_LAYER_TENSORS; k++) {
            int bad;
            layer_source(m, &k_layer[k], l, &bad, err, errlen);
            if (bad) return -1;
        }
    // Anything outside the mapping (a future mixer option, say) would be silently dropped.
    for (int i = 0; i < m->n_tensors; i++)
        if (!mapped(m->tensors[i].name)) {
            snprintf(err, errlen, "%s has no place for the model's tensor '%s'", k_hf_name, m->tensors[i].name);
            return -1;
        }
    return 0;
}

// Adds one tensor as F32: src (count values; NULL: every value `fill`), transposed from our
// [cols_hf, rows_hf] (out, in) into HF's [rows_hf, cols_hf] when transpose is set.
static void add(StWriter *w, const char *name, int ndim, const int64_t *shape, const real *src, int transpose,
                float fill, float *buf) {
    size_t count = (size_t)shape[0] * (ndim == 2 ? (size_t)shape[1] : 1);
    if (!src) {
        for (size_t i = 0; i < count; i++) buf[i] = fill;
    } else if (transpose) {
        // HF element (i, o) is ours (o, i): i in [0, rows) = our input, o in [0, cols) = our output
        size_t rows = (size_t)shape[0], cols = (size_t)shape[1];
        for (size_t o = 0; o < cols; o++)
            for (size_t i = 0; i < rows; i++) buf[i * cols + o] = (float)src[o * rows + i];
    } else {
        for (size_t i = 0; i < count; i++) buf[i] = (float)src[i];
    }
    st_writer_add_f32(w, name, ndim, shape, buf);
}

// config.json: GPT2Config's fields for this shape. n_positions = n_ctx = the model's seq_len (the
// rows of wpe); n_inner null means 4 * n_embd; no dropout. The end-of-text token (eos_id: GPT-2's
// 50256, a text run's <|endoftext|>) is bos, eos and pad, as GPT-2's own config has it. Without one
// (MQAR) bos and eos are null and pad_token_id is V, one past the vocabulary: transformers'
// generate masks the inputs equal to the pad id, and every id below V is a real token (MQAR's
// filler is 0).
static int write_config(const char *path, const Model *m, int eos_id, char *err, size_t errlen) {
    const ModelShape *s = &m->s;
    AtomicFile a;
    if (atomic_open(&a, path, err, errlen) != 0) return -1;
    char eot[16] = "null", pad[16];
    if (eos_id >= 0) snprintf(eot, sizeof eot, "%d", eos_id);
    snprintf(pad, sizeof pad, "%d", eos_id >= 0 ? eos_id : s->V);
    FILE *f = a.f;
    fprintf(f, "{\n");
    fprintf(f, "  \"architectures\": [\"GPT2LMHeadModel\"],\n");
    fprintf(f, "  \"model_type\": \"gpt2\",\n");
    fprintf(f, "  \"vocab_size\": %d,\n", s->V);
    fprintf(f, "  \"n_positions\": %d,\n", s->T);
    fprintf(f, "  \"n_ctx\": %d,\n", s->T);
    fprintf(f, "  \"n_embd\": %d,\n", s->C);
    fprintf(f, "  \"n_layer\": %d,\n", s->L);
    fprintf(f, "  \"n_head\": %d,\n", s->H);
    fprintf(f, "  \"n_inner\": null,\n");
    fprintf(f, "  \"activation_function\": \"gelu_new\",\n");
    fprintf(f, "  \"layer_norm_epsilon\": 1e-05,\n");
    fprintf(f, "  \"resid_pdrop\": 0.0,\n  \"embd_pdrop\": 0.0,\n  \"attn_pdrop\": 0.0,\n");
    fprintf(f, "  \"initializer_range\": 0.02,\n");
    fprintf(f, "  \"scale_attn_weights\": true,\n");
    fprintf(f, "  \"scale_attn_by_inverse_layer_idx\": false,\n");
    fprintf(f, "  \"reorder_and_upcast_attn\": false,\n");
    fprintf(f, "  \"tie_word_embeddings\": true,\n");
    fprintf(f, "  \"use_cache\": true,\n");
    fprintf(f, "  \"bos_token_id\": %s,\n  \"eos_token_id\": %s,\n  \"pad_token_id\": %s,\n", eot, eot, pad);
    fprintf(f, "  \"torch_dtype\": \"float32\"\n");
    fprintf(f, "}\n");
    return atomic_commit(&a, err, errlen);  // a write error shows here, with its reason
}

int hf_eos_id(int vocab, int tokenizer_vocab) {
    if (vocab == 50257) return 50256;
    return tokenizer_vocab > 256 && tokenizer_vocab <= vocab ? tokenizer_vocab - 1 : -1;
}

int hf_save(const char *dir, const Model *m, int eos_id, char *err, size_t errlen) {
    if (hf_exportable(m, err, errlen) != 0) return -1;
    const ModelShape *s = &m->s;
    int64_t C = s->C;
    size_t biggest = 0;
    for (int i = 0; i < m->n_tensors; i++)
        if (m->tensors[i].count > biggest) biggest = m->tensors[i].count;
    if ((size_t)(4 * C * C) > biggest) biggest = (size_t)(4 * C * C);  // a zero MLP weight
    float *buf = mallocCheck(sizeof(float) * biggest);
    StWriter *w = st_writer_new();
    for (size_t g = 0; g < N_GLOBAL_TENSORS; g++) {
        const TensorInfo *t = model_find_tensor(m, k_global[g].ours);
        int64_t shape[2] = {t->shape[0], t->ndim == 2 ? t->shape[1] : 0};
        add(w, k_global[g].hf, t->ndim, shape, m->params + t->offset, 0, 0, buf);
    }
    char name[128];
    for (int l = 0; l < s->L; l++)
        for (size_t k = 0; k < N_LAYER_TENSORS; k++) {
            const HfLayerTensor *e = &k_layer[k];
            int bad;
            const TensorInfo *t = layer_source(m, e, l, &bad, err, errlen);
            int64_t shape[2] = {e->rows * C, e->cols * C};
            snprintf(name, sizeof name, "transformer.h.%d.%s", l, e->hf);
            add(w, name, e->cols ? 2 : 1, shape, t ? m->params + t->offset : NULL, e->transpose, e->fill, buf);
        }
    free(buf);
    // transformers refuses a safetensors file whose metadata lacks "format": "pt" (PyTorch's).
    st_writer_meta(w, "format", "pt");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, HF_WEIGHTS_FILE);
    int rc = st_writer_save(w, path, err, errlen);
    st_writer_free(w);
    if (rc != 0) return -1;
    snprintf(path, sizeof path, "%s/%s", dir, HF_CONFIG_FILE);
    return write_config(path, m, eos_id, err, errlen);
}
