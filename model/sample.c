#include "model/sample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/progress.h"

int sample_next(const real *logits, int limit, double temperature, int top_k, Rng *rng) {
    if (temperature <= 0 || top_k == 1) {
        int best = 0;
        for (int v = 1; v < limit; v++)
            if (logits[v] > logits[best]) best = v;
        return best;
    }
    int k = top_k <= 0 || top_k > limit ? limit : top_k;
    // the k largest, kept sorted (largest first; equal logits by lower id)
    int *idx = mallocCheck(sizeof(int) * (size_t)k);
    int n = 0;
    for (int v = 0; v < limit; v++) {
        if (n == k && !(logits[v] > logits[idx[k - 1]])) continue;
        int i = n < k ? n++ : k - 1;
        while (i > 0 && logits[v] > logits[idx[i - 1]]) {
            idx[i] = idx[i - 1];
            i--;
        }
        idx[i] = v;
    }
    double *p = mallocCheck(sizeof(double) * (size_t)k), sum = 0, mx = logits[idx[0]];
    for (int i = 0; i < k; i++) sum += p[i] = exp(((double)logits[idx[i]] - mx) / temperature);
    double u = rng_uniform(rng) * sum, acc = 0;
    int pick = idx[k - 1];
    for (int i = 0; i < k; i++) {
        acc += p[i];
        if (u < acc) {
            pick = idx[i];
            break;
        }
    }
    free(idx);
    free(p);
    return pick;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

size_t unescape_prompt(const char *s, uint8_t *out, const char *key) {
    size_t n = 0;
    for (const char *p = s; *p; p++) {
        if (*p != '\\') {
            out[n++] = (uint8_t)*p;
            continue;
        }
        p++;
        switch (*p) {
        case 'n': out[n++] = '\n'; break;
        case 't': out[n++] = '\t'; break;
        case 'r': out[n++] = '\r'; break;
        case '\\': out[n++] = '\\'; break;
        case 'x':
            if (hex_digit(p[1]) >= 0 && hex_digit(p[2]) >= 0) {
                out[n++] = (uint8_t)(hex_digit(p[1]) * 16 + hex_digit(p[2]));
                p += 2;
                break;
            }
            // fall through
        default: die_input("%s: unknown escape '\\%.3s' (expected \\n, \\t, \\r, \\\\ or \\xNN)", key, p);
        }
    }
    return n;
}

void prompt_tokens(Bpe *bpe, const char *prompt, int vocab, const char *key, TokBuf *out) {
    out->n = 0;
    if (bpe && !bpe->decode_only) {
        tokbuf_push(out, (uint32_t)bpe->eot);
        uint8_t *bytes = mallocCheck(strlen(prompt) + 1);
        size_t n = unescape_prompt(prompt, bytes, key);
        bpe_encode(bpe, bytes, n, out);
        free(bytes);
    } else {
        // A decode-only tokenizer (llm.c's file) has no merges: the prompt is token ids after
        // <|endoftext|>, as llm.c starts its samples.
        if (bpe) tokbuf_push(out, (uint32_t)bpe->eot);
        const char *p = prompt;
        for (;;) {
            while (*p == ' ' || *p == ',') p++;
            if (!*p) break;
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p || (*end && *end != ' ' && *end != ','))
                die_input("%s: %s the prompt is token ids separated by spaces, got '%s'", key,
                          bpe ? "with llm.c's tokenizer file (it cannot encode text)" : "without a tokenizer", prompt);
            if (v < 0 || v >= vocab) die_input("%s: token %ld is outside the vocabulary [0, %d)", key, v, vocab);
            tokbuf_push(out, (uint32_t)v);
            p = end;
        }
        if (out->n == 0) tokbuf_push(out, 0);
    }
    for (size_t i = 0; i < out->n; i++)
        if (out->v[i] >= (uint32_t)vocab)
            die_input("%s: the prompt needs token %u but the model's vocabulary has %d (a different tokenizer?)", key,
                      out->v[i], vocab);
}

int sample_generate(Generator *g, const uint32_t *prompt, size_t n_prompt, int n, double temperature, int top_k,
                    int limit, Rng *rng, token_fn fn, void *ctx) {
    const real *logits = NULL;
    generator_reset(g);
    for (size_t i = 0; i < n_prompt; i++) {
        if (progress_stopped()) return -1;
        logits = generator_feed(g, (int)prompt[i]);
    }
    for (int i = 0; i < n; i++) {
        if (progress_stopped()) return -1;  // a signal: the sample is given up within a token
        int tok = sample_next(logits, limit, temperature, top_k, rng);
        fn(ctx, (uint32_t)tok);
        if (i + 1 < n) logits = generator_feed(g, tok);
    }
    return 0;
}

void sample_require_tokenizer(const Bpe *b, const char *path, int vocab, uint32_t id, const char *where) {
    if (!b || vocab <= 0) return;
    uint32_t have = bpe_identity(b);
    if (b->vocab_size != vocab || have != id)
        die_input("tokenizer: %s (vocabulary %d, identity %08x) is not the tokenizer the model was trained with "
                  "(vocabulary %d, identity %08x, recorded in %s)",
                  path, b->vocab_size, have, vocab, id, where);
}

int sample_token_limit(const Bpe *b, const char *path, int vocab) {
    if (!b || b->vocab_size >= vocab) return vocab;
    static int warned;
    if (!warned++)
        fprintf(stderr,
                "note: tokenizer %s has %d tokens, the model's vocabulary %d: samples draw from the first %d "
                "(the others have no text)\n",
                path, b->vocab_size, vocab, b->vocab_size);
    return b->vocab_size;
}
