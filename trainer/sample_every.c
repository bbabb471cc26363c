// The trainer's `sample_every` hook (sample_every.h).
#include "trainer/sample_every.h"

#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/progress.h"
#include "core/rng.h"
#include "core/runlog.h"
#include "model/generate.h"
#include "model/sample.h"
#include "tokenizer/tokenizer_file.h"

// The sample's tokens, and past 3 s a live line of how far it is (a long sample_tokens).
typedef struct {
    TokBuf *buf;
    int n;
    double t0, shown;
} Collect;

static void collect(void *ctx, uint32_t tok) {
    Collect *c = ctx;
    tokbuf_push(c->buf, tok);
    double el = now_seconds() - c->t0;
    if (el >= 3 && el - c->shown >= 0.5) {
        c->shown = el;
        progress_line("sampling: %zu of %d tokens", c->buf->n, c->n);
    }
}

// Token ids as text: "12 7 0".
static void ids_text(const uint32_t *t, size_t n, ByteBuf *out) {
    for (size_t i = 0; i < n; i++) {
        char s[16];
        int k = snprintf(s, sizeof s, i ? " %u" : "%u", t[i]);
        bytebuf_append(out, s, (size_t)k);
    }
}

// The config's tokenizer, loaded once (NULL when the key is empty); a bad file exits 2.
static Bpe *training_tokenizer(const Config *cfg) {
    static char *loaded_path;
    static Bpe *bpe;
    const char *path = cfg_str(cfg, "tokenizer");
    if (*path && (!loaded_path || strcmp(loaded_path, path))) {
        bpe_free(bpe);
        free(loaded_path);
        char err[1024];
        bpe = tokenizer_read(path, err, sizeof err);
        if (!bpe) die_input("tokenizer: %s", err);
        loaded_path = strdupCheck(path);
    }
    return *path ? bpe : NULL;
}

void sample_check_tokenizer(const Config *cfg, int vocab, uint32_t id) {
    sample_require_tokenizer(training_tokenizer(cfg), cfg_str(cfg, "tokenizer"), vocab, id, "the training shards");
}

void sample_during_training(Model *m, const Config *cfg, long step, FILE *log) {
    Bpe *b = training_tokenizer(cfg);
    const char *prompt = cfg_str(cfg, "sample_prompt");
    TokBuf pt = {0}, gen = {0};
    prompt_tokens(b, prompt, m->s.V, "sample_prompt", &pt);
    int limit = sample_token_limit(b, cfg_str(cfg, "tokenizer"), m->s.V);
    Rng rng;
    rng_seed(&rng, seed_mix((uint64_t)cfg_int(cfg, "seed"), (uint64_t)step));
    Generator *g = generator_create(m, -1);
    Collect col = {&gen, (int)cfg_int(cfg, "sample_tokens"), now_seconds(), 0};
    int stopped = sample_generate(g, pt.v, pt.n, col.n, cfg_float(cfg, "sample_temperature"),
                                  (int)cfg_int(cfg, "sample_top_k"), limit, &rng, collect, &col);
    generator_free(g);
    if (stopped) {  // interrupted: the sample is left out, the trainer saves the step and stops
        progress_break();
        printf("step %6ld | sample: interrupted after %zu tokens, not logged\n", step, gen.n);
        fflush(stdout);
        free(pt.v), free(gen.v);
        return;
    }
    ByteBuf ptext = {0}, text = {0};
    if (b) {
        bpe_decode(b, pt.v + 1, pt.n - 1, &ptext);  // the prompt without the leading <|endoftext|>
        bpe_decode(b, gen.v, gen.n, &text);
    } else {
        ids_text(pt.v, pt.n, &ptext);
        ids_text(gen.v, gen.n, &text);
    }
    progress_break();
    if (b) {  // text: on lines of its own, as it would read
        printf("step %6ld | sample:\n", step);
        if (ptext.n) fwrite(ptext.v, 1, ptext.n, stdout);  // .v is NULL when empty
        if (text.n) fwrite(text.v, 1, text.n, stdout);
        if (!text.n || text.v[text.n - 1] != '\n') fputc('\n', stdout);
    } else {
        printf("step %6ld | sample: %.*s | %.*s\n", step, (int)ptext.n, ptext.n ? (char *)ptext.v : "", (int)text.n,
               text.n ? (char *)text.v : "");
    }
    fflush(stdout);
    if (log) {
        runlog_write_sample(log, step, ptext.v, ptext.n, text.v, text.n);
        fflush(log);
    }
    free(pt.v);
    free(gen.v);
    free(ptext.v);
    free(text.v);
}
