// The tokenizer's pre-split ("chunks", GPT-2's regex without regexes or contractions) and reading
// text files. BPE merges never cross a chunk boundary, so training counts chunks and encoding caches
// them. Byte classes: whitespace (space \t \n \v \f \r), letters (A-Z a-z and every byte >= 0x80,
// so UTF-8 letters stay in words), digits, other. A chunk is
//   - an optional single space, then a run of letters, of digits, or of other bytes; or
//   - a run of whitespace; when a non-space follows it, its last character is left out (a space
//     then starts the next chunk, a newline becomes a chunk of its own), as GPT-2's \s+(?!\S).
// and at most CHUNK_MAX bytes (longer runs are cut into CHUNK_MAX pieces). A chunk depends on at
// most CHUNK_MAX + 1 bytes of look-ahead, so a stream cut into arbitrary blocks splits exactly as
// the whole text does.
#pragma once
#include <stddef.h>
#include <stdint.h>

#define CHUNK_MAX 256

// Length of the chunk starting at p (n > 0 bytes available; all of the rest of the text, or at
// least CHUNK_MAX + 2 bytes).
int chunk_length(const uint8_t *p, size_t n);

typedef void (*chunk_fn)(void *ctx, const uint8_t *chunk, int len);

// Cuts a text that arrives in blocks into chunks. Bytes wait in the stream until the chunk they
// belong to is certain.
typedef struct {
    uint8_t *buf;
    size_t len, cap;
} ChunkStream;

void chunks_init(ChunkStream *s);
void chunks_free(ChunkStream *s);
// Adds bytes; calls fn for every chunk that is now complete.
void chunks_feed(ChunkStream *s, const uint8_t *p, size_t n, chunk_fn fn, void *ctx);
// End of the text: the pending bytes become the last chunks.
void chunks_finish(ChunkStream *s, chunk_fn fn, void *ctx);
// The chunks of a whole text in memory.
void chunks_of(const uint8_t *p, size_t n, chunk_fn fn, void *ctx);

// Reads a file, plain or gzip (through zlib), "-" for standard input, in blocks of up to 1 MiB
// handed to fn. A missing, unreadable or damaged file exits 2 with one line naming it.
typedef void (*block_fn)(void *ctx, const uint8_t *p, size_t n);
// Returns the number of (uncompressed) bytes read.
uint64_t read_text_file(const char *path, block_fn fn, void *ctx);
