#include "tokenizer/tokenizer_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "tokenizer/llmc_tokenizer.h"

Bpe *tokenizer_read(const char *path, char *err, size_t errlen) {
    size_t len;
    if (is_directory(path)) {
        snprintf(err, errlen, "%s: is a folder, expected a tokenizer file", path);
        return NULL;
    }
    char *text = read_file_text(path, &len);
    if (!text) {
        snprintf(err, errlen, "%s: cannot open tokenizer (%s)", path, strerror(errno));
        return NULL;
    }
    Bpe *b = llmc_is_tokenizer((const uint8_t *)text, len)
        ? llmc_tokenizer_parse(path, (const uint8_t *)text, len, err, errlen)
        : bpe_parse(path, text, len, err, errlen);
    free(text);
    return b;
}

Bpe *tokenizer_load(const char *path) {
    char err[1024];
    Bpe *b = tokenizer_read(path, err, sizeof err);
    if (!b) die_input("%s", err);
    return b;
}

Bpe *tokenizer_load_encoder(const char *path, const char *key) {
    Bpe *b = tokenizer_load(path);
    if (b->decode_only)
        die_input("%s: %s is llm.c's tokenizer file, which decodes only (it holds no merges): encoding needs a "
                  "tokenizer made by ./tokenize train",
                  key, path);
    return b;
}
