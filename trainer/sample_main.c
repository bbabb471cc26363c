// ./sample CHECKPOINT [key=value ...]: loads a checkpoint (or a run folder's latest), then streams
// `n` tokens after `prompt`, decoded through the run's tokenizer (token ids without one).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/io.h"
#include "model/keys.h"
#include "core/run_dir.h"
#include "trainer/checkpoint.h"
#include "trainer/ckpt_open.h"
#include "model/generate.h"
#include "model/sample.h"
#include "tokenizer/tokenizer_file.h"

static const KeyDef k_sample[] = {
    {"prompt", KEY_STRING, "", 0, 0, 0, "", "text to continue (escapes \\n \\t \\xNN); token ids without a tokenizer"},
    {"n", KEY_INT, "200", RANGE_NONNEG, 0, 0, "", "tokens to generate"},
    {"temperature", KEY_FLOAT, "0.8", RANGE_NONNEG, 0, 0, "", "softmax temperature (0 = greedy)"},
    {"top_k", KEY_INT, "40", RANGE_NONNEG, 0, 0, "", "sample among the k most likely tokens (0 = all)"},
    {"seed", KEY_INT, "1", RANGE_NONNEG, 0, 0, "", "sampling seed"},
    {"tokenizer", KEY_STRING, "", 0, 0, 0, "", "tokenizer file (default: the run's `tokenizer` key)"},
    {"cache", KEY_BOOL, "true", 0, 0, 0, "", "true: the mixers' step() (KV cache / recurrent state); false: re-run the prefix"},
    {"threads", KEY_INT, "1", RANGE_THREADS, 0, 0, "", "OpenMP threads (0 = OpenMP default, at most 1024)"},
    {NULL, 0, NULL, 0, NULL, 0, NULL, NULL},
};

static void usage(FILE *f) {
    fprintf(f, "usage: ./sample CHECKPOINT|RUN_FOLDER [key=value ...]\nkeys (default):\n");
    for (const KeyDef *k = k_sample; k->name; k++) fprintf(f, "  %-12s %-6s %s\n", k->name, k->def, k->help);
}

typedef struct {
    const Bpe *bpe;
    long count;
} Stream;

static void print_token(void *ctx, uint32_t tok) {
    Stream *s = ctx;
    if (s->bpe) {
        size_t len;
        const uint8_t *p = bpe_token_bytes(s->bpe, tok, &len);
        fwrite(p, 1, len, stdout);
    } else {
        printf(s->count ? " %u" : "%u", tok);
    }
    s->count++;
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    Config opt;
    config_init(&opt);
    config_add_keys(&opt, k_sample);
    // prompt= is taken verbatim (config values are trimmed, and a prompt may end in a space)
    const char *prompt = "";
    for (int i = 2; i < argc; i++) {
        if (!strncmp(argv[i], "prompt=", 7)) prompt = argv[i] + 7;
        else config_apply_args(&opt, 1, &argv[i]);
    }
    if (cfg_int(&opt, "threads") > 0) omp_set_num_threads((int)cfg_int(&opt, "threads"));

    char *ckpt = ckpt_resolve(argv[1]);
    Config cfg;
    TrainState ts;
    Model *m = ckpt_open_model(ckpt, &cfg, 1, 1, &ts);
    const ModelShape s = m->s;
    char err[1024];

    const char *tok_path = *cfg_str(&opt, "tokenizer") ? cfg_str(&opt, "tokenizer") : cfg_str(&cfg, "tokenizer");
    Bpe *bpe = NULL;
    if (*tok_path) {
        bpe = tokenizer_read(tok_path, err, sizeof err);
        if (!bpe)
            die_input("tokenizer: %s%s", err,
                      *cfg_str(&opt, "tokenizer") ? "" : " (the run's tokenizer; tokenizer=FILE names another)");
        sample_require_tokenizer(bpe, tok_path, ts.tokenizer_vocab, ts.tokenizer_id, ckpt);
    }
    TokBuf pt = {0};
    prompt_tokens(bpe, prompt, s.V, "prompt", &pt);
    int limit = sample_token_limit(bpe, tok_path, s.V);
    Generator *g = generator_create(m, cfg_bool(&opt, "cache") ? -1 : 0);
    Rng rng;
    rng_seed(&rng, (uint64_t)cfg_int(&opt, "seed"));

    // echo the prompt, then stream the continuation
    Stream st = {bpe, 0};
    if (bpe) {
        ByteBuf echo = {0};
        bpe_decode(bpe, pt.v + 1, pt.n - 1, &echo);
        if (echo.n) fwrite(echo.v, 1, echo.n, stdout);  // .v is NULL when the prompt is empty
        free(echo.v);
    } else {
        for (size_t i = 0; i < pt.n; i++) printf(i ? " %u" : "%u", pt.v[i]);
        printf(" |");
        st.count = 1;
    }
    fflush(stdout);
    int n = (int)cfg_int(&opt, "n");
    double t0 = now_seconds();
    sample_generate(g, pt.v, pt.n, n, cfg_float(&opt, "temperature"), (int)cfg_int(&opt, "top_k"), limit, &rng,
                    print_token, &st);
    double dt = now_seconds() - t0;
    printf("\n");
    fflush(stdout);
    fprintf(stderr, "[%s, step %ld: %d tokens after a %zu-token prompt in %.2f s (%.0f tokens/s); %s, %s]\n", ckpt,
            (long)ts.step, n, pt.n, dt, (double)(n + (long)pt.n) / (dt + 1e-9), cfg_str(&cfg, "mixer"),
            g->recurrent ? "step() on cached state" : "prefix re-run");
    generator_free(g);
    free(pt.v);
    bpe_free(bpe);
    model_free(m);
    config_free(&cfg);
    config_free(&opt);
    free(ckpt);
    return 0;
}
