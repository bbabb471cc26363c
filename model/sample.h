// Sampling text from a model: the next-token rule (temperature, top-k), prompts and generation
// through model/generate.h (the trainer's `sample_every` hook: trainer/sample_every.h).
#pragma once
#include <stdint.h>
#include <stdio.h>

#include "core/rng.h"
#include "model/generate.h"
#include "tokenizer/bpe.h"

// The next token from logits[V], only among ids < limit: temperature 0 takes the argmax (the
// lowest id among equals); otherwise softmax(logits / temperature) over the top_k largest (all
// when top_k = 0; ties by lower id), drawn with one rng_uniform.
int sample_next(const real *logits, int limit, double temperature, int top_k, Rng *rng);

// Replaces the escapes \n \t \r \\ \xNN in s (so prompts can hold newlines and edge spaces).
// Returns the byte count written to out (at most strlen(s)); exits 2 naming `key` on a bad escape.
size_t unescape_prompt(const char *s, uint8_t *out, const char *key);

// The tokens generation starts from. With a tokenizer: <|endoftext|> (a document starts), then
// the prompt text (escapes replaced) encoded. Without one (MQAR), the prompt is token ids
// separated by spaces, or token 0 when empty. Tokens must be < vocab (exit 2 naming key).
void prompt_tokens(Bpe *bpe, const char *prompt, int vocab, const char *key, TokBuf *out);

typedef void (*token_fn)(void *ctx, uint32_t token);
// Feeds prompt[n_prompt] (n_prompt >= 1), then draws n tokens, calling fn on each as it comes.
// Returns 0; or -1 when the stop flag (core/progress.h)
// was set: it gives the sample up within a token.
// The most tokens a sample may ask for (sample_tokens, ./sample's n): a larger one is refused.
#define SAMPLE_MAX_TOKENS 1000000
int sample_generate(Generator *g, const uint32_t *prompt, size_t n_prompt, int n, double temperature, int top_k,
                    int limit, Rng *rng, token_fn fn, void *ctx);

// Exits 2 when tokenizer b (read from path) is not the one a model was trained with (vocab,
// id: bpe_identity; vocab = 0: unknown, no check). where: what recorded it, for the message.
void sample_require_tokenizer(const Bpe *b, const char *path, int vocab, uint32_t id, const char *where);
// The tokens sampling draws from: the model's vocabulary, or a smaller tokenizer's (llm.c's GPT-2
// pads 50257 tokens to 50304 rows), said once on stderr.
int sample_token_limit(const Bpe *b, const char *path, int vocab);
