// Opening a trained model for the programs that only read one (./sample, ./export): a run folder
// or a checkpoint file (this project's safetensors, or llm.c's GPT-2 .bin) to a built model.
#pragma once
#include "core/config.h"
#include "model/model.h"
#include "trainer/checkpoint.h"

// The checkpoint a command-line argument names: a run folder's latest (or its newest checkpoint)
// or the file itself. Allocated; exits 2 with one line when there is none.
char *ckpt_resolve(const char *run_or_ckpt);
// The model of checkpoint `path`, built for batches of B sequences with rows_max target rows and
// loaded; its effective config goes to *cfg (free with config_free) and, when ts is not NULL, its
// trainer state to *ts. Exits 2 naming the file on any problem.
Model *ckpt_open_model(const char *path, Config *cfg, int B, int rows_max, TrainState *ts);
