// Datasets and batch loaders. A dataset is a list of fixed-length sequences: MQAR examples held in
// memory, or windows of T+1 tokens taken from llm.c token shards (memory-mapped).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "data/mqar.h"

typedef struct Shard Shard;

typedef struct {
    int T;                 // tokens per row
    int vocab_size;        // every token is < vocab_size
    int mqar_kv_pairs;     // MQAR: key-value pairs at the start of every sequence (0: not MQAR)
    long n;                // number of sequences
    // in-memory sequences (MQAR): inputs/labels [n, T]
    int32_t *inputs, *labels;
    // token shards (text): windows of T+1 tokens at stride T, counted per shard
    Shard *shards;
    int n_shards;
    long *shard_first;     // [n_shards + 1]: index of each shard's first window (prefix sums)
    int tok_vocab;         // the shards' tokenizer (Shard.tok_vocab, tok_id); 0 when any shard
    uint32_t tok_id;       // does not record it
} Dataset;

// An MQAR split generated in memory (dies with exit 2 naming the key if the spec is invalid).
void dataset_mqar(Dataset *ds, const MqarSpec *spec);
// Token shards matching a glob (sorted by name). key names the config key for error messages.
// vocab_size > 0: any token >= vocab_size is an error naming the file; vocab_size == 0: it is
// taken as max token + 1, at most DATASET_MAX_VOCAB (a larger token exits 2 naming the file).
#define DATASET_MAX_VOCAB (1 << 24)
void dataset_shards(Dataset *ds, const char *glob_pattern, const char *key, int T, int vocab_size);
void dataset_free(Dataset *ds);
// Copies sequence i: inputs[T] and targets[T] (targets < 0 are ignored by the loss).
void dataset_get(const Dataset *ds, long i, int32_t *inputs, int32_t *targets);

// The training loader. Its whole state is `pos` (sequences consumed since the start), so resuming is
// loader_init + setting pos. Epoch e = sequences [e*n, (e+1)*n) of the stream.
// shuffle = 0: the exact order of docs/text.md#token-shards (shards: batch k of a shard is the
// B*T+1 tokens from token k*B*T; a shard's tail that cannot hold a whole batch is skipped).
// shuffle = 1: every epoch a fresh permutation drawn from (seed, epoch).
typedef struct {
    const Dataset *ds;
    int B;
    int shuffle;
    uint64_t seed;
    uint64_t pos;
    // private
    long n_stream;         // sequences per epoch in the stream
    long *perm;            // [n_stream] permutation of the current epoch (or NULL)
    long perm_epoch;
    long *stream_first;    // [n_shards + 1] sequential shards: stream index of each shard's first
                           // sequence (whole batches only); NULL otherwise
} Loader;

void loader_init(Loader *ld, const Dataset *ds, int B, int shuffle, uint64_t seed);
void loader_free(Loader *ld);
// Fills inputs/targets [B, T] with the next batch and advances pos by B.
void loader_next(Loader *ld, int32_t *inputs, int32_t *targets);
// Sequences per epoch as the loader sees them (for `epochs` -> steps).
long loader_epoch_size(const Loader *ld);

// Writes the export format of docs/mqar.md#exporting-the-data: 256 int32 header (magic 20241122,
// version 1, N, L), int32 inputs [N, L], then int32 labels [N, L] (-100 where there is no label).
void dataset_export(const Dataset *ds, const char *path);
