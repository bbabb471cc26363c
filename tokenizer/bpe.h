// Byte-level BPE: the vocabulary, its file, encoding and decoding. Ids 0..255 are the 256 bytes,
// so every byte string is representable; merge k (k = 0, 1, ...) makes id 256 + k from a pair of
// earlier ids; special tokens (<|endoftext|>) follow the merges and never come out of encoding
// text. Encoding splits the text into chunks (tokenizer/chunks.h) and applies, inside each chunk, the
// lowest-ranked merge present (leftmost first) until none applies: the order training learned them.
//
// File format (text, one item a line; docs/text.md#the-tokenizer-file):
//   attnscope-bpe 1
//   # comment lines start with '#'
//   vocab_size 512              256 + merges + special tokens
//   merges 255
//   pretokenizer chunks-1       the chunk rules of tokenizer/chunks.h
//   special 511 <|endoftext|>   one line per special token, ids consecutive after the merges
//   97 98<TAB>"ab"              one line per merge, in order: left id, right id; after a tab the
//   ...                         new token's bytes, escaped, for people (ignored when loading)
//   crc32 1a2b3c4d              CRC32 (zlib) of every byte before this line
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "tokenizer/hashmap.h"

#define BPE_MAGIC "attnscope-bpe 1"
#define BPE_PRETOKENIZER "chunks-1"
#define BPE_EOT_NAME "<|endoftext|>"

typedef struct {
    uint32_t *v;
    size_t n, cap;
} TokBuf;

typedef struct {
    uint8_t *v;
    size_t n, cap;
} ByteBuf;

void tokbuf_push(TokBuf *b, uint32_t t);
void bytebuf_append(ByteBuf *b, const void *p, size_t n);

typedef struct {
    int vocab_size;  // 256 + n_merges + n_special
    int n_merges;
    int n_special;
    int eot;                // id of <|endoftext|>
    int decode_only;        // 1: llm.c's tokenizer file (token bytes, no merges): decodes, cannot encode
    uint32_t (*merges)[2];  // [n_merges]: the pair that id 256 + k is made of
    char **special;         // [n_special] names
    // decoding: token id -> its bytes
    uint32_t *tok_off, *tok_len;  // [vocab_size]
    uint8_t *tok_bytes;
    PairMap ranks;  // (left, right) -> merge index
    // encoding cache: chunk -> its tokens (cleared when it grows large)
    StrMap cache;
    uint32_t *cache_off, *cache_n;  // [cache_cap] per cache entry: its tokens in cache_toks
    int32_t cache_cap;
    TokBuf cache_toks;
} Bpe;

// Builds a tokenizer from merges (each pair made of ids < 256 + its index; callers check) with
// the end-of-text token as the only special token.
Bpe *bpe_create(const uint32_t (*merges)[2], int n_merges);

// The tokenizer's identity, recorded in the shards it prepares and the checkpoints trained on
// them: zlib CRC-32 of its merges (each pair as two little-endian uint32) followed by its special
// tokens' names, each with its NUL. Together with vocab_size it tells two tokenizers apart.
uint32_t bpe_identity(const Bpe *b);
void bpe_free(Bpe *b);

// Parses the text of this project's tokenizer file, len bytes read from path (the text is
// modified); NULL with a one-line message naming the file (and line) on any problem. Reading
// either kind of tokenizer file from a path: tokenizer/tokenizer_file.h.
Bpe *bpe_parse(const char *path, char *text, size_t len, char *err, size_t errlen);
// Writes the file atomically (core/io.h: path.tmp, then rename); a path that cannot be written
// exits 2, an I/O error exits 1.
void bpe_save(const Bpe *b, const char *path);

// Appends the tokens of one chunk (len <= CHUNK_MAX) / of a whole text.
void bpe_encode_chunk(Bpe *b, const uint8_t *chunk, int len, TokBuf *out);
void bpe_encode(Bpe *b, const uint8_t *text, size_t n, TokBuf *out);
// Bytes of a token (a special token's name for special ids); NULL for an id out of range.
const uint8_t *bpe_token_bytes(const Bpe *b, uint32_t id, size_t *len);
// Appends the bytes of tokens[n]; ids out of range are written as "<?id>".
void bpe_decode(const Bpe *b, const uint32_t *tokens, size_t n, ByteBuf *out);

// "ab\x00" style: bytes as a quoted string with \" \\ and \xNN escapes for non-printables.
void bpe_escape(const uint8_t *p, size_t n, ByteBuf *out);
