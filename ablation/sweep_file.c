#include "ablation/sweep_file.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/keys.h"

static const char *g_directives[SWEEP_N_DIRECTIVES] = {"name",      "out",          "jobs",           "group_over",
                                                       "plot_x",    "plot_series",  "plot_best_over", "select",
                                                       "after_run", "after_run_on", "held_out"};

typedef struct {
    int line;
    char **keys;
    int n;
} ZipLine;

typedef struct {
    const char *file;
    char *err;
    size_t errlen;
    SweepFile *sw;
    ZipLine *zips;
    int n_zips;
} Parser;

__attribute__((format(printf, 3, 4))) static int fail(Parser *p, int line, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0) snprintf(p->err, p->errlen, "%s:%d: %s", p->file, line, msg);
    else snprintf(p->err, p->errlen, "%s: %s", p->file, msg);
    return -1;
}

static void free_list(char **v, int n) {
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t' || *s == '\r') s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) *--e = 0;
    return s;
}

static int is_key_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

static int valid_key(const char *k) {
    if (!*k) return 0;
    for (; *k; k++)
        if (!is_key_char(*k)) return 0;
    return 1;
}

// Characters kept in folder names; the rest become '_'.
static int is_name_char(char c) { return is_key_char(c) || c == '-' || c == '+'; }

// Splits "a, b, \"c, d\"" into values (quotes removed; a quoted value is taken verbatim).
// Returns the count (0 for an empty text), or -1 with the problem in *why.
static int split_values(const char *s, char ***out, const char **why) {
    char **v = NULL;
    int n = 0;
    *out = NULL;
    while (*s == ' ' || *s == '\t') s++;
    if (!*s) return 0;
    for (;;) {
        while (*s == ' ' || *s == '\t') s++;
        const char *start, *end;
        if (*s == '"') {
            start = ++s;
            end = strchr(s, '"');
            if (!end) {
                *why = "a quoted value has no closing '\"'";
                goto bad;
            }
            s = end + 1;
            while (*s == ' ' || *s == '\t') s++;
            if (*s && *s != ',') {
                *why = "text after a closing '\"' (expected ',' or the end of the line)";
                goto bad;
            }
        } else {
            start = s;
            while (*s && *s != ',') s++;
            end = s;
            while (end > start && (end[-1] == ' ' || end[-1] == '\t')) end--;
            if (end == start) {
                *why = n == 0 && !*s ? "no value" : "an empty value in the list (write \"\" for an empty string)";
                goto bad;
            }
            if (memchr(start, '"', (size_t)(end - start))) {
                *why = "a '\"' inside a value (quote the whole value: \"...\")";
                goto bad;
            }
        }
        v = reallocCheck(v, sizeof *v * (size_t)(n + 1));
        v[n] = mallocCheck((size_t)(end - start) + 1);
        memcpy(v[n], start, (size_t)(end - start));
        v[n][end - start] = 0;
        n++;
        if (!*s) break;
        s++;  // the comma
        while (*s == ' ' || *s == '\t') s++;
        if (!*s) {
            *why = "an empty value in the list (write \"\" for an empty string)";
            goto bad;
        }
    }
    *out = v;
    return n;
bad:
    free_list(v, n);
    return -1;
}

static int find_entry(const SweepFile *sw, const char *key) {
    for (int i = 0; i < sw->n_entries; i++)
        if (!strcmp(sw->entries[i].key, key)) return i;
    return -1;
}

int sweep_entry_index(const SweepFile *sw, const char *key) { return find_entry(sw, key); }

static int directive_index(const char *key) {
    for (int i = 0; i < SWEEP_N_DIRECTIVES; i++)
        if (!strcmp(g_directives[i], key)) return i;
    return -1;
}

static int parse_directive(Parser *p, int d, char **vals, int n, int line) {
    SweepFile *sw = p->sw;
    const char *key = g_directives[d];
    if (d != SWEEP_DIR_GROUP_OVER && n != 1) return fail(p, line, "%s: expected one value, got %d", key, n);
    const char *v = vals[0];
    switch (d) {
    case SWEEP_DIR_NAME:
        for (const char *c = v; *c; c++)
            if (!is_name_char(*c)) return fail(p, line, "name: expected letters, digits and . _ - +, got '%s'", v);
        if (!*v || !strcmp(v, ".") || !strcmp(v, ".."))
            return fail(p, line, "name: expected a folder name, got '%s'", v);
        free(sw->name);
        sw->name = strdupCheck(v);
        break;
    case SWEEP_DIR_OUT:
        if (!*v) return fail(p, line, "out: expected a folder");
        free(sw->out);
        sw->out = strdupCheck(v);
        break;
    case SWEEP_DIR_JOBS: {
        char *end;
        errno = 0;
        long j = strtol(v, &end, 10);
        if (!*v || *end || errno || j < 1 || j > 4096)
            return fail(p, line, "jobs: expected a positive integer (at most 4096), got '%s'", v);
        sw->jobs = (int)j;
        break;
    }
    case SWEEP_DIR_GROUP_OVER:
        free_list(sw->group_over, sw->n_group_over);
        sw->group_over = NULL;
        sw->n_group_over = 0;
        if (n == 1 && !strcmp(v, "none")) break;
        for (int i = 0; i < n; i++) {
            if (!valid_key(vals[i]))
                return fail(p, line, "group_over: expected config keys or none, got '%s'", vals[i]);
            sw->group_over = reallocCheck(sw->group_over, sizeof(char *) * (size_t)(i + 1));
            sw->group_over[sw->n_group_over++] = strdupCheck(vals[i]);
        }
        break;
    case SWEEP_DIR_AFTER_RUN_ON:
        if (strcmp(v, "held_out") && strcmp(v, "all"))
            return fail(p, line, "after_run_on: expected held_out or all, got '%s'", v);
        sw->after_run_all = !strcmp(v, "all");
        break;
    case SWEEP_DIR_HELD_OUT: {  // KEY=VALUE tokens separated by spaces (the axes are checked later)
        char *list = strdupCheck(v);
        for (char *save = NULL, *t = strtok_r(list, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
            char *eq = strchr(t, '=');
            if (eq) *eq = 0;
            if (!eq || !valid_key(t) || !eq[1]) {
                int rc = fail(p, line, "held_out: expected KEY=VALUE settings separated by spaces, got '%s%s%s'", t,
                              eq ? "=" : "", eq ? eq + 1 : "");
                free(list);
                return rc;
            }
            for (int k = 0; k < sw->n_held_out; k++)
                if (!strcmp(sw->held_out_keys[k], t)) {
                    int rc = fail(p, line, "held_out: %s set twice", t);
                    free(list);
                    return rc;
                }
            if (!strcmp(t, "out_dir")) {
                free(list);
                return fail(p, line, "held_out: out_dir: the sweep sets each point's out_dir");
            }
            sw->held_out_keys = reallocCheck(sw->held_out_keys, sizeof(char *) * (size_t)(sw->n_held_out + 1));
            sw->held_out_values = reallocCheck(sw->held_out_values, sizeof(char *) * (size_t)(sw->n_held_out + 1));
            sw->held_out_keys[sw->n_held_out] = strdupCheck(t);
            sw->held_out_values[sw->n_held_out++] = strdupCheck(eq + 1);
        }
        free(list);
        if (!sw->n_held_out) return fail(p, line, "held_out: expected KEY=VALUE settings, got none");
        break;
    }
    case SWEEP_DIR_SELECT:
        if (n != 1 || !valid_key(v))
            return fail(p, line, "select: expected one config key (an axis of the sweep), got '%s'", v);
        free(sw->select);
        free_list(sw->held_out_keys, sw->n_held_out);
        free_list(sw->held_out_values, sw->n_held_out);
        sw->select = strdupCheck(v);
        break;
    default: {
        char **slot = d == SWEEP_DIR_PLOT_X ? &sw->plot_x
            : d == SWEEP_DIR_PLOT_SERIES    ? &sw->plot_series
                                            : &sw->plot_best_over;
        if (!valid_key(v)) return fail(p, line, "%s: expected a config key, got '%s'", key, v);
        free(*slot);
        *slot = strdupCheck(v);
    }
    }
    return 0;
}

// after_run = ARGS; ARGS; ...: ./evaluate argument lists, read as written rather than as a list of
// values (an argument such as intervene=topk:1,2,4 holds commas). Each entry holds one or more
// arguments separated by blanks, each key=value or --maps; the keys and values are checked
// against what ./evaluate reads by ./sweep (sweep_main.c), which can name them.
static int parse_after_run(Parser *p, char *rest, int line) {
    SweepFile *sw = p->sw;
    if (!*rest) return fail(p, line, "after_run: no value (expected ./evaluate argument lists separated by ';')");
    const char *bad = strpbrk(rest, "\"'`$\\|&<>(){}*?");
    if (bad)
        return fail(p, line,
                    "after_run: '%c' is not read here (expected ./evaluate arguments such as intervene=ablate, "
                    "lists separated by ';', no quotes)",
                    *bad);
    int k = 0;
    for (char *entry = rest;; k++) {
        char *semi = strchr(entry, ';');
        if (semi) *semi = 0;
        char *e = trim(entry);
        if (!*e)
            return fail(p, line, "after_run: entry %d is empty (expected ./evaluate arguments between the ';')", k + 1);
        char norm[1024] = "";
        size_t n = 0;
        for (char *tok = e; *tok;) {
            size_t len = strcspn(tok, " \t");
            char save = tok[len];
            tok[len] = 0;
            char *eq = strchr(tok, '=');
            if (strcmp(tok, "--maps")) {
                if (eq) *eq = 0;
                int ok = eq && valid_key(tok) && eq[1];
                if (eq) *eq = '=';
                if (!ok)
                    return fail(p, line,
                                "after_run: entry %d: '%.60s' is not a ./evaluate argument (expected key=value, such as "
                                "intervene=ablate or layer=causal)",
                                k + 1, tok);
            }
            if (n + len + 2 > sizeof norm)
                return fail(p, line, "after_run: entry %d is longer than %zu characters", k + 1, sizeof norm - 2);
            n += (size_t)snprintf(norm + n, sizeof norm - n, "%s%s", n ? " " : "", tok);
            tok[len] = save;
            tok += len;
            while (*tok == ' ' || *tok == '\t') tok++;
        }
        for (int j = 0; j < sw->n_after_run; j++)
            if (!strcmp(sw->after_run[j], norm))
                return fail(p, line, "after_run: entry %d repeats entry %d ('%s')", k + 1, j + 1, norm);
        sw->after_run = reallocCheck(sw->after_run, sizeof(char *) * (size_t)(sw->n_after_run + 1));
        sw->after_run[sw->n_after_run++] = strdupCheck(norm);
        if (!semi) break;
        entry = semi + 1;
    }
    return 0;
}

// One non-blank line, comments removed: a directive, a zip, or an entry.
static int parse_line(Parser *p, char *s, int line) {
    SweepFile *sw = p->sw;
    char *eq = strchr(s, '=');
    if (!eq) return fail(p, line, "expected 'key = value', 'key = a, b, c' or 'zip = key, key', got '%.60s'", s);
    *eq = 0;
    char *key = trim(s), *rest = trim(eq + 1);
    if (!valid_key(key)) return fail(p, line, "expected a key (letters, digits, _ and .) before '=', got '%.60s'", key);
    if (!strcmp(key, "include")) return fail(p, line, "include: not in a sweep file (use 'base = FILE')");
    if (!strcmp(key, "out_dir"))
        return fail(p, line, "out_dir: the sweep sets each point's out_dir (use 'out = FOLDER' for the sweep's folder)");
    if (!strcmp(key, "after_run")) {
        int *first = &sw->directive_line[SWEEP_DIR_AFTER_RUN];
        if (*first) return fail(p, line, "after_run: set twice (first at line %d)", *first);
        *first = line;
        return parse_after_run(p, rest, line);
    }
    char **vals;
    const char *why = "";
    int n = split_values(rest, &vals, &why);
    if (n < 0) return fail(p, line, "%s: %s", key, why);
    if (n == 0) return fail(p, line, "%s: no value (an axis needs at least one; write \"\" for an empty string)", key);
    int rc = 0, d = directive_index(key);
    if (!strcmp(key, "zip")) {
        p->zips = reallocCheck(p->zips, sizeof *p->zips * (size_t)(p->n_zips + 1));
        p->zips[p->n_zips++] = (ZipLine){line, vals, n};
        return 0;
    } else if (d >= 0) {
        if (sw->directive_line[d]) rc = fail(p, line, "%s: set twice (first at line %d)", key, sw->directive_line[d]);
        else {
            sw->directive_line[d] = line;
            rc = parse_directive(p, d, vals, n, line);
        }
    } else {
        int prev = find_entry(sw, key);
        if (prev >= 0) rc = fail(p, line, "%s: set twice (first at line %d)", key, sw->entries[prev].line);
        else {
            sw->entries = reallocCheck(sw->entries, sizeof *sw->entries * (size_t)(sw->n_entries + 1));
            sw->entries[sw->n_entries++] = (SweepEntry){strdupCheck(key), vals, n, line, -1, 0};
            if (!strcmp(key, "base")) sw->base_entry = sw->n_entries - 1;
            return 0;
        }
    }
    free_list(vals, n);
    return rc;
}

// The zips: each names two or more keys of this file, each key in one zip, all of one length.
static int check_zips(Parser *p, int *zip_of) {
    SweepFile *sw = p->sw;
    for (int z = 0; z < p->n_zips; z++) {
        ZipLine *zl = &p->zips[z];
        if (zl->n < 2) return fail(p, zl->line, "zip: expected two or more keys, got '%s'", zl->keys[0]);
        for (int k = 0; k < zl->n; k++) {
            int e = find_entry(sw, zl->keys[k]);
            if (e < 0) {
                if (directive_index(zl->keys[k]) >= 0 || !strcmp(zl->keys[k], "zip"))
                    return fail(p, zl->line, "zip: '%s' is a sweep setting, not an axis", zl->keys[k]);
                return fail(p, zl->line, "zip: '%s' is not set in this file", zl->keys[k]);
            }
            if (zip_of[e] == z) return fail(p, zl->line, "zip: '%s' is named twice", zl->keys[k]);
            if (zip_of[e] >= 0)
                return fail(p, zl->line, "zip: '%s' is already in the zip at line %d", zl->keys[k], p->zips[zip_of[e]].line);
            zip_of[e] = z;
            const SweepEntry *first = &sw->entries[find_entry(sw, zl->keys[0])];
            if (sw->entries[e].n_values != first->n_values)
                return fail(p, zl->line, "zip: axes of different lengths: %s has %d values (line %d), %s has %d (line %d)",
                            first->key, first->n_values, first->line, sw->entries[e].key, sw->entries[e].n_values,
                            sw->entries[e].line);
        }
    }
    return 0;
}

// Dimensions in the order of their first line, their strides, and the point count.
static int build_dims(Parser *p, const int *zip_of) {
    SweepFile *sw = p->sw;
    int *dim_of_zip = mallocCheck(sizeof(int) * (size_t)(p->n_zips + 1));
    for (int z = 0; z < p->n_zips; z++) dim_of_zip[z] = -1;
    for (int e = 0; e < sw->n_entries; e++) {
        SweepEntry *en = &sw->entries[e];
        int z = zip_of[e];
        if (z < 0 && en->n_values == 1) continue;
        int d = z >= 0 ? dim_of_zip[z] : -1;
        if (d < 0) {
            d = sw->n_dims++;
            sw->dims = reallocCheck(sw->dims, sizeof *sw->dims * (size_t)sw->n_dims);
            sw->dims[d] = (SweepDim){NULL, 0, en->n_values, 1};
            if (z >= 0) dim_of_zip[z] = d;
        }
        SweepDim *dm = &sw->dims[d];
        dm->entries = reallocCheck(dm->entries, sizeof(int) * (size_t)(dm->n_entries + 1));
        dm->entries[dm->n_entries++] = e;
        en->dim = d;
    }
    free(dim_of_zip);
    long n = 1;
    for (int d = sw->n_dims - 1; d >= 0; d--) {
        sw->dims[d].stride = n;
        n *= sw->dims[d].n_values;
        if (n > SWEEP_MAX_POINTS) return fail(p, 0, "more than %d points: split the sweep", SWEEP_MAX_POINTS);
    }
    sw->n_points = (int)n;
    return 0;
}

const char *sweep_value(const SweepFile *sw, int point, int entry) {
    const SweepEntry *e = &sw->entries[entry];
    if (e->dim < 0) return e->values[0];
    const SweepDim *d = &sw->dims[e->dim];
    return e->values[(point / d->stride) % d->n_values];
}

int sweep_entry_varies(const SweepFile *sw, int entry) {
    int d = sw->entries[entry].dim;
    return d >= 0 && sw->dims[d].n_values > 1;
}

// Appends "key=value" to a name (value sanitised; a base shows its file name without .conf).
static void name_append(char *name, size_t cap, const char *key, const char *value, int is_base) {
    size_t n = strlen(name);
    if (is_base) {
        const char *slash = strrchr(value, '/');
        if (slash) value = slash + 1;
    }
    size_t vlen = strlen(value);
    if (is_base && vlen > 5 && !strcmp(value + vlen - 5, ".conf")) vlen -= 5;
    int w = snprintf(name + n, cap - n, "%s%s=", n ? "," : "", key);
    if (w < 0 || (size_t)w >= cap - n) return;
    n += (size_t)w;
    for (size_t i = 0; i < vlen && n + 1 < cap; i++) name[n++] = is_name_char(value[i]) ? value[i] : '_';
    name[n] = 0;
}

static const SweepFile *g_sort_sw;  // for the qsort comparator below

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

// The entries that name the points: those that vary, but of a zip group only the first key when
// its values are all different (the others follow from it: `zip = mixer, pos_emb`).
static void mark_named(SweepFile *sw) {
    for (int e = 0; e < sw->n_entries; e++) sw->entries[e].named = sweep_entry_varies(sw, e);
    for (int d = 0; d < sw->n_dims; d++) {
        const SweepDim *dm = &sw->dims[d];
        if (dm->n_entries < 2 || dm->n_values < 2) continue;
        const SweepEntry *first = &sw->entries[dm->entries[0]];
        char **v = mallocCheck(sizeof(char *) * (size_t)dm->n_values);
        memcpy(v, first->values, sizeof(char *) * (size_t)dm->n_values);
        qsort(v, (size_t)dm->n_values, sizeof(char *), cmp_str);
        int distinct = 1;
        for (int i = 1; i < dm->n_values; i++) distinct &= strcmp(v[i - 1], v[i]) != 0;
        free(v);
        if (distinct)
            for (int k = 1; k < dm->n_entries; k++) sw->entries[dm->entries[k]].named = 0;
    }
}

static int cmp_point_names(const void *a, const void *b) {
    return strcmp(g_sort_sw->point_names[*(const int *)a], g_sort_sw->point_names[*(const int *)b]);
}

static int build_names(Parser *p) {
    SweepFile *sw = p->sw;
    mark_named(sw);
    sw->point_names = callocCheck((size_t)sw->n_points, sizeof(char *));
    char name[SWEEP_MAX_NAME + 64];
    for (int i = 0; i < sw->n_points; i++) {
        name[0] = 0;
        for (int e = 0; e < sw->n_entries; e++)
            if (sw->entries[e].named)
                name_append(name, sizeof name, sw->entries[e].key, sweep_value(sw, i, e), e == sw->base_entry);
        if (!name[0]) snprintf(name, sizeof name, "run");
        if (strlen(name) > SWEEP_MAX_NAME)
            return fail(p, 0, "point folder names would be longer than %d characters ('%.40s...'): shorten the values",
                        SWEEP_MAX_NAME, name);
        sw->point_names[i] = strdupCheck(name);
    }
    // two points, one folder: values that differ only in characters a folder name cannot keep
    int *order = mallocCheck(sizeof(int) * (size_t)sw->n_points);
    for (int i = 0; i < sw->n_points; i++) order[i] = i;
    g_sort_sw = sw;
    qsort(order, (size_t)sw->n_points, sizeof(int), cmp_point_names);
    int rc = 0;
    for (int k = 1; k < sw->n_points && rc == 0; k++) {
        int a = order[k - 1], b = order[k];
        if (strcmp(sw->point_names[a], sw->point_names[b])) continue;
        for (int d = 0; d < sw->n_dims; d++) {
            const SweepDim *dm = &sw->dims[d];
            if ((a / dm->stride) % dm->n_values == (b / dm->stride) % dm->n_values) continue;
            const SweepEntry *en = &sw->entries[dm->entries[0]];
            const char *va = sweep_value(sw, a, dm->entries[0]), *vb = sweep_value(sw, b, dm->entries[0]);
            if (dm->n_entries == 1 && !strcmp(va, vb))
                rc = fail(p, en->line, "%s: the value '%s' appears twice", en->key, va);
            else
                rc = fail(p, en->line, "%s: two points get the same folder name '%s' (values '%s' and '%s'%s)", en->key,
                          sw->point_names[a], va, vb, dm->n_entries > 1 ? " of a zip" : "");
            break;
        }
    }
    free(order);
    return rc;
}

// select = KEY: KEY must be an axis, not one of group_over, and the group_over keys must vary
// (the second stage runs their other values).
static int check_select(Parser *p) {
    SweepFile *sw = p->sw;
    int line = sw->directive_line[SWEEP_DIR_SELECT], e = sweep_entry_index(sw, sw->select);
    if (e < 0 || sw->entries[e].dim < 0)
        return fail(p, line, "select: '%s' is not an axis of this sweep (expected a key with several values)", sw->select);
    int varies = 0;
    for (int k = 0; k < sw->n_group_over; k++) {
        if (!strcmp(sw->group_over[k], sw->select))
            return fail(p, line, "select: '%s' is also in group_over (the selection is made on the first value of group_over)",
                        sw->select);
        int g = sweep_entry_index(sw, sw->group_over[k]);
        varies |= g >= 0 && sw->entries[g].dim >= 0;
        if (g >= 0 && sw->entries[g].dim == sw->entries[e].dim)
            return fail(p, line, "select: '%s' is zipped with the group_over key '%s'", sw->select, sw->group_over[k]);
    }
    if (!varies)
        return fail(p, line, "select: no group_over key (%s) varies, so there is no second stage",
                    sw->n_group_over ? sw->group_over[0] : "none");
    return 0;
}

int sweep_parse(const char *text, size_t len, const char *file_name, SweepFile *sw, char *err, size_t errlen) {
    memset(sw, 0, sizeof *sw);
    sw->base_entry = -1;
    sw->jobs = 1;
    sw->file = strdupCheck(file_name);
    Parser p = {file_name, err, errlen, sw, NULL, 0};
    err[0] = 0;
    int rc = 0, line = 0;
    char *buf = NULL;
    size_t start = len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3) ? 3 : 0;  // a UTF-8 byte order mark
    for (size_t pos = start; pos < len && rc == 0;) {
        line++;
        size_t end = pos;
        while (end < len && text[end] != '\n') end++;
        if (memchr(text + pos, 0, end - pos)) {
            rc = fail(&p, line, "a NUL byte: not a text file");
            break;
        }
        buf = reallocCheck(buf, end - pos + 1);
        memcpy(buf, text + pos, end - pos);
        buf[end - pos] = 0;
        pos = end + 1;
        // a comment starts at '#' outside quotes
        int quoted = 0;
        for (char *c = buf; *c; c++) {
            if (*c == '"') quoted = !quoted;
            else if (*c == '#' && !quoted) {
                *c = 0;
                break;
            }
        }
        char *s = trim(buf);
        if (*s) rc = parse_line(&p, s, line);
    }
    free(buf);
    int *zip_of = mallocCheck(sizeof(int) * (size_t)(sw->n_entries + 1));
    for (int e = 0; e < sw->n_entries; e++) zip_of[e] = -1;
    if (rc == 0) rc = check_zips(&p, zip_of);
    if (rc == 0) rc = build_dims(&p, zip_of);
    if (rc == 0) rc = build_names(&p);
    free(zip_of);
    for (int z = 0; z < p.n_zips; z++) free_list(p.zips[z].keys, p.zips[z].n);
    free(p.zips);
    if (rc == 0) {
        if (!sw->name) {  // the file name without folders and .sweep
            const char *b = strrchr(file_name, '/');
            b = b ? b + 1 : file_name;
            size_t n = strlen(b);
            if (n > 6 && !strcmp(b + n - 6, ".sweep")) n -= 6;
            sw->name = mallocCheck(n + 6);
            for (size_t i = 0; i < n; i++) sw->name[i] = is_name_char(b[i]) ? b[i] : '_';
            sw->name[n] = 0;
            if (!n || !strcmp(sw->name, ".") || !strcmp(sw->name, "..")) strcpy(sw->name, "sweep");
        }
        if (!sw->out) {
            sw->out = mallocCheck(strlen(sw->name) + 16);
            sprintf(sw->out, "checkpoints/%s", sw->name);
        }
        if (!sw->directive_line[SWEEP_DIR_GROUP_OVER]) {
            sw->group_over = mallocCheck(sizeof(char *));
            sw->group_over[0] = strdupCheck("seed");
            sw->n_group_over = 1;
        }
        if (!sw->plot_x) sw->plot_x = strdupCheck("d_model");
        if (!sw->plot_series) sw->plot_series = strdupCheck("mixer");
        if (!sw->plot_best_over) sw->plot_best_over = strdupCheck("lr");
        if (sw->select) rc = check_select(&p);
        for (int k = 0; rc == 0 && k < sw->n_held_out; k++) {  // an axis names points: it cannot change
            int e = find_entry(sw, sw->held_out_keys[k]);
            if (e >= 0 && (sw->entries[e].dim >= 0 || e == sw->base_entry))
                rc = fail(&p, sw->directive_line[SWEEP_DIR_HELD_OUT],
                          "held_out: %s is %s of this sweep (expected keys that are fixed or not set)",
                          sw->held_out_keys[k], e == sw->base_entry ? "the base" : "an axis");
        }
        if (rc == 0 && sw->directive_line[SWEEP_DIR_AFTER_RUN_ON] && !sw->n_after_run)
            rc = fail(&p, sw->directive_line[SWEEP_DIR_AFTER_RUN_ON], "after_run_on: without after_run (nothing to run)");
        if (rc == 0) return 0;
    }
    sweep_free(sw);
    return -1;
}

int sweep_load(const char *path, SweepFile *sw, char *err, size_t errlen) {
    memset(sw, 0, sizeof *sw);
    if (is_directory(path)) {
        snprintf(err, errlen, "%s: is a folder, expected a sweep file", path);
        return -1;
    }
    size_t len;
    char *text = read_file_text(path, &len);
    if (!text) {
        snprintf(err, errlen, "%s: cannot open (%s)", path, strerror(errno));
        return -1;
    }
    int rc = sweep_parse(text, len, path, sw, err, errlen);
    free(text);
    return rc;
}

void sweep_free(SweepFile *sw) {
    for (int e = 0; e < sw->n_entries; e++) {
        free(sw->entries[e].key);
        free_list(sw->entries[e].values, sw->entries[e].n_values);
    }
    free(sw->entries);
    for (int d = 0; d < sw->n_dims; d++) free(sw->dims[d].entries);
    free(sw->dims);
    free_list(sw->group_over, sw->n_group_over);
    if (sw->point_names) free_list(sw->point_names, sw->n_points);
    free(sw->file);
    free(sw->name);
    free(sw->out);
    free(sw->plot_x);
    free(sw->select);
    free(sw->plot_series);
    free(sw->plot_best_over);
    free_list(sw->after_run, sw->n_after_run);
    memset(sw, 0, sizeof *sw);
    sw->base_entry = -1;
}

// Removes "dir/../" pairs and "./" from a path, by text (so commands read
// configs/mqar_base.conf rather than configs/ablations/../mqar_base.conf).
static void tidy_path(char *p) {
    char *out = p, *seg = p;
    int absolute = *p == '/';
    if (absolute) out++, seg++;
    char *start = out;
    while (*seg) {
        char *end = strchr(seg, '/');
        size_t n = end ? (size_t)(end - seg) : strlen(seg);
        int last = !end;
        if (n == 0 || (n == 1 && seg[0] == '.')) {
            // skip "" and "."
        } else if (n == 2 && seg[0] == '.' && seg[1] == '.' && out > start) {
            char *prev = out - 1;  // out ends with '/' after a kept segment
            while (prev > start && prev[-1] != '/') prev--;
            if (!(out - prev == 3 && prev[0] == '.' && prev[1] == '.')) out = prev;
            else {
                memmove(out, seg, n);
                out += n;
                if (!last) *out++ = '/';
            }
        } else {
            memmove(out, seg, n);
            out += n;
            if (!last) *out++ = '/';
        }
        if (last) break;
        seg = end + 1;
    }
    if (out > start && out[-1] == '/') out--;
    if (out == start && !absolute) *out++ = '.';
    *out = 0;
}

char *sweep_base_path(const SweepFile *sw, const char *value) {
    char *p = path_relative_to(sw->file, value);
    tidy_path(p);
    return p;
}

char *sweep_point_dir(const SweepFile *sw, int point) {
    const char *name = sw->point_names[point];
    char *dir = mallocCheck(strlen(sw->out) + strlen(name) + 2);
    sprintf(dir, "%s/%s", sw->out, name);
    return dir;
}

int sweep_point_held_out(const SweepFile *sw, int point) {
    if (!sw->select) return 1;
    for (int k = 0; k < sw->n_group_over; k++) {
        int e = find_entry(sw, sw->group_over[k]);
        if (e < 0 || sw->entries[e].dim < 0) continue;
        const SweepDim *d = &sw->dims[sw->entries[e].dim];
        if ((point / d->stride) % d->n_values != 0) return 1;
    }
    return 0;
}

// The held_out value of key at the point, NULL when it sets none there.
static const char *held_out_value(const SweepFile *sw, int point, const char *key) {
    if (!sw->n_held_out || !sweep_point_held_out(sw, point)) return NULL;
    for (int k = 0; k < sw->n_held_out; k++)
        if (!strcmp(sw->held_out_keys[k], key)) return sw->held_out_values[k];
    return NULL;
}

void sweep_point_config(const SweepFile *sw, int point, Config *c) {
    config_init_all(c);
    if (sw->base_entry >= 0) {
        char *base = sweep_base_path(sw, sweep_value(sw, point, sw->base_entry));
        if (!path_exists(base))
            die_input("%s:%d: base: cannot open '%s' (%s)", sw->file, sw->entries[sw->base_entry].line, base,
                      strerror(errno));
        config_load_file(c, base);
        free(base);
    }
    char origin[1100];
    for (int e = 0; e < sw->n_entries; e++) {
        if (e == sw->base_entry) continue;
        snprintf(origin, sizeof origin, "%s:%d", sw->file, sw->entries[e].line);
        config_set(c, sw->entries[e].key, sweep_value(sw, point, e), origin);
    }
    if (sw->n_held_out && sweep_point_held_out(sw, point)) {
        snprintf(origin, sizeof origin, "%s:%d: held_out", sw->file, sw->directive_line[SWEEP_DIR_HELD_OUT]);
        for (int k = 0; k < sw->n_held_out; k++) config_set(c, sw->held_out_keys[k], sw->held_out_values[k], origin);
    }
    char *dir = sweep_point_dir(sw, point);
    config_set(c, "out_dir", dir, "sweep");
    free(dir);
}

char **sweep_point_argv(const SweepFile *sw, int point, const char *train, int threads) {
    char **argv = callocCheck((size_t)sw->n_entries + (size_t)sw->n_held_out + 5, sizeof(char *));
    int n = 0;
    argv[n++] = strdupCheck(train);
    argv[n++] = sw->base_entry >= 0 ? sweep_base_path(sw, sweep_value(sw, point, sw->base_entry)) : strdupCheck("/dev/null");
    for (int e = 0; e < sw->n_entries; e++) {
        if (e == sw->base_entry) continue;
        const char *k = sw->entries[e].key, *v = held_out_value(sw, point, k);
        if (!v) v = sweep_value(sw, point, e);
        argv[n] = mallocCheck(strlen(k) + strlen(v) + 2);
        sprintf(argv[n++], "%s=%s", k, v);
    }
    for (int h = 0; h < sw->n_held_out && sweep_point_held_out(sw, point); h++) {  // the keys the file does not set
        const char *k = sw->held_out_keys[h], *v = sw->held_out_values[h];
        if (find_entry(sw, k) >= 0) continue;
        argv[n] = mallocCheck(strlen(k) + strlen(v) + 2);
        sprintf(argv[n++], "%s=%s", k, v);
    }
    char *dir = sweep_point_dir(sw, point);
    argv[n] = mallocCheck(strlen(dir) + 9);
    sprintf(argv[n++], "out_dir=%s", dir);
    free(dir);
    if (threads > 0 && find_entry(sw, "threads") < 0) {
        argv[n] = mallocCheck(32);
        snprintf(argv[n++], 32, "threads=%d", threads);
    }
    argv[n] = NULL;
    return argv;
}

char **sweep_after_run_argv(const SweepFile *sw, int k, const char *evaluate, const char *dir, int threads) {
    const char *entry = sw->after_run[k];
    size_t n_tok = 1;
    for (const char *c = entry; *c; c++) n_tok += *c == ' ';
    char **argv = callocCheck(n_tok + 4, sizeof(char *));
    int n = 0, has_threads = 0;
    argv[n++] = strdupCheck(evaluate);
    argv[n++] = strdupCheck(dir);
    for (const char *t = entry; *t;) {
        size_t len = strcspn(t, " ");
        argv[n] = mallocCheck(len + 1);
        memcpy(argv[n], t, len);
        argv[n][len] = 0;
        has_threads |= !strncmp(argv[n++], "threads=", 8);
        t += len;
        if (*t) t++;
    }
    if (threads > 0 && !has_threads) {
        argv[n] = mallocCheck(32);
        snprintf(argv[n++], 32, "threads=%d", threads);
    }
    argv[n] = NULL;
    return argv;
}

void sweep_free_argv(char **argv) {
    for (char **a = argv; a && *a; a++) free(*a);
    free(argv);
}

void sweep_print_arg(const char *a, FILE *f) {
    int plain = *a != 0;
    for (const char *c = a; *c && plain; c++) plain = is_name_char(*c) || strchr("/:=,@%", *c) != NULL;
    if (plain) {
        fputs(a, f);
        return;
    }
    fputc('\'', f);
    for (const char *c = a; *c; c++) {
        if (*c == '\'') fputs("'\\''", f);
        else fputc(*c, f);
    }
    fputc('\'', f);
}

void sweep_print_command(char **argv, FILE *f) {
    for (int i = 0; argv[i]; i++) {
        if (i) fputc(' ', f);
        sweep_print_arg(argv[i], f);
    }
    fputc('\n', f);
}
