// Fuzz target: the TensorBoard event reader (core/tfevents.c tfevents_read, tfevents_read_dir).
// An input whose first byte is odd is a list of Event messages, each a length byte and that many
// bytes, framed here as TFRecords with their right CRCs (so the message decoder is reached past
// the CRC checks); otherwise the bytes after it are the file as is. Properties: the reader returns
// 0, or -1 with one line naming the file; it never crashes, reads out of bounds or leaks; every
// scalar and file version it reports has its text; the folder reader agrees with it on success.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/tfevents.h"
#include "tests/fuzz/fuzz.h"

typedef struct {
    const char *path, *dir;
    long items;
} Input;

static int item(const TfEventItem *e, void *ctx) {
    Input *in = ctx;
    if ((e->kind == TFE_SCALAR || e->kind == TFE_FILE_VERSION) && !e->text) fuzz_fail("an item without its text");
    in->items++;
    return 0;
}

static void run(void *arg) {
    Input *in = arg;
    char err[2048] = "";
    int rc = tfevents_read(in->path, item, in, err, sizeof err);
    if (rc != 0 && (rc != -1 || !strstr(err, in->path) || strchr(err, '\n'))) fuzz_fail("rc %d, message '%s'", rc, err);
    TfScalar *s = NULL;
    long n = tfevents_read_dir(in->dir, &s, err, sizeof err);
    if (n < 0 && rc == 0) fuzz_fail("the folder reader failed where the file reader did not: %s", err);
    for (long i = 0; i < n; i++)
        if (!s[i].tag) fuzz_fail("a scalar without its tag");
    tfevents_free_scalars(s, n > 0 ? n : 0);
}

static void put_le(unsigned char *p, unsigned long long v, int n) {
    for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    if (size < 1) return 0;
    unsigned char *file = NULL;
    size_t n = 0;
    if (data[0] & 1) {
        file = malloc(size / 1 * 17 + 16);
        for (size_t at = 1; at < size;) {
            size_t len = data[at++];
            if (len > size - at) len = size - at;
            unsigned char *r = file + n;
            put_le(r, len, 8);
            put_le(r + 8, crc32c_masked(r, 8), 4);
            memcpy(r + 12, data + at, len);
            put_le(r + 12 + len, crc32c_masked(data + at, len), 4);
            n += 16 + len;
            at += len;
        }
    } else {
        file = malloc(size);
        memcpy(file, data + 1, size - 1);
        n = size - 1;
    }
    // the folder holds this one event file (the name tfevents_read_dir looks for)
    static int made;
    if (!made) {
        char ev[4096];
        snprintf(ev, sizeof ev, "%s", fuzz_file("probe", "", 0));
        snprintf(strrchr(ev, '/'), 4, "/ev");
        mkdir(ev, 0755);
        made = 1;
    }
    const char *path = fuzz_file("ev/events.out.tfevents.1", file, n);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = 0;
    Input in = {path, dir, 0};
    fuzz_call(run, &in);
    free(file);
    return 0;
}
