#include "eval/maps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/safetensors.h"
#include "eval/answer.h"
#include "tokenizer/bpe.h"
#include "eval/svg_plot.h"
#include "tokenizer/tokenizer_file.h"

int maps_seq_len(const Dataset *val, long seq, int T) {
    for (int c = 0; c < val->n_cells; c++)
        if (seq >= val->cell_first[c] && seq < val->cell_first[c + 1] && val->cells[c].seq_len < T)
            return val->cells[c].seq_len;
    return T;
}

void maps_extract(Model *m, const Dataset *val, int T, long seq, int layer, int head, AttentionMaps *out) {
    int L = m->s.L, H = m->s.H;
    for (int l = 0; l < L; l++)
        if (!m->mixer[l]->attention || !m->mixer[l]->n_maps)
            die_input("--maps: mixer '%s' has no attention extractor to draw", m->mixer[l]->name);
    if (seq < 0 || seq >= val->n)
        die_input("map_seq: %ld is out of range (the validation set has %ld sequences)", seq, val->n);
    if (layer < -1 || layer >= L)
        die_input("map_layer: %d is out of range (the model has %d layers; -1 = all)", layer, L);
    if (head < -1 || head >= H) die_input("map_head: %d is out of range (the model has %d heads; -1 = all)", head, H);
    T = maps_seq_len(val, seq, T);
    memset(out, 0, sizeof *out);
    out->T = T;
    out->L = L;
    out->H = H;
    out->seq = seq;
    out->inputs = mallocCheck(sizeof(int) * (size_t)T);
    out->targets = mallocCheck(sizeof(int) * (size_t)T);
    out->answer = mallocCheck(sizeof(int) * (size_t)T);
    dataset_get_prefix(val, seq, T, out->inputs, out->targets);
    out->has_answers = val->mqar_kv_pairs > 0;
    for (int i = 0; i < T; i++)
        out->answer[i] = out->has_answers && out->targets[i] >= 0 ? answer_value_pos(out->inputs, i, out->targets[i]) : -1;
    model_forward(m, out->inputs, out->targets, 1, T, 0);

    int l0 = layer < 0 ? 0 : layer, l1 = layer < 0 ? L : layer + 1, h0 = head < 0 ? 0 : head, h1 = head < 0 ? H : head + 1;
    out->n = (l1 - l0) * (h1 - h0);
    out->layer = mallocCheck(sizeof(int) * (size_t)out->n);
    out->head = mallocCheck(sizeof(int) * (size_t)out->n);
    out->a = callocCheck((size_t)out->n * T * T, sizeof(float));
    real *buf = mallocCheck(sizeof(real) * (size_t)T * T);
    int k = 0;
    for (int l = l0; l < l1; l++) {
        MixerIO io = model_mixer_io(m, l);
        const MixerKind *mk = m->mixer[l];  // a hybrid stack's layer has its own
        int per_head = mk->n_maps(m->mixer_state[l]) / H;
        for (int h = h0; h < h1; h++, k++) {
            out->layer[k] = l;
            out->head[k] = h;
            float *dst = out->a + (size_t)k * T * T;
            for (int mi = h * per_head; mi < (h + 1) * per_head; mi++) {
                mk->attention(m->mixer_state[l], &io, 0, mi, buf);
                for (size_t e = 0; e < (size_t)T * T; e++) dst[e] += (float)((double)buf[e] / per_head);
            }
            for (size_t e = 0; e < (size_t)T * T; e++) out->signed_maps |= dst[e] < 0;
        }
    }
    free(buf);
}

void maps_label_tokens(AttentionMaps *am, const char *tokenizer_path) {
    char err[512];
    Bpe *b = tokenizer_read(tokenizer_path, err, sizeof err);
    if (!b) {
        fprintf(stderr, "note: maps labelled with token ids: %s\n", err);
        return;
    }
    am->token_text = callocCheck((size_t)am->T, sizeof(char *));
    for (int i = 0; i < am->T; i++) {
        size_t len = 0;
        const uint8_t *p = bpe_token_bytes(b, (uint32_t)am->inputs[i], &len);
        ByteBuf e = {0};
        if (p) bpe_escape(p, len, &e);
        else bytebuf_append(&e, "?", 1);
        bytebuf_append(&e, "", 1);  // NUL
        am->token_text[i] = (char *)e.v;
    }
    bpe_free(b);
}

void maps_free(AttentionMaps *am) {
    for (int i = 0; am->token_text && i < am->T; i++) free(am->token_text[i]);
    free(am->token_text);
    free(am->inputs);
    free(am->targets);
    free(am->answer);
    free(am->layer);
    free(am->head);
    free(am->a);
    memset(am, 0, sizeof *am);
}

int maps_save(const AttentionMaps *am, const char *path, long step, const char *mixer, char *err, size_t errlen) {
    StWriter *w = st_writer_new();
    int T = am->T;
    char name[64];
    for (int k = 0; k < am->n; k++) {
        int64_t shape[2] = {T, T};
        snprintf(name, sizeof name, "L%d.H%d", am->layer[k], am->head[k]);
        st_writer_add_f32(w, name, 2, shape, am->a + (size_t)k * T * T);
    }
    float *v = mallocCheck(sizeof(float) * (size_t)T);
    int64_t shape1[1] = {T};
    const int *src[3] = {am->inputs, am->targets, am->answer};
    const char *names[3] = {"inputs", "targets", "answer"};
    for (int t = 0; t < 3; t++) {
        for (int i = 0; i < T; i++) v[i] = (float)src[t][i];
        st_writer_add_f32(w, names[t], 1, shape1, v);
    }
    free(v);
    char val[64];
    snprintf(val, sizeof val, "%ld", step);
    st_writer_meta(w, "step", val);
    st_writer_meta(w, "mixer", mixer);
    snprintf(val, sizeof val, "%ld", am->seq);
    st_writer_meta(w, "seq", val);
    int rc = st_writer_save(w, path, err, errlen);
    st_writer_free(w);
    return rc;
}

int maps_draw(const AttentionMaps *am, const char *dir, long step, const char *mixer, int start, int len) {
    // the window [start, start + n) of positions: rows and columns both (a causal map's rows see
    // only earlier columns, so a window shows the attention among those positions)
    int T = am->T, ok = 0, n = start + len > T ? T - start : len;
    unsigned char *mark = mallocCheck((size_t)n);
    int *answer = mallocCheck(sizeof(int) * (size_t)n);
    float *a = mallocCheck(sizeof(float) * (size_t)n * n);
    for (int i = 0; i < n; i++) {
        int r = start + i, ans = am->answer[r];
        mark[i] = am->targets[r] >= 0 && am->has_answers;
        answer[i] = ans >= start && ans < start + n ? ans - start : -1;
    }
    for (int k = 0; k < am->n; k++) {
        char path[1200], title[300];
        snprintf(path, sizeof path, "%s/map_L%d_H%d.svg", dir, am->layer[k], am->head[k]);
        int w = snprintf(title, sizeof title, "%s: layer %d head %d, validation sequence %ld, step %ld", mixer,
                         am->layer[k], am->head[k], am->seq, step);
        if (n < T) snprintf(title + w, sizeof title - (size_t)w, ", positions %d to %d of %d", start, start + n - 1, T);
        const float *src = am->a + (size_t)k * T * T;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) a[(size_t)i * n + j] = src[(size_t)(start + i) * T + start + j];
        ok += svg_attention_map(path, title, a, n, start, am->inputs + start,
                                am->token_text ? (const char *const *)am->token_text + start : NULL, mark,
                                am->has_answers ? answer : NULL, am->signed_maps) == 0;
    }
    free(mark), free(answer), free(a);
    return ok;
}
