// Reading a tokenizer file of either kind: this project's (tokenizer/bpe.h, docs/text.md#the-tokenizer-file)
// or llm.c's binary one as a decode-only tokenizer (tokenizer/llmc_tokenizer.h), told apart by
// the first bytes.
#pragma once
#include <stddef.h>

#include "tokenizer/bpe.h"

// Reads a tokenizer file; NULL with a one-line message naming the file (and line) on any problem.
Bpe *tokenizer_read(const char *path, char *err, size_t errlen);
// tokenizer_read, exiting 2 with that message (a missing or damaged tokenizer is bad input).
Bpe *tokenizer_load(const char *path);
// tokenizer_load for encoding: also exits 2 when the file is a decode-only one (llm.c's), naming `key`.
Bpe *tokenizer_load_encoder(const char *path, const char *key);
