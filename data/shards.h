// llm.c token shards (docs/text.md#token-shards): a 1024-byte header of 256 little-endian int32
// (magic, version, token count), then the tokens: uint16 (magic 20240520, version 1) or uint32
// (magic 20240801, version 7). Files are memory-mapped read-only and validated on open.
#pragma once
#include <stddef.h>
#include <stdint.h>

#define SHARD_HEADER_INTS 256
#define SHARD_HEADER_BYTES (SHARD_HEADER_INTS * 4)
#define SHARD_MAGIC_U16 20240520
#define SHARD_VERSION_U16 1
#define SHARD_MAGIC_U32 20240801
#define SHARD_VERSION_U32 7

struct Shard {
    char *path;
    const uint8_t *map;  // the whole file [map_len bytes]
    size_t map_len;
    const uint8_t *tokens;  // map + SHARD_HEADER_BYTES: ntok tokens of `width` bytes
    int width;              // 2 or 4
    long ntok;
    // the tokenizer that wrote it (header ints 3 and 4, which llm.c leaves 0): vocab_size and
    // bpe_identity; tok_vocab = 0 when not recorded (llm.c's own shards)
    int tok_vocab;
    uint32_t tok_id;
};
typedef struct Shard Shard;

// Maps and validates a shard; any problem exits 2 with one line naming the file.
void shard_open(Shard *s, const char *path);
void shard_close(Shard *s);

static inline uint32_t shard_token(const Shard *s, long i) {
    return s->width == 2 ? ((const uint16_t *)s->tokens)[i] : ((const uint32_t *)s->tokens)[i];
}

// The largest token in the shard (0 if empty). With vocab_size > 0, a token >= vocab_size exits 2
// naming the file, the position and the value.
uint32_t shard_check_tokens(const Shard *s, int vocab_size);

// Paths matching a glob, sorted by strcmp; *n their count. No match exits 2 with
// "<key>: no files match '<pattern>'". Free with free_paths.
char **glob_sorted(const char *pattern, const char *key, int *n);
void free_paths(char **paths, int n);

// Writes tokens[n] as a shard: uint16 tokens (version 1) when wide == 0, uint32 (version 7) when
// wide == 1. Goes through the atomic writer (core/io.h): path.tmp and a rename; a path that cannot
// be written exits 2, a write error exits 1. For the tokenizer's text -> shards step and tests.
void shard_write(const char *path, const uint32_t *tokens, long n, int wide);
// The same, recording the tokenizer's vocab_size and bpe_identity in header ints 3 and 4.
void shard_write_tagged(const char *path, const uint32_t *tokens, long n, int wide, int tok_vocab, uint32_t tok_id);
