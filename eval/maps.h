// The attention maps of one validation sequence (./evaluate --maps, docs/sparsity.md "Pictures"):
// every a_ij of the chosen layers and heads after one forward pass, with the tokens, the query
// rows and (MQAR) the answer positions, drawn as SVG heatmaps and saved as safetensors.
#pragma once
#include "data/dataset.h"
#include "model/model.h"

typedef struct {
    int T, L, H;
    long seq;               // the validation sequence
    int *inputs, *targets;  // [T]
    int *answer;            // [T]: MQAR value position of query row i, else -1
    int has_answers;        // 1 on MQAR
    int signed_maps;        // 1 when some weight is negative (signed colour scale)
    int n;                  // maps held
    int *layer, *head;      // [n]
    float *a;               // [n * T * T]: map k at a + k*T*T; a head with several maps (Mamba) is their mean
    char **token_text;      // [T] each input token's text for the labels (NULL: ids; maps_label_tokens)
} AttentionMaps;

// Labels the maps' tokens with their text through a tokenizer file (this project's or llm.c's);
// a file that cannot be read leaves the ids, with a one-line note on stderr.
void maps_label_tokens(AttentionMaps *am, const char *tokenizer_path);

// The positions sequence seq is drawn at: T, or in an MQAR mixture its cell's length (the row
// without its padding).
int maps_seq_len(const Dataset *val, long seq, int T);
// Runs the model on validation sequence seq (at maps_seq_len positions) and keeps the maps of
// layer (or every layer when -1) and head (or every head when -1). Bad choices exit 2 with one
// line naming the key: map_seq, map_layer or map_head out of range, a mixer without an attention
// extractor. Assumes the model holds batches of at least 1 sequence of length T.
void maps_extract(Model *m, const Dataset *val, int T, long seq, int layer, int head, AttentionMaps *out);
void maps_free(AttentionMaps *am);
// maps.safetensors: "L<l>.H<h>" F32 [T, T] per map, "inputs" and "targets" F32 [T] (-100: no
// target), "answer" F32 [T] (-1: none); metadata step, mixer, seq. 0, or -1 with err.
int maps_save(const AttentionMaps *am, const char *path, long step, const char *mixer, char *err, size_t errlen);
// One heatmap per map: dir/map_L<l>_H<h>.svg. Returns the number written (the rest failed).
int maps_draw(const AttentionMaps *am, const char *dir, long step, const char *mixer, int start, int len);
