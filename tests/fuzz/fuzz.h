// What every libFuzzer target shares (tests/fuzz/harness.c). The parsers report bad input with
// die_input(): one line on stderr, exit status 2. A target runs the parser through fuzz_call, which
// turns that exit into a return (the binaries are linked with -Wl,--wrap=exit) and checks the
// contract: any other exit status, a message that is not exactly one line, or (when the parser
// returns normally) a heap block it allocated and never freed, aborts, so libFuzzer reports the
// input as a crash. The memory, file descriptors and mappings an exit leaves behind (the real
// program ends there) are released, so one process runs millions of inputs.
#pragma once
#include <stddef.h>
#include <stdint.h>

// Writes data to `name` in this process's scratch folder; returns the path (static storage, one
// per name slot: valid until the next call with the same name).
const char *fuzz_file(const char *name, const void *data, size_t size);
// Runs fn(arg). Returns -1 when it returned, 2 when it exited with status 2 (bad input).
int fuzz_call(void (*fn)(void *), void *arg);
// The message of the last exit (empty when fn returned).
const char *fuzz_message(void);
// Aborts with a message (a property the target checks does not hold).
_Noreturn void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
