#include "data/shards.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/io.h"

// Tokens and header fields are read in place from the mapping.
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "token shards are little-endian and read in place: this code needs a little-endian host"
#endif

static int32_t header_int(const uint8_t *map, int i) {
    int32_t v;
    memcpy(&v, map + 4 * i, 4);
    return v;
}

void shard_open(Shard *s, const char *path) {
    memset(s, 0, sizeof *s);
    int fd = open(path, O_RDONLY);
    if (fd < 0) die_input("%s: cannot open (%s)", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) die("%s: cannot stat (%s)", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) die_input("%s: not a regular file (expected an llm.c token shard)", path);
    size_t len = (size_t)st.st_size;
    if (len < SHARD_HEADER_BYTES)
        die_input("%s: truncated: %zu bytes, shorter than the %d-byte shard header", path, len, SHARD_HEADER_BYTES);
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) die("%s: mmap failed (%s)", path, strerror(errno));
    close(fd);  // the mapping stays valid

    const uint8_t *m = map;
    int32_t magic = header_int(m, 0), version = header_int(m, 1), count = header_int(m, 2);
    int width;
    if (magic == SHARD_MAGIC_U16) {
        if (version != SHARD_VERSION_U16)
            die_input("%s: unsupported version %d for magic %d (expected version %d, uint16 tokens)", path, version,
                      magic, SHARD_VERSION_U16);
        width = 2;
    } else if (magic == SHARD_MAGIC_U32) {
        if (version != SHARD_VERSION_U32)
            die_input("%s: unsupported version %d for magic %d (expected version %d, uint32 tokens)", path, version,
                      magic, SHARD_VERSION_U32);
        width = 4;
    } else {
        die_input("%s: bad magic %d (expected %d for uint16 or %d for uint32 llm.c token shards)", path, magic,
                  SHARD_MAGIC_U16, SHARD_MAGIC_U32);
    }
    if (count < 0) die_input("%s: bad header: negative token count %d", path, count);
    s->tok_vocab = header_int(m, 3) > 0 ? header_int(m, 3) : 0;
    s->tok_id = s->tok_vocab ? (uint32_t)header_int(m, 4) : 0;
    size_t want = SHARD_HEADER_BYTES + (size_t)count * (size_t)width;
    if (len < want)
        die_input("%s: truncated: the header declares %d tokens (%zu bytes) but the file has %zu bytes", path, count,
                  want, len);
    // llm.c refuses any size mismatch too: trailing bytes mean a wrong count or a wrong format.
    if (len > want)
        die_input("%s: %zu unexpected bytes after the %d tokens the header declares", path, len - want, count);
    s->path = strdupCheck(path);
    s->map = m;
    s->map_len = len;
    s->tokens = m + SHARD_HEADER_BYTES;
    s->width = width;
    s->ntok = count;
}

void shard_close(Shard *s) {
    if (s->map) munmap((void *)s->map, s->map_len);
    free(s->path);
    memset(s, 0, sizeof *s);
}

uint32_t shard_check_tokens(const Shard *s, int vocab_size) {
    uint32_t mx = 0;  // a branch-free max pass first (vectorizes); locate the culprit only on error
    if (s->width == 2) {
        const uint16_t *t = (const uint16_t *)s->tokens;
        for (long i = 0; i < s->ntok; i++) mx = t[i] > mx ? t[i] : mx;
    } else {
        const uint32_t *t = (const uint32_t *)s->tokens;
        for (long i = 0; i < s->ntok; i++) mx = t[i] > mx ? t[i] : mx;
    }
    if (vocab_size > 0 && mx >= (uint32_t)vocab_size)
        for (long i = 0; i < s->ntok; i++)
            if (shard_token(s, i) >= (uint32_t)vocab_size)
                die_input("%s: token %u at position %ld is out of range (vocab_size = %d)", s->path, shard_token(s, i),
                          i, vocab_size);
    return mx;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

char **glob_sorted(const char *pattern, const char *key, int *n) {
    glob_t g;
    int rc = glob(pattern, GLOB_NOSORT, NULL, &g);
    if (rc == GLOB_NOMATCH || (rc == 0 && g.gl_pathc == 0))
        die_input("%s: no files match '%s' (make shards with ./tokenize prepare, docs/text.md, or llm.c's dev/data scripts, docs/gpt2.md)",
                  key, pattern);
    if (rc != 0) die_input("%s: cannot expand '%s' (glob error %d)", key, pattern, rc);
    // sorted by byte order, not by the locale's collation, so the order is the same everywhere
    char **paths = mallocCheck(g.gl_pathc * sizeof *paths);
    for (size_t i = 0; i < g.gl_pathc; i++) paths[i] = strdupCheck(g.gl_pathv[i]);
    qsort(paths, g.gl_pathc, sizeof *paths, cmp_str);
    *n = (int)g.gl_pathc;
    globfree(&g);
    return paths;
}

void free_paths(char **paths, int n) {
    for (int i = 0; i < n; i++) free(paths[i]);
    free(paths);
}

void shard_write(const char *path, const uint32_t *tokens, long n, int wide) {
    shard_write_tagged(path, tokens, n, wide, 0, 0);
}

void shard_write_tagged(const char *path, const uint32_t *tokens, long n, int wide, int tok_vocab, uint32_t tok_id) {
    if (n > INT32_MAX) die("%s: %ld tokens do not fit a shard header (int32 count)", path, n);
    int32_t header[SHARD_HEADER_INTS] = {0};
    header[0] = wide ? SHARD_MAGIC_U32 : SHARD_MAGIC_U16;
    header[1] = wide ? SHARD_VERSION_U32 : SHARD_VERSION_U16;
    header[2] = (int32_t)n;
    header[3] = tok_vocab;
    memcpy(&header[4], &tok_id, 4);
    AtomicFile out;
    char err[2600];
    if (atomic_open(&out, path, err, sizeof err) != 0) die_input("%s", err);
    fwriteCheck(header, sizeof header, 1, out.f, out.tmp);
    if (wide) {
        fwriteCheck(tokens, sizeof *tokens, (size_t)n, out.f, out.tmp);
    } else {
        uint16_t buf[4096];
        for (long i = 0; i < n;) {
            long m = n - i < 4096 ? n - i : 4096;
            for (long j = 0; j < m; j++) {
                if (tokens[i + j] > UINT16_MAX)
                    die("%s: token %u at position %ld does not fit uint16 (write a uint32 shard)", path, tokens[i + j],
                        i + j);
                buf[j] = (uint16_t)tokens[i + j];
            }
            fwriteCheck(buf, sizeof *buf, (size_t)m, out.f, out.tmp);
            i += m;
        }
    }
    if (atomic_commit(&out, err, sizeof err) != 0) die("%s", err);
}
