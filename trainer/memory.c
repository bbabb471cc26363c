#include "trainer/memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/io.h"
#include "model/model.h"
#include "trainer/optim.h"

double memory_available(void) {
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    double bytes = pages > 0 && size > 0 ? (double)pages * size : 0;
    // a container's limit (cgroup v2, then v1) when it is below the machine's
    static const char *limits[] = {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
    for (int i = 0; i < 2; i++) {
        char *text = read_file_text_max(limits[i], 64, NULL);
        if (!text) continue;
        char *end;
        double v = strtod(text, &end);
        if (end != text && v > 0 && (bytes == 0 || v < bytes)) bytes = v;
        free(text);
    }
    return bytes;
}

// How far a key is set above its default (the vocabulary against MQAR's 8192); 1: at it.
static double raised(const Config *c, const char *key, int vocab) {
    int is_vocab = !strcmp(key, "vocab_size");
    const KeyDef *d = config_find(c, key);
    if (!is_vocab && (!d || d->type != KEY_INT)) return 2;  // not a count (a shard glob): name the key itself
    double v = is_vocab ? vocab : (double)cfg_int(c, key);
    double def = is_vocab ? 8192 : atof(config_find(c, key)->def);
    return v / (def > 1 ? def : 1);
}

static const char *most_raised(const Config *c, const char *const *keys, int vocab) {
    const char *best = keys[0];
    double best_ratio = 0;
    for (int i = 0; keys[i]; i++) {
        double ratio = raised(c, keys[i], vocab);
        if (ratio > best_ratio) best_ratio = ratio, best = keys[i];
    }
    return best;
}

MemoryPlan memory_plan(const Config *c, const TaskPlan *task) {
    MemoryPlan p = {0};
    double gb = cfg_float(c, "max_memory");
    p.limit = gb > 0 ? gb * 1e9 : memory_available();
    ModelShape s = model_shape_from_config(c, task->vocab_size);
    double B = (double)cfg_int(c, "batch_size"), T = s.T, C = s.C;
    int adamw = optim_kind_from_config(c) == OPT_ADAMW;
    p.data = task->data_bytes;
    // A lower bound first, in floating point: the embedding table (parameter, gradient, moments)
    // and one [B, T, C] buffer per layer. Above the limit, the exact count is not needed (and the
    // mixers' buffer arithmetic is not made for sizes that no machine holds).
    // parameters, gradients (and AdamW's two moments), and the best validation step's weights the
    // trainer keeps for the test set (docs/mqar.md#splits)
    double slots = (adamw ? 4 : 2) + 1;
    double wte = (double)s.V * C * sizeof(real) * slots, res = B * T * C * sizeof(real) * (s.L + 1);
    if (wte + res + p.data > p.limit) {
        p.params = wte, p.acts = res;
        p.lower_bound = 1;
    } else {
        size_t n_params;
        double model = (double)model_plan_bytes(&s, c, (int)B, (int)B * task->targets_per_seq, &n_params);
        p.params = (double)n_params * sizeof(real) * slots;
        p.acts = model - 2.0 * n_params * sizeof(real) + 2 * B * T * sizeof(int32_t);  // + the trainer's batch
    }
    p.total = p.params + p.acts + p.data;
    // The key to name: of those that size the largest part, the one set furthest above its default
    // (the vocabulary against MQAR's 8192): what the user changed to get here.
    static const char *param_keys[] = {"vocab_size", "d_model", "n_layer", NULL};
    static const char *act_keys[] = {"batch_size", "seq_len", "d_model", "n_layer", NULL};
    if (p.params >= p.acts && p.params >= p.data) p.key = most_raised(c, param_keys, task->vocab_size);
    else if (p.acts >= p.data) p.key = most_raised(c, act_keys, task->vocab_size);
    else p.key = task->data_key;
    // Nothing raised (the key at its default or below) under a max_memory the user set: the limit is
    // what is small, not the key (a tiny max_memory blamed the default mqar_val_examples).
    if (gb > 0 && p.key && raised(c, p.key, task->vocab_size) <= 1) p.key = "max_memory";
    return p;
}

static void format_bytes(char *buf, size_t n, double b) {
    if (b >= 1e12) snprintf(buf, n, "%.1f TB", b / 1e12);
    else if (b >= 1e9) snprintf(buf, n, "%.1f GB", b / 1e9);
    else if (b >= 1e6) snprintf(buf, n, "%.0f MB", b / 1e6);
    else snprintf(buf, n, "%.0f kB", b / 1e3);
}

void memory_check(const MemoryPlan *p, const Config *c) {
    if (p->limit <= 0 || p->total <= p->limit) return;
    char total[32], limit[32], params[32], acts[32], data[32];
    format_bytes(total, sizeof total, p->total);
    format_bytes(limit, sizeof limit, p->limit);
    format_bytes(params, sizeof params, p->params);
    format_bytes(acts, sizeof acts, p->acts);
    format_bytes(data, sizeof data, p->data);
    int set = cfg_float(c, "max_memory") > 0;
    if (!strcmp(p->key, "max_memory"))
        die_input("%s: max_memory = %s: the run needs %s %s (parameters with gradients and optimizer state %s, "
                  "activations %s, data %s), above max_memory = %s, and no key that sizes it is above its default; "
                  "raise max_memory",
                  cfg_origin(c, "max_memory"), cfg_str(c, "max_memory"), p->lower_bound ? "at least" : "about", total,
                  params, acts, data, limit);
    die_input("%s: %s = %s: the run needs %s %s (parameters with gradients and optimizer state %s, "
              "activations %s, data %s), above %s%s%s; lower %s",
              cfg_origin(c, p->key), p->key, cfg_str(c, p->key), p->lower_bound ? "at least" : "about", total, params,
              acts, data, set ? "max_memory = " : "this machine's ", limit, set ? "" : " of memory", p->key);
}
