// Learning BPE merges from chunk counts, with incremental pair counts: each distinct chunk ("word")
// is stored once with its count; every pair keeps its count and the words it occurs in; a merge
// rewrites only those words and adjusts the counts of the pairs around each occurrence; a lazy
// max-heap picks the next pair. Ties go to the smallest (left, right) ids, so the merges are a
// function of the text alone. Pairs are counted with overlaps ("aaa" holds "aa" twice), as in
// Hugging Face tokenizers and minbpe.
#pragma once
#include <stdint.h>

#include "tokenizer/bpe.h"

typedef struct BpeTrainer BpeTrainer;

BpeTrainer *bpe_trainer_create(void);
void bpe_trainer_free(BpeTrainer *t);
// Counts one chunk of training text.
void bpe_trainer_add_chunk(BpeTrainer *t, const uint8_t *chunk, int len);
// Distinct chunks and the total seen so far.
long bpe_trainer_words(const BpeTrainer *t);
long bpe_trainer_chunks(const BpeTrainer *t);
// Learns up to vocab_size - 257 merges (fewer when no pair occurs twice any more) and returns the
// tokenizer. progress = 1 keeps a live line on a terminal.
Bpe *bpe_trainer_run(BpeTrainer *t, int vocab_size, int progress);
