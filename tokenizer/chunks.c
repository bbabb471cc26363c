#include "tokenizer/chunks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/io.h"

enum { SPACE, LETTER, DIGIT, OTHER };

static const uint8_t *byte_class(void) {
    static uint8_t cls[256];
    static int ready;
    if (!ready) {
        for (int c = 0; c < 256; c++) {
            if (c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r') cls[c] = SPACE;
            else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80) cls[c] = LETTER;
            else if (c >= '0' && c <= '9') cls[c] = DIGIT;
            else cls[c] = OTHER;
        }
        ready = 1;
    }
    return cls;
}

int chunk_length(const uint8_t *p, size_t n) {
    const uint8_t *cls = byte_class();
    size_t lim = n < CHUNK_MAX ? n : CHUNK_MAX;
    size_t i;
    if (p[0] == ' ' && n > 1 && cls[p[1]] != SPACE) {  // " word"
        int k = cls[p[1]];
        for (i = 2; i < lim && cls[p[i]] == k; i++) {}
        return (int)i;
    }
    if (cls[p[0]] != SPACE) {
        int k = cls[p[0]];
        for (i = 1; i < lim && cls[p[i]] == k; i++) {}
        return (int)i;
    }
    // whitespace: measure the run up to CHUNK_MAX + 1
    size_t lim1 = n < CHUNK_MAX + 1 ? n : CHUNK_MAX + 1;
    for (i = 1; i < lim1 && cls[p[i]] == SPACE; i++) {}
    if (i > CHUNK_MAX) return CHUNK_MAX;  // a long run: cut, no look-ahead rule
    if (i == n || i == 1) return (int)i;  // end of text, or one character before a non-space
    return (int)i - 1;                    // leave the last one for the next chunk
}

void chunks_init(ChunkStream *s) { memset(s, 0, sizeof *s); }

void chunks_free(ChunkStream *s) {
    free(s->buf);
    memset(s, 0, sizeof *s);
}

// Emits chunks from p[0..n) while at least `keep` bytes remain after the chunk start; returns the
// bytes consumed.
static size_t emit(const uint8_t *p, size_t n, size_t keep, chunk_fn fn, void *ctx) {
    size_t pos = 0;
    while (pos < n && n - pos >= keep) {
        int len = chunk_length(p + pos, n - pos);
        fn(ctx, p + pos, len);
        pos += (size_t)len;
    }
    return pos;
}

void chunks_feed(ChunkStream *s, const uint8_t *p, size_t n, chunk_fn fn, void *ctx) {
    const size_t keep = CHUNK_MAX + 2;
    if (s->len == 0 && n >= keep) {  // nothing pending: cut straight from the caller's block
        size_t used = emit(p, n, keep, fn, ctx);
        p += used;
        n -= used;
    }
    if (s->len + n > s->cap) {
        while (s->len + n > s->cap) s->cap = s->cap ? 2 * s->cap : 4096;
        s->buf = reallocCheck(s->buf, s->cap);
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    size_t used = emit(s->buf, s->len, keep, fn, ctx);
    memmove(s->buf, s->buf + used, s->len - used);
    s->len -= used;
}

void chunks_finish(ChunkStream *s, chunk_fn fn, void *ctx) {
    emit(s->buf, s->len, 1, fn, ctx);
    s->len = 0;
}

void chunks_of(const uint8_t *p, size_t n, chunk_fn fn, void *ctx) { emit(p, n, 1, fn, ctx); }

uint64_t read_text_file(const char *path, block_fn fn, void *ctx) {
    int is_stdin = !strcmp(path, "-");
    if (!is_stdin && is_directory(path)) die_input("%s: is a folder, expected a text file", path);
    gzFile gz = is_stdin ? gzdopen(0, "rb") : gzopen(path, "rb");
    if (!gz) die_input("%s: cannot open (%s)", path, errno ? strerror(errno) : "out of memory");
    gzbuffer(gz, 1 << 17);
    enum { BLOCK = 1 << 20 };
    uint8_t *buf = mallocCheck(BLOCK);
    uint64_t total = 0;
    for (;;) {
        int got = gzread(gz, buf, BLOCK);
        if (got < 0) {
            int code;
            const char *msg = gzerror(gz, &code);
            die_input("%s: cannot read: %s", path, code == Z_ERRNO ? strerror(errno) : msg);
        }
        if (got == 0) {
            int code;
            const char *msg = gzerror(gz, &code);
            // zlib reports a gzip stream cut short only here, as a buffer error at the end
            if (code != Z_OK) die_input("%s: damaged gzip data: %s", path, msg);
            break;
        }
        fn(ctx, buf, (size_t)got);
        total += (uint64_t)got;
    }
    free(buf);
    gzclose(gz);
    return total;
}
