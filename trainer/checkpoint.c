#include "trainer/checkpoint.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/io.h"
#include "model/keys.h"
#include "core/run_dir.h"
#include "core/safetensors.h"
#include "trainer/llmc.h"

// Adds one tensor of the model's table (converted to F32) under name.
static void add_tensor(StWriter *w, const char *name, const TensorInfo *t, const real *src) {
    int64_t shape[4];
    for (int i = 0; i < t->ndim; i++) shape[i] = t->shape[i];
#ifdef REAL_DOUBLE
    float *tmp = mallocCheck(sizeof(float) * t->count);
    for (size_t i = 0; i < t->count; i++) tmp[i] = (float)src[i];
    st_writer_add_f32(w, name, t->ndim, shape, tmp);
    free(tmp);
#else
    st_writer_add_f32(w, name, t->ndim, shape, src);
#endif
}

int ckpt_save(const char *path, const Model *m, const Optimizer *opt, const Config *cfg, const TrainState *ts,
              char *err, size_t errlen) {
    StWriter *w = st_writer_new();
    char name[160], num[64];
    for (int i = 0; i < m->n_tensors; i++)
        add_tensor(w, m->tensors[i].name, &m->tensors[i], m->params + m->tensors[i].offset);
    int has_moments = opt && opt->kind == OPT_ADAMW;
    if (has_moments)
        for (int i = 0; i < m->n_tensors; i++) {
            const TensorInfo *t = &m->tensors[i];
            snprintf(name, sizeof name, "optim.m.%s", t->name);
            add_tensor(w, name, t, opt->m + t->offset);
            snprintf(name, sizeof name, "optim.v.%s", t->name);
            add_tensor(w, name, t, opt->v + t->offset);
        }
    char *text = config_to_text(cfg);
    st_writer_meta(w, "format", CKPT_FORMAT);
    st_writer_meta(w, "config", text);
    free(text);
    snprintf(num, sizeof num, "%ld", ts->step);
    st_writer_meta(w, "step", num);
    snprintf(num, sizeof num, "%" PRIu64, ts->data_pos);
    st_writer_meta(w, "data_pos", num);
    snprintf(num, sizeof num, "%" PRIu64, ts->data_seed);
    st_writer_meta(w, "data_seed", num);
    // The only randomness training consumes is the loader's per-epoch permutation, a pure
    // function of (data_seed, epoch); data_pos fixes where in it the run is.
    st_writer_meta(w, "rng", "xoshiro256** permutation of epoch e seeded by seed_mix(data_seed, e)");
    snprintf(num, sizeof num, "%ld", ts->opt_t);
    st_writer_meta(w, "optimizer_steps", num);
    st_writer_meta(w, "optimizer", has_moments ? "adamw" : opt ? "sgd" : "none");
    if (ts->tokenizer_vocab > 0) {
        snprintf(num, sizeof num, "%d", ts->tokenizer_vocab);
        st_writer_meta(w, "tokenizer_vocab_size", num);
        snprintf(num, sizeof num, "%08" PRIx32, ts->tokenizer_id);
        st_writer_meta(w, "tokenizer_identity", num);
    }
    int rc = st_writer_save(w, path, err, errlen);
    st_writer_free(w);
    return rc;
}

// Format 1 checkpoints (CRC of the data only) load with this warning, once per process.
static void warn_header_unchecked(const char *path) {
    static int warned;
    if (warned++) return;
    fprintf(stderr,
            "warning: %s: a checkpoint of format %s, whose CRC does not cover its header (metadata, "
            "tensor offsets): loaded with the header unchecked; checkpoints saved from now on cover it\n",
            path, CKPT_FORMAT_V1);
}

// Checks container, format and CRC; 0 or -1 with err.
static int open_checked(const char *path, SafeTensors *st, char *err, size_t errlen) {
    if (st_read(path, st, err, errlen) != 0) {
        // A *.bin that is no safetensors file is most likely llm.c's with a damaged header: name
        // its magic (and what was expected) rather than a "header length" made of magic and version.
        LlmcHeader h;
        if (llmc_is_damaged_model_file(path)) llmc_read_header(path, &h, err, errlen);
        return -1;
    }
    const char *format = st_meta(st, "format");
    int v1 = format && !strcmp(format, CKPT_FORMAT_V1);
    if (!format || (strcmp(format, CKPT_FORMAT) && !v1)) {
        snprintf(err, errlen, "not a checkpoint of this trainer (metadata format '%s', expected '%s')",
                 format ? format : "missing", CKPT_FORMAT);
        st_free(st);
        return -1;
    }
    const char *stored = st_meta(st, "crc32");
    uint32_t crc = 0;
    int have = 1;
    if (v1) crc = (uint32_t)crc32_z(0L, st->data, st->data_len);
    else have = st_file_crc32(st->file_buf, st->file_len, &crc) == 0;
    char hex[16];
    snprintf(hex, sizeof hex, "%08" PRIx32, crc);
    if (!stored || !have || strcmp(stored, hex)) {
        if (!have) snprintf(err, errlen, "the header does not hold exactly one \"crc32\" value: the file is corrupt");
        else
            snprintf(err, errlen, "CRC32 of the %s is %s, the header says %s: the file is corrupt or was edited",
                     v1 ? "data section" : "file", hex, stored ? stored : "nothing");
        st_free(st);
        return -1;
    }
    if (v1) warn_header_unchecked(path);
    static const char *required[] = {"config", "step", "data_pos", "data_seed", "optimizer_steps"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!st_meta(st, required[i])) {
            snprintf(err, errlen, "metadata '%s' is missing", required[i]);
            st_free(st);
            return -1;
        }
    return 0;
}

static int parse_long(const char *s, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < 0) return -1;
    *out = v;
    return 0;
}

int ckpt_read_config(const char *path, Config *cfg, long *step, char *err, size_t errlen) {
    if (llmc_is_model_file(path)) {  // llm.c's GPT-2 file: its header is the config, step 0
        if (step) *step = 0;
        return llmc_read_config(path, cfg, err, errlen);
    }
    SafeTensors st;
    if (open_checked(path, &st, err, errlen) != 0) return -1;
    long s;
    if (parse_long(st_meta(&st, "step"), &s) != 0) {
        snprintf(err, errlen, "metadata step '%s' is not a count", st_meta(&st, "step"));
        st_free(&st);
        return -1;
    }
    config_init_all(cfg);
    // A bad config inside a checkpoint is reported like a damaged file (the caller decides).
    if (config_try_load_text(cfg, st_meta(&st, "config"), "metadata config", err, errlen) != 0) {
        config_free(cfg);
        st_free(&st);
        return -1;
    }
    if (step) *step = s;
    st_free(&st);
    return 0;
}

// The tensor `name` of the file, checked against the model's TensorInfo.
static const StTensor *expect_tensor(const SafeTensors *st, const char *name, const TensorInfo *t, char *err, size_t errlen) {
    const StTensor *f = st_find(st, name);
    if (!f) {
        snprintf(err, errlen, "tensor '%s' is missing", name);
        return NULL;
    }
    if (strcmp(f->dtype, "F32")) {
        snprintf(err, errlen, "tensor '%s' has dtype %s, expected F32", name, f->dtype);
        return NULL;
    }
    int same = f->ndim == t->ndim;
    for (int i = 0; same && i < t->ndim; i++) same = f->shape[i] == t->shape[i];
    if (!same) {
        char have[96] = "", want[96] = "";
        for (int i = 0; i < f->ndim; i++)
            snprintf(have + strlen(have), sizeof have - strlen(have), "%s%lld", i ? "," : "", (long long)f->shape[i]);
        for (int i = 0; i < t->ndim; i++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%d", i ? "," : "", t->shape[i]);
        snprintf(err, errlen, "tensor '%s' has shape [%s], the config needs [%s]", name, have, want);
        return NULL;
    }
    return f;
}

static void copy_tensor(real *dst, const StTensor *f, const SafeTensors *st) {
    const unsigned char *p = st->data + f->begin;
    size_t n = (f->end - f->begin) / 4;
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
            (uint32_t)p[4 * i + 3] << 24;
        float x;
        memcpy(&x, &u, 4);
        dst[i] = (real)x;
    }
}

int ckpt_load(const char *path, Model *m, Optimizer *opt, TrainState *ts, char *err, size_t errlen) {
    if (llmc_is_model_file(path)) {
        if (opt) {
            snprintf(err, errlen, "an llm.c model file holds weights only: use it as init_from, not to resume");
            return -1;
        }
        if (ts) memset(ts, 0, sizeof *ts);
        return llmc_load(path, m, err, errlen);
    }
    SafeTensors st;
    if (open_checked(path, &st, err, errlen) != 0) return -1;
    int want_moments = opt && opt->kind == OPT_ADAMW;
    char name[160];
    // validate everything before touching the model
    for (int pass = 0; pass < (want_moments ? 3 : 1); pass++)
        for (int i = 0; i < m->n_tensors; i++) {
            const TensorInfo *t = &m->tensors[i];
            snprintf(name, sizeof name, "%s%s", pass == 0 ? "" : pass == 1 ? "optim.m." : "optim.v.", t->name);
            if (!expect_tensor(&st, name, t, err, errlen)) {
                // a file saved without optimizer (./export format=safetensors) has nothing to resume
                const char *o = st_meta(&st, "optimizer");
                if (pass > 0)
                    snprintf(err + strlen(err), errlen - strlen(err), "%s",
                             o && !strcmp(o, "none") ? " (a weights-only file: use it as init_from, not to resume)"
                                                     : " (the checkpoint holds no AdamW state)");
                st_free(&st);
                return -1;
            }
        }
    for (int i = 0; i < st.n_tensors; i++) {
        const char *n = st.tensors[i].name;
        if (!strncmp(n, "optim.", 6)) continue;
        if (!model_find_tensor(m, n)) {
            snprintf(err, errlen, "tensor '%s' is not part of this model (a different mixer or shape?)", n);
            st_free(&st);
            return -1;
        }
    }
    TrainState s;
    long v;
    if (parse_long(st_meta(&st, "step"), &s.step) || parse_long(st_meta(&st, "optimizer_steps"), &s.opt_t) ||
        parse_long(st_meta(&st, "data_pos"), &v)) {
        snprintf(err, errlen, "metadata step / data_pos / optimizer_steps is not a count");
        st_free(&st);
        return -1;
    }
    s.data_pos = (uint64_t)v;
    s.data_seed = strtoull(st_meta(&st, "data_seed"), NULL, 10);
    s.tokenizer_vocab = 0;
    s.tokenizer_id = 0;
    const char *tv = st_meta(&st, "tokenizer_vocab_size"), *ti = st_meta(&st, "tokenizer_identity");
    if (tv && ti) {
        char *end_v, *end_i;
        long vv = strtol(tv, &end_v, 10);
        unsigned long iv = strtoul(ti, &end_i, 16);
        if (vv <= 0 || vv > (1 << 24) || *end_v || strlen(ti) != 8 || *end_i) {
            snprintf(err, errlen, "metadata tokenizer_vocab_size '%s' / tokenizer_identity '%s' is not a tokenizer's",
                     tv, ti);
            st_free(&st);
            return -1;
        }
        s.tokenizer_vocab = (int)vv;
        s.tokenizer_id = (uint32_t)iv;
    }
    for (int i = 0; i < m->n_tensors; i++) {
        const TensorInfo *t = &m->tensors[i];
        copy_tensor(m->params + t->offset, st_find(&st, t->name), &st);
        if (!want_moments) continue;
        snprintf(name, sizeof name, "optim.m.%s", t->name);
        copy_tensor(opt->m + t->offset, st_find(&st, name), &st);
        snprintf(name, sizeof name, "optim.v.%s", t->name);
        copy_tensor(opt->v + t->offset, st_find(&st, name), &st);
    }
    if (opt) opt->t = s.opt_t;
    if (ts) *ts = s;
    st_free(&st);
    return 0;
}

int ckpt_list(const char *dir, char ***paths, long **steps) { return run_dir_checkpoints(dir, paths, steps); }

void ckpt_list_free(char **paths, long *steps, int n) { run_dir_free_list(paths, steps, n); }
