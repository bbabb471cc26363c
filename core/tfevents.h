// TensorBoard event files (docs/outputs.md#tensorboard), written and read without a library.
//
// An event file is a sequence of TFRecords, each one serialized `Event` protocol buffer:
//
//   uint64  length of the data, little-endian
//   uint32  masked CRC32C of those 8 length bytes
//   bytes   data: the Event
//   uint32  masked CRC32C of the data
//
// CRC32C is the Castagnoli CRC (polynomial 0x82F63B78 reflected); "masked" is
// ((crc >> 15) | (crc << 17)) + 0xa282ead8, which TensorFlow applies so that a CRC stored inside
// CRC'd data does not make the outer CRC trivial.
//
// The messages (tensorflow/core/util/event.proto, framework/summary.proto), only the fields used:
//   Event      { double wall_time = 1; int64 step = 2; string file_version = 3;
//                Summary summary = 5; SessionLog session_log = 7; }
//   Summary    { repeated Value value = 1; }
//   Value      { string tag = 1; float simple_value = 2; }
//   SessionLog { SessionStatus status = 1; }   START = 1
// The first event of a file carries file_version "brain.Event:2". This module knows the format
// only; which numbers become which tags is eval/tensorboard.c's business.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TFEVENTS_FILE_VERSION "brain.Event:2"

// CRC32C of n bytes, continuing from crc (0 to start), and TensorFlow's mask of it.
uint32_t crc32c(uint32_t crc, const void *data, size_t n);
uint32_t crc32c_masked(const void *data, size_t n);

// --- writing -------------------------------------------------------------------------------------
typedef struct {
    FILE *f;
    char path[1200];
    const char *name;  // the file name within path
    uint8_t *buf;      // the event being built (its summary values)
    size_t len, cap;
    long step;
} TfEvents;

// Creates a new event file in dir, named events.out.tfevents.<unix time>.<host>.s<first step>
// (the names sort in the order the files were started, as TensorBoard reads them), and writes
// the file_version event and a SessionLog START at first_step: TensorBoard then drops whatever
// earlier files of the folder hold at first_step and after (a resumed run redoes those steps).
// 0, or -1 with errno.
int tfevents_open(TfEvents *w, const char *dir, long first_step);
// One event of scalars at a step: begin, add a value per tag, end (which writes the record).
void tfevents_begin(TfEvents *w, long step);
void tfevents_add(TfEvents *w, const char *tag, float value);
void tfevents_end(TfEvents *w);
// Write errors stay in w->f (ferror) for the caller's check after fflush, like the run log's.
// 0, or EOF when closing failed.
int tfevents_close(TfEvents *w);

// --- reading -------------------------------------------------------------------------------------
typedef enum { TFE_FILE_VERSION, TFE_START, TFE_SCALAR } TfEventKind;

typedef struct {
    TfEventKind kind;
    long step;
    double wall_time;
    const char *text;  // the file version, or the scalar's tag
    float value;       // a scalar's value
} TfEventItem;

// Calls fn for the file version, each SessionLog START and each scalar of the file at path, in
// order (other events and fields are skipped). A record cut short at the end (a kill while
// writing) ends the file quietly, as TensorBoard reads it. Returns 0, or -1 with one line in err
// naming the file and byte offset: cannot open, a length or data CRC mismatch, a malformed event.
typedef int (*TfEventFn)(const TfEventItem *e, void *ctx);  // nonzero stops
int tfevents_read(const char *path, TfEventFn fn, void *ctx, char *err, size_t errlen);

// The scalars a folder's event files show in TensorBoard: the files in name order, each START at
// step s dropping what earlier files held at steps >= s. Allocated array in *out (free with
// tfevents_free_scalars); returns the count, or -1 with one line in err.
typedef struct {
    char *tag;
    long step;
    float value;
} TfScalar;
// The names of dir's event files (TensorBoard's test: "tfevents" in the name), sorted, into
// *names (the caller frees each and the array); their count, or -1 when dir cannot be read.
int tfevents_list_dir(const char *dir, char ***names);
long tfevents_read_dir(const char *dir, TfScalar **out, char *err, size_t errlen);
void tfevents_free_scalars(TfScalar *s, long n);
