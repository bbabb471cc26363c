// TensorBoard event files (core/tfevents.h): the CRC32C against its standard check value, the
// writer read back by the project's reader, and a damaged byte or a malformed event caught with
// one line, no crash. (tests/test_tensorboard.c: the trainer's files.)
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/tfevents.h"
#include "tests/test.h"

TEST(tfevents_crc32c_check_value) {
    CHECK(crc32c(0, "123456789", 9) == 0xE3069283u, "%08x", crc32c(0, "123456789", 9));  // RFC 3720 B.4
    CHECK(crc32c(0, "", 0) == 0);
    // in pieces, the same as at once
    CHECK(crc32c(crc32c(0, "1234", 4), "56789", 5) == 0xE3069283u);
    uint32_t c = crc32c(0, "123456789", 9);
    CHECK(crc32c_masked("123456789", 9) == (((c >> 15) | (c << 17)) + 0xa282ead8u));
}

typedef struct {
    int n, n_version, n_start;
    long start_step;
    char tags[8][64];
    long steps[8];
    float values[8];
} Seen;

static int see(const TfEventItem *e, void *ctx) {
    Seen *s = ctx;
    if (e->kind == TFE_FILE_VERSION) {
        CHECK(s->n == 0 && s->n_start == 0, "the file version is not first");
        CHECK(!strcmp(e->text, "brain.Event:2"), "%s", e->text);
        s->n_version++;
    } else if (e->kind == TFE_START) {
        s->n_start++, s->start_step = e->step;
    } else if (s->n < 8) {
        snprintf(s->tags[s->n], sizeof s->tags[0], "%s", e->text);
        s->steps[s->n] = e->step, s->values[s->n] = e->value;
        s->n++;
    }
    CHECK(e->wall_time > 1.6e9 && e->wall_time < 1e11, "wall time %f", e->wall_time);
    return 0;
}

// A file of three scalars in two events after the header events; returns its path.
static const char *write_small_file(const char *dir) {
    TfEvents w;
    CHECK(tfevents_open(&w, dir, 7) == 0);
    CHECK(strstr(w.name, "events.out.tfevents.") == w.name && strstr(w.name, ".s00000007"), "%s", w.name);
    tfevents_begin(&w, 7);
    tfevents_add(&w, "train/loss", 2.5f);
    tfevents_add(&w, "train/lr", 1e-3f);
    tfevents_end(&w);
    tfevents_begin(&w, 300);
    tfevents_add(&w, "val/acc", -0.0f);
    tfevents_end(&w);
    tfevents_begin(&w, 301);  // no value: no event
    tfevents_end(&w);
    CHECK(fflush(w.f) == 0 && !ferror(w.f));
    static char path[1300];
    snprintf(path, sizeof path, "%s", w.path);
    CHECK(tfevents_close(&w) == 0);
    return path;
}

TEST(tfevents_written_file_reads_back) {
    const char *path = write_small_file(test_tmpdir());
    Seen s = {0};
    char err[512] = "";
    CHECK(tfevents_read(path, see, &s, err, sizeof err) == 0, "%s", err);
    CHECK(s.n_version == 1 && s.n_start == 1 && s.start_step == 7, "%d %d %ld", s.n_version, s.n_start, s.start_step);
    CHECK(s.n == 3, "%d scalars", s.n);
    CHECK(!strcmp(s.tags[0], "train/loss") && s.steps[0] == 7 && s.values[0] == 2.5f);
    CHECK(!strcmp(s.tags[1], "train/lr") && s.steps[1] == 7 && s.values[1] == 1e-3f);
    CHECK(!strcmp(s.tags[2], "val/acc") && s.steps[2] == 300 && s.values[2] == 0 && signbit(s.values[2]));
    // a record cut short at the end (a kill while writing) ends the file quietly
    size_t len;
    char *bytes = read_file_text(path, &len);
    FILE *f = fopenCheck(path, "wb");
    fwrite(bytes, 1, len - 3, f);
    fclose(f);
    memset(&s, 0, sizeof s);
    CHECK(tfevents_read(path, see, &s, err, sizeof err) == 0, "%s", err);
    CHECK(s.n == 2, "%d scalars", s.n);
    free(bytes);
}

// Reads path after flipping one bit of byte `at`; returns the reader's message ("" when none).
static const char *read_damaged(const char *path, size_t at, int *rc) {
    size_t len;
    char *bytes = read_file_text(path, &len);
    CHECK(at < len);
    bytes[at] ^= 0x10;
    const char *copy = test_path("damaged");
    FILE *f = fopenCheck(copy, "wb");
    fwrite(bytes, 1, len, f);
    fclose(f);
    free(bytes);
    static char err[512];
    err[0] = 0;
    Seen s = {0};
    *rc = tfevents_read(copy, see, &s, err, sizeof err);
    return err;
}

TEST(tfevents_damaged_byte_is_caught_by_a_crc) {
    const char *path = write_small_file(test_tmpdir());
    int rc;
    // byte 2: the first record's length
    const char *err = read_damaged(path, 2, &rc);
    CHECK(rc == -1 && strstr(err, "damaged: record 0 at byte 0: length CRC mismatch (the file is damaged)"), "%s", err);
    CHECK(!strchr(err, '\n'), "more than one line: %s", err);
    // every byte of the data of the last record: caught by the data CRC (or, for its CRC itself, too)
    size_t len;
    free(read_file_text(path, &len));
    for (size_t at = len - 20; at < len; at++) {
        err = read_damaged(path, at, &rc);
        CHECK(rc == -1 && strstr(err, "data CRC mismatch (the file is damaged)") && !strchr(err, '\n'),
              "byte %zu: %d %s", at, rc, err);
    }
}

TEST(tfevents_malformed_event_with_valid_crcs_is_refused) {
    // a record whose data is not a protocol buffer: the CRCs are right, the message is not
    uint8_t data[] = {0x2a, 0x7f, 0x01};  // Event.summary, 127 bytes long, 1 present
    uint8_t rec[8 + 4 + sizeof data + 4] = {sizeof data};
    uint32_t c_len = crc32c_masked(rec, 8), c_data = crc32c_masked(data, sizeof data);
    for (int i = 0; i < 4; i++) rec[8 + i] = (uint8_t)(c_len >> (8 * i));
    memcpy(rec + 12, data, sizeof data);
    for (int i = 0; i < 4; i++) rec[12 + sizeof data + i] = (uint8_t)(c_data >> (8 * i));
    const char *path = test_path("events.out.tfevents.bad");
    FILE *f = fopenCheck(path, "wb");
    fwrite(rec, 1, sizeof rec, f);
    fclose(f);
    char err[512] = "";
    Seen s = {0};
    CHECK(tfevents_read(path, see, &s, err, sizeof err) == -1 && strstr(err, "record 0 at byte 0: not a valid Event message"),
          "%s", err);
}
