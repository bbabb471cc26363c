// hf_logits CKPT OUT.f32 TOKEN...: the logits this project's model gives at every position of one
// sequence of token ids, written to OUT.f32 as n x vocab_size little-endian float32, row t the
// prediction after token t. For tests/hf/hf_check.py, which runs the same tokens through the
// folder `./export CKPT format=hf` wrote, in transformers, and compares (docs/export.md).
// Built by `make build/hf_logits` (tests/hf/hf.mk); not part of `make test`.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/model.h"
#include "trainer/ckpt_open.h"

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: hf_logits RUN_OR_CHECKPOINT OUT.f32 TOKEN...\n");
        return 2;
    }
    char *ckpt = ckpt_resolve(argv[1]);
    Config cfg;
    int n = argc - 3;
    Model *m = ckpt_open_model(ckpt, &cfg, 1, n, NULL);
    const ModelShape *s = &m->s;
    if (n > s->T) die_input("%d tokens, but the model's seq_len is %d", n, s->T);
    int *tokens = mallocCheck(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) {
        char *end;
        long v = strtol(argv[3 + i], &end, 10);
        if (*end || v < 0 || v >= s->V) die_input("token '%s': expected an id in [0, %d)", argv[3 + i], s->V);
        tokens[i] = (int)v;
    }
    // No targets: the forward computes ln_f of every position (m->lnf) and no loss; the logits
    // are then ln_f(x) wte^T, the LM head tied to the embedding as the model's own head.
    model_forward(m, tokens, NULL, 1, n, 0);
    float *logits = mallocCheck(sizeof(float) * (size_t)n * s->V);
    for (int t = 0; t < n; t++)
        for (int v = 0; v < s->V; v++) {
            double z = 0;
            for (int c = 0; c < s->C; c++) z += (double)m->lnf[(size_t)t * s->C + c] * m->wte[(size_t)v * s->C + c];
            logits[(size_t)t * s->V + v] = (float)z;
        }
    FILE *f = fopenCheck(argv[2], "wb");
    fwriteCheck(logits, sizeof(float), (size_t)n * s->V, f, argv[2]);
    fcloseCheck(f, argv[2]);
    printf("%s: %d x %d logits -> %s\n", ckpt, n, s->V, argv[2]);
    free(logits);
    free(tokens);
    model_free(m);
    config_free(&cfg);
    free(ckpt);
    return 0;
}
