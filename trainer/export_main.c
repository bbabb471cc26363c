// ./export RUN_OR_CKPT out=FILE.bin: writes a trained softmax + MLP model in llm.c's GPT-2 file
// format (trainer/llmc.h), so llm.c's train_gpt2 and test programs can run it. A model llm.c
// cannot hold (another mixer, no MLP, no position table, extra tensors) is refused, exit 2.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/io.h"
#include "core/run_dir.h"
#include "trainer/ckpt_open.h"
#include "trainer/llmc.h"

static const KeyDef k_export[] = {
    {"out", KEY_STRING, "", 0, 0, 0, "", "the llm.c model file to write (e.g. model.bin)"},
    {NULL, 0, NULL, 0, NULL, 0, NULL, NULL},
};

static void usage(FILE *f) {
    fprintf(f, "usage: ./export RUN_OR_CHECKPOINT out=FILE.bin\n"
               "  writes a softmax + MLP model as an llm.c GPT-2 file (version 3, fp32); a run folder\n"
               "  means its latest checkpoint\n");
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    Config opt;
    config_init(&opt);
    config_add_keys(&opt, k_export);
    config_apply_args(&opt, argc - 2, argv + 2);
    const char *out = cfg_str(&opt, "out");
    if (!*out) die_input("out: expected the file to write, e.g. out=model.bin");
    char *ckpt = ckpt_resolve(argv[1]);
    // never over the checkpoint it reads, nor into any run folder (config.conf, logs, `latest`)
    RunDirInput inputs[] = {{"checkpoint", ckpt}};
    run_dir_check_output("out", out, inputs, 1);
    char *parent = strdupCheck(out), *slash = strrchr(parent, '/');
    if (slash) {
        *slash = 0;
        if (slash > parent && !is_directory(parent)) die_input("out: the folder '%s' does not exist", parent);
    }
    free(parent);

    Config cfg;
    Model *m = ckpt_open_model(ckpt, &cfg, 1, 1, NULL);
    char err[1024];
    if (llmc_exportable(m, err, sizeof err) != 0) die_input("%s: %s", ckpt, err);
    if (llmc_save(out, m, err, sizeof err) != 0) die("%s", err);
    printf("%s -> %s (llm.c GPT-2, fp32: L=%d H=%d C=%d V=%d maxT=%d)\n", ckpt, out, m->s.L, m->s.H, m->s.C, m->s.V,
           m->s.T);
    model_free(m);
    config_free(&cfg);
    config_free(&opt);
    free(ckpt);
    return 0;
}
