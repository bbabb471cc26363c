#include "core/keys.h"

#include <string.h>

#include "core/io.h"

// Sections name the groups of config.conf and of the key tables in docs/config.md.
// clang-format off
static KeyDef g_keys[] = {
    // model
    {"mixer", KEY_ENUM, "softmax", 0, NULL /* the registry's: model/keys.c */, KEY_LIST, "model", "attention block of every layer, or a comma list of n_layer names, one per layer (a hybrid stack)"},
    {"n_layer", KEY_INT, "2", RANGE_POS, 0, 0, "model", "number of blocks"},
    {"n_head", KEY_INT, "1", RANGE_POS, 0, 0, "model", "heads per mixer (d_model must divide by it)"},
    {"d_model", KEY_INT, "64", RANGE_POS, 0, 0, "model", "width of the residual stream"},
    {"seq_len", KEY_INT, "64", RANGE_POS, 0, 0, "model", "tokens per sequence (MQAR: the example length)"},
    {"vocab_size", KEY_INT, "0", RANGE_NONNEG, 0, 0, "model", "0 = from the task (MQAR: 8192) or the data (max token + 1)"},
    {"mlp", KEY_BOOL, "true", 0, 0, 0, "model", "GELU MLP (4x) after each mixer"},
    {"pos_emb", KEY_ENUM, "learned", 0, "learned|none", 0, "model", "learned absolute position embedding or none"},
    {"short_conv", KEY_INT, "0", RANGE_NONNEG, 0, 0, "model", "width K of a depthwise causal convolution (with bias) on every mixer's input, as in Based (0 = off; at most seq_len)"},
    {"precision", KEY_ENUM, "fp32", 0, "fp32|bf16", 0, "model", "matmul operands: fp32, or bf16 with fp32 accumulation and fp32 weights (needs AVX512-BF16)"},
    // data
    {"task", KEY_ENUM, "mqar", 0, "mqar|shards", 0, "data", "mqar: synthetic recall; shards: llm.c token shards"},
    {"train_data", KEY_STRING, "", 0, 0, 0, "data", "glob of training shards (task = shards)"},
    {"val_data", KEY_STRING, "", 0, 0, 0, "data", "glob of validation shards (task = shards)"},
    {"shuffle", KEY_BOOL, "true", 0, 0, 0, "data", "reshuffle the training sequences every epoch"},
    {"mqar_kv_pairs", KEY_INT, "4", RANGE_POS, 0, 0, "data", "MQAR key-value pairs per example"},
    {"mqar_cells", KEY_STRING, "", 0, 0, 0, "data", "train on a mixture of MQAR cells PAIRSxLENGTH, e.g. \"4x64, 8x128, 16x256\" (each length <= seq_len, rows padded to seq_len; empty: one cell of mqar_kv_pairs pairs in seq_len tokens)"},
    {"mqar_test_cells", KEY_STRING, "", 0, 0, 0, "data", "the cells tested, accuracy reported per cell (empty: those of mqar_cells)"},
    {"mqar_train_examples", KEY_INT, "100000", RANGE_POS, 0, 0, "data", "MQAR training set size (per cell)"},
    {"mqar_val_examples", KEY_INT, "1000", RANGE_POS, 0, 0, "data", "MQAR validation set size (per test cell): what stop_at_acc, the best step and a sweep's selection read"},
    {"mqar_test_examples", KEY_INT, "3000", RANGE_POS, 0, 0, "data", "MQAR test set size (per cell): read once, at the end of a run, on the best-validation weights"},
    {"mqar_power_a", KEY_FLOAT, "0.01", RANGE_POS, 0, 0, "data", "MQAR query-gap power law exponent"},
    {"mqar_seed", KEY_INT, "0", RANGE_NONNEG, 0, 0, "data", "MQAR training set seed (zoology: 0); cell i of a mixture uses mqar_seed + i"},
    {"mqar_val_seed", KEY_INT, "1000", RANGE_NONNEG, 0, 0, "data", "MQAR validation set seed; cell i uses mqar_val_seed + i (sequences train or test also hold are left out)"},
    {"mqar_test_seed", KEY_INT, "10", RANGE_NONNEG, 0, 0, "data", "MQAR test set seed (zoology: 10); test cell i uses mqar_test_seed + i"},
    {"mqar_random_filler", KEY_BOOL, "false", 0, 0, 0, "data", "filler tokens random instead of 0"},
    {"tokenizer", KEY_STRING, "", 0, 0, KEY_RESUMABLE, "data", "BPE file of the text shards (./tokenize train), so samples print text"},
    // optimisation
    {"optimizer", KEY_ENUM, "adamw", 0, "adamw|sgd", 0, "optimisation", "adamw or sgd (no momentum)"},
    {"lr", KEY_FLOAT, "1e-3", RANGE_POS, 0, 0, "optimisation", "peak learning rate"},
    {"min_lr", KEY_FLOAT, "0", RANGE_NONNEG, 0, 0, "optimisation", "learning rate at the end of the decay"},
    {"lr_schedule", KEY_ENUM, "cosine", 0, "constant|linear|cosine", 0, "optimisation", "decay after warmup, to min_lr at the last step"},
    {"warmup_steps", KEY_INT, "0", RANGE_NONNEG, 0, 0, "optimisation", "linear warmup from 0"},
    {"weight_decay", KEY_FLOAT, "0.1", RANGE_NONNEG, 0, 0, "optimisation", "decoupled decay of 2-D weights"},
    {"beta1", KEY_FLOAT, "0.9", RANGE_UNIT, 0, 0, "optimisation", "AdamW first-moment decay"},
    {"beta2", KEY_FLOAT, "0.999", RANGE_UNIT, 0, 0, "optimisation", "AdamW second-moment decay"},
    {"eps", KEY_FLOAT, "1e-8", RANGE_POS, 0, 0, "optimisation", "AdamW epsilon"},
    {"grad_clip", KEY_FLOAT, "1", RANGE_NONNEG, 0, 0, "optimisation", "clip the global gradient norm (0 = off)"},
    {"batch_size", KEY_INT, "32", RANGE_POS, 0, 0, "optimisation", "sequences per step"},
    {"steps", KEY_INT, "0", RANGE_NONNEG, 0, KEY_RESUMABLE, "optimisation", "optimizer steps (> 0 wins over epochs)"},
    {"epochs", KEY_FLOAT, "1", RANGE_NONNEG, 0, KEY_RESUMABLE, "optimisation", "passes over the training set when steps = 0"},
    {"seed", KEY_INT, "0", RANGE_NONNEG, 0, 0, "optimisation", "weight init and shuffling seed"},
    {"focus_penalty", KEY_FLOAT, "0", RANGE_ANY, 0, 0, "optimisation", "add lambda x (1 - mean S(a)) of focus_layer's query rows to the training loss, a penalty on focus: > 0 pushes its maps broad, < 0 focused (softmax and linear only; 0 = off)"},
    {"answer_supervision", KEY_FLOAT, "0", RANGE_NONNEG, 0, 0, "optimisation", "add mu x the cross-entropy of focus_layer's query rows' normalised |a| against the MQAR answer's value position to the training loss (softmax and linear only; 0 = off)"},
    {"focus_layer", KEY_INT, "-1", RANGE_ANY, 0, 0, "optimisation", "the layer focus_penalty and answer_supervision act on (-1 = the last, n_layer - 1)"},
    // run
    {"out_dir", KEY_STRING, "", 0, 0, KEY_RESUMABLE, "run", "run folder (empty: checkpoints/<config name>)"},
    {"log_every", KEY_INT, "10", RANGE_NONNEG, 0, KEY_RESUMABLE, "run", "train record every N steps"},
    {"eval_every", KEY_INT, "100", RANGE_NONNEG, 0, KEY_RESUMABLE, "run", "validation every N steps (and at the end)"},
    {"eval_batches", KEY_INT, "0", RANGE_NONNEG, 0, KEY_RESUMABLE, "run", "validation batches (0 = the whole validation set)"},
    {"sparsity_every", KEY_INT, "100", RANGE_NONNEG, 0, KEY_RESUMABLE, "run", "per-head attention sparsity S(a) to sparsity.jsonl every N steps, at step 0 and at the end (0 = off)"},
    {"sparsity_rows", KEY_INT, "0", RANGE_NONNEG, 0, KEY_RESUMABLE, "run", "query rows measured per sparsity pass, at least (per MQAR cell): every row of ceil(N / query rows per sequence) sequences at an even stride (0 = every row of the eval_batches sequences)"},
    {"sample_every", KEY_INT, "0", RANGE_NONNEG, 0, KEY_RESUMABLE, "run", "print a sample and log it to metrics.jsonl every N steps (0 = off)"},
    {"sample_tokens", KEY_INT, "64", RANGE_POS, 0, KEY_RESUMABLE, "run", "tokens per sample"},
    {"sample_prompt", KEY_STRING, "", 0, 0, KEY_RESUMABLE, "run", "text the samples continue (escapes \\n \\t \\xNN); token ids without a tokenizer"},
    {"sample_temperature", KEY_FLOAT, "0.8", RANGE_NONNEG, 0, KEY_RESUMABLE, "run", "sampling temperature (0 = greedy)"},
    {"sample_top_k", KEY_INT, "40", RANGE_NONNEG, 0, KEY_RESUMABLE, "run", "sample among the k most likely tokens (0 = all)"},
    {"save_every", KEY_INT, "500", RANGE_NONNEG, 0, KEY_RESUMABLE, "run", "checkpoint every N steps, at step 0 and at the end (0 = no checkpoints)"},
    {"keep_last", KEY_INT, "0", RANGE_NONNEG, 0, KEY_RESUMABLE, "run", "keep only the newest N checkpoints (0 = all)"},
    {"keep_best", KEY_BOOL, "true", 0, 0, KEY_RESUMABLE, "run", "keep the best-validation checkpoint as best.safetensors beside the newest (with save_every > 0); the test set is read on the best weights either way"},
    {"resume", KEY_STRING, "auto", 0, 0, KEY_RESUMABLE, "run", "auto: continue from out_dir/latest if any; never; or a checkpoint path"},
    {"overwrite", KEY_BOOL, "false", 0, 0, KEY_RESUMABLE, "run", "with resume = never, replace a run already in out_dir"},
    {"init_from", KEY_STRING, "", 0, 0, KEY_RESUMABLE, "run", "start a new run from this checkpoint's weights (fresh optimizer)"},
    {"stop_at_step", KEY_INT, "0", RANGE_NONNEG, 0, KEY_RESUMABLE, "run", "stop with a checkpoint once this many steps are done, keeping the schedule of steps (0 = off)"},
    {"stop_at_acc", KEY_FLOAT, "0", RANGE_NONNEG, 0, KEY_RESUMABLE, "run", "stop once validation accuracy reaches this (0 = never; Zoology: 0.99)"},
    {"nan_policy", KEY_ENUM, "stop", 0, "stop|skip", KEY_RESUMABLE, "run", "a non-finite loss or gradient: stop (keep the last good checkpoint) or skip the update"},
    {"tensorboard", KEY_BOOL, "false", 0, 0, KEY_RESUMABLE, "run", "also write the train, eval and sparsity records as TensorBoard event files (events.out.tfevents.*) in out_dir"},
    {"threads", KEY_INT, "0", RANGE_THREADS, 0, KEY_RESUMABLE, "run", "OpenMP threads: 0 = OpenMP default (all cores), at most 1024"},
    {"max_memory", KEY_FLOAT, "0", RANGE_NONNEG, 0, KEY_RESUMABLE, "run", "GB a run may plan to use (model, optimizer, data), checked at the start; 0 = this machine's memory"},
    {"export_data", KEY_STRING, "", 0, 0, KEY_RESUMABLE, "run", "write the task's train.bin and test.bin to this folder and exit"},
    {NULL, 0, NULL, 0, NULL, 0, NULL, NULL},
};
// clang-format on

void keys_set_choices(const char *name, const char *choices) {
    for (KeyDef *k = g_keys; k->name; k++)
        if (!strcmp(k->name, name) && k->type == KEY_ENUM) {
            k->choices = choices;
            return;
        }
    die("keys_set_choices: no enum key '%s' in core/keys.c", name);
}

void keys_add(Config *c) {
    for (const KeyDef *k = g_keys; k->name; k++)
        if (k->type == KEY_ENUM && !k->choices)
            die("key '%s' has no choices: they are set from above core (model/keys.c: config_init_all)", k->name);
    config_add_keys(c, g_keys);
}
