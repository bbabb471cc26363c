// Fuzz target: the run-log merger (core/runlog.c runlog_merge_text), what ./evaluate uses to merge
// its records into eval.jsonl and intervention.jsonl. The input is the old file, a 0x00 byte, then
// the fresh records; bit 0 of the first byte chooses RUNLOG_SAME_KEY or RUNLOG_SAME_SERIES.
// Properties: the merge never fails or leaks; a repeated merge of the same fresh records changes
// nothing; every old record that no fresh record replaces is kept byte for byte, and every fresh
// record is written (a record: a line runlog_each_text reports).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/runlog.h"
#include "tests/fuzz/fuzz.h"

typedef struct {
    const char *old, *fresh;
    size_t n_old, n_fresh;
    RunlogReplace replace;
} Input;

typedef struct {
    char **line;
    size_t *len;
    RunlogRecord *rec;  // key fields only (obj, line: not kept)
    char **split, **options;
    int n, cap;
} Records;

static int gather(const RunlogRecord *r, void *ctx) {
    Records *s = ctx;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        s->line = realloc(s->line, sizeof(char *) * (size_t)s->cap);
        s->len = realloc(s->len, sizeof(size_t) * (size_t)s->cap);
        s->rec = realloc(s->rec, sizeof(RunlogRecord) * (size_t)s->cap);
        s->split = realloc(s->split, sizeof(char *) * (size_t)s->cap);
        s->options = realloc(s->options, sizeof(char *) * (size_t)s->cap);
    }
    s->line[s->n] = strndup(r->line, r->len);
    s->len[s->n] = r->len;
    s->rec[s->n] = *r;
    s->split[s->n] = strdup(r->split);
    s->options[s->n] = strdup(r->options);
    s->rec[s->n].split = s->split[s->n], s->rec[s->n].options = s->options[s->n];
    s->rec[s->n].obj = NULL, s->rec[s->n].line = NULL;
    s->n++;
    return 0;
}

static void records_free(Records *s) {
    for (int i = 0; i < s->n; i++) free(s->line[i]), free(s->split[i]), free(s->options[i]);
    free(s->line), free(s->len), free(s->rec), free(s->split), free(s->options);
}

static char *merge(const char *old, size_t n_old, const Input *in, size_t *n) {
    char *buf = NULL;
    FILE *f = open_memstream(&buf, n);
    runlog_merge_text(old, n_old, in->fresh, in->n_fresh, in->replace, f);
    fclose(f);
    return buf;
}

// 1 when the text holds line (whole, between newlines).
static int has_line(const char *text, size_t n, const char *line, size_t len) {
    for (size_t at = 0; at + len < n + 1;) {
        const char *nl = memchr(text + at, '\n', n - at);
        size_t end = nl ? (size_t)(nl - text) : n;
        if (end - at == len && !memcmp(text + at, line, len)) return 1;
        at = end + 1;
    }
    return 0;
}

static void run(void *arg) {
    const Input *in = arg;
    size_t n1, n2;
    char *once = merge(in->old, in->n_old, in, &n1);
    char *twice = merge(once, n1, in, &n2);
    if (n1 != n2 || memcmp(once, twice, n1)) fuzz_fail("a repeated merge changed the file:\n%s---\n%s", once, twice);
    // the records: the old text as the merger reads it (a last line without its newline counts)
    char *old = malloc(in->n_old + 1);
    memcpy(old, in->old, in->n_old);
    size_t n_old = in->n_old;
    if (n_old && old[n_old - 1] != '\n') old[n_old++] = '\n';
    Records o = {0}, f = {0};
    runlog_each_text(old, n_old, gather, &o);
    runlog_each_text(in->fresh, in->n_fresh, gather, &f);
    for (int j = 0; j < f.n; j++)
        if (!has_line(once, n1, f.line[j], f.len[j])) fuzz_fail("fresh record %d is missing: %s", j, f.line[j]);
    for (int i = 0; i < o.n; i++) {
        int replaced = 0;
        for (int j = 0; j < f.n && !replaced; j++)
            replaced = in->replace == RUNLOG_SAME_SERIES
                ? !strcmp(o.rec[i].split, f.rec[j].split) && !strcmp(o.rec[i].options, f.rec[j].options)
                : runlog_same_key(&o.rec[i], &f.rec[j]);
        if (!replaced && !has_line(once, n1, o.line[i], o.len[i]))
            fuzz_fail("old record %d was lost: %s", i, o.line[i]);
    }
    records_free(&o), records_free(&f);
    free(old), free(once), free(twice);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    if (size < 1) return 0;
    const char *text = (const char *)data + 1;
    size_t n = size - 1;
    const char *sep = memchr(text, 0, n);
    Input in = {text, sep ? sep + 1 : text + n, sep ? (size_t)(sep - text) : n, sep ? n - (size_t)(sep - text) - 1 : 0,
                data[0] & 1 ? RUNLOG_SAME_SERIES : RUNLOG_SAME_KEY};
    fuzz_call(run, &in);
    return 0;
}
