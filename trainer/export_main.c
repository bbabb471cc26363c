// ./export RUN_OR_CKPT out=PATH [format=llmc|hf|safetensors]: writes a trained model for other
// tools (docs/export.md):
//   llmc         llm.c's GPT-2 file (trainer/llmc.h), for llm.c's train_gpt2 and test programs
//   hf           a Hugging Face GPT-2 folder (trainer/hf_export.h), for transformers and TransformerLens
//   safetensors  this project's checkpoint format without the optimizer state: the weights to share
// A model the format cannot hold (another mixer, no position table, ...) is refused, exit 2, with
// one line naming the key, and nothing is written.
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/config.h"
#include "core/io.h"
#include "core/run_dir.h"
#include "trainer/checkpoint.h"
#include "trainer/ckpt_open.h"
#include "trainer/hf_export.h"
#include "trainer/llmc.h"

static const KeyDef k_export[] = {
    {"out", KEY_STRING, "", 0, 0, 0, "", "the file to write (format = llmc, safetensors) or the folder (format = hf)"},
    {"format", KEY_ENUM, "llmc", 0, "llmc|hf|safetensors", 0, "",
     "llmc: llm.c's GPT-2 .bin; hf: a Hugging Face GPT-2 folder; safetensors: the weights without optimizer state"},
    {NULL, 0, NULL, 0, NULL, 0, NULL, NULL},
};

static void usage(FILE *f) {
    fprintf(f,
            "usage: ./export RUN_OR_CHECKPOINT out=PATH [format=llmc|hf|safetensors]\n"
            "  format=llmc (default)  out=FILE.bin: a softmax + MLP model as an llm.c GPT-2 file (version 3, fp32)\n"
            "  format=hf              out=DIR: a Hugging Face GPT-2 folder (config.json, model.safetensors) of a\n"
            "                         softmax model with learned positions (no MLP: zero MLP weights)\n"
            "  format=safetensors     out=FILE: the model's weights and config without the optimizer state; opens\n"
            "                         wherever a checkpoint does (./sample, ./evaluate, init_from)\n"
            "  a run folder means its latest checkpoint; docs/export.md\n");
}

// The folder `path` is in ("." for a bare name), allocated; trailing slashes do not count.
static char *parent_of(const char *path) {
    char *p = strdupCheck(path);
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/') p[--n] = 0;
    char *slash = strrchr(p, '/');
    if (!slash) {
        free(p);
        return strdupCheck(".");
    }
    if (slash == p) slash[1] = 0;  // "/x": the root
    else *slash = 0;
    return p;
}

// The file can be written: its temporary file is made and removed again before any work (a
// read-only folder, a file system that refuses it), so the refusal names `out` and exits 2.
static void check_writable(const char *path) {
    AtomicFile a;
    char err[4096];
    if (atomic_open(&a, path, err, sizeof err) != 0) die_input("command line: out: %s", err);
    atomic_abort(&a);
}

// A file to write (llmc, safetensors): never over the checkpoint it reads, nor into any run folder
// (config.conf, logs, `latest`), and its folder must exist and be writable.
static void check_out_file(const char *out, const char *ckpt) {
    RunDirInput inputs[] = {{"checkpoint", ckpt}};
    run_dir_check_output("out", out, inputs, 1);
    char *parent = parent_of(out);
    int ok = is_directory(parent);
    if (!ok) {
        char msg[4096];  // parent is freed before die_input leaves
        snprintf(msg, sizeof msg, "out: the folder '%s' does not exist", parent);
        free(parent);
        die_input("%s", msg);
    }
    free(parent);
    check_writable(out);
}

// 1 when a file of that name may stand in a folder that format=hf writes over: what an earlier
// export wrote (config.json, model.safetensors) and the PATH.<pid>.tmp a killed one can leave.
static int export_file_name(const char *name) {
    const char *ours[] = {HF_CONFIG_FILE, HF_WEIGHTS_FILE};
    for (int i = 0; i < 2; i++) {
        size_t n = strlen(ours[i]);
        if (strncmp(name, ours[i], n)) continue;
        const char *p = name + n;  // "", ".tmp" (an older export's) or ".<pid>.tmp"
        if (*p == '.' && p[1] >= '0' && p[1] <= '9')
            for (p++; *p >= '0' && *p <= '9';) p++;
        if (!*p || !strcmp(p, ".tmp")) return 1;
    }
    return 0;
}

// The folder format=hf writes: a new one (its parent must exist) or one holding only an earlier
// export, which is replaced. Refused with one line, exit 2: a file of that name, a folder holding
// anything else, a run folder or a folder inside one (writing could mix a model into a run's files),
// and the checkpoint it reads.
static void check_out_folder(const char *out, const char *ckpt) {
    if (path_exists(out) && !is_directory(out))
        die_input("command line: out: '%s' is a file; format=hf writes a folder (%s, %s)", out, HF_CONFIG_FILE,
                  HF_WEIGHTS_FILE);
    char *parent = parent_of(out), msg[4096] = "";
    if (!is_directory(parent)) snprintf(msg, sizeof msg, "out: the folder '%s' does not exist", parent);
    else if (run_dir_has_run(parent))
        snprintf(msg, sizeof msg,
                 "command line: out: '%s' is in the run folder '%s': writing there could replace its "
                 "checkpoints, config or logs (write it elsewhere)",
                 out, parent);
    free(parent);
    if (*msg) die_input("%s", msg);
    if (is_directory(out) && run_dir_has_run(out))
        die_input("command line: out: '%s' is a run folder: writing there could replace its checkpoints, config or logs "
                  "(write it elsewhere)",
                  out);
    // out itself a run folder, or out/model.safetensors the checkpoint being read
    RunDirInput inputs[] = {{"checkpoint", ckpt}};
    const char *names[] = {HF_WEIGHTS_FILE, HF_CONFIG_FILE};
    for (int i = 0; i < 2; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", out, names[i]);
        run_dir_check_output("out", path, inputs, 1);
    }
    for (int i = 0; i < 2 && is_directory(out); i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", out, names[i]);
        check_writable(path);
    }
    DIR *d = opendir(out);
    if (!d) return;  // a new folder
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || export_file_name(e->d_name)) continue;
        snprintf(msg, sizeof msg,
                 "command line: out: the folder '%s' holds '%s', which no export writes: format=hf "
                 "writes into a new or empty folder, or over an earlier export (%s, %s)",
                 out, e->d_name, HF_CONFIG_FILE, HF_WEIGHTS_FILE);
        closedir(d);
        die_input("%s", msg);
    }
    closedir(d);
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
    const char *out = cfg_str(&opt, "out"), *format = cfg_str(&opt, "format");
    int hf = !strcmp(format, "hf"), weights = !strcmp(format, "safetensors");
    if (!*out)
        die_input("out: expected the %s to write, e.g. out=%s", hf ? "folder" : "file",
                  hf            ? "hf_model"
                      : weights ? "model.safetensors"
                                : "model.bin");
    char *ckpt = ckpt_resolve(argv[1]);
    if (hf) check_out_folder(out, ckpt);
    else check_out_file(out, ckpt);

    Config cfg;
    TrainState ts;
    Model *m = ckpt_open_model(ckpt, &cfg, 1, 1, &ts);
    const ModelShape *s = &m->s;
    char err[1024];
    if (hf) {
        if (hf_exportable(m, err, sizeof err) != 0) die_input("%s: %s", ckpt, err);
        if (mkdir_p(out) != 0) die_input("out: cannot create the folder '%s'", out);
        if (hf_save(out, m, hf_eos_id(s->V, ts.tokenizer_vocab), err, sizeof err) != 0) die("out: %s", err);
        printf("%s -> %s (Hugging Face GPT-2: %s, %s, fp32: L=%d H=%d C=%d V=%d n_positions=%d%s)\n", ckpt, out,
               HF_CONFIG_FILE, HF_WEIGHTS_FILE, s->L, s->H, s->C, s->V, s->T, s->mlp ? "" : "; zero MLP weights");
    } else if (weights) {
        // The checkpoint format itself (its config, step and tokenizer metadata) with no AdamW
        // moments: every program that opens a checkpoint opens it; resuming needs the moments.
        if (ckpt_save(out, m, NULL, &cfg, &ts, err, sizeof err) != 0) die("out: %s", err);
        printf("%s -> %s (weights only: %d tensors, %zu parameters, fp32, no optimizer state)\n", ckpt, out,
               m->n_tensors, m->n_params);
    } else {
        if (llmc_exportable(m, err, sizeof err) != 0) die_input("%s: %s", ckpt, err);
        if (llmc_save(out, m, err, sizeof err) != 0) die("out: %s", err);
        printf("%s -> %s (llm.c GPT-2, fp32: L=%d H=%d C=%d V=%d maxT=%d)\n", ckpt, out, s->L, s->H, s->C, s->V, s->T);
    }
    model_free(m);
    config_free(&cfg);
    config_free(&opt);
    free(ckpt);
    return 0;
}
