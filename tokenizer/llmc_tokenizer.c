// llm.c's tokenizer file (llmc_tokenizer.h).
#include "tokenizer/llmc_tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"

#define HEADER_BYTES (256 * sizeof(uint32_t))

static uint32_t u32_at(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

int llmc_is_tokenizer(const uint8_t *p, size_t len) { return len >= 4 && u32_at(p) == LLMC_TOKENIZER_MAGIC; }

Bpe *llmc_tokenizer_parse(const char *path, const uint8_t *p, size_t len, char *err, size_t errlen) {
    if (len < HEADER_BYTES) {
        snprintf(err, errlen, "%s: shorter than llm.c's 1024-byte tokenizer header", path);
        return NULL;
    }
    uint32_t version = u32_at(p + 4), vocab = u32_at(p + 8);
    if (version != 1 && version != 2) {
        snprintf(err, errlen, "%s: llm.c tokenizer version %u (expected 1 or 2)", path, version);
        return NULL;
    }
    if (vocab == 0 || vocab > (1u << 24)) {
        snprintf(err, errlen, "%s: vocab_size %u (expected 1 to %u)", path, vocab, 1u << 24);
        return NULL;
    }
    // Every record is at least 2 bytes (a length > 0, then the bytes): a vocabulary the file cannot
    // hold is refused before the tables for it are allocated (8 bytes a token: 128 MiB at 2^24,
    // for a 1 KiB file).
    if (vocab > (len - HEADER_BYTES) / 2) {
        snprintf(err, errlen, "%s: vocab_size %u needs at least %zu bytes of token records, the file has %zu", path,
                 vocab, 2 * (size_t)vocab, len - HEADER_BYTES);
        return NULL;
    }
    uint32_t eot = version == 2 ? u32_at(p + 12) : 50256;
    if (eot >= vocab) {
        snprintf(err, errlen, "%s: eot_token %u is outside the vocabulary of %u", path, eot, vocab);
        return NULL;
    }
    Bpe *b = callocCheck(1, sizeof *b);
    b->vocab_size = (int)vocab;
    b->eot = (int)eot;
    b->decode_only = 1;
    b->tok_off = mallocCheck(sizeof(uint32_t) * vocab);
    b->tok_len = mallocCheck(sizeof(uint32_t) * vocab);
    b->tok_bytes = mallocCheck(len - HEADER_BYTES);
    size_t pos = HEADER_BYTES, used = 0;
    for (uint32_t t = 0; t < vocab; t++) {
        if (pos >= len || p[pos] == 0 || pos + 1 + p[pos] > len) {
            snprintf(err, errlen, "%s: token %u: %s", path, t,
                     pos >= len        ? "the file ends before it"
                         : p[pos] == 0 ? "length 0"
                                       : "its bytes run past the end");
            bpe_free(b);
            return NULL;
        }
        uint32_t n = p[pos];
        memcpy(b->tok_bytes + used, p + pos + 1, n);
        b->tok_off[t] = (uint32_t)used, b->tok_len[t] = n;
        used += n, pos += 1 + n;
    }
    if (pos != len) {
        snprintf(err, errlen, "%s: %zu bytes after the last of %u tokens", path, len - pos, vocab);
        bpe_free(b);
        return NULL;
    }
    return b;
}
