#include "core/tfevents.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/io.h"

// --- CRC32C ----------------------------------------------------------------------------------------
// The byte-at-a-time table of the reflected Castagnoli polynomial, built on first use (TensorBoard
// files are small: speed does not matter, but a wrong table would, so tests/test_tfevents.c
// checks the standard check value crc32c("123456789") = 0xE3069283).
static uint32_t g_table[256];

static void build_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        g_table[i] = c;
    }
}

uint32_t crc32c(uint32_t crc, const void *data, size_t n) {
    if (!g_table[1]) build_table();
    const uint8_t *p = data;
    crc = ~crc;
    for (size_t i = 0; i < n; i++) crc = g_table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

uint32_t crc32c_masked(const void *data, size_t n) {
    uint32_t crc = crc32c(0, data, n);
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

// --- protocol buffer encoding ------------------------------------------------------------------------
// A field is a key varint (field number << 3 | wire type) then its payload: wire type 0 a varint,
// 1 eight little-endian bytes (double), 2 a length varint and that many bytes (string, message),
// 5 four little-endian bytes (float). Integers are written byte by byte, so the files are the same
// on any host.
enum { WIRE_VARINT = 0, WIRE_64 = 1, WIRE_LEN = 2, WIRE_32 = 5 };

typedef struct {
    uint8_t *p;
    size_t len, cap;
} Bytes;

static void put(Bytes *b, const void *data, size_t n) {
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->p = reallocCheck(b->p, b->cap);
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void put_varint(Bytes *b, uint64_t v) {
    uint8_t tmp[10];
    int n = 0;
    do {
        tmp[n] = (uint8_t)(v & 0x7F);
        v >>= 7;
        if (v) tmp[n] |= 0x80;
        n++;
    } while (v);
    put(b, tmp, (size_t)n);
}

static void put_key(Bytes *b, int field, int wire) { put_varint(b, (uint64_t)field << 3 | (uint64_t)wire); }

static void put_le(Bytes *b, uint64_t v, int n) {
    uint8_t tmp[8];
    for (int i = 0; i < n; i++) tmp[i] = (uint8_t)(v >> (8 * i));
    put(b, tmp, (size_t)n);
}

static void put_bytes_field(Bytes *b, int field, const void *data, size_t n) {
    put_key(b, field, WIRE_LEN);
    put_varint(b, n);
    put(b, data, n);
}

static void put_double_field(Bytes *b, int field, double v) {
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    put_key(b, field, WIRE_64);
    put_le(b, u, 8);
}

// --- writing -----------------------------------------------------------------------------------------

static double wall_time(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// One TFRecord holding an Event: wall time and step, then the event's own field (already encoded).
static void write_event(FILE *f, long step, const uint8_t *what, size_t n_what) {
    Bytes ev = {0};
    put_double_field(&ev, 1, wall_time());
    if (step) put_key(&ev, 2, WIRE_VARINT), put_varint(&ev, (uint64_t)step);  // 0: left out, as protobuf does
    put(&ev, what, n_what);
    Bytes head = {0};
    put_le(&head, ev.len, 8);
    uint8_t crcs[8];
    uint32_t c_len = crc32c_masked(head.p, 8), c_data = crc32c_masked(ev.p, ev.len);
    for (int i = 0; i < 4; i++) crcs[i] = (uint8_t)(c_len >> (8 * i)), crcs[4 + i] = (uint8_t)(c_data >> (8 * i));
    fwrite(head.p, 1, 8, f);
    fwrite(crcs, 1, 4, f);
    fwrite(ev.p, 1, ev.len, f);
    fwrite(crcs + 4, 1, 4, f);
    free(ev.p);
    free(head.p);
}

int tfevents_open(TfEvents *w, const char *dir, long first_step) {
    memset(w, 0, sizeof *w);
    char host[256] = "localhost";
    if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "localhost");
    for (char *h = host; *h; h++)  // a file name of the host's name: letters, digits, - and _ only
        if (!((*h >= 'a' && *h <= 'z') || (*h >= 'A' && *h <= 'Z') || (*h >= '0' && *h <= '9') || *h == '-')) *h = '_';
    int n = snprintf(w->path, sizeof w->path, "%s/events.out.tfevents.%010lld.%s.s%08ld", dir, (long long)time(NULL),
                     host, first_step);
    if (n < 0 || (size_t)n >= sizeof w->path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    w->name = strrchr(w->path, '/') + 1;
    // "w": a file of the same name is one this run started in the same second at the same step,
    // whose records are redone now
    if (!(w->f = fopen(w->path, "w"))) return -1;
    Bytes b = {0};
    put_bytes_field(&b, 3, TFEVENTS_FILE_VERSION, strlen(TFEVENTS_FILE_VERSION));
    write_event(w->f, 0, b.p, b.len);
    b.len = 0;
    uint8_t start[] = {0x08, 0x01};  // SessionLog { status: START }
    put_bytes_field(&b, 7, start, sizeof start);
    write_event(w->f, first_step, b.p, b.len);
    free(b.p);
    // On the disk at once: held in the buffer until the first scalars (after a long first
    // validation), a start-up killed in between left an empty event file. A write error stays in
    // w->f for the caller's check, as every later one.
    fflush(w->f);
    return 0;
}

void tfevents_begin(TfEvents *w, long step) {
    w->step = step;
    w->len = 0;
}

void tfevents_add(TfEvents *w, const char *tag, float value) {
    Bytes v = {0}, s = {w->buf, w->len, w->cap};
    put_bytes_field(&v, 1, tag, strlen(tag));
    uint32_t u;
    memcpy(&u, &value, sizeof u);
    put_key(&v, 2, WIRE_32);
    put_le(&v, u, 4);
    put_bytes_field(&s, 1, v.p, v.len);  // Summary.value, repeated: one field per value
    w->buf = s.p, w->len = s.len, w->cap = s.cap;
    free(v.p);
}

void tfevents_end(TfEvents *w) {
    if (!w->len) return;
    Bytes e = {0};
    put_bytes_field(&e, 5, w->buf, w->len);
    write_event(w->f, w->step, e.p, e.len);
    free(e.p);
    w->len = 0;
}

int tfevents_close(TfEvents *w) {
    int rc = w->f ? fclose(w->f) : 0;
    free(w->buf);
    w->f = NULL, w->buf = NULL;
    return rc;
}

// --- protocol buffer decoding ------------------------------------------------------------------------
// A cursor over a message; every read checks the bounds, so a malformed event is an error, not a
// read past the buffer.
typedef struct {
    const uint8_t *p, *end;
} Cursor;

static int get_varint(Cursor *c, uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (c->p >= c->end) return -1;
        uint8_t b = *c->p++;
        *v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) return 0;
    }
    return -1;
}

// The next field: its number and wire type, and its payload as a cursor (the varint's value in
// *num for wire type 0). -1 when malformed.
static int get_field(Cursor *c, int *field, int *wire, Cursor *payload, uint64_t *num) {
    uint64_t key, n = 0;
    if (get_varint(c, &key) != 0 || key >> 3 == 0 || key >> 3 > 0x1FFFFFFF) return -1;
    *field = (int)(key >> 3), *wire = (int)(key & 7);
    switch (*wire) {
    case WIRE_VARINT: return get_varint(c, num);
    case WIRE_64: n = 8; break;
    case WIRE_32: n = 4; break;
    case WIRE_LEN:
        if (get_varint(c, &n) != 0) return -1;
        break;
    default: return -1;  // groups (3, 4) are not used by these messages
    }
    if (n > (uint64_t)(c->end - c->p)) return -1;
    payload->p = c->p, payload->end = c->p + n;
    c->p += n;
    return 0;
}

static uint64_t le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

// A copy of a string field, NUL-terminated (allocated).
static char *str_of(Cursor s) {
    size_t n = (size_t)(s.end - s.p);
    char *t = mallocCheck(n + 1);
    memcpy(t, s.p, n);
    t[n] = 0;
    return t;
}

// Calls fn for each item of one Event. 0, 1 when fn stopped, -1 when malformed.
static int decode_event(const uint8_t *data, size_t n, TfEventFn fn, void *ctx) {
    Cursor c = {data, data + n}, f;
    TfEventItem it = {0};
    const uint8_t *version = NULL, *summary = NULL;
    size_t n_version = 0, n_summary = 0;
    int start = 0;
    while (c.p < c.end) {
        int field, wire;
        uint64_t num = 0;
        if (get_field(&c, &field, &wire, &f, &num) != 0) return -1;
        if (field == 1 && wire == WIRE_64) {
            uint64_t u = le(f.p, 8);
            memcpy(&it.wall_time, &u, sizeof u);
        } else if (field == 2 && wire == WIRE_VARINT) it.step = (long)(int64_t)num;
        else if (field == 3 && wire == WIRE_LEN) version = f.p, n_version = (size_t)(f.end - f.p);
        else if (field == 5 && wire == WIRE_LEN) summary = f.p, n_summary = (size_t)(f.end - f.p);
        else if (field == 7 && wire == WIRE_LEN) {
            Cursor s = f, g;
            while (s.p < s.end) {
                int sf, sw;
                uint64_t status = 0;
                if (get_field(&s, &sf, &sw, &g, &status) != 0) return -1;
                if (sf == 1 && sw == WIRE_VARINT && status == 1) start = 1;
            }
        }
    }
    if (version) {
        char *v = str_of((Cursor){version, version + n_version});
        it.kind = TFE_FILE_VERSION, it.text = v;
        int stop = fn(&it, ctx);
        free(v);
        if (stop) return 1;
    }
    if (start) {
        it.kind = TFE_START, it.text = NULL;
        if (fn(&it, ctx)) return 1;
    }
    Cursor s = {summary, summary ? summary + n_summary : NULL};  // NULL + 0 is undefined (UBSan)
    while (summary && s.p < s.end) {                             // Summary: its Value fields
        int sf, sw;
        uint64_t num;
        if (get_field(&s, &sf, &sw, &f, &num) != 0) return -1;
        if (sf != 1 || sw != WIRE_LEN) continue;
        Cursor tag = {0}, g;
        int has_value = 0;
        while (f.p < f.end) {
            int vf, vw;
            if (get_field(&f, &vf, &vw, &g, &num) != 0) return -1;
            if (vf == 1 && vw == WIRE_LEN) tag = g;
            else if (vf == 2 && vw == WIRE_32) {
                uint32_t u = (uint32_t)le(g.p, 4);
                memcpy(&it.value, &u, sizeof u);
                has_value = 1;
            }
        }
        if (!has_value || !tag.p) continue;  // not a simple scalar (an image, a histogram)
        char *t = str_of(tag);
        it.kind = TFE_SCALAR, it.text = t;
        int stop = fn(&it, ctx);
        free(t);
        if (stop) return 1;
    }
    return 0;
}

// --- reading -----------------------------------------------------------------------------------------

static int fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

int tfevents_read(const char *path, TfEventFn fn, void *ctx, char *err, size_t errlen) {
    size_t size;
    uint8_t *data = (uint8_t *)read_file_text(path, &size);  // bytes, with a NUL after them
    if (!data) return fail(err, errlen, "%s: cannot read (%s)", path, strerror(errno));
    int rc = 0;
    size_t at = 0;
    for (long rec = 0; at + 12 <= size; rec++) {
        uint64_t n = le(data + at, 8);
        if (crc32c_masked(data + at, 8) != (uint32_t)le(data + at + 8, 4)) {
            rc = fail(err, errlen, "%s: record %ld at byte %zu: length CRC mismatch (the file is damaged)", path, rec, at);
            break;
        }
        if (n > size - at - 12 || size - at - 12 - n < 4) break;  // cut short at the end: no more records
        const uint8_t *ev = data + at + 12;
        if (crc32c_masked(ev, n) != (uint32_t)le(ev + n, 4)) {
            rc = fail(err, errlen, "%s: record %ld at byte %zu: data CRC mismatch (the file is damaged)", path, rec, at);
            break;
        }
        int d = decode_event(ev, (size_t)n, fn, ctx);
        if (d < 0) rc = fail(err, errlen, "%s: record %ld at byte %zu: not a valid Event message", path, rec, at);
        if (d != 0) break;
        at += 12 + n + 4;
    }
    free(data);
    return rc;
}

typedef struct {
    TfScalar *s;
    long n, cap;
} ScalarList;

static int collect(const TfEventItem *e, void *ctx) {
    ScalarList *l = ctx;
    if (e->kind == TFE_START) {  // TensorBoard's purge: a restart at step s drops steps >= s seen so far
        long k = 0;
        for (long i = 0; i < l->n; i++) {
            if (l->s[i].step < e->step) l->s[k++] = l->s[i];
            else free(l->s[i].tag);
        }
        l->n = k;
    } else if (e->kind == TFE_SCALAR) {
        if (l->n == l->cap) {
            l->cap = l->cap * 2 + 64;
            l->s = reallocCheck(l->s, sizeof *l->s * (size_t)l->cap);
        }
        l->s[l->n++] = (TfScalar){strdupCheck(e->text), e->step, e->value};
    }
    return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int tfevents_list_dir(const char *dir, char ***names) {
    *names = NULL;
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strstr(e->d_name, "tfevents")) continue;  // TensorBoard's own test for an event file
        *names = reallocCheck(*names, sizeof **names * (size_t)(n + 1));
        (*names)[n++] = strdupCheck(e->d_name);
    }
    closedir(d);
    if (n) qsort(*names, (size_t)n, sizeof **names, by_name);
    return n;
}

long tfevents_read_dir(const char *dir, TfScalar **out, char *err, size_t errlen) {
    *out = NULL;
    char **names;
    int n = tfevents_list_dir(dir, &names);
    if (n < 0) return fail(err, errlen, "%s: cannot open the folder (%s)", dir, strerror(errno));
    ScalarList l = {0};
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (rc == 0) rc = tfevents_read(path, collect, &l, err, errlen);
        free(names[i]);
    }
    free(names);
    if (rc != 0) {
        tfevents_free_scalars(l.s, l.n);
        return -1;
    }
    *out = l.s;
    return l.n;
}

void tfevents_free_scalars(TfScalar *s, long n) {
    for (long i = 0; i < n; i++) free(s[i].tag);
    free(s);
}
