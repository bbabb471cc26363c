// llm.c's GPT-2 model file (gpt2_124M.bin and friends; docs/gpt2.md#the-model-file): read into this
// project's softmax + MLP model, and written back from one. The layout followed is that of llm.c's
// train_gpt2.c (header version 3 fp32, 5 bf16 with padded_vocab_size in slot 7):
//   header  256 x int32: magic 20240326, version, max_seq_len, vocab_size, n_layer, n_head,
//           channels, padded_vocab_size, then zeros
//   params  16 tensors, each for every layer back to back, fp32 (v3) or bf16 (v5):
//           wte [Vp,C] wpe [maxT,C] ln1w [L,C] ln1b [L,C] qkvw [L,3C,C] qkvb [L,3C]
//           attprojw [L,C,C] attprojb [L,C] ln2w [L,C] ln2b [L,C] fcw [L,4C,C] fcb [L,4C]
//           fcprojw [L,C,4C] fcprojb [L,C] lnfw [C] lnfb [C]
// Weights are (out, in) row-major, as this project's. The Vp - V padded rows of wte are dropped
// on reading (so they are never sampled nor counted in the loss) and written as zeros.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "model/model.h"

#define LLMC_MODEL_MAGIC 20240326
#define LLMC_HEADER_INTS 256
#define LLMC_N_TENSORS 16

typedef struct {
    int version;  // 3 (fp32) or 5 (bf16)
    int max_T, V, L, H, C, Vp;
} LlmcHeader;

// 1 when the file begins with llm.c's model magic (so callers can dispatch on the file, not its name).
int llmc_is_model_file(const char *path);
// 1 when a file that safetensors cannot read is better reported as a damaged llm.c model file
// (llmc_read_header's message naming its magic): it is named *.bin, as llm.c's files are, and does
// not begin like a safetensors file (an 8-byte header length that fits the file, then '{').
int llmc_is_damaged_model_file(const char *path);
// Reads and checks the header and the file's size against it; 0 or -1 with a one-line message.
int llmc_read_header(const char *path, LlmcHeader *h, char *err, size_t errlen);
// The effective config of the file's model (config_init_all defaults with mixer softmax, mlp,
// learned positions and the header's shape; seq_len = max_seq_len): what ckpt_read_config gives.
int llmc_read_config(const char *path, Config *cfg, char *err, size_t errlen);
// For ./train init_from: the header sets n_layer, n_head, d_model and vocab_size; a key the user
// set to another value, a seq_len above max_seq_len, or a model llm.c's layout cannot hold
// (another mixer, no MLP, no position table) exits 2 naming the key.
void llmc_shape_config(Config *cfg, const char *path);
// Loads the file's tensors into m (built with the header's shape and seq_len <= max_seq_len):
// the first seq_len rows of wpe, the first V rows of wte; bf16 widened to fp32.
int llmc_load(const char *path, Model *m, char *err, size_t errlen);
// 0 when llm.c can run m (a softmax + MLP + learned-positions model and nothing else), else -1
// with a message naming what it cannot hold.
int llmc_exportable(const Model *m, char *err, size_t errlen);
// Writes m as a version-3 (fp32) file, atomically: max_seq_len = seq_len, Vp = V rounded up to a
// multiple of 128 (as llm.c pads 50257 to 50304), padded rows zero.
int llmc_save(const char *path, const Model *m, char *err, size_t errlen);
