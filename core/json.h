// A small JSON reader (a DOM with depth and size limits, for safetensors headers and run files)
// and a string writer with escapes.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } JsonType;

typedef struct JsonValue {
    JsonType type;
    double number;      // JSON_NUMBER (and JSON_BOOL: 0/1)
    long long integer;  // JSON_NUMBER when is_integer
    int is_integer;
    char *string;             // JSON_STRING (NUL-terminated, unescaped)
    struct JsonValue *items;  // JSON_ARRAY / JSON_OBJECT values
    char **keys;              // JSON_OBJECT keys
    int n;
} JsonValue;

// Parses text[0..len); NULL on error with a message (including the byte offset) in err.
JsonValue *json_parse(const char *text, size_t len, char *err, size_t errlen);
void json_free(JsonValue *v);
const JsonValue *json_get(const JsonValue *obj, const char *key);
// obj's number `key`: NAN when it is absent, null or not a number (the one getter of the run log's
// readers).
double json_number(const JsonValue *obj, const char *key);
// Writes s as a JSON string literal with escapes (bytes that are not UTF-8 as U+FFFD, as below).
void json_write_string(FILE *f, const char *s);
// Writes bytes as a JSON string literal: valid UTF-8 as is, any other byte as U+FFFD (generated
// text is not always valid UTF-8).
void json_write_bytes(FILE *f, const uint8_t *p, size_t n);
// Offset of the first byte of s that is not part of valid UTF-8; (size_t)-1 when s is valid.
size_t json_utf8_invalid_at(const char *s);
