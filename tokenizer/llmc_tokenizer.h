// llm.c's tokenizer file (gpt2_tokenizer.bin; docs/gpt2.md#the-tokenizer-file), read as a
// decode-only tokenizer: it holds each token's bytes but not GPT-2's merges, so it can turn
// tokens into text (./sample, labels of ./evaluate's maps) but not text into tokens (for text
// input use token shards made by llm.c's data scripts).
//   header  256 x uint32: magic 20240328, version (1 or 2), vocab_size, eot_token (version 2;
//           version 1 files are GPT-2's, whose <|endoftext|> is 50256), then zeros
//   tokens  vocab_size records: uint8 length (> 0), then that many bytes
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "tokenizer/bpe.h"

#define LLMC_TOKENIZER_MAGIC 20240328

// 1 when the bytes begin with llm.c's tokenizer magic.
int llmc_is_tokenizer(const uint8_t *p, size_t len);
// A decode-only Bpe (decode_only = 1, no merges) from the file's bytes; NULL with a one-line
// message naming the file and what is wrong.
Bpe *llmc_tokenizer_parse(const char *path, const uint8_t *p, size_t len, char *err, size_t errlen);
