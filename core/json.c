#include "core/json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"

#define JSON_MAX_DEPTH 64

typedef struct {
    const char *s;
    size_t len, pos;
    char *err;
    size_t errlen;
    int failed;
} Parser;

static void fail(Parser *p, const char *fmt, ...) {
    if (p->failed) return;
    p->failed = 1;
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(p->err, p->errlen, "%s at byte %zu", msg, p->pos);
}

static void skip_ws(Parser *p) {
    while (p->pos < p->len && strchr(" \t\r\n", p->s[p->pos]) && p->s[p->pos]) p->pos++;
}

static int peek(Parser *p) { return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1; }

static void put_utf8(char *out, size_t *n, unsigned cp) {
    if (cp < 0x80) out[(*n)++] = (char)cp;
    else if (cp < 0x800) {
        out[(*n)++] = (char)(0xC0 | cp >> 6);
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out[(*n)++] = (char)(0xE0 | cp >> 12);
        out[(*n)++] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        out[(*n)++] = (char)(0xF0 | cp >> 18);
        out[(*n)++] = (char)(0x80 | (cp >> 12 & 0x3F));
        out[(*n)++] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    }
}

static int hex4(Parser *p, unsigned *out) {
    if (p->pos + 4 > p->len) return 0;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[p->pos + i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    p->pos += 4;
    *out = v;
    return 1;
}

static char *parse_string(Parser *p) {
    if (peek(p) != '"') {
        fail(p, "expected a string");
        return NULL;
    }
    p->pos++;
    size_t start = p->pos;
    // output is never longer than the input
    size_t end = start;
    while (end < p->len && p->s[end] != '"') end += p->s[end] == '\\' ? 2 : 1;
    char *out = mallocCheck(end - start + 1);
    size_t n = 0;
    for (;;) {
        int c = peek(p);
        if (c < 0) {
            fail(p, "unterminated string");
            free(out);
            return NULL;
        }
        p->pos++;
        if (c == '"') break;
        if (c < 0x20) {
            fail(p, "control character in string");
            free(out);
            return NULL;
        }
        if (c != '\\') {
            out[n++] = (char)c;
            continue;
        }
        int e = peek(p);
        p->pos++;
        switch (e) {
        case '"': out[n++] = '"'; break;
        case '\\': out[n++] = '\\'; break;
        case '/': out[n++] = '/'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
            unsigned cp;
            if (!hex4(p, &cp)) {
                fail(p, "bad \\u escape");
                free(out);
                return NULL;
            }
            if (cp >= 0xD800 && cp < 0xDC00 && p->pos + 6 <= p->len && p->s[p->pos] == '\\' && p->s[p->pos + 1] == 'u') {
                unsigned lo;
                p->pos += 2;
                if (hex4(p, &lo) && lo >= 0xDC00 && lo < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (cp == 0) cp = 0xFFFD;  // keep strings NUL-terminated
            put_utf8(out, &n, cp);     // <= 4 bytes for a 6+ byte escape
            break;
        }
        default:
            fail(p, "bad escape");
            free(out);
            return NULL;
        }
    }
    out[n] = 0;
    return out;
}

static void parse_value(Parser *p, JsonValue *v, int depth);

static void append(JsonValue *v, int *cap) {
    if (v->n == *cap) {
        *cap = *cap ? *cap * 2 : 8;
        v->items = reallocCheck(v->items, sizeof(JsonValue) * (size_t)*cap);
        if (v->type == JSON_OBJECT) v->keys = reallocCheck(v->keys, sizeof(char *) * (size_t)*cap);
    }
    memset(&v->items[v->n], 0, sizeof(JsonValue));
    if (v->type == JSON_OBJECT) v->keys[v->n] = NULL;
    v->n++;
}

static void parse_container(Parser *p, JsonValue *v, int depth, char close) {
    int cap = 0;
    p->pos++;
    skip_ws(p);
    if (peek(p) == close) {
        p->pos++;
        return;
    }
    for (;;) {
        skip_ws(p);
        append(v, &cap);
        if (v->type == JSON_OBJECT) {
            char *key = parse_string(p);
            if (!key) return;
            v->keys[v->n - 1] = key;
            skip_ws(p);
            if (peek(p) != ':') return fail(p, "expected ':'");
            p->pos++;
        }
        parse_value(p, &v->items[v->n - 1], depth + 1);
        if (p->failed) return;
        skip_ws(p);
        int c = peek(p);
        p->pos++;
        if (c == close) return;
        if (c != ',') {
            p->pos--;
            return fail(p, "expected ',' or '%c'", close);
        }
    }
}

static void parse_value(Parser *p, JsonValue *v, int depth) {
    memset(v, 0, sizeof *v);
    if (depth > JSON_MAX_DEPTH) return fail(p, "nested too deeply");
    skip_ws(p);
    int c = peek(p);
    if (c == '{') {
        v->type = JSON_OBJECT;
        parse_container(p, v, depth, '}');
    } else if (c == '[') {
        v->type = JSON_ARRAY;
        parse_container(p, v, depth, ']');
    } else if (c == '"') {
        v->type = JSON_STRING;
        v->string = parse_string(p);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        v->type = JSON_NUMBER;
        size_t start = p->pos;
        int integer = 1;
        while (p->pos < p->len && strchr("+-0123456789.eE", p->s[p->pos]) && p->s[p->pos]) {
            if (strchr(".eE", p->s[p->pos])) integer = 0;
            p->pos++;
        }
        char buf[64];
        size_t n = p->pos - start;
        if (n >= sizeof buf) return fail(p, "number too long");
        memcpy(buf, p->s + start, n);
        buf[n] = 0;
        char *end;
        errno = 0;
        v->number = strtod(buf, &end);
        if (*end || n == 0) return fail(p, "bad number");
        if (integer) {
            v->integer = strtoll(buf, &end, 10);
            v->is_integer = errno == 0;
        }
    } else if (p->len - p->pos >= 4 && !strncmp(p->s + p->pos, "true", 4)) {
        v->type = JSON_BOOL, v->number = 1, p->pos += 4;
    } else if (p->len - p->pos >= 5 && !strncmp(p->s + p->pos, "false", 5)) {
        v->type = JSON_BOOL, p->pos += 5;
    } else if (p->len - p->pos >= 4 && !strncmp(p->s + p->pos, "null", 4)) {
        v->type = JSON_NULL, p->pos += 4;
    } else {
        fail(p, c < 0 ? "unexpected end" : "unexpected character");
    }
}

static void free_value(JsonValue *v) {
    for (int i = 0; i < v->n; i++) {
        free_value(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->string);
}

void json_free(JsonValue *v) {
    if (!v) return;
    free_value(v);
    free(v);
}

JsonValue *json_parse(const char *text, size_t len, char *err, size_t errlen) {
    Parser p = {text, len, 0, err, errlen, 0};
    JsonValue *v = callocCheck(1, sizeof *v);
    parse_value(&p, v, 0);
    if (!p.failed) {
        skip_ws(&p);
        if (p.pos != len) fail(&p, "trailing characters");
    }
    if (p.failed) {
        json_free(v);
        return NULL;
    }
    return v;
}

const JsonValue *json_get(const JsonValue *obj, const char *key) {
    if (!obj || obj->type != JSON_OBJECT) return NULL;
    for (int i = 0; i < obj->n; i++)
        if (obj->keys[i] && !strcmp(obj->keys[i], key)) return &obj->items[i];
    return NULL;
}

// Length of the valid UTF-8 sequence at p (1..4), or 0 when it is not one.
static int utf8_len(const uint8_t *p, size_t n) {
    uint8_t c = p[0];
    int len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (!len || (size_t)len > n) return 0;
    for (int i = 1; i < len; i++)
        if ((p[i] & 0xc0) != 0x80) return 0;
    uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1fu : len == 3 ? c & 0x0fu : c & 0x07u;
    for (int i = 1; i < len; i++) cp = cp << 6 | (p[i] & 0x3fu);
    static const uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;  // overlong, surrogate
    return len;
}

void json_write_bytes(FILE *f, const uint8_t *p, size_t n) {
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        uint8_t c = p[i];
        int len = utf8_len(p + i, n - i);
        if (!len) {
            fputs("\\ufffd", f);
            i++;
        } else if (len > 1) {
            fwrite(p + i, 1, (size_t)len, f);
            i += (size_t)len;
        } else {
            if (c == '"') fputs("\\\"", f);
            else if (c == '\\') fputs("\\\\", f);
            else if (c == '\n') fputs("\\n", f);
            else if (c == '\r') fputs("\\r", f);
            else if (c == '\t') fputs("\\t", f);
            else if (c < 0x20 || c == 0x7f) fprintf(f, "\\u%04x", c);
            else fputc(c, f);
            i++;
        }
    }
    fputc('"', f);
}

// Through json_write_bytes: a byte that is not part of valid UTF-8 (a path named in Latin-1) is
// written as U+FFFD, so every JSON text and safetensors header written is valid UTF-8 JSON.
void json_write_string(FILE *f, const char *s) { json_write_bytes(f, (const uint8_t *)s, strlen(s)); }

size_t json_utf8_invalid_at(const char *s) {
    const uint8_t *p = (const uint8_t *)s;
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        int len = utf8_len(p + i, n - i);
        if (!len) return i;
        i += (size_t)len;
    }
    return (size_t)-1;
}

double json_number(const JsonValue *obj, const char *key) {
    const JsonValue *v = json_get(obj, key);
    return v && v->type == JSON_NUMBER ? v->number : NAN;
}
