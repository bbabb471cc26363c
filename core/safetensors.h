// The safetensors container: 8-byte little-endian header length, a JSON header
// {"name": {"dtype", "shape", "data_offsets"}, "__metadata__": {string: string}}, raw data.
// The reader validates everything and reports the first problem instead of crashing.
#pragma once
#include <stddef.h>
#include <stdint.h>

#define ST_MAX_DIMS 8

typedef struct {
    char *name;
    char dtype[8];  // "F32", "F64", "I32", ...
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    size_t begin, end;  // byte offsets into the data section
} StTensor;

typedef struct {
    StTensor *tensors;
    int n_tensors;
    char **meta_keys, **meta_values;
    int n_meta;
    unsigned char *data;  // the data section
    size_t data_len;
    void *file_buf;  // the whole file (data points into it)
    size_t file_len;
} SafeTensors;

// Reads and checks a file: header length within the file, JSON syntax, known dtypes, shapes that
// match byte ranges, offsets inside the data section without overlap. 0 on success; otherwise -1
// and a message (without the path) in err.
int st_read(const char *path, SafeTensors *st, char *err, size_t errlen);
void st_free(SafeTensors *st);
const char *st_meta(const SafeTensors *st, const char *key);
const StTensor *st_find(const SafeTensors *st, const char *name);

// Writer: collects tensors (F32 data copied at add time) and metadata, then writes through the
// atomic writer (core/io.h): a temporary file in the same folder, fsync, rename over `path`, fsync
// of the folder.
typedef struct StWriter StWriter;
StWriter *st_writer_new(void);
void st_writer_add_f32(StWriter *w, const char *name, int ndim, const int64_t *shape, const float *data);
void st_writer_meta(StWriter *w, const char *key, const char *value);
// Returns 0, or -1 with a message in err (the previous file at `path`, if any, is untouched).
// The metadata key "crc32" is added: st_file_crc32 of the file, as 8 lowercase hex digits.
int st_writer_save(StWriter *w, const char *path, char *err, size_t errlen);

// The CRC that covers a whole file, header included: zlib's CRC-32 of every byte of the file (the
// 8-byte header length, the JSON header, the data section) with the 8 hex digits of the value
// of its one "crc32":"XXXXXXXX" pair read as "00000000". 0 and *crc; or -1 when the header does
// not hold exactly one such pair.
int st_file_crc32(const unsigned char *file, size_t size, uint32_t *crc);
// Where that value's 8 digits are in the file (an offset), or 0 when there is not exactly one.
size_t st_crc_slot(const unsigned char *file, size_t size);
void st_writer_free(StWriter *w);
