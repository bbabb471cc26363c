#include "tokenizer/prepare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/io.h"
#include "core/progress.h"
#include "data/shards.h"
#include "tokenizer/chunks.h"

typedef struct {
    Bpe *bpe;
    const PrepareOptions *o;
    PrepareStats *st;
    int wide;  // uint32 shards
    ChunkStream cs;
    TokBuf buf[2];   // tokens of the shard being filled, per split
    long doc_index;  // documents begun
    int split;       // split of the open document
    int in_doc;
    int line_blank;    // the current line holds only whitespace so far
    ByteBuf pending;   // that whitespace (dropped if the line ends blank)
    const char *path;  // file being read
    int input;         // its index among the inputs
    double t0, shown;
} Prep;

char *prepare_shard_path(const char *prefix, int split, int k) {
    size_t n = strlen(prefix) + 32;
    char *p = mallocCheck(n);
    snprintf(p, n, "%s_%s_%03d.bin", prefix, split ? "val" : "train", k);
    return p;
}

// Writes the first n tokens of split s's buffer as its next shard and keeps the rest.
static void write_shard(Prep *p, int s, size_t n) {
    TokBuf *b = &p->buf[s];
    char *path = prepare_shard_path(p->o->out, s, p->st->shards[s]++);
    shard_write_tagged(path, b->v, (long)n, p->wide, p->bpe->vocab_size, bpe_identity(p->bpe));
    free(path);
    memmove(b->v, b->v + n, (b->n - n) * sizeof *b->v);
    b->n -= n;
}

// Full shards go out as soon as they are full (a document may continue in the next one).
static void settle(Prep *p, int s) {
    while ((long)p->buf[s].n >= p->o->shard_tokens) write_shard(p, s, (size_t)p->o->shard_tokens);
}

static void emit_token(Prep *p, uint32_t tok) {
    tokbuf_push(&p->buf[p->split], tok);
    p->st->tokens[p->split]++;
    settle(p, p->split);
}

static void on_chunk(void *ctx, const uint8_t *chunk, int len) {
    Prep *p = ctx;
    TokBuf *b = &p->buf[p->split];
    size_t before = b->n;
    bpe_encode_chunk(p->bpe, chunk, len, b);
    p->st->tokens[p->split] += (long)(b->n - before);
    settle(p, p->split);
}

static int is_val(double f, long i) { return floor((double)(i + 1) * f) > floor((double)i * f); }

static void doc_bytes(Prep *p, const uint8_t *s, size_t n) {
    if (n == 0) return;
    if (!p->in_doc) {
        p->split = p->o->val_input ? p->o->val_input[p->input] != 0 : is_val(p->o->val_fraction, p->doc_index);
        p->doc_index++;
        p->st->docs[p->split]++;
        p->in_doc = 1;
        emit_token(p, (uint32_t)p->bpe->eot);
    }
    chunks_feed(&p->cs, s, n, on_chunk, p);
}

static void doc_end(Prep *p) {
    if (!p->in_doc) return;
    chunks_finish(&p->cs, on_chunk, p);
    p->in_doc = 0;
}

static int is_blank_byte(uint8_t c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// Paragraph mode: whitespace-only lines end documents and are dropped.
static void paragraph_block(Prep *p, const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        if (p->line_blank) {
            uint8_t c = s[i];
            if (c == '\n') {
                p->pending.n = 0;
                doc_end(p);
                i++;
            } else if (is_blank_byte(c)) {
                bytebuf_append(&p->pending, &c, 1);
                i++;
            } else {
                p->line_blank = 0;
                doc_bytes(p, p->pending.v, p->pending.n);
                p->pending.n = 0;
            }
        } else {
            const uint8_t *nl = memchr(s + i, '\n', n - i);
            size_t end = nl ? (size_t)(nl - s) + 1 : n;
            doc_bytes(p, s + i, end - i);
            if (nl) p->line_blank = 1;
            i = end;
        }
    }
}

static void show_progress(Prep *p) {
    double now = now_seconds();
    if (!p->o->progress || now - p->shown < 0.2) return;
    p->shown = now;
    double mb = (double)p->st->bytes / 1e6;
    progress_line("prepare: %s | %.1f MB | %ld documents | %ld tokens | %.1f MB/s", p->path, mb,
                  p->st->docs[0] + p->st->docs[1], p->st->tokens[0] + p->st->tokens[1], mb / (now - p->t0 + 1e-9));
}

static void on_block(void *ctx, const uint8_t *s, size_t n) {
    Prep *p = ctx;
    if (p->o->by_file) doc_bytes(p, s, n);
    else paragraph_block(p, s, n);
    p->st->bytes += n;
    show_progress(p);
}

void prepare_shards(Bpe *bpe, char *const *inputs, int n_inputs, const PrepareOptions *o, PrepareStats *st) {
    Prep p;
    memset(&p, 0, sizeof p);
    memset(st, 0, sizeof *st);
    p.bpe = bpe;
    p.o = o;
    p.st = st;
    p.wide = bpe->vocab_size > 65536;
    p.t0 = now_seconds();
    chunks_init(&p.cs);
    for (int i = 0; i < n_inputs; i++) {
        p.path = inputs[i];
        p.input = i;
        p.line_blank = 1;
        p.pending.n = 0;
        read_text_file(inputs[i], on_block, &p);
        doc_end(&p);  // a file ends its last document
    }
    // (before any shard is written or removed: an empty input must not replace earlier shards)
    if (st->docs[0] + st->docs[1] == 0)
        die_input("%s%s: no text to prepare (0 documents): no shard written", inputs[0],
                  n_inputs > 1 ? " and the other inputs" : "");
    for (int s = 0; s < 2; s++)
        if (p.buf[s].n) write_shard(&p, s, p.buf[s].n);
    if (o->progress) progress_break();
    // Shards left by an earlier, longer preparation under the same prefix would join the glob.
    for (int s = 0; s < 2; s++)
        for (int k = st->shards[s];; k++) {
            char *path = prepare_shard_path(o->out, s, k);
            int gone = !path_exists(path);
            if (!gone) {
                if (unlink(path) != 0) die("%s: cannot remove this stale shard", path);
                printf("removed %s (left by an earlier preparation)\n", path);
            }
            free(path);
            if (gone) break;
        }
    chunks_free(&p.cs);
    free(p.buf[0].v);
    free(p.buf[1].v);
    free(p.pending.v);
}
