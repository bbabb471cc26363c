// Fuzz target: the tokenizer file loader (tokenizer/tokenizer_file.c tokenizer_read, which parses
// this project's files with tokenizer/bpe.c bpe_parse). The input is a tokenizer file; when its
// last line is not a `crc32` line, the correct one is appended, so mutations of the body get past
// the CRC check (inputs that end with one test the check itself). Properties: tokenizer_read
// returns a tokenizer or a one-line message naming the file, never crashes; a tokenizer it
// returns decodes what it encodes back to the same bytes (the input itself is the text).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tokenizer/bpe.h"
#include "tests/fuzz/fuzz.h"
#include "tokenizer/tokenizer_file.h"

typedef struct {
    const char *path;
    const unsigned char *text;
    size_t size;
} Input;

static void load(void *arg) {
    const Input *in = arg;
    char err[1024];
    err[0] = 0;
    Bpe *b = tokenizer_read(in->path, err, sizeof err);
    if (!b) {
        if (!strstr(err, in->path) || strchr(err, '\n')) fuzz_fail("bad message: '%s'", err);
        return;
    }
    TokBuf toks = {0};
    bpe_encode(b, in->text, in->size, &toks);
    for (size_t i = 0; i < toks.n; i++)
        if (toks.v[i] >= (uint32_t)b->vocab_size || toks.v[i] == (uint32_t)b->eot)
            fuzz_fail("encode gave id %u", toks.v[i]);
    ByteBuf back = {0};
    bpe_decode(b, toks.v, toks.n, &back);
    if (back.n != in->size || (in->size && memcmp(back.v, in->text, in->size))) fuzz_fail("decode(encode(x)) != x");
    free(toks.v);
    free(back.v);
    bpe_free(b);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    size_t last = size;
    if (last && data[last - 1] == '\n') last--;
    while (last && data[last - 1] != '\n') last--;
    int has_crc = size - last >= 6 && !memcmp(data + last, "crc32 ", 6);
    unsigned char *file = malloc(size + 32);
    memcpy(file, data, size);
    size_t n = size;
    if (!has_crc) {
        if (n && file[n - 1] != '\n') file[n++] = '\n';
        n += (size_t)sprintf((char *)file + n, "crc32 %08lx\n", crc32(0L, file, (uInt)n));
    }
    Input in = {fuzz_file("in.bpe", file, n), data, size};
    fuzz_call(load, &in);
    free(file);
    return 0;
}
