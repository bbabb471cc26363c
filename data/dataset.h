// Datasets and batch loaders. A dataset is a list of fixed-length sequences: MQAR examples held in
// memory, or windows of T+1 tokens taken from llm.c token shards (memory-mapped).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "data/mqar.h"

typedef struct Shard Shard;

typedef struct {
    int T;              // tokens per row
    int vocab_size;     // every token is < vocab_size
    int mqar_kv_pairs;  // MQAR: the most key-value pairs of a sequence (0: not MQAR)
    long n;             // number of sequences
    // MQAR cells: the sequences of cell c are [cell_first[c], cell_first[c + 1]), each cells[c].seq_len
    // tokens padded to T with token 0 without labels (0 cells: not MQAR)
    int n_cells;
    MqarCell cells[MQAR_MAX_CELLS];
    long cell_first[MQAR_MAX_CELLS + 1];
    // in-memory sequences (MQAR): inputs/labels [n, T]
    int32_t *inputs, *labels;
    // token shards (text): windows of T+1 tokens at stride T, counted per shard
    Shard *shards;
    int n_shards;
    long *shard_first;  // [n_shards + 1]: index of each shard's first window (prefix sums)
    int tok_vocab;      // the shards' tokenizer (Shard.tok_vocab, tok_id); 0 when any shard
    uint32_t tok_id;    // does not record it
} Dataset;

// An MQAR split generated in memory (dies with exit 2 naming the key if the spec is invalid): one
// cell of spec->seq_len tokens.
void dataset_mqar(Dataset *ds, const MqarSpec *spec);
// A mixture: spec->n_examples examples of each cell, cell c generated from seed spec->seed + c with
// the cell's pairs and length, padded to T tokens (the cells are checked by the caller).
void dataset_mqar_cells(Dataset *ds, const MqarSpec *spec, const MqarCell *cells, int n_cells, int T);
// A 64-bit hash (FNV-1a) of in-memory sequence i's T input tokens, padding included: two
// sequences the model sees as the same have the same hash. The splits' disjointness is checked by it.
uint64_t dataset_sequence_hash(const Dataset *ds, long i);
// Keeps the in-memory sequences with keep[i] != 0, in order (each cell's range shrinks with it).
// Returns the number dropped.
long dataset_keep(Dataset *ds, const unsigned char *keep);
// The sequences of cell c as a one-cell dataset that shares ds's memory (never dataset_free it).
Dataset dataset_cell(const Dataset *ds, int c);
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
// An MQAR mixture (2 or more cells) is read in whole batches of one cell each, at the cell's own
// length (no pad positions are computed): per epoch each cell's sequences in order (shuffle = 0)
// or permuted (shuffle = 1, from (seed, epoch, cell)) are cut into floor(n_cell / B) batches, and
// the epoch runs the batches cell after cell (shuffle = 0) or in a permuted order (shuffle = 1).
// A cell's last n_cell mod B sequences of an epoch are left out (other ones each epoch when
// shuffled).
typedef struct {
    const Dataset *ds;
    int B;
    int shuffle;
    uint64_t seed;
    uint64_t pos;
    // private
    long n_stream;  // sequences per epoch in the stream
    long *perm;     // [n_stream] permutation of the current epoch (or NULL)
    long perm_epoch;
    long *stream_first;  // [n_shards + 1] sequential shards: stream index of each shard's first
                         // sequence (whole batches only); NULL otherwise
    // mixtures: batches per cell, prefix sums [n_cells + 1], and the epoch's plan
    long cell_batches[MQAR_MAX_CELLS + 1];
    long *batch_order;  // [batches per epoch] slot of each batch (shuffle = 1)
    long *cell_perm;    // [n] each cell's sequences in epoch order, cells one after another
    long plan_epoch;
} Loader;

void loader_init(Loader *ld, const Dataset *ds, int B, int shuffle, uint64_t seed);
void loader_free(Loader *ld);
// Fills inputs/targets [B, T'] with the next batch, advances pos by B and returns T': the dataset's
// T, or on a mixture the length of the batch's cell.
int loader_next(Loader *ld, int32_t *inputs, int32_t *targets);
// Copies the first L tokens of sequence i (L <= ds->T: an MQAR cell's own length).
void dataset_get_prefix(const Dataset *ds, long i, int L, int32_t *inputs, int32_t *targets);
// Sequences per epoch as the loader sees them (for `epochs` -> steps).
long loader_epoch_size(const Loader *ld);

// Writes the export format of docs/mqar.md#exporting-the-data: 256 int32 header (magic 20241122,
// version 1, N, L), int32 inputs [N, L], then int32 labels [N, L] (-100 where there is no label).
// Through the atomic writer (core/io.h); a path that cannot be written exits 2, a write error 1.
void dataset_export(const Dataset *ds, const char *path);
