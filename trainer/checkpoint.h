// Checkpoints (docs/checkpoints.md#format): the model's tensors as F32 under their names, AdamW
// state as optim.m.<name> / optim.v.<name>, and __metadata__ with the format version, the
// effective config, the step, the data-loader and RNG state and a CRC32 of the whole file.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "model/model.h"
#include "trainer/optim.h"

// Format 2: the metadata "crc32" covers the whole file, header included (st_file_crc32).
// Format 1 (before): it covered the data section only; such files still load, with a warning.
#define CKPT_FORMAT "attnscope-checkpoint-2"
#define CKPT_FORMAT_V1 "attnscope-checkpoint-1"

typedef struct {
    long step;           // optimizer steps done
    uint64_t data_pos;   // training loader position (sequences consumed)
    uint64_t data_seed;  // seed of the loader's per-epoch permutations
    long opt_t;          // optimizer step count (AdamW bias correction)
    // the tokenizer of the training shards (Dataset.tok_vocab, tok_id), metadata
    // tokenizer_vocab_size and tokenizer_identity; 0 when unknown (MQAR, llm.c shards)
    int tokenizer_vocab;
    uint32_t tokenizer_id;
} TrainState;

// Saves atomically; 0 on success, -1 with a message in err. opt may be NULL (weights only).
int ckpt_save(const char *path, const Model *m, const Optimizer *opt, const Config *cfg, const TrainState *ts,
              char *err, size_t errlen);

// Reads a checkpoint's effective config (into a Config initialised with config_init_all) and its
// step, without loading tensors. 0 or -1 with a message naming the first problem.
int ckpt_read_config(const char *path, Config *cfg, long *step, char *err, size_t errlen);

// Loads weights into m (built from a compatible config) and, when opt is not NULL, the optimizer
// state; fills ts when not NULL. Checks every tensor's presence, dtype and shape, the CRC and the
// metadata; on failure returns -1 with a message naming the first problem and leaves m and opt
// unchanged.
int ckpt_load(const char *path, Model *m, Optimizer *opt, TrainState *ts, char *err, size_t errlen);

// Checkpoints of a run folder in step order: paths "dir/ckpt_%08d.safetensors" (allocated
// strings; free with ckpt_list_free). Half-written temporary files are not listed.
int ckpt_list(const char *dir, char ***paths, long **steps);
void ckpt_list_free(char **paths, long *steps, int n);
