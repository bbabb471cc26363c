#include "core/config.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/json.h"

// Every config error goes through fail(): by default the one-line exit 2 of die_input; inside
// config_try_load_text it returns the message to the caller instead (evaluate skips a checkpoint
// with a bad config; the fuzz target must not exit). Not thread-safe: one trap at a time.
static jmp_buf *g_trap;
static char *g_trap_err;
static size_t g_trap_len;
static char *g_trap_copy;  // parse_text's line copy under the trap (freed when it fires)

// A value quoted in a message may hold a line break (a string key can hold anything): shown as a
// space, so every message stays one line.
static char *one_line(char *msg) {
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    return msg;
}

__attribute__((format(printf, 1, 2))) _Noreturn static void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (g_trap) {
        vsnprintf(g_trap_err, g_trap_len, fmt, ap);
        va_end(ap);
        one_line(g_trap_err);
        longjmp(*g_trap, 1);
    }
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    die_input("%s", one_line(msg));
}

void config_init(Config *c) { memset(c, 0, sizeof *c); }

void config_add_keys(Config *c, const KeyDef *defs) {
    for (const KeyDef *d = defs; d->name; d++) {
        if (config_find(c, d->name)) die("config key '%s' declared twice", d->name);
        if (c->n_keys == CONFIG_MAX_KEYS) die("too many config keys");
        int i = c->n_keys++;
        c->keys[i] = d;
        c->value[i] = NULL;
        c->origin[i] = NULL;
        config_set(c, d->name, d->def, NULL);  // validates the default itself
        c->origin[i] = NULL;
    }
}

void config_free(Config *c) {
    for (int i = 0; i < c->n_keys; i++) {
        free(c->value[i]);
        free(c->origin[i]);
    }
    memset(c, 0, sizeof *c);
}

int config_index(const Config *c, const char *key) {
    for (int i = 0; i < c->n_keys; i++)
        if (strcmp(c->keys[i]->name, key) == 0) return i;
    return -1;
}

const KeyDef *config_find(const Config *c, const char *key) {
    int i = config_index(c, key);
    return i < 0 ? NULL : c->keys[i];
}

static int edit_distance(const char *a, const char *b) {
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 63 || lb > 63) return 99;
    int d[64][64];
    for (int i = 0; i <= la; i++) d[i][0] = i;
    for (int j = 0; j <= lb; j++) d[0][j] = j;
    for (int i = 1; i <= la; i++)
        for (int j = 1; j <= lb; j++) {
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

// The declared key nearest to `key`, if it is plausibly a typo of it.
static const char *nearest_key(const Config *c, const char *key) {
    const char *best = NULL;
    int best_d = 1 << 30;
    for (int i = 0; i < c->n_keys; i++) {
        int d = edit_distance(key, c->keys[i]->name);
        if (d < best_d) best_d = d, best = c->keys[i]->name;
    }
    int limit = (int)strlen(key) / 3;
    if (limit < 2) limit = 2;
    return best_d <= limit ? best : NULL;
}

// Shortest decimal text that reads back as exactly x.
static void format_double(char *buf, size_t n, double x) {
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, x);
        if (strtod(buf, NULL) == x) return;
    }
}

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n')) *--e = 0;
    return s;
}

static const char *where(const char *origin) { return origin ? origin : "default"; }

static int is_choice(const KeyDef *d, const char *value) {
    size_t n = strlen(value);
    for (const char *p = d->choices; n && *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, value, n) == 0) return 1;
        if (!bar) break;
        p = bar + 1;
    }
    return 0;
}

// A KEY_LIST value holding commas: every item (spaces around it ignored) a choice; "a,b".
static char *canonical_list(const KeyDef *d, const char *value, const char *origin) {
    char *copy = strdupCheck(value), *out = callocCheck(strlen(value) + 1, 1);
    for (char *item = copy, *next; item; item = next) {
        next = strchr(item, ',');
        if (next) *next++ = 0;
        item = trim(item);
        if (!is_choice(d, item)) {
            char bad[64];  // freed before fail(), which may return by longjmp
            snprintf(bad, sizeof bad, "%s", item);
            free(copy);
            free(out);
            fail("%s: %s: expected one of %s or a comma list of them, got '%s' in '%s'", where(origin), d->name,
                 d->choices, bad, value);
        }
        if (*out) strcat(out, ",");
        strcat(out, item);
    }
    free(copy);
    return out;
}

// Validates `value` for `d` and returns its canonical text (allocated), or exits 2.
static char *canonical_value(const KeyDef *d, const char *value, const char *origin) {
    char buf[64];
    const char *o = where(origin);
    // Values are written into JSON (the logs, checkpoint and export headers): UTF-8 only, so a
    // strict reader (Python's safetensors, json) reads every file a run writes.
    size_t not_utf8 = json_utf8_invalid_at(value);
    if (not_utf8 != (size_t)-1)
        fail("%s: %s: expected UTF-8 text, got the byte 0x%02x at offset %zu (the value is written into JSON files)", o,
             d->name, (unsigned char)value[not_utf8], not_utf8);
    switch (d->type) {
    case KEY_INT: {
        static const char *what[] = {"an integer", "a positive integer", "a non-negative integer", "an integer",
                                     "0 (all cores) or 1 to 1024"};
        char *end;
        errno = 0;
        long v = strtol(value, &end, 10);
        if (*value && !*end && (errno == ERANGE || v > 2147483647L || v < -2147483647L))
            fail("%s: %s: %s is too %s (at most %s2147483647)", o, d->name, value, v < 0 ? "small" : "large",
                 v < 0 ? "-" : "");
        int bad = *value == 0 || *end != 0 || errno != 0;
        if (!bad && d->range == RANGE_POS && v <= 0) bad = 1;
        if (!bad && d->range == RANGE_NONNEG && v < 0) bad = 1;
        if (!bad && d->range == RANGE_THREADS && (v < 0 || v > CONFIG_MAX_THREADS)) bad = 1;
        if (bad) fail("%s: %s: expected %s, got '%s'", o, d->name, what[d->range], value);
        snprintf(buf, sizeof buf, "%ld", v);
        return strdupCheck(buf);
    }
    case KEY_FLOAT: {
        static const char *what[] = {"a number", "a positive number", "a non-negative number", "a number in [0, 1)",
                                     "a number"};
        char *end;
        errno = 0;
        double v = strtod(value, &end);
        int bad = *value == 0 || *end != 0 || errno == ERANGE || !isfinite(v);
        if (!bad && d->range == RANGE_POS && !(v > 0)) bad = 1;
        if (!bad && d->range == RANGE_NONNEG && !(v >= 0)) bad = 1;
        if (!bad && d->range == RANGE_UNIT && !(v >= 0 && v < 1)) bad = 1;
        if (bad) fail("%s: %s: expected %s, got '%s'", o, d->name, what[d->range], value);
        format_double(buf, sizeof buf, v);
        return strdupCheck(buf);
    }
    case KEY_BOOL:
        if (strcmp(value, "true") && strcmp(value, "false"))
            fail("%s: %s: expected true or false, got '%s'", o, d->name, value);
        return strdupCheck(value);
    case KEY_ENUM: {
        if ((d->flags & KEY_LIST) && strchr(value, ',')) return canonical_list(d, value, origin);
        size_t n = strlen(value);
        for (const char *p = d->choices; n && *p;) {
            const char *bar = strchr(p, '|');
            size_t len = bar ? (size_t)(bar - p) : strlen(p);
            if (len == n && strncmp(p, value, n) == 0) return strdupCheck(value);
            if (!bar) break;
            p = bar + 1;
        }
        fail("%s: %s: expected one of %s, got '%s'", o, d->name, d->choices, value);
    }
    case KEY_STRING:  // any text: config_write_value quotes and escapes what needs it
        return strdupCheck(value);
    }
    die("unreachable");
}

// Keys renamed since runs were first written: {old name, new name}. A config, a config.conf or
// a checkpoint's config that spells the old name sets the new key, so older runs resume and
// evaluate (tests/test_compat.c resumes one). Renaming a key adds its row here.
static const struct { const char *old, *now; } g_renamed_keys[] = {{NULL, NULL}};

void config_set(Config *c, const char *key, const char *value, const char *origin) {
    int i = config_index(c, key);
    for (int r = 0; i < 0 && g_renamed_keys[r].old; r++)
        if (!strcmp(key, g_renamed_keys[r].old)) i = config_index(c, g_renamed_keys[r].now);
    if (i < 0) {
        if (!strcmp(key, "base") || !strcmp(key, "zip"))  // a sweep file's own keys (ablation/sweep_file.c)
            fail("%s: unknown key '%s': this is a sweep file's key (base = CONFIG, zip = KEYS); run a sweep file with "
                 "./sweep FILE",
                 where(origin), key);
        const char *near = nearest_key(c, key);
        if (near) fail("%s: unknown key '%s' (did you mean '%s'?)", where(origin), key, near);
        fail("%s: unknown key '%s'", where(origin), key);
    }
    char *v = canonical_value(c->keys[i], value, origin);
    free(c->value[i]);
    free(c->origin[i]);
    c->value[i] = v;
    c->origin[i] = origin ? strdupCheck(origin) : NULL;
}

// A config file is text of a few KiB; this bounds what /dev/zero or a mistaken data file costs.
#define CONFIG_MAX_BYTES (16u << 20)

// Parses text line by line. `path` is the file (for includes) or NULL for text that may not include.

// --- Quoting (docs/config.md#quoting): the one definition of how a value is written and read. ---
// A bare value is the text after '=' up to a '#' or the end of the line, spaces trimmed, taken
// literally (a backslash or a '"' inside it is itself). A value that starts with '"' is quoted: it
// ends at the next unescaped '"', keeps its spaces and '#'s, and reads the escapes \" \\ \n \r \t,
// and \xHH for any other byte but 0. config_write quotes exactly the values a bare form would
// change, so whatever config_set accepts comes back from the written text byte for byte.

int config_value_needs_quotes(const char *v) {
    size_t n = strlen(v);
    if (n == 0) return 0;
    if (v[0] == '"' || v[0] == ' ' || v[0] == '\t' || v[n - 1] == ' ' || v[n - 1] == '\t') return 1;
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p == '#' || *p < 0x20 || *p == 0x7f) return 1;
    return 0;
}

int config_write_value(const char *v, FILE *f) {
    if (!config_value_needs_quotes(v)) return fprintf(f, "%s", v);
    int w = fprintf(f, "\"");
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        switch (*p) {
        case '"': w += fprintf(f, "\\\""); break;
        case '\\': w += fprintf(f, "\\\\"); break;
        case '\n': w += fprintf(f, "\\n"); break;
        case '\r': w += fprintf(f, "\\r"); break;
        case '\t': w += fprintf(f, "\\t"); break;
        default: w += *p < 0x20 || *p == 0x7f ? fprintf(f, "\\x%02x", *p) : fprintf(f, "%c", *p);
        }
    }
    return w + fprintf(f, "\"");
}

static int hex_digit(int ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

char *config_unquote(char *s, char *out, const char **why) {
    for (s++;; s++) {
        if (*s == 0) return *why = "a value that starts with '\"' must end with its closing '\"'", NULL;
        if (*s == '"') break;
        if (*s != '\\') {
            *out++ = *s;
            continue;
        }
        switch (*++s) {
        case '"': *out++ = '"'; break;
        case '\\': *out++ = '\\'; break;
        case 'n': *out++ = '\n'; break;
        case 'r': *out++ = '\r'; break;
        case 't': *out++ = '\t'; break;
        case 'x': {
            int hi = hex_digit(s[1]), lo = hi < 0 ? -1 : hex_digit(s[2]);
            if (lo < 0 || hi * 16 + lo == 0) return *why = "\\x in a quoted value needs two hex digits (not 00)", NULL;
            *out++ = (char)(hi * 16 + lo);
            s += 2;
            break;
        }
        default: return *why = "a quoted value's escapes are \\\" \\\\ \\n \\r \\t \\xHH (a backslash is \\\\)", NULL;
        }
    }
    *out = 0;
    return s + 1;
}

static void parse_text(Config *c, const char *text, const char *name, const char *path) {
    char *copy = strdupCheck(text);
    if (g_trap) g_trap_copy = copy;  // no includes under the trap: one copy at a time
    char *line = copy;
    if (!strncmp(line, "\xEF\xBB\xBF", 3)) line += 3;  // a UTF-8 byte order mark (Windows editors)
    int lineno = 0;
    while (line) {
        char *next = strchr(line, '\n');
        if (next) *next++ = 0;
        lineno++;
        char origin[1024];
        snprintf(origin, sizeof origin, "%s:%d", name, lineno);
        // `key = value`: the key ends at the first '='; a '#' before it starts a comment line
        char *eq = strchr(line, '='), *hash = strchr(line, '#');
        if (hash && (!eq || hash < eq)) *hash = 0, eq = NULL;
        char *s = trim(line);
        if (*s) {
            if (!eq) fail("%s: expected 'key = value', got '%s'", origin, s);
            *eq = 0;
            char *key = trim(s), *value = eq + 1;
            while (*value == ' ' || *value == '\t') value++;
            if (!*key) fail("%s: expected 'key = value', got '= %s'", origin, trim(value));
            if (*value == '"') {  // "a # b": a quoted value, read with its escapes, in place
                const char *why = NULL;
                char *rest = config_unquote(value, value, &why);
                if (!rest) fail("%s: %s: %s", origin, key, why);
                while (*rest == ' ' || *rest == '\t' || *rest == '\r') rest++;
                if (*rest && *rest != '#')
                    fail("%s: %s: text after the closing '\"' (only a '#' comment may follow)", origin, key);
            } else {
                char *h = strchr(value, '#');
                if (h) *h = 0;
                value = trim(value);
            }
            if (strcmp(key, "include") == 0) {
                if (!path) fail("%s: include is not allowed here", origin);
                if (!*value) fail("%s: include: expected a file name", origin);
                if (c->include_depth >= 16) fail("%s: include: nested more than 16 deep (an include cycle?)", origin);
                char *inc = path_relative_to(path, value);
                if (is_directory(inc)) {
                    char msg[1200];  // inc is freed before fail() leaves
                    snprintf(msg, sizeof msg, "%s: include: '%s' is a folder, expected a config file", origin, inc);
                    free(inc);
                    fail("%s", msg);
                }
                size_t len;
                char *body = read_file_text_max(inc, CONFIG_MAX_BYTES, &len);
                if (!body && errno == EFBIG)
                    fail("%s: include: '%s' is larger than 16 MiB: not a config file", origin, inc);
                if (!body) fail("%s: include: cannot open '%s' (%s)", origin, inc, strerror(errno));
                if (strlen(body) != len) fail("%s: a NUL byte at offset %zu: not a config file", inc, strlen(body));
                c->include_depth++;
                parse_text(c, body, inc, inc);
                c->include_depth--;
                free(body);
                free(inc);
            } else {
                config_set(c, key, value, origin);
            }
        }
        line = next;
    }
    free(copy);
}

void config_load_file(Config *c, const char *path) {
    if (is_directory(path)) fail("%s: is a folder, expected a config file", path);
    size_t len;
    char *body = read_file_text_max(path, CONFIG_MAX_BYTES, &len);
    if (!body && errno == EFBIG) fail("%s: larger than 16 MiB: not a config file", path);
    if (!body) fail("%s: cannot open config (%s)", path, strerror(errno));
    // the text would end at it: a binary file could pass for an empty config
    if (strlen(body) != len) fail("%s: a NUL byte at offset %zu: not a config file", path, strlen(body));
    parse_text(c, body, path, path);
    free(body);
}

void config_load_text(Config *c, const char *text, const char *origin) { parse_text(c, text, origin, NULL); }

int config_try_load_text(Config *c, const char *text, const char *origin, char *err, size_t errlen) {
    jmp_buf trap;
    if (setjmp(trap)) {
        g_trap = NULL;
        free(g_trap_copy);
        g_trap_copy = NULL;
        return -1;
    }
    g_trap = &trap;
    g_trap_err = err;
    g_trap_len = errlen;
    parse_text(c, text, origin, NULL);
    g_trap = NULL;
    g_trap_copy = NULL;  // parse_text freed it
    return 0;
}

void config_apply_args(Config *c, int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        char *arg = strdupCheck(argv[i]);
        char *eq = strchr(arg, '=');
        if (!eq || eq == arg) fail("command line: expected key=value, got '%s'", argv[i]);
        *eq = 0;
        config_set(c, trim(arg), eq + 1, "command line");  // the value literally (docs/config.md#quoting)
        free(arg);
    }
}

static int key_at(const Config *c, const char *key) {
    int i = config_index(c, key);
    if (i < 0) die("internal error: config key '%s' is not declared", key);
    return i;
}

long cfg_int(const Config *c, const char *key) { return strtol(c->value[key_at(c, key)], NULL, 10); }
double cfg_float(const Config *c, const char *key) { return strtod(c->value[key_at(c, key)], NULL); }
int cfg_bool(const Config *c, const char *key) { return strcmp(c->value[key_at(c, key)], "true") == 0; }
const char *cfg_str(const Config *c, const char *key) { return c->value[key_at(c, key)]; }

const char *cfg_origin(const Config *c, const char *key) {
    const char *o = c->origin[key_at(c, key)];
    return o ? o : "default";
}

void config_write(const Config *c, FILE *f) {
    const char *done[64];
    int n_done = 0;
    for (int i = 0; i < c->n_keys; i++) {
        const char *sec = c->keys[i]->section;
        int seen = 0;
        for (int k = 0; k < n_done; k++) seen |= strcmp(done[k], sec) == 0;
        if (seen || n_done == 64) continue;
        done[n_done++] = sec;
        fprintf(f, "%s# %s\n", n_done > 1 ? "\n" : "", sec);
        for (int j = i; j < c->n_keys; j++) {
            if (strcmp(c->keys[j]->section, sec)) continue;
            // no fixed buffer: a long value (a path, a prompt) must come back whole
            int w = fprintf(f, "%s = ", c->keys[j]->name);
            w += config_write_value(c->value[j], f);
            fprintf(f, "%*s # %s\n", w < 40 ? 40 - w : 0, "", c->keys[j]->help);
        }
    }
}

char *config_to_text(const Config *c) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) die("open_memstream failed");
    config_write(c, f);
    fclose(f);
    return buf;
}

const char *config_first_difference(const Config *a, const Config *b) {
    return config_first_difference_skip(a, b, NULL, NULL);
}

const char *config_first_difference_skip(const Config *a, const Config *b, int (*skip)(const KeyDef *, void *), void *ctx) {
    for (int i = 0; i < a->n_keys; i++) {
        if (a->keys[i]->flags & KEY_RESUMABLE) continue;
        if (skip && skip(a->keys[i], ctx)) continue;
        int j = config_index(b, a->keys[i]->name);
        if (j < 0 || strcmp(a->value[i], b->value[j]) != 0) return a->keys[i]->name;
    }
    return NULL;
}

void config_print_help(const Config *c, FILE *f) {
    for (int i = 0; i < c->n_keys; i++)
        fprintf(f, "  %-22s %-10s %s\n", c->keys[i]->name, c->keys[i]->def, c->keys[i]->help);
}
