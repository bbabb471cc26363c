#include "tokenizer/bpe.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/io.h"
#include "tokenizer/chunks.h"

void tokbuf_push(TokBuf *b, uint32_t t) {
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 1024;
        b->v = reallocCheck(b->v, b->cap * sizeof *b->v);
    }
    b->v[b->n++] = t;
}

void bytebuf_append(ByteBuf *b, const void *p, size_t n) {
    if (b->n + n > b->cap) {
        while (b->n + n > b->cap) b->cap = b->cap ? 2 * b->cap : 1024;
        b->v = reallocCheck(b->v, b->cap);
    }
    memcpy(b->v + b->n, p, n);
    b->n += n;
}

// ---------------------------------------------------------------------------------------------

static void build_tables(Bpe *b) {
    int V = b->vocab_size;
    b->tok_off = mallocCheck((size_t)V * sizeof *b->tok_off);
    b->tok_len = mallocCheck((size_t)V * sizeof *b->tok_len);
    ByteBuf bytes = {0};
    for (int i = 0; i < 256; i++) {
        uint8_t c = (uint8_t)i;
        b->tok_off[i] = (uint32_t)bytes.n;
        b->tok_len[i] = 1;
        bytebuf_append(&bytes, &c, 1);
    }
    pairmap_init(&b->ranks, (size_t)b->n_merges);
    for (int k = 0; k < b->n_merges; k++) {
        uint32_t l = b->merges[k][0], r = b->merges[k][1], id = 256 + (uint32_t)k;
        b->tok_off[id] = (uint32_t)bytes.n;
        b->tok_len[id] = b->tok_len[l] + b->tok_len[r];
        // the two halves may be re-read after a realloc: copy through offsets
        size_t ol = b->tok_off[l], nl = b->tok_len[l], orr = b->tok_off[r], nr = b->tok_len[r];
        if (bytes.n + nl + nr > bytes.cap) {
            while (bytes.n + nl + nr > bytes.cap) bytes.cap = 2 * bytes.cap;
            bytes.v = reallocCheck(bytes.v, bytes.cap);
        }
        memmove(bytes.v + bytes.n, bytes.v + ol, nl);
        memmove(bytes.v + bytes.n + nl, bytes.v + orr, nr);
        bytes.n += nl + nr;
        pairmap_put(&b->ranks, l, r, k);
    }
    for (int s = 0; s < b->n_special; s++) {
        int id = 256 + b->n_merges + s;
        b->tok_off[id] = (uint32_t)bytes.n;
        b->tok_len[id] = (uint32_t)strlen(b->special[s]);
        bytebuf_append(&bytes, b->special[s], strlen(b->special[s]));
    }
    b->tok_bytes = bytes.v;
    strmap_init(&b->cache);
}

Bpe *bpe_create(const uint32_t (*merges)[2], int n_merges) {
    Bpe *b = callocCheck(1, sizeof *b);
    b->n_merges = n_merges;
    b->n_special = 1;
    b->vocab_size = 256 + n_merges + 1;
    b->eot = 256 + n_merges;
    b->merges = mallocCheck((size_t)(n_merges ? n_merges : 1) * sizeof *b->merges);
    if (n_merges) memcpy(b->merges, merges, (size_t)n_merges * sizeof *b->merges);
    b->special = mallocCheck(sizeof *b->special);
    b->special[0] = strdupCheck(BPE_EOT_NAME);
    build_tables(b);
    return b;
}

uint32_t bpe_identity(const Bpe *b) {
    uLong c = crc32(0L, Z_NULL, 0);
    for (int k = 0; k < b->n_merges; k++)
        for (int j = 0; j < 2; j++) {
            uint32_t v = b->merges[k][j];
            unsigned char le[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                                   (unsigned char)(v >> 24)};
            c = crc32(c, le, 4);
        }
    for (int k = 0; k < b->n_special; k++)
        c = crc32(c, (const unsigned char *)b->special[k], (uInt)strlen(b->special[k]) + 1);
    return (uint32_t)c;
}

void bpe_free(Bpe *b) {
    if (!b) return;
    free(b->merges);
    for (int s = 0; s < b->n_special; s++) free(b->special[s]);
    free(b->special);
    free(b->tok_off);
    free(b->tok_len);
    free(b->tok_bytes);
    pairmap_free(&b->ranks);
    strmap_free(&b->cache);
    free(b->cache_off);
    free(b->cache_n);
    free(b->cache_toks.v);
    free(b);
}

// ---------------------------------------------------------------------------------------------
// The file

void bpe_escape(const uint8_t *p, size_t n, ByteBuf *out) {
    bytebuf_append(out, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        char e[8];
        uint8_t c = p[i];
        if (c == '"' || c == '\\') snprintf(e, sizeof e, "\\%c", c);
        else if (c >= 0x20 && c < 0x7f) snprintf(e, sizeof e, "%c", c);
        else snprintf(e, sizeof e, "\\x%02x", c);
        bytebuf_append(out, e, strlen(e));
    }
    bytebuf_append(out, "\"", 1);
}

static void bprintf(ByteBuf *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bprintf(ByteBuf *out, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    bytebuf_append(out, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

void bpe_save(const Bpe *b, const char *path) {
    ByteBuf t = {0};
    bprintf(&t, "%s\n", BPE_MAGIC);
    bprintf(&t,
            "# Byte-level BPE (attnscope). Ids 0-255 are the bytes. Merge line k (k = 0, 1, ...) makes\n"
            "# id 256+k from the two ids on it; the text after the tab is the new token's bytes,\n"
            "# for people (ignored when loading). Special tokens follow the merges. The last line is\n"
            "# the CRC32 of every byte before it.\n");
    bprintf(&t, "vocab_size %d\nmerges %d\npretokenizer %s\n", b->vocab_size, b->n_merges, BPE_PRETOKENIZER);
    for (int s = 0; s < b->n_special; s++) bprintf(&t, "special %d %s\n", 256 + b->n_merges + s, b->special[s]);
    for (int k = 0; k < b->n_merges; k++) {
        bprintf(&t, "%u %u\t", b->merges[k][0], b->merges[k][1]);
        size_t n = 0;
        const uint8_t *p = bpe_token_bytes(b, 256 + (uint32_t)k, &n);
        bpe_escape(p, n, &t);
        bytebuf_append(&t, "\n", 1);
    }
    uint32_t crc = (uint32_t)crc32(0L, t.v, (uInt)t.n);
    bprintf(&t, "crc32 %08x\n", crc);
    AtomicFile out;
    char err[2600];
    if (atomic_open(&out, path, err, sizeof err) != 0) die_input("%s", err);
    fwriteCheck(t.v, 1, t.n, out.f, out.tmp);
    if (atomic_commit(&out, err, sizeof err) != 0) die("%s", err);
    free(t.v);
}

#define FAIL(...)                                                                                                      \
    do {                                                                                                               \
        snprintf(err, errlen, __VA_ARGS__);                                                                            \
        goto fail;                                                                                                     \
    } while (0)

// Parses "<u32> <u32>" at the start of s; 0 on success.
static int parse_pair(const char *s, uint32_t *a, uint32_t *b) {
    char *end;
    if (*s < '0' || *s > '9') return -1;
    unsigned long x = strtoul(s, &end, 10);
    if (*end != ' ' || end[1] < '0' || end[1] > '9') return -1;
    unsigned long y = strtoul(end + 1, &end, 10);
    if (*end != 0 && *end != '\t') return -1;
    if (x > 0x7fffffff || y > 0x7fffffff) return -1;
    *a = (uint32_t)x;
    *b = (uint32_t)y;
    return 0;
}

static int parse_int_field(const char *line, const char *key, long *v) {
    size_t k = strlen(key);
    if (strncmp(line, key, k) || line[k] != ' ') return -1;
    char *end;
    errno = 0;
    *v = strtol(line + k + 1, &end, 10);
    return *end || errno || line[k + 1] < '0' || line[k + 1] > '9' ? -1 : 0;
}

Bpe *bpe_parse(const char *path, char *text, size_t len, char *err, size_t errlen) {
    Bpe *b = NULL;
    uint32_t(*merges)[2] = NULL;
    size_t magic = strlen(BPE_MAGIC);
    if (len < magic + 1 || memcmp(text, BPE_MAGIC, magic) || text[magic] != '\n')
        FAIL("%s: not a tokenizer file (expected '%s' on line 1)", path, BPE_MAGIC);
    if (strlen(text) != len) FAIL("%s: a NUL byte inside: the file is corrupt", path);
    // the CRC line: the last line of the file
    if (len < 2 || text[len - 1] != '\n') FAIL("%s: does not end with a newline: the file is truncated", path);
    size_t last = len - 1;
    while (last > 0 && text[last - 1] != '\n') last--;
    unsigned stored;
    char tail[32];
    if (len - last > 20 || sscanf(text + last, "crc32 %8x%c", &stored, tail) != 2 || tail[0] != '\n')
        FAIL("%s: no 'crc32' line at the end: the file is truncated", path);
    uint32_t crc = (uint32_t)crc32(0L, (const Bytef *)text, (uInt)last);
    if (crc != stored)
        FAIL("%s: CRC32 of the contents is %08x but the file says %08x: the file is corrupt or was edited", path, crc, stored);
    text[last] = 0;

    long vocab = -1, n_merges = -1;
    const char *names[64];
    int n_special = 0, eot = -1, k = 0, lineno = 1;
    char *line = strchr(text, '\n') + 1;
    for (char *next; *line; line = next) {
        lineno++;
        next = strchr(line, '\n');
        *next++ = 0;
        if (line[0] == '#') continue;
        if (vocab < 0) {
            if (parse_int_field(line, "vocab_size", &vocab) || vocab < 257 || vocab > (1L << 24))
                FAIL("%s:%d: expected 'vocab_size N' with 257 <= N <= %ld, got '%.60s'", path, lineno, 1L << 24, line);
        } else if (n_merges < 0) {
            if (parse_int_field(line, "merges", &n_merges) || n_merges < 0 || n_merges > vocab - 257)
                FAIL("%s:%d: expected 'merges N' with 0 <= N <= vocab_size - 257 = %ld, got '%.60s'", path, lineno,
                     vocab - 257, line);
            merges = mallocCheck((size_t)(n_merges ? n_merges : 1) * sizeof *merges);
        } else if (!strncmp(line, "pretokenizer ", 13)) {
            if (strcmp(line + 13, BPE_PRETOKENIZER))
                FAIL("%s:%d: pretokenizer '%.60s' is not supported (this build knows '%s')", path, lineno, line + 13,
                     BPE_PRETOKENIZER);
        } else if (!strncmp(line, "special ", 8)) {
            char *end;
            long id = strtol(line + 8, &end, 10);
            if (id != 256 + n_merges + n_special || *end != ' ' || !end[1])
                FAIL("%s:%d: expected 'special %ld NAME', got '%.60s'", path, lineno, 256 + n_merges + n_special, line);
            if (n_special == 64) FAIL("%s:%d: more than 64 special tokens", path, lineno);
            if (!strcmp(end + 1, BPE_EOT_NAME)) eot = (int)id;
            names[n_special++] = end + 1;
        } else {
            uint32_t l, r;
            if (k == n_merges) FAIL("%s:%d: more merge lines than the %ld declared", path, lineno, n_merges);
            if (parse_pair(line, &l, &r) || l >= 256u + (uint32_t)k || r >= 256u + (uint32_t)k)
                FAIL("%s:%d: merge %d: expected two token ids below %d, got '%.60s'", path, lineno, k, 256 + k, line);
            merges[k][0] = l;
            merges[k][1] = r;
            k++;
        }
    }
    if (vocab < 0 || n_merges < 0) FAIL("%s: missing the 'vocab_size' or 'merges' line", path);
    if (k != n_merges) FAIL("%s: %d merge lines but the header declares %ld", path, k, n_merges);
    if (256 + n_merges + n_special != vocab)
        FAIL("%s: vocab_size %ld is not 256 + %ld merges + %d special tokens", path, vocab, n_merges, n_special);
    if (eot < 0) FAIL("%s: no 'special ... %s' line", path, BPE_EOT_NAME);
    b = callocCheck(1, sizeof *b);
    b->n_merges = (int)n_merges;
    b->n_special = n_special;
    b->vocab_size = (int)vocab;
    b->eot = eot;
    b->merges = merges;
    merges = NULL;
    b->special = callocCheck((size_t)n_special, sizeof *b->special);
    for (int s = 0; s < n_special; s++) b->special[s] = strdupCheck(names[s]);
    build_tables(b);
    for (int m = 0; m < b->n_merges; m++)
        if (pairmap_get(&b->ranks, b->merges[m][0], b->merges[m][1]) != m)
            FAIL("%s: merge %d repeats the pair %u %u of an earlier merge", path, m, b->merges[m][0], b->merges[m][1]);
    return b;
fail:
    free(merges);
    bpe_free(b);
    return NULL;
}

// ---------------------------------------------------------------------------------------------
// Encoding

// Applies the merges to one chunk: repeatedly the lowest-ranked adjacent pair (leftmost among
// equals), which replays training's order. Returns the token count written to out.
static int merge_chunk(const Bpe *b, const uint8_t *p, int n, uint32_t *out) {
    int32_t rank[CHUNK_MAX];
    for (int i = 0; i < n; i++) out[i] = p[i];
    const int32_t none = INT32_MAX;
    for (int i = 0; i + 1 < n; i++) {
        int32_t r = pairmap_get(&b->ranks, out[i], out[i + 1]);
        rank[i] = r < 0 ? none : r;
    }
    while (n > 1) {
        int best = 0;
        for (int i = 1; i + 1 < n; i++)
            if (rank[i] < rank[best]) best = i;
        if (rank[best] == none) break;
        out[best] = 256 + (uint32_t)rank[best];
        memmove(out + best + 1, out + best + 2, sizeof *out * (size_t)(n - best - 2));
        if (best + 2 < n)
            memmove(rank + best + 1, rank + best + 2, sizeof *rank * (size_t)(n - best - 3 > 0 ? n - best - 3 : 0));
        n--;
        if (best + 1 < n) {
            int32_t r = pairmap_get(&b->ranks, out[best], out[best + 1]);
            rank[best] = r < 0 ? none : r;
        }
        if (best > 0) {
            int32_t r = pairmap_get(&b->ranks, out[best - 1], out[best]);
            rank[best - 1] = r < 0 ? none : r;
        }
    }
    return n;
}

void bpe_encode_chunk(Bpe *b, const uint8_t *chunk, int len, TokBuf *out) {
    if (b->decode_only) die("internal error: encoding with a decode-only tokenizer (use tokenizer_load_encoder)");
    if (len == 1) {  // a single byte is its own token
        tokbuf_push(out, chunk[0]);
        return;
    }
    uint64_t h = hash_bytes(chunk, (size_t)len);
    int32_t id = strmap_find(&b->cache, chunk, (size_t)len, h);
    if (id < 0) {
        // bound the cache: start over once it holds 1M chunks
        if (b->cache.n >= (1 << 20)) {
            strmap_clear(&b->cache);
            b->cache_toks.n = 0;
        }
        uint32_t toks[CHUNK_MAX];
        int n = merge_chunk(b, chunk, len, toks);
        int added;
        id = strmap_intern(&b->cache, chunk, (size_t)len, h, &added);
        if (b->cache_cap < b->cache.n_cap) {
            b->cache_cap = b->cache.n_cap;
            b->cache_off = reallocCheck(b->cache_off, (size_t)b->cache_cap * sizeof *b->cache_off);
            b->cache_n = reallocCheck(b->cache_n, (size_t)b->cache_cap * sizeof *b->cache_n);
        }
        b->cache_off[id] = (uint32_t)b->cache_toks.n;
        b->cache_n[id] = (uint32_t)n;
        for (int i = 0; i < n; i++) tokbuf_push(&b->cache_toks, toks[i]);
    }
    const uint32_t *t = b->cache_toks.v + b->cache_off[id];
    uint32_t n = b->cache_n[id];
    if (out->n + n > out->cap) {
        while (out->n + n > out->cap) out->cap = out->cap ? 2 * out->cap : 1024;
        out->v = reallocCheck(out->v, out->cap * sizeof *out->v);
    }
    memcpy(out->v + out->n, t, n * sizeof *t);
    out->n += n;
}

typedef struct {
    Bpe *b;
    TokBuf *out;
} EncodeCtx;

static void encode_cb(void *ctx, const uint8_t *chunk, int len) {
    EncodeCtx *e = ctx;
    bpe_encode_chunk(e->b, chunk, len, e->out);
}

void bpe_encode(Bpe *b, const uint8_t *text, size_t n, TokBuf *out) {
    EncodeCtx e = {b, out};
    chunks_of(text, n, encode_cb, &e);
}

const uint8_t *bpe_token_bytes(const Bpe *b, uint32_t id, size_t *len) {
    if (id >= (uint32_t)b->vocab_size) return NULL;
    *len = b->tok_len[id];
    return b->tok_bytes + b->tok_off[id];
}

void bpe_decode(const Bpe *b, const uint32_t *tokens, size_t n, ByteBuf *out) {
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const uint8_t *p = bpe_token_bytes(b, tokens[i], &len);
        if (p) {
            bytebuf_append(out, p, len);
        } else {
            char s[32];
            snprintf(s, sizeof s, "<?%u>", tokens[i]);
            bytebuf_append(out, s, strlen(s));
        }
    }
}
