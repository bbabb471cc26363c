#include "core/safetensors.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "core/io.h"
#include "core/json.h"

#define ST_MAX_HEADER (100u << 20)  // a header above 100 MB is garbage, not a model

static const struct {
    const char *name;
    int size;
} g_dtypes[] = {
    {"F64", 8}, {"F32", 4}, {"F16", 2},  {"BF16", 2}, {"I64", 8}, {"I32", 4}, {"I16", 2},
    {"I8", 1},  {"U8", 1},  {"BOOL", 1}, {"U16", 2},  {"U32", 4}, {"U64", 8},
};

static int dtype_size(const char *name) {
    for (size_t i = 0; i < sizeof g_dtypes / sizeof g_dtypes[0]; i++)
        if (!strcmp(g_dtypes[i].name, name)) return g_dtypes[i].size;
    return 0;
}

static int by_begin(const void *a, const void *b) {
    const StTensor *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

#define ERR(...) (snprintf(err, errlen, __VA_ARGS__), st_free(st), json_free(root), -1)

int st_read(const char *path, SafeTensors *st, char *err, size_t errlen) {
    memset(st, 0, sizeof *st);
    JsonValue *root = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return ERR("cannot open (%s)", strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return ERR("not a regular file");
    }
    size_t size = (size_t)sb.st_size;
    st->file_buf = mallocCheck(size + 1);
    st->file_len = size;
    size_t got = fread(st->file_buf, 1, size, f);
    fclose(f);
    if (got != size) return ERR("read error");
    unsigned char *buf = st->file_buf;
    if (size < 8) return ERR("file is %zu bytes, shorter than the 8-byte header length", size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | buf[i];
    // a length no header has (a text file, another format): not a safetensors file at all
    if (hlen > ST_MAX_HEADER || (size > 8 && buf[8] != '{'))
        return ERR("not a safetensors file (its first 8 bytes are no header length and no JSON header follows them)");
    if (hlen > size - 8)
        return ERR("header length %llu does not fit in the file (%zu bytes; truncated?)", (unsigned long long)hlen, size);
    char jerr[256];
    root = json_parse((const char *)buf + 8, (size_t)hlen, jerr, sizeof jerr);
    if (!root) return ERR("header is not valid JSON (%s)", jerr);
    if (root->type != JSON_OBJECT) return ERR("header is not a JSON object");
    st->data = buf + 8 + hlen;
    st->data_len = size - 8 - (size_t)hlen;
    st->tensors = callocCheck((size_t)root->n + 1, sizeof(StTensor));
    st->meta_keys = callocCheck((size_t)root->n + 1, sizeof(char *));
    st->meta_values = callocCheck((size_t)root->n + 1, sizeof(char *));
    for (int i = 0; i < root->n; i++) {
        const char *name = root->keys[i];
        const JsonValue *e = &root->items[i];
        if (!strcmp(name, "__metadata__")) {
            if (e->type != JSON_OBJECT) return ERR("__metadata__ is not an object");
            if (st->n_meta) return ERR("__metadata__ appears twice");
            st->meta_keys = reallocCheck(st->meta_keys, sizeof(char *) * ((size_t)e->n + 1));
            st->meta_values = reallocCheck(st->meta_values, sizeof(char *) * ((size_t)e->n + 1));
            for (int k = 0; k < e->n; k++) {
                if (e->items[k].type != JSON_STRING) return ERR("__metadata__ value '%s' is not a string", e->keys[k]);
                st->meta_keys[st->n_meta] = strdupCheck(e->keys[k]);
                st->meta_values[st->n_meta++] = strdupCheck(e->items[k].string);
            }
            continue;
        }
        if (st_find(st, name)) return ERR("tensor '%s' appears twice", name);
        StTensor *t = &st->tensors[st->n_tensors++];
        t->name = strdupCheck(name);
        const JsonValue *dt = json_get(e, "dtype"), *shape = json_get(e, "shape"), *off = json_get(e, "data_offsets");
        if (e->type != JSON_OBJECT || !dt || !shape || !off)
            return ERR("tensor '%s': entry needs dtype, shape and data_offsets", name);
        if (dt->type != JSON_STRING || !dtype_size(dt->string)) return ERR("tensor '%s': unknown dtype", name);
        snprintf(t->dtype, sizeof t->dtype, "%s", dt->string);
        if (shape->type != JSON_ARRAY || shape->n > ST_MAX_DIMS) return ERR("tensor '%s': bad shape", name);
        uint64_t count = 1;
        t->ndim = shape->n;
        for (int k = 0; k < shape->n; k++) {
            const JsonValue *d = &shape->items[k];
            if (d->type != JSON_NUMBER || !d->is_integer || d->integer < 0 || d->integer > (1ll << 40))
                return ERR("tensor '%s': bad shape", name);
            t->shape[k] = d->integer;
            count *= (uint64_t)d->integer;
            if (count > (1ull << 40)) return ERR("tensor '%s': shape too large", name);
        }
        if (off->type != JSON_ARRAY || off->n != 2) return ERR("tensor '%s': bad data_offsets", name);
        for (int k = 0; k < 2; k++)
            if (off->items[k].type != JSON_NUMBER || !off->items[k].is_integer || off->items[k].integer < 0)
                return ERR("tensor '%s': bad data_offsets", name);
        t->begin = (size_t)off->items[0].integer;
        t->end = (size_t)off->items[1].integer;
        if (t->begin > t->end || t->end > st->data_len)
            return ERR("tensor '%s': data_offsets [%zu, %zu] outside the %zu-byte data section (truncated?)", name,
                       t->begin, t->end, st->data_len);
        if (count * (uint64_t)dtype_size(t->dtype) != t->end - t->begin)
            return ERR("tensor '%s': shape needs %llu bytes, data_offsets give %zu", name,
                       (unsigned long long)(count * (uint64_t)dtype_size(t->dtype)), t->end - t->begin);
    }
    // The data section is exactly the tensors, back to back (the safetensors rule).
    StTensor *sorted = mallocCheck(sizeof(StTensor) * ((size_t)st->n_tensors + 1));
    memcpy(sorted, st->tensors, sizeof(StTensor) * (size_t)st->n_tensors);
    qsort(sorted, (size_t)st->n_tensors, sizeof(StTensor), by_begin);
    size_t pos = 0;
    for (int i = 0; i < st->n_tensors; i++) {
        if (sorted[i].begin != pos) {
            int rc = ERR("tensor '%s': data_offsets overlap or leave a hole", sorted[i].name);
            free(sorted);  // after the message: it names one of these entries
            return rc;
        }
        pos = sorted[i].end;
    }
    free(sorted);
    if (pos != st->data_len) return ERR("%zu bytes after the last tensor", st->data_len - pos);
    json_free(root);
    return 0;
}

void st_free(SafeTensors *st) {
    for (int i = 0; i < st->n_tensors; i++) free(st->tensors[i].name);
    for (int i = 0; i < st->n_meta; i++) free(st->meta_keys[i]), free(st->meta_values[i]);
    free(st->tensors);
    free(st->meta_keys);
    free(st->meta_values);
    free(st->file_buf);
    memset(st, 0, sizeof *st);
}

const char *st_meta(const SafeTensors *st, const char *key) {
    for (int i = 0; i < st->n_meta; i++)
        if (!strcmp(st->meta_keys[i], key)) return st->meta_values[i];
    return NULL;
}

const StTensor *st_find(const SafeTensors *st, const char *name) {
    for (int i = 0; i < st->n_tensors; i++)
        if (!strcmp(st->tensors[i].name, name)) return &st->tensors[i];
    return NULL;
}

// ---------------------------------------------------------------------------------------------

struct StWriter {
    StTensor *tensors;
    int n, cap;
    unsigned char *data;
    size_t data_len, data_cap;
    char **mk, **mv;
    int n_meta;
};

StWriter *st_writer_new(void) { return callocCheck(1, sizeof(StWriter)); }

void st_writer_add_f32(StWriter *w, const char *name, int ndim, const int64_t *shape, const float *data) {
    if (w->n == w->cap) w->tensors = reallocCheck(w->tensors, sizeof(StTensor) * (size_t)(w->cap = w->cap * 2 + 16));
    StTensor *t = &w->tensors[w->n++];
    memset(t, 0, sizeof *t);
    t->name = strdupCheck(name);
    strcpy(t->dtype, "F32");
    t->ndim = ndim;
    size_t count = 1;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i], count *= (size_t)shape[i];
    size_t bytes = count * 4;
    if (w->data_len + bytes > w->data_cap) {
        while (w->data_len + bytes > w->data_cap) w->data_cap = w->data_cap * 2 + (1 << 20);
        w->data = reallocCheck(w->data, w->data_cap);
    }
    t->begin = w->data_len;
    // little-endian on disk
    for (size_t i = 0; i < count; i++) {
        uint32_t u;
        memcpy(&u, &data[i], 4);
        unsigned char *d = w->data + w->data_len + 4 * i;
        d[0] = (unsigned char)u, d[1] = (unsigned char)(u >> 8), d[2] = (unsigned char)(u >> 16),
        d[3] = (unsigned char)(u >> 24);
    }
    w->data_len += bytes;
    t->end = w->data_len;
}

void st_writer_meta(StWriter *w, const char *key, const char *value) {
    w->mk = reallocCheck(w->mk, sizeof(char *) * (size_t)(w->n_meta + 1));
    w->mv = reallocCheck(w->mv, sizeof(char *) * (size_t)(w->n_meta + 1));
    w->mk[w->n_meta] = strdupCheck(key);
    w->mv[w->n_meta++] = strdupCheck(value);
}

void st_writer_free(StWriter *w) {
    if (!w) return;
    for (int i = 0; i < w->n; i++) free(w->tensors[i].name);
    for (int i = 0; i < w->n_meta; i++) free(w->mk[i]), free(w->mv[i]);
    free(w->tensors), free(w->data), free(w->mk), free(w->mv), free(w);
}

// noinline: inlined, gcc 12 takes the open_memstream buffer for a dangling pointer to a local
__attribute__((noinline)) static char *header_json(const StWriter *w, size_t *len) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) die("open_memstream failed");
    fputs("{\"__metadata__\":{", f);
    for (int i = 0; i < w->n_meta; i++) {
        if (i) fputc(',', f);
        json_write_string(f, w->mk[i]);
        fputc(':', f);
        json_write_string(f, w->mv[i]);
    }
    fputc('}', f);
    for (int i = 0; i < w->n; i++) {
        const StTensor *t = &w->tensors[i];
        fputc(',', f);
        json_write_string(f, t->name);
        fprintf(f, ":{\"dtype\":\"%s\",\"shape\":[", t->dtype);
        for (int k = 0; k < t->ndim; k++) fprintf(f, "%s%lld", k ? "," : "", (long long)t->shape[k]);
        fprintf(f, "],\"data_offsets\":[%zu,%zu]}", t->begin, t->end);
    }
    fputc('}', f);
    // pad with spaces so the data section starts 8-byte aligned
    long pos = ftell(f);
    while ((pos + 8) % 8) fputc(' ', f), pos++;
    fclose(f);
    *len = n;
    return buf;
}

static const char k_crc_key[] = "\"crc32\":\"";  // the pair's text up to its value

size_t st_crc_slot(const unsigned char *file, size_t size) {
    if (size < 8) return 0;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | file[i];
    if (hlen > size - 8) return 0;
    // JSON escapes a quote inside a string, so this text only appears as a key and its value
    size_t klen = sizeof k_crc_key - 1, slot = 0;
    const unsigned char *h = file + 8, *end = h + hlen;
    for (const unsigned char *p = h; (p = memmem(p, (size_t)(end - p), k_crc_key, klen)); p += klen) {
        if (slot || (size_t)(end - p) < klen + 9 || p[klen + 8] != '"') return 0;
        slot = (size_t)(p - file) + klen;
    }
    return slot;
}

int st_file_crc32(const unsigned char *file, size_t size, uint32_t *crc) {
    size_t slot = st_crc_slot(file, size);
    if (!slot) return -1;
    uLong c = crc32_z(0L, file, slot);
    c = crc32_z(c, (const unsigned char *)"00000000", 8);
    *crc = (uint32_t)crc32_z(c, file + slot + 8, size - slot - 8);
    return 0;
}

int st_writer_save(StWriter *w, const char *path, char *err, size_t errlen) {
    st_writer_meta(w, "crc32", "00000000");  // the placeholder the CRC is computed over
    size_t hlen;
    char *hdr = header_json(w, &hlen);
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    // the header's keys and values are JSON-escaped: exactly one "crc32":" pair, ours
    size_t slot = (size_t)(strstr(hdr, k_crc_key) - hdr) + sizeof k_crc_key - 1;
    uLong c = crc32_z(crc32_z(crc32_z(0L, len8, 8), (const unsigned char *)hdr, hlen), w->data, w->data_len);
    char hex[16];
    snprintf(hex, sizeof hex, "%08lx", c);
    for (int i = 0; i < 8; i++) hdr[slot + (size_t)i] = hex[i];
    AtomicFile a;  // PATH.<pid>.tmp, fsync, renamed over PATH (core/io.h): the old checkpoint or the new one
    int ok = atomic_open(&a, path, NULL, 0) == 0;
    ok = ok && fwrite(len8, 1, 8, a.f) == 8;
    ok = ok && fwrite(hdr, 1, hlen, a.f) == hlen;
    ok = ok && fwrite(w->data, 1, w->data_len, a.f) == w->data_len;
    if (ok) ok = atomic_commit(&a, NULL, 0) == 0;
    else if (a.f) atomic_abort(&a);  // errno stays the failed fwrite's
    if (!ok) {
        int e = errno;
        char *tmp = atomic_temp_path(path);
        snprintf(err, errlen, "cannot write %s (%s)", tmp, strerror(e));
        free(tmp);
        errno = e;
    }
    free(hdr);
    return ok ? 0 : -1;
}
