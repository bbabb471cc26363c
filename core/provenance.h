// What made a run (docs/outputs.md#the-run-log): the commit the program was built from, the
// compiler, the CPU it runs on. The run record carries them with the GEMM kernel chosen at run
// time (model/kernels/gemm_kernels.h), so a sweep's summary can say when its runs were made by
// different code or hardware (a test accuracy moved by 0.0015 between two CPUs at one commit).
#pragma once
#include <stddef.h>

// The build's commit (40 hex digits, "+dirty" when tracked files differed from it), or "unknown"
// outside git: baked in by the Makefile (core/commit.sh writes build/commit.h).
const char *provenance_commit(void);
// The compiler's version string (__VERSION__), "unknown" when it has none.
const char *provenance_compiler(void);
// The CPU's model name (Linux: /proc/cpuinfo's "model name", else its implementer and part;
// macOS: machdep.cpu.brand_string), "unknown" when it cannot be read. Read once.
const char *provenance_cpu(void);
