// The trainer's `sample_every` hook: samples text from the model being trained, through
// model/sample.h, and checks the `tokenizer` file against the training shards.
#pragma once
#include <stdint.h>
#include <stdio.h>

#include "core/config.h"
#include "model/model.h"

// Draws `sample_tokens` tokens after `sample_prompt` (temperature `sample_temperature`,
// `sample_top_k`, seeded by seed and step, so training itself is unaffected), prints them and
// appends {"type":"sample","step":..,"prompt":..,"text":..} to log. Text through the `tokenizer`
// file (loaded once; a bad one exits 2); token ids without one. Call it between optimizer steps:
// the prefix fallback overwrites the model's activations.
void sample_during_training(Model *m, const Config *cfg, long step, FILE *log);

// Loads the `tokenizer` file now, so a bad one stops the trainer before any work (exit 2); with
// the identity of the tokenizer the training shards were prepared with (vocab > 0), refuses
// another one (exit 2) instead of sampling garbage.
void sample_check_tokenizer(const Config *cfg, int vocab, uint32_t id);
