// Config files (docs/config.md#syntax): flat `key = value` lines, `#` comments, `include = FILE`
// (relative to the including file; later lines override), then `key=value` arguments that win.
// Every key is declared in a KeyDef table; values are validated as they are read and a bad one
// stops the program with `file:line: ...` and exit status 2.
#pragma once
#include <stdio.h>

typedef enum { KEY_INT, KEY_FLOAT, KEY_BOOL, KEY_STRING, KEY_ENUM } KeyType;

// Numeric constraints: what a value must satisfy (and how the error message says it).
// clang-format off
typedef enum { RANGE_ANY, RANGE_POS, RANGE_NONNEG, RANGE_UNIT /* [0,1) */, RANGE_THREADS /* 0..CONFIG_MAX_THREADS */ } KeyRange;
// clang-format on

// A thread count: 0 (OpenMP's default, all cores) or 1 to this. libgomp crashes (100000) or exits
// with its own message (50000) far above it; no laptop or node has more cores.
#define CONFIG_MAX_THREADS 1024

// flags
#define KEY_RESUMABLE 1  // may differ when resuming (run length, logging, paths, threads)
#define KEY_LIST 2       // KEY_ENUM: also a comma list of choices, canonical "a,b" (mixer = gla, softmax)

typedef struct {
    const char *name;
    KeyType type;
    const char *def;  // default, as text
    KeyRange range;
    const char *choices;  // KEY_ENUM: "a|b|c"
    int flags;
    const char *section;  // heading in config.conf and docs/config.md: "model", "data", ...
    const char *help;     // one line
} KeyDef;

#define CONFIG_MAX_KEYS 256

typedef struct {
    const KeyDef *keys[CONFIG_MAX_KEYS];
    int n_keys;
    char *value[CONFIG_MAX_KEYS];   // canonical text of each key's value
    char *origin[CONFIG_MAX_KEYS];  // where it was set: "file:line", "command line" or NULL (default)
    int include_depth;
} Config;

void config_init(Config *c);
// Adds a table of keys (terminated by an entry with name == NULL). Duplicate names are a bug.
void config_add_keys(Config *c, const KeyDef *defs);
void config_free(Config *c);

// Parses a config file (exit 2 on any error, naming file:line).
void config_load_file(Config *c, const char *path);
// Parses config text; `origin` names it in errors (e.g. a checkpoint's path).
void config_load_text(Config *c, const char *text, const char *origin);
// The same, but a bad line returns -1 with the one-line message in err instead of exiting.
int config_try_load_text(Config *c, const char *text, const char *origin, char *err, size_t errlen);
// Applies `key=value` arguments (exit 2 naming the argument on error).
void config_apply_args(Config *c, int argc, char **argv);
// Sets one key; origin names the place for messages. Returns 0, or exits 2 on a bad key/value.
void config_set(Config *c, const char *key, const char *value, const char *origin);

// Typed getters (the key must exist: asking for an undeclared key is a programming error).
long cfg_int(const Config *c, const char *key);
double cfg_float(const Config *c, const char *key);
int cfg_bool(const Config *c, const char *key);
const char *cfg_str(const Config *c, const char *key);
// Where a key was set, for messages: "file:line", "command line" or "default".
const char *cfg_origin(const Config *c, const char *key);
const KeyDef *config_find(const Config *c, const char *key);
int config_index(const Config *c, const char *key);

// Quoting (docs/config.md#quoting), the one definition for every config text the programs write:
// whether a value must be written quoted, writing it (quoted and escaped where needed; returns the
// bytes written), and reading a quoted value that starts at s[0] == '"' into out (which may be s:
// the value is never longer than its quoted form); returns the text after the closing quote, or
// NULL with *why set to a one-line reason.
int config_value_needs_quotes(const char *value);
int config_write_value(const char *value, FILE *f);
char *config_unquote(char *s, char *out, const char **why);
// Writes every key (defaults included), grouped by section, as a config file that runs as is.
void config_write(const Config *c, FILE *f);
// Allocated text of config_write.
char *config_to_text(const Config *c);
// First key whose value differs between a and b and is not KEY_RESUMABLE; NULL when none.
const char *config_first_difference(const Config *a, const Config *b);
// The same, passing over the keys skip(key, ctx) names (model_resume_difference: unused mixers').
const char *config_first_difference_skip(const Config *a, const Config *b, int (*skip)(const KeyDef *, void *), void *ctx);
// Prints every key with its default and help (for --help).
void config_print_help(const Config *c, FILE *f);
