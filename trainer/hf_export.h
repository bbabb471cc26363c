// A Hugging Face GPT-2 model folder (docs/export.md#hugging-face): config.json and
// model.safetensors with transformers' GPT2LMHeadModel tensor names and layouts, so a softmax
// model trained here opens in transformers (GPT2LMHeadModel.from_pretrained(DIR)) and in the
// tools built on it (TransformerLens).
//
// The mapping, per layer l (HF name after "transformer.h.<l>.", this project's after "h.<l>."):
//   ln_1.weight/bias       <- ln_1.weight/bias
//   attn.c_attn.weight     <- attn.qkv.weight transposed  ([C,3C] from [3C,C]; q, k, v in order)
//   attn.c_attn.bias       <- attn.qkv.bias
//   attn.c_proj.weight     <- attn.proj.weight transposed ([C,C])
//   attn.c_proj.bias       <- attn.proj.bias
//   ln_2.weight/bias       <- ln_2.weight/bias            (mlp = false: ones / zeros)
//   mlp.c_fc.weight        <- mlp.fc.weight transposed    ([C,4C] from [4C,C]; mlp = false: zeros)
//   mlp.c_fc.bias          <- mlp.fc.bias                 (mlp = false: zeros)
//   mlp.c_proj.weight      <- mlp.proj.weight transposed  ([4C,C] from [C,4C]; mlp = false: zeros)
//   mlp.c_proj.bias        <- mlp.proj.bias               (mlp = false: zeros)
// and transformer.wte.weight <- wte [V,C], transformer.wpe.weight <- wpe [T,C],
// transformer.ln_f.weight/bias <- ln_f.weight/bias. HF's Conv1D stores a weight as (in, out),
// the transpose of this project's (out, in). lm_head.weight is not written: it is tied to wte,
// as here. The zero MLP of a model without one is exact: the branch adds
// c_proj(GELU(c_fc(x))) = 0 + GELU(0) W = 0 to the residual stream.
#pragma once
#include <stddef.h>

#include "model/model.h"

#define HF_CONFIG_FILE "config.json"
#define HF_WEIGHTS_FILE "model.safetensors"

// 0 when HF's GPT-2 computes exactly what m does (softmax attention in every layer, learned
// positions, no short convolution, only the tensors of the mapping above); else -1 with a one-line
// message that begins with the key to change ("mixer: ...", "pos_emb: ...", "short_conv: ...").
int hf_exportable(const Model *m, char *err, size_t errlen);

// Writes dir/model.safetensors, then dir/config.json (each atomically) into the existing folder
// dir; eos_id: the end-of-text token (bos, eos and pad in config.json), -1 for none (MQAR: pad
// is then one past the vocabulary). 0, or -1 with a message.
int hf_save(const char *dir, const Model *m, int eos_id, char *err, size_t errlen);
// The end-of-text token of a run's vocabulary: GPT-2's 50256 for its 50257 tokens, else the last
// id of this project's BPE (256 bytes + merges + <|endoftext|>) when the checkpoint names one
// (tokenizer_vocab), else -1.
int hf_eos_id(int vocab, int tokenizer_vocab);
